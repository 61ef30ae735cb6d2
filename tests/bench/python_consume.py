"""One Python consumer for tests/bench/python-rate: subscribes to `bench` with INFLIGHT,
takes N jobs, acks each without waiting for its reply (pipelined), waits for every ack's
reply, and prints one JSON line: the jobs, the seconds from the first job to the last ack
reply, and the acks that failed."""
import json
import sys
import time

import deferd


def main() -> int:
    sock, n, inflight = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
    with deferd.Client(sock) as client:
        client.subscribe(["bench"], inflight=inflight)
        first = None
        for got in range(n):
            job = client.next_job(timeout=60)
            if job is None:
                print(json.dumps({"error": f"no job after {got} of {n}"}))
                return 1
            if first is None:
                first = time.monotonic()
            job.ack()
        client.flush(timeout=60)
        seconds = time.monotonic() - first
        failed = len(client.failed_acks())
    print(json.dumps({"n": n, "inflight": inflight, "seconds": round(seconds, 3),
                      "rate": round(n / seconds), "failed_acks": failed}))
    return 0 if failed == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
