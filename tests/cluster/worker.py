"""A consumer on one host of the rig, run under that host's (possibly skewed) clock. It tells
the ledger at once of every job it gets and of every ack's answer; the ledger stamps them
with the reference clock, since this process cannot trust its own.

    python3 worker.py SOCKET LEDGER HOST QUEUE SEED

Eight jobs at a time; work takes 20-200 ms, one job in twenty 2-4 s (so that faults find
jobs held), always well inside the queue's ttr."""

import json
import random
import select
import socket
import sys
import time

import deferd


def nap(seconds):
    """time.sleep: libfaketime 0.9.10 fails it (EINVAL) when the monotonic clock is left
    alone, which it must be: work is timed by it, and a host's clock step must not move it."""
    select.select([], [], [], seconds)


def main(sock_path, ledger_path, host, queue, seed):
    rnd = random.Random(seed)
    out = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)

    def tell(**rec):
        rec["host"] = host
        try:
            out.sendto(json.dumps(rec).encode(), ledger_path)
        except OSError:
            pass  # the ledger is gone: the run is over

    while True:
        try:
            client = deferd.Client(socket_path=sock_path, timeout=30,
                                   on_ack_error=lambda e: None)  # told by serve()
            client.subscribe([queue], inflight=8)
        except (OSError, deferd.DeferdError):
            nap(0.2)  # the daemon is down (killed, restarting)
            continue
        try:
            serve(client, tell, rnd)
        except (OSError, deferd.DeferdError) as e:
            tell(ev="worker_error", err=str(e))
        finally:
            try:
                client.close()
            except OSError:
                pass


def serve(client, tell, rnd):
    """Up to INFLIGHT jobs worked on at once: each is told to the ledger the moment it
    arrives, and acked when its (simulated) work is done. Acks are pipelined and their
    answers told as they come, so that a held ack (the daemon SUSPENDED) never keeps this
    loop from reading the next push: the ledger's delivery times are the arrivals."""
    busy, acks = [], []  # (done_at, job), (job, reply)
    while True:
        now = time.monotonic()
        wait = min((d for d, _ in busy), default=now + 0.2) - now
        job = client.next_job(timeout=max(0.0, min(wait, 0.2)))
        while client.next_event() is not None:
            pass  # EXPIRED, STATE...: the ack's answer says what matters
        if job is not None:
            tell(ev="deliver", token=job.payload.decode(), id=job.id, attempt=job.attempt,
                 due=job.due_ms)
            work = rnd.uniform(2, 4) if rnd.random() < 0.05 else rnd.uniform(0.02, 0.2)
            busy.append((time.monotonic() + work, job))
        now = time.monotonic()
        for item in [b for b in busy if b[0] <= now]:
            busy.remove(item)
            tell(ev="ack_sent", token=item[1].payload.decode(), attempt=item[1].attempt)
            acks.append((item[1], item[1].ack()))
        for job_, reply in [a for a in acks if a[1].done]:
            acks.remove((job_, reply))
            err = reply.error
            tell(ev="ack", token=job_.payload.decode(), attempt=job_.attempt, ok=err is None,
                 err=None if err is None else getattr(err, "code", str(err)),
                 text=None if err is None else str(err))


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4], int(sys.argv[5]))
