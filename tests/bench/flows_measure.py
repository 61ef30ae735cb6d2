"""Issue 41's figures for tests/bench/flows, against the deferd on SOCK (queues `bench` for
children and plain jobs, `fanin` for parents). Prints JSON lines:

* latency: FLOWS flows of 5 children, one after the other on an idle daemon; one consumer
  of both queues acks each child and waits for the ack's reply; the parent's push is
  stamped as it arrives. Per flow: the parent's arrival minus the last child's ack reply.
* throughput: one flow of CHILDREN children acked by 8 consumers (a thread and a connection
  each, every ack waited for), against CHILDREN plain jobs (BATCHes) taken by the same
  consumers, ROUNDS pairs alternating which goes first (after a warm-up of plain jobs, not
  counted): jobs per second from the first job taken to the last ack answered, the ratio,
  and the flow's version conflicts per child (STATS flow_conflicts).
  A flow of more than 999 children is grown first: its seeds (queue `seeds`), acked with
  join=1, add 500 children each (the seeds are not counted in the figures).
"""
import json
import sys
import threading
import time

import deferd


def pct(xs, p):
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(round(p / 100 * (len(xs) - 1))))]


def latency(sock, flows):
    lat = []
    with deferd.Client(sock) as p, deferd.Client(sock) as c:
        c.subscribe(["bench", "fanin"], inflight=8)
        for f in range(flows):
            res = p.put_flow(("fanin", b"parent %d" % f), [("bench", b"c")] * 5)
            acked, last_ack = 0, None
            while True:
                job = c.next_job(timeout=30)
                if job is None:
                    raise SystemExit("latency: no job")
                if job.id == res.ids[0]:
                    arrived = time.monotonic()
                    job.ack().result()
                    break
                job.ack().result()
                acked += 1
                if acked == 5:
                    last_ack = time.monotonic()
            lat.append((arrived - last_ack) * 1000)
    print(json.dumps({"bench": "flows_latency", "flows": flows,
                      "p50_ms": round(pct(lat, 50), 2), "p99_ms": round(pct(lat, 99), 2),
                      "max_ms": round(max(lat), 2)}), flush=True)


def consume(sock, n, done_at):
    """8 consumers take N jobs of `bench`; (first taken, last answered, parent id seen)."""
    taken = [0]
    lock = threading.Lock()
    stamps = []

    def worker():
        with deferd.Client(sock) as c:
            c.subscribe(["bench"], inflight=1)
            while True:
                with lock:
                    if taken[0] >= n:
                        return
                job = c.next_job(timeout=2)
                if job is None:
                    continue
                t0 = time.monotonic()
                job.ack().result()
                with lock:
                    taken[0] += 1
                    stamps.append((t0, time.monotonic()))

    threads = [threading.Thread(target=worker) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return min(s[0] for s in stamps), max(s[1] for s in stamps)


def conflicts(sock):
    with deferd.Client(sock) as c:
        return int(c.stats().get("flow_conflicts", 0))


def grown_flow(sock, children):
    """A flow of CHILDREN children in `bench`: put with seeds that add them (join=1)."""
    seeds = (children + 499) // 500
    with deferd.Client(sock) as p, deferd.Client(sock) as s:
        res = p.put_flow(("fanin", b"parent"), [("seeds", b"seed")] * seeds)
        s.subscribe(["seeds"], inflight=1)
        left = children
        for _ in range(seeds):
            job = s.next_job(timeout=30)
            n = min(500, left)
            job.ack(then=[("bench", b"c")] * n, join=True)
            left -= n
    return res


def flow_round(sock, children):
    """One flow of CHILDREN children consumed: (jobs/s, parent delivered, conflicts/child)."""
    with deferd.Client(sock) as p:
        before = conflicts(sock)
        if children > 999:
            res = grown_flow(sock, children)
        else:
            res = p.put_flow(("fanin", b"parent"), [("bench", b"c")] * children)
        t0, t1 = consume(sock, children, None)
        with deferd.Client(sock) as c:
            c.subscribe(["fanin"], inflight=1)
            job = c.next_job(timeout=30)
            ok = job is not None and job.uid == deferd.job_uid(res.ids[0])
            if job is not None:
                job.ack().result()
        return children / (t1 - t0), ok, (conflicts(sock) - before) / children


def plain_round(sock, children):
    """CHILDREN plain jobs (BATCHes) consumed: jobs/s."""
    with deferd.Client(sock) as p:
        for first in range(0, children, 999):
            p.put_batch([("bench", b"c")] * min(999, children - first))
    t0, t1 = consume(sock, children, None)
    return children / (t1 - t0)


def throughput(sock, children, rounds):
    ratios = []
    plain_round(sock, min(children, 2000))  # ZooKeeper's JIT warms up before any figure
    for r in range(rounds):
        if r % 2 == 0:  # alternating which goes first: neither gets the warmer ZooKeeper
            flow_rate, ok, per_child = flow_round(sock, children)
            plain_rate = plain_round(sock, children)
        else:
            plain_rate = plain_round(sock, children)
            flow_rate, ok, per_child = flow_round(sock, children)
        ratios.append(flow_rate / plain_rate)
        print(json.dumps({"bench": "flows_throughput", "round": r + 1, "children": children,
                          "flow_rate": round(flow_rate), "plain_rate": round(plain_rate),
                          "ratio": round(flow_rate / plain_rate, 2), "parent_delivered": ok,
                          "conflicts_per_child": round(per_child, 3)}), flush=True)
    return ratios


def main():
    sock, flows, children, rounds = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
    latency(sock, flows)
    throughput(sock, children, rounds)


if __name__ == "__main__":
    main()
