"""The handler of tests/bench/python-worker-rate: sleeps $BENCH_SLEEP_MS (default 10) ms,
as a job that waits on I/O would; run by `python3 -m deferd.worker`."""
import os
import time

SECONDS = float(os.environ.get("BENCH_SLEEP_MS", "10")) / 1000


def handle(job: object) -> None:
    time.sleep(SECONDS)
