"""Runs the examples of docs/python.md against a real deferd (ctest: python.docs).

Each ```python block of the page is run in turn as its own program by /usr/bin/python3,
with DEFERD_SOCKET pointing at a private daemon whose queues are etc/deferd.ini's, so that
an example naming a queue the sample config lacks fails as it would for a user (issue 38);
the producer's jobs must reach the consumer and be acked; the asyncio example's jobs must
all be handled and acked. The
worker example: tasks.py is written to a directory where the page's ```sh command
`python3 -m deferd.worker ...` runs until the producer's jobs are gone, then gets
SIGTERM and must exit 0."""

from __future__ import annotations

import os
import re
import shlex
import shutil
import subprocess
import sys
import tempfile
import unittest

from harness import Daemon, named_blocks, run_until_then_term, sample_queues, sh_commands

DOC = os.environ.get("DEFERD_DOCS") or os.path.join(
    os.path.dirname(__file__), "..", "..", "docs", "python.md")


def blocks() -> dict:
    """The page's ```python blocks by the name in their first comment line (# name.py)."""
    return named_blocks(DOC, "python", r"# (\w+)\.py")


def commands() -> list:
    """The lines of the page's ```sh blocks."""
    return sh_commands(DOC)


class Examples(unittest.TestCase):
    def produce(self, d: Daemon) -> dict:
        """Runs producer.py against ``d``; returns the environment the examples run in."""
        env = dict(os.environ, DEFERD_SOCKET=d.sock)
        out = self.run_block("producer", env)
        self.assertEqual(len(re.findall(r"^stored emails/", out, re.M)), 3, out)
        self.assertIn("duplicate", out)
        self.assertEqual(len(d.jobs("emails")), 3)
        return env

    def run_block(self, name: str, env: dict) -> str:
        p = subprocess.run([sys.executable, "-c", blocks()[name]], env=env, timeout=60,
                           capture_output=True, text=True)
        self.assertEqual(p.returncode, 0, f"{name}: {p.stderr}")
        return p.stdout

    def test_producer_then_consumer(self) -> None:
        self.assertEqual(sorted(blocks()), ["aio_reports", "consumer", "producer", "tasks"])
        d = Daemon("docs", sample_queues()).start()
        try:
            env = self.produce(d)
            out = self.run_block("consumer", env)
            self.assertEqual(len(re.findall(r"^sending ", out, re.M)), 3, out)
            self.assertEqual(d.jobs("emails"), [])  # every ack answered: gone from ZooKeeper
            self.assertEqual(d.queue_stat("emails", "acked"), 3)
        finally:
            d.stop()

    def test_asyncio(self) -> None:
        d = Daemon("docs-aio", sample_queues()).start()
        try:
            p = subprocess.run([sys.executable, "-c", blocks()["aio_reports"]], timeout=60,
                               env=dict(os.environ, DEFERD_SOCKET=d.sock), capture_output=True,
                               text=True)
            self.assertEqual(p.returncode, 0, p.stderr)
            self.assertIn("stored 6 jobs", p.stdout)
            built = re.findall(r"^built (report-\d\.csv)$", p.stdout, re.M)
            self.assertEqual(sorted(built), [f"report-{i}.csv" for i in range(6)], p.stdout)
            self.assertEqual(d.jobs("reports"), [])  # every ack answered: gone
            self.assertEqual(d.queue_stat("reports", "acked"), 6)
        finally:
            d.stop()

    def test_worker(self) -> None:
        [cmd] = [c for c in commands() if c.startswith("python3 -m deferd.worker")]
        argv = shlex.split(cmd)
        argv[0] = sys.executable
        tmp = tempfile.mkdtemp(prefix="deferd-docs-worker-")
        self.addCleanup(shutil.rmtree, tmp, True)
        with open(os.path.join(tmp, "tasks.py"), "w") as f:
            f.write(blocks()["tasks"])
        d = Daemon("docsw", sample_queues()).start()
        try:
            env = self.produce(d)
            # Not anchored to lines: the handler's print() runs on 4 threads, and Python writes
            # a print's text and its newline apart, so two lines can come out as one.
            run_until_then_term(
                argv, tmp, env,
                lambda out: len(re.findall(r"sending to [^\s(]+ \(attempt 1\)", out)) == 3
                and d.jobs("emails") == [],
                "the worker ran the 3 jobs and they are gone from ZooKeeper")
            self.assertEqual(d.queue_stat("emails", "acked"), 3)
        finally:
            d.stop()


if __name__ == "__main__":
    unittest.main()
