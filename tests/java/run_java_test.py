"""Runs one Java test class against a private deferd (ctest java.client, java.worker).

usage: run_java_test.py NAME   (client: org.deferd.ClientTest, worker: org.deferd.WorkerTest)

A deferd of its own (tests/python/harness.py: its own temp dir, socket and ZooKeeper root on
the ctest fixture's ZooKeeper), with the queues below: q1..q12 as configured by default,
s1..s4 with a 1 s ttr (leases, DEADLINE, EXPIRED), r1..r4 with a 100-200 ms backoff. The
test class gets the socket in $DEFERD_SOCKET and the daemon's config in $DEFERD_TEST_CONFIG
(for deferctl list), and each test method takes queues of its own. Exit status: the test
runner's, or 1 when deferd did not stop cleanly.
"""

from __future__ import annotations

import os
import subprocess
import sys

from harness import Daemon

QUEUES = {**{f"q{i}": "" for i in range(1, 13)},
          **{f"s{i}": "ttr = 1s" for i in range(1, 5)},
          **{f"r{i}": "backoff_min = 100ms\nbackoff_max = 200ms\nbackoff_jitter = 0"
             for i in range(1, 5)}}
CLASSES = {"client": "org.deferd.ClientTest", "worker": "org.deferd.WorkerTest"}


def main() -> int:
    name = sys.argv[1]
    daemon = Daemon(f"java-{name}", QUEUES).start()
    rc = 1
    try:
        env = dict(os.environ, DEFERD_SOCKET=daemon.sock, DEFERD_TEST_CONFIG=daemon.config)
        rc = subprocess.run([os.environ["DEFERD_JAVA"], "-cp", os.environ["DEFERD_JAVA_CP"],
                             "org.deferd.TestRunner", CLASSES[name], *sys.argv[2:]],
                            env=env, timeout=170).returncode
    finally:
        try:
            daemon.stop()
        except AssertionError as e:
            print(e, file=sys.stderr)
            rc = rc or 1
    return rc


if __name__ == "__main__":
    sys.exit(main())
