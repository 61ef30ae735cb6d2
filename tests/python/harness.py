"""Starts a private deferd for a Python test, as tests/integration/harness.c does.

The ctest fixture `zk` runs one ZooKeeper (packaging/zk-sandbox) whose port is in
$DEFERD_TEST_ZKDIR/port; each Daemon gets a temp dir with its config, socket and log, and a
ZooKeeper root of its own, so tests never see each other's jobs.
What is in a queue is read from ZooKeeper itself with `$DEFERCTL_BIN list --json`
(STATS' `pending` counts only what the daemon mirrors: jobs due within `lookahead` of
queues it has consumers for).
"""

from __future__ import annotations

import configparser
import json
import os
import re
import shutil
import signal
import subprocess
import tempfile
import time
from typing import Callable, Dict, List, Optional, Sequence, Tuple

import deferd

CONFIG = """[daemon]
socket = {sock}
log_level = debug
max_payload = 4KiB
lookahead = 2s
drain_grace = 3s
[zookeeper]
hosts = {hosts}
root = {root}
session_timeout = 4s
[metrics]
listen = 127.0.0.1:0
"""


SAMPLE_CONFIG = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "etc",
                             "deferd.ini")


def sample_queues() -> Dict[str, str]:
    """The [queue NAME] sections of etc/deferd.ini with their settings, for a Daemon: examples
    run against these fail, as they would for a user, when they name a queue it lacks."""
    ini = configparser.ConfigParser(inline_comment_prefixes=(";", "#"), interpolation=None)
    ini.read(SAMPLE_CONFIG)
    queues = {sec.split(None, 1)[1]: "\n".join(f"{k} = {v}" for k, v in ini[sec].items())
              for sec in ini.sections() if sec.startswith("queue ")}
    if not queues:
        raise RuntimeError(f"no [queue ...] section read from {SAMPLE_CONFIG}")
    return queues


def wait_for(cond: Callable[[], object], what: str, timeout: float = 20.0) -> object:
    """Polls ``cond`` until it returns something true; AssertionError after ``timeout`` s."""
    deadline = time.monotonic() + timeout
    while True:
        value = cond()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"not within {timeout} s: {what}")
        time.sleep(0.02)


def named_blocks(page: str, lang: str, first_line: str) -> Dict[str, str]:
    """A doc page's ```LANG blocks by the name their first line gives (the regular expression
    ``first_line``'s group 1, e.g. ``# (\\w+)\\.py``); blocks without one are left out."""
    with open(page) as f:
        text = f.read()
    out = {}
    for code in re.findall(rf"^```{lang}\n(.*?)^```$", text, re.S | re.M):
        m = re.match(first_line, code)
        if m:
            out[m.group(1)] = code
    return out


def sh_commands(page: str) -> List[str]:
    """The non-blank lines of a doc page's ```sh blocks."""
    with open(page) as f:
        text = f.read()
    return [line for code in re.findall(r"^```sh\n(.*?)^```$", text, re.S | re.M)
            for line in code.splitlines() if line.strip()]


def run_until_then_term(argv: Sequence[str], cwd: str, env: Dict[str, str],
                        done: Callable[[str], bool], what: str) -> Tuple[str, str]:
    """Runs a worker until ``done(its stdout so far)``, then SIGTERM: it must exit 0 within
    30 s. Returns its stdout and stderr (kept in files in ``cwd``); the assertion that fails
    says what it printed."""
    out_path, err_path = os.path.join(cwd, "out"), os.path.join(cwd, "err")

    def text(path: str) -> str:
        with open(path) as f:
            return f.read()
    with open(out_path, "w") as out, open(err_path, "w") as err:
        p = subprocess.Popen(list(argv), cwd=cwd, env=env, stdout=out, stderr=err)
    try:
        try:
            wait_for(lambda: done(text(out_path)), what)
        except AssertionError as e:
            raise AssertionError(f"{e}; stdout:\n{text(out_path)}\nstderr:\n"
                                 f"{text(err_path)}") from None
        p.send_signal(signal.SIGTERM)
        rc = p.wait(30)
        if rc != 0:
            raise AssertionError(f"exit status {rc} after SIGTERM; stderr:\n{text(err_path)}")
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()
    return text(out_path), text(err_path)


