"""Handlers for tests/python/test_worker.py, run by `python3 -m deferd.worker` in a child
process. Each appends JSON lines to $WORKER_DIR/log (one per event); `block` waits for the
file $WORKER_DIR/release and counts the handlers running at once in $WORKER_DIR/running."""

from __future__ import annotations

import datetime
import json
import os
import threading
import time

from deferd import Put
from deferd.worker import Retry, WorkerJob

DIR = os.environ.get("WORKER_DIR", ".")
_lock = threading.Lock()
NOT_CALLABLE = 42


def note(ev: str, job: WorkerJob, **extra: object) -> None:
    """Appends one event about ``job`` to $WORKER_DIR/log."""
    rec = {"ev": ev, "payload": job.payload.decode(), "id": job.id, "uid": job.uid,
           "queue": job.queue, "group": job.group, "attempt": job.attempt, "priority": job.priority,
           "due_ms": job.due_ms, "t": time.time(), **extra}
    with _lock, open(os.path.join(DIR, "log"), "a") as f:
        f.write(json.dumps(rec) + "\n")


def record(job: WorkerJob) -> None:
    note("done", job)


def fail_once(job: WorkerJob) -> None:
    """Fails the first attempt with a ValueError."""
    if job.attempt == 1:
        note("fail", job)
        raise ValueError(f"boom {job.payload.decode()}")
    note("done", job)


class Later(Exception):
    """Any exception with a retry_delay is retried after it."""

    retry_delay = datetime.timedelta(seconds=2)


def retry_once(job: WorkerJob) -> None:
    """Fails the first attempt asking for 2 s: Retry (payload `retry`) or Later."""
    if job.attempt == 1:
        note("fail", job)
        if job.payload == b"retry":
            raise Retry(delay=2)
        raise Later("not yet")
    note("done", job)


def sleep(job: WorkerJob) -> None:
    """Sleeps for the payload's seconds."""
    time.sleep(float(job.payload))
    note("done", job)


def block(job: WorkerJob) -> None:
    """Marks itself running, waits for $WORKER_DIR/release (at most 60 s), unmarks."""
    running = os.path.join(DIR, "running")
    os.makedirs(running, exist_ok=True)
    mark = os.path.join(running, f"{threading.get_ident()}")
    open(mark, "w").close()
    note("start", job, running=len(os.listdir(running)))
    try:
        deadline = time.monotonic() + 60
        while not os.path.exists(os.path.join(DIR, "release")):
            if time.monotonic() > deadline:
                raise TimeoutError("never released")
            time.sleep(0.01)
    finally:
        os.unlink(mark)
    note("done", job)


def until_lost(job: WorkerJob) -> None:
    """Works until the job is lost (at most 30 s), as a long handler should."""
    note("start", job)
    deadline = time.monotonic() + 30
    while not job.lost and time.monotonic() < deadline:
        time.sleep(0.01)
    note("stopped", job, lost=job.lost)


def crawl(job: WorkerJob) -> None:
    """A crawler's page: the seed adds two links to its flow (ack_join); links just finish."""
    if job.payload == b"seed":
        job.ack_join([Put(job.queue, b"link1"), Put(job.queue, b"link2")])
    note("done", job)


def then_fail(job: WorkerJob) -> None:
    """Asks for a follow-up, then fails on the first attempt: the follow-up must not exist."""
    if job.attempt == 1:
        job.ack_then([Put(job.queue, b"never")])
        note("fail", job)
        raise RuntimeError("failed after ack_then")
    note("done", job)


def bad_followup(job: WorkerJob) -> None:
    """A follow-up that is no put: ack_then raises in the handler, so the job is nacked."""
    note("try", job)
    job.ack_then([42])  # type: ignore[list-item]
