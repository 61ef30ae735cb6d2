"""Runs the examples of docs/python.md against a real deferd (ctest: python.docs).

Each ```python block of the page is run in turn as its own program by /usr/bin/python3,
with DEFERD_SOCKET pointing at a private daemon; the producer's jobs must reach the
consumer and be acked; the asyncio example's jobs must all be handled and acked."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import unittest

from harness import Daemon

DOC = os.environ.get("DEFERD_DOCS") or os.path.join(
    os.path.dirname(__file__), "..", "..", "docs", "python.md")


def blocks() -> dict:
    """The page's ```python blocks by the name in their first comment line (# name.py)."""
    with open(DOC) as f:
        text = f.read()
    out = {}
    for code in re.findall(r"^```python\n(.*?)^```$", text, re.S | re.M):
        first = code.splitlines()[0]
        m = re.match(r"# (\w+)\.py", first)
        if m:
            out[m.group(1)] = code
    return out


class Examples(unittest.TestCase):
    def test_producer_then_consumer(self) -> None:
        code = blocks()
        self.assertEqual(sorted(code), ["aio_thumbnails", "consumer", "producer"])
        d = Daemon("docs", {"emails": "backoff_min = 1s"}).start()
        try:
            env = dict(os.environ, DEFERD_SOCKET=d.sock)

            def run(name: str) -> str:
                p = subprocess.run([sys.executable, "-c", code[name]], env=env, timeout=60,
                                   capture_output=True, text=True)
                self.assertEqual(p.returncode, 0, f"{name}: {p.stderr}")
                return p.stdout

            out = run("producer")
            self.assertEqual(len(re.findall(r"^stored emails/", out, re.M)), 3, out)
            self.assertIn("duplicate", out)
            self.assertEqual(len(d.jobs("emails")), 3)
            out = run("consumer")
            self.assertEqual(len(re.findall(r"^sending ", out, re.M)), 3, out)
            self.assertEqual(d.jobs("emails"), [])  # every ack answered: gone from ZooKeeper
            self.assertEqual(d.queue_stat("emails", "acked"), 3)
        finally:
            d.stop()

    def test_asyncio(self) -> None:
        d = Daemon("docs-aio", {"thumbnails": ""}).start()
        try:
            p = subprocess.run([sys.executable, "-c", blocks()["aio_thumbnails"]], timeout=60,
                               env=dict(os.environ, DEFERD_SOCKET=d.sock), capture_output=True,
                               text=True)
            self.assertEqual(p.returncode, 0, p.stderr)
            self.assertIn("stored 6 jobs", p.stdout)
            made = re.findall(r"^made thumbnail of (photo-\d\.jpg)$", p.stdout, re.M)
            self.assertEqual(sorted(made), [f"photo-{i}.jpg" for i in range(6)], p.stdout)
            self.assertEqual(d.jobs("thumbnails"), [])  # every ack answered: gone
            self.assertEqual(d.queue_stat("thumbnails", "acked"), 6)
        finally:
            d.stop()


if __name__ == "__main__":
    unittest.main()