class Daemon:
    """One deferd process. ``queues`` maps queue names to their config lines."""

    def __init__(self, name: str, queues: Dict[str, str]) -> None:
        zkdir = os.environ.get("DEFERD_TEST_ZKDIR")
        self.bin = os.environ.get("DEFERD_BIN")
        if not zkdir or not self.bin:
            raise RuntimeError("DEFERD_TEST_ZKDIR and DEFERD_BIN not set (run through ctest)")
        with open(os.path.join(zkdir, "port")) as f:
            port = int(f.read().strip())
        self.dir = tempfile.mkdtemp(prefix=f"deferd-py-{name}-")
        self.sock = os.path.join(self.dir, "deferd.sock")
        self.log = os.path.join(self.dir, "deferd.log")
        self.root = f"/py-{name}-{os.getpid()}"
        text = CONFIG.format(sock=self.sock, hosts=f"127.0.0.1:{port}", root=self.root)
        for q, lines in queues.items():
            text += f"[queue {q}]\n{lines.strip()}\n" if lines.strip() else f"[queue {q}]\n"
        self.config = os.path.join(self.dir, "deferd.ini")
        with open(self.config, "w") as f:
            f.write(text)
        self.proc: Optional[subprocess.Popen[bytes]] = None
        self.killed_on_purpose = False

    def start(self) -> "Daemon":
        """Spawns deferd, waits for its socket to answer PING and its ZooKeeper session."""
        with open(self.log, "ab") as log:
            self.proc = subprocess.Popen([self.bin, "-c", self.config], stdout=log, stderr=log)
        wait_for(self._ready, f"deferd answers PING (log: {self.log})", 30)
        wait_for(lambda: self.stat("zk_state") == "CONNECTED",
                 "deferd's ZooKeeper session is up", 30)
        wait_for(lambda: self.stat("clock_state") != "unsynced",
                 "deferd read ZooKeeper's clock (puts are refused until then)", 30)
        return self

    def _ready(self) -> bool:
        assert self.proc is not None
        if self.proc.poll() is not None:
            raise AssertionError(f"deferd exited early ({self.proc.returncode}); see {self.log}")
        try:
            with deferd.Client(self.sock, timeout=5) as c:
                c.ping()
            return True
        except OSError:
            return False

    def client(self, **kw: object) -> deferd.Client:
        """A new connection (20 s reply timeout unless given)."""
        kw.setdefault("timeout", 20.0)
        return deferd.Client(self.sock, **kw)  # type: ignore[arg-type]

    def stat(self, field: str) -> object:
        with self.client() as c:
            return c.stats()[field]

    def jobs(self, queue: str) -> list:
        """The ids of the queue's jobs in ZooKeeper (deferctl list), in due order."""
        ctl = os.environ.get("DEFERCTL_BIN")
        if not ctl:
            raise RuntimeError("DEFERCTL_BIN not set (run through ctest)")
        out = subprocess.run([ctl, "-c", self.config, "list", queue, "--json",
                              "--limit", "10000"], check=True, capture_output=True, timeout=30)
        return [j["id"] for j in json.loads(out.stdout)["jobs"]]

    def queue_stat(self, queue: str, field: str) -> object:
        with self.client() as c:
            return c.stats(queue)[field]

    def killed(self) -> None:
        """The test killed deferd on purpose (SIGKILL): reaped here; stop() then reports no
        unclean exit and removes the temp dir as after a clean one."""
        assert self.proc is not None
        self.proc.wait(10)
        self.proc = None
        self.killed_on_purpose = True

    def stop(self) -> None:
        """SIGTERM by pid, waits; the temp dir goes unless the daemon failed."""
        if self.proc is None:
            if self.killed_on_purpose:
                shutil.rmtree(self.dir, ignore_errors=True)
            return
        if self.proc.poll() is None:
            os.kill(self.proc.pid, signal.SIGTERM)
            try:
                self.proc.wait(20)
            except subprocess.TimeoutExpired:
                os.kill(self.proc.pid, signal.SIGKILL)
                self.proc.wait()
        ok = self.proc.returncode == 0
        self.proc = None
        if ok:
            shutil.rmtree(self.dir, ignore_errors=True)
        else:
            raise AssertionError(f"deferd did not exit cleanly; see {self.log}")
