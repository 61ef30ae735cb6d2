"""Runs the examples of docs/java.md against a real deferd (ctest java.docs).

Each ```java block whose first line is `// Name.java` is compiled with the build's javac
against deferd.jar, and run with DEFERD_SOCKET pointing at a private daemon whose queues are
etc/deferd.ini's (so that an example naming a queue the sample config lacks fails as it would
for a user): the producer's jobs must reach the consumer and be acked. The worker: the
page's ```sh command `java -cp /usr/share/java/deferd.jar:. org.deferd.Worker ...` runs
(the build's jar standing in for the installed one) in the directory of the compiled
SendEmail until the producer's jobs are gone, then gets SIGTERM and must exit 0."""

from __future__ import annotations

import os
import re
import shlex
import shutil
import subprocess
import tempfile
import unittest

from harness import Daemon, named_blocks, run_until_then_term, sample_queues, sh_commands

DOC = os.environ.get("DEFERD_JAVA_DOCS") or os.path.join(
    os.path.dirname(__file__), "..", "..", "docs", "java.md")
JAR = os.environ.get("DEFERD_JAR", "")


def blocks() -> dict:
    """The page's ```java blocks by the class their first line names (// Name.java)."""
    return named_blocks(DOC, "java", r"// (\w+)\.java\n")


class Examples(unittest.TestCase):
    @classmethod
    def setUpClass(cls) -> None:
        cls.dir = tempfile.mkdtemp(prefix="deferd-java-docs-")
        srcs = []
        for name, code in blocks().items():
            path = os.path.join(cls.dir, f"{name}.java")
            with open(path, "w") as f:
                f.write(code)
            srcs.append(path)
        p = subprocess.run([os.environ["DEFERD_JAVAC"], "--release", "17", "-Xlint:all",
                            "-Werror", "-cp", JAR, "-d", cls.dir, *srcs], capture_output=True,
                           text=True, timeout=120)
        if p.returncode != 0:
            raise AssertionError(f"the examples do not compile:\n{p.stderr}")

    @classmethod
    def tearDownClass(cls) -> None:
        shutil.rmtree(cls.dir, ignore_errors=True)

    def run_example(self, name: str, env: dict) -> str:
        p = subprocess.run([os.environ["DEFERD_JAVA"], "-cp", f"{JAR}:{self.dir}", name],
                           env=env, timeout=60, capture_output=True, text=True)
        self.assertEqual(p.returncode, 0, f"{name}: {p.stderr}")
        return p.stdout

    def produce(self, d: Daemon) -> dict:
        env = dict(os.environ, DEFERD_SOCKET=d.sock)
        out = self.run_example("Producer", env)
        self.assertEqual(len(re.findall(r"^stored emails/", out, re.M)), 3, out)
        self.assertIn("\nduplicate\n", out)
        self.assertIn("refused: UNKNOWN_QUEUE", out)
        self.assertEqual(len(d.jobs("emails")), 3)
        return env

    def test_examples_are_all_here(self) -> None:
        self.assertEqual(sorted(blocks()), ["Consumer", "Producer", "SendEmail"])

    def test_producer_then_consumer(self) -> None:
        d = Daemon("java-docs", sample_queues()).start()
        try:
            env = self.produce(d)
            out = self.run_example("Consumer", env)
            self.assertEqual(len(re.findall(r"^sending \S+@example.org$", out, re.M)), 3, out)
            self.assertEqual(d.jobs("emails"), [])  # every ack answered: gone from ZooKeeper
            self.assertEqual(d.queue_stat("emails", "acked"), 3)
        finally:
            d.stop()

    def test_worker(self) -> None:
        [cmd] = [c for c in sh_commands(DOC) if " org.deferd.Worker " in c]
        argv = shlex.split(cmd)
        self.assertEqual(argv[0], "java")
        argv[0] = os.environ["DEFERD_JAVA"]
        argv[2] = argv[2].replace("/usr/share/java/deferd.jar", JAR)
        d = Daemon("java-docsw", sample_queues()).start()
        try:
            env = self.produce(d)
            _, log = run_until_then_term(
                argv, self.dir, env,
                lambda out: len(re.findall(r"^sending to \S+ \(attempt 1\)$", out, re.M)) == 3
                and d.jobs("emails") == [],
                "the worker ran the 3 jobs and they are gone from ZooKeeper")
            self.assertEqual(len(re.findall(r"event=job_done queue=emails .* uid=\w+", log)), 3, log)
            self.assertEqual(d.queue_stat("emails", "acked"), 3)
        finally:
            d.stop()


if __name__ == "__main__":
    unittest.main()
