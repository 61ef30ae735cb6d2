"""Jobs between the Java client and the Python and C ones (ctest java.interop), with payloads
of every byte value (0..255 both ways, CR and LF, NUL, empty): Java puts, the Python client
and libdeferd (deferctl work) consume; the Python client and libdeferd (deferctl put --file)
put, Java consumes (tests/java/org/deferd/InteropTool.java). Each side must get exactly the
bytes the other put, keyed by the job's uid, and every job must be gone from ZooKeeper."""

from __future__ import annotations

import os
import subprocess
import tempfile
import unittest

import deferd
from harness import Daemon

PAYLOADS = [bytes(range(256)), bytes(range(255, -1, -1)) + b"\r\n\n", b"", b"\0\0\0\n",
            bytes(range(256)) * 3]


def java(*args: str, env: dict) -> str:
    p = subprocess.run([os.environ["DEFERD_JAVA"], "-cp", os.environ["DEFERD_JAVA_CP"],
                        "org.deferd.InteropTool", *args], env=env, capture_output=True,
                       timeout=60)
    if p.returncode != 0:
        raise AssertionError(f"InteropTool {args[0]} failed: {p.stderr.decode()}")
    return p.stdout.decode()


class Interop(unittest.TestCase):
    @classmethod
    def setUpClass(cls) -> None:
        cls.d = Daemon("java-interop", {q: "" for q in ("jp", "jc", "pj", "cj")}).start()
        cls.env = dict(os.environ, DEFERD_SOCKET=cls.d.sock)

    @classmethod
    def tearDownClass(cls) -> None:
        cls.d.stop()

    def files(self, tmp: str) -> list:
        paths = []
        for i, p in enumerate(PAYLOADS):
            path = os.path.join(tmp, f"p{i}")
            with open(path, "wb") as f:
                f.write(p)
            paths.append(path)
        return paths

    def java_put(self, queue: str, tmp: str) -> dict:
        """Java puts PAYLOADS into queue; returns payload by uid."""
        ids = java("put", queue, *self.files(tmp), env=self.env).split()
        self.assertEqual(len(ids), len(PAYLOADS))
        return {deferd.job_uid(i): p for i, p in zip(ids, PAYLOADS)}

    def java_take(self, queue: str, tmp: str) -> dict:
        out = os.path.join(tmp, "out")
        os.mkdir(out)
        java("take", queue, str(len(PAYLOADS)), out, env=self.env)
        got = {}
        for uid in os.listdir(out):
            with open(os.path.join(out, uid), "rb") as f:
                got[uid] = f.read()
        return got

    def test_java_put_python_consume(self) -> None:
        with tempfile.TemporaryDirectory() as tmp:
            want = self.java_put("jp", tmp)
        got = {}
        with self.d.client() as c:
            c.subscribe(["jp"], inflight=len(PAYLOADS))
            for _ in PAYLOADS:
                job = c.next_job(timeout=20)
                self.assertIsNotNone(job)
                got[job.uid] = job.payload
                job.ack()
            c.flush()
        self.assertEqual(got, want)
        self.assertEqual(self.d.jobs("jp"), [])

    def test_java_put_c_consume(self) -> None:
        with tempfile.TemporaryDirectory() as tmp:
            want = self.java_put("jc", tmp)
            out = os.path.join(tmp, "out")
            os.mkdir(out)
            subprocess.run([os.environ["DEFERCTL_BIN"], "-s", self.d.sock, "work", "-q", "jc",
                            "--max-jobs", str(len(PAYLOADS)), "--", "sh", "-c",
                            f'cat > "{out}/$DEFERD_JOB_UID"'], check=True, timeout=60)
            got = {}
            for uid in os.listdir(out):
                with open(os.path.join(out, uid), "rb") as f:
                    got[uid] = f.read()
        self.assertEqual(got, want)
        self.assertEqual(self.d.jobs("jc"), [])

    def test_python_put_java_consume(self) -> None:
        with self.d.client() as c:
            want = {deferd.job_uid(c.put("pj", p).id): p for p in PAYLOADS}
        with tempfile.TemporaryDirectory() as tmp:
            self.assertEqual(self.java_take("pj", tmp), want)
        self.assertEqual(self.d.jobs("pj"), [])

    def test_c_put_java_consume(self) -> None:
        want = {}
        with tempfile.TemporaryDirectory() as tmp:
            for path, p in zip(self.files(tmp), PAYLOADS):
                out = subprocess.run([os.environ["DEFERCTL_BIN"], "-s", self.d.sock, "put",
                                      "-q", "cj", "--file", path], check=True,
                                     capture_output=True, timeout=30)
                want[deferd.job_uid(out.stdout.decode().strip())] = p
            self.assertEqual(self.java_take("cj", tmp), want)
        self.assertEqual(self.d.jobs("cj"), [])


if __name__ == "__main__":
    unittest.main()
