"""The consumer of tests/bench/schedule-lateness: subscribes to `bench`, takes every job
for SECONDS, acks it, and prints one JSON line: how late each occurrence due after the
subscription was delivered (receive time minus the job's due time, which for a schedule
without jitter is the occurrence's instant), as p50 / p99 / max in ms; the jobs taken (those
due before the subscription, which waited for a consumer, apart); the occurrences expected
in that time; and the due times seen twice (an occurrence put twice) or not on the
schedules' grid (ANCHORS, every EVERY_MS)."""
import json
import math
import sys
import time

import deferd


def percentile(sorted_ms, pct):
    """Nearest-rank percentile of a sorted list."""
    if not sorted_ms:
        return None
    rank = max(1, -(-len(sorted_ms) * pct // 100))
    return sorted_ms[rank - 1]


def main() -> int:
    sock, seconds, every_ms = sys.argv[1], float(sys.argv[2]), int(sys.argv[3])
    anchors = [int(a) for a in sys.argv[4].split(",")]
    late, dues, seen, dup, off_grid, before = [], [], set(), 0, 0, 0
    with deferd.Client(sock) as client:
        client.subscribe(["bench"], inflight=64)
        start_ms = time.time() * 1000
        end = time.monotonic() + seconds
        while time.monotonic() < end:
            job = client.next_job(timeout=max(0.05, end - time.monotonic()))
            if job is None:
                continue
            if job.due_ms >= start_ms:
                late.append(time.time() * 1000 - job.due_ms)
                dues.append(job.due_ms)
                if late[-1] > 10 and len(sys.argv) > 5:
                    print(f"late {late[-1]:.1f} ms: due {job.due_ms} attempt {job.attempt}", file=sys.stderr)
            else:
                before += 1
            if job.due_ms in seen:
                dup += 1
            seen.add(job.due_ms)
            if all((job.due_ms - a) % every_ms for a in anchors):
                off_grid += 1
            job.ack()
        end_ms = time.time() * 1000
        try:
            client.flush(timeout=10)
        except deferd.DeferdError as e:
            print(f"acks not all answered: {e}", file=sys.stderr)
        failed = len(client.failed_acks())
    # occurrences due from the subscription until 1 s before the end: those later may still
    # be on their way when the loop stops, and are not counted as expected
    expected = sum(len(range(a + -(-(math.ceil(start_ms) - a) // every_ms) * every_ms,
                             int(end_ms) - 1000, every_ms)) for a in anchors)
    late.sort()
    r = lambda v: None if v is None else round(v, 2)
    taken = sum(1 for d in dues if d < int(end_ms) - 1000)
    print(json.dumps({"jobs": len(late), "taken_of_expected": taken, "expected": expected,
                      "due_before_start": before,
                      "lateness_ms_p50": r(percentile(late, 50)),
                      "lateness_ms_p99": r(percentile(late, 99)),
                      "lateness_ms_max": r(late[-1] if late else None),
                      "early": sum(1 for v in late if v < 0), "duplicates": dup,
                      "off_grid": off_grid, "failed_acks": failed}))
    return 0 if late and dup == 0 and off_grid == 0 and failed == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
