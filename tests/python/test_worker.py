"""`python3 -m deferd.worker` against a real deferd and ZooKeeper (ctest: python.worker): ack on
return, nack on exception, Retry delays, concurrency, lease renewal, an expired lease, SIGTERM,
--max-jobs, a killed worker, a draining daemon and connecting again, usage errors. The
handlers are tests/python/worker_handlers.py; they write what they saw to a file that the
tests read."""

from __future__ import annotations

import gc
import io
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import unittest
from typing import Callable, Dict, List, Optional

import deferd
from harness import Daemon, wait_for

HERE = os.path.dirname(os.path.abspath(__file__))
SRC = os.path.join(HERE, "..", "..", "src", "python")
QUEUES = {
    "ack": "priority = 5", "fail": "backoff_min = 0", "retry": "backoff_min = 0",
    "conc": "", "lease": "ttr = 1s", "expire": "ttr = 1s\nbackoff_min = 0", "term": "",
    "maxj": "", "kill": "", "usage": "", "free": "", "crawl": "", "report": "",
    "thenfail": "backoff_min = 0",
}
D: Daemon


def setUpModule() -> None:
    global D
    D = Daemon("worker", QUEUES).start()


def tearDownModule() -> None:
    D.stop()


def logfmt(line: str) -> Dict[str, str]:
    """A `key=value` log line as a dict (quoted values are JSON strings)."""
    out: Dict[str, str] = {}
    dec = json.JSONDecoder()
    i = 0
    while i < len(line):
        eq = line.index("=", i)
        key = line[i:eq]
        if line[eq + 1:eq + 2] == '"':
            value, end = dec.raw_decode(line, eq + 1)
        else:
            end = line.find(" ", eq + 1)
            end = len(line) if end < 0 else end
            value = line[eq + 1:end]
        out[key] = value
        i = end + 1
    return out


class Worker:
    """One `python3 -m deferd.worker` child with its own WORKER_DIR and stderr file."""

    def __init__(self, handler: str, *args: str, socket: Optional[str] = None) -> None:
        self.dir = tempfile.mkdtemp(prefix="deferd-worker-test-")
        env = dict(os.environ, WORKER_DIR=self.dir,
                   PYTHONPATH=os.pathsep.join([SRC, HERE]))
        self.err_path = os.path.join(self.dir, "stderr")
        self.sock = socket or D.sock
        with open(self.err_path, "wb") as err:
            self.proc = subprocess.Popen(
                [sys.executable, "-m", "deferd.worker", "--socket", self.sock, *args,
                 handler], env=env, stdout=subprocess.DEVNULL, stderr=err, cwd=HERE)

    def events(self, ev: Optional[str] = None) -> List[dict]:
        """What the handlers wrote (`ev`: only those events)."""
        try:
            with open(os.path.join(self.dir, "log")) as f:
                recs = [json.loads(line) for line in f]
        except FileNotFoundError:
            return []
        return [r for r in recs if ev is None or r["ev"] == ev]

    def stderr(self) -> str:
        with open(self.err_path) as f:
            return f.read()

    def log(self, event: str) -> List[Dict[str, str]]:
        """The worker's stderr lines of one event, parsed."""
        return [f for f in map(logfmt, self.stderr().splitlines()) if f.get("event") == event]

    def release(self) -> None:
        open(os.path.join(self.dir, "release"), "w").close()

    def wait(self, timeout: float = 30) -> int:
        try:
            return self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
            raise AssertionError(f"worker did not exit in {timeout} s: {self.stderr()}\n"
                                 f"{self.daemon_log_tail()}")

    def daemon_log_tail(self, lines: int = 60) -> str:
        """The end of the log of the deferd it talked to (beside its socket), for a failure."""
        try:
            with open(os.path.join(os.path.dirname(self.sock), "deferd.log")) as f:
                return "deferd.log, last lines:\n" + "".join(f.readlines()[-lines:])
        except OSError as e:
            return f"(no deferd.log: {e})"

    def until(self, cond: Callable[[], object], what: str, timeout: float = 20.0) -> object:
        """wait_for, and on failure this worker's stderr and its deferd's log tail."""
        try:
            return wait_for(cond, what, timeout)
        except AssertionError as e:
            raise AssertionError(f"{e}\nworker stderr:\n{self.stderr()}\n"
                                 f"{self.daemon_log_tail()}") from None

    def close(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()
        shutil.rmtree(self.dir, ignore_errors=True)


class WorkerTest(unittest.TestCase):
    def worker(self, handler: str, *args: str, **kw: str) -> Worker:
        w = Worker(f"worker_handlers:{handler}", *args, **kw)
        self.addCleanup(w.close)
        return w

    def put(self, queue: str, *payloads: str) -> List[str]:
        with D.client() as c:
            return [c.put(queue, p.encode()).id for p in payloads]

    def take(self, queue: str, n: int) -> list:
        """Consumes n jobs of the queue with a plain client (acked): their deliveries."""
        with D.client() as c:
            c.subscribe(queue, inflight=n)
            jobs = [c.next_job(timeout=20) for _ in range(n)]
            self.assertNotIn(None, jobs)
            for j in jobs:
                j.ack()
            c.flush()
        return jobs

    def assertExit(self, w: Worker, code: int) -> None:
        self.assertEqual(w.wait(), code, w.stderr())


class Settle(WorkerTest):
    def test_ack_on_return(self) -> None:
        ids = self.put("ack", "a", "b", "c")
        w = self.worker("record", "--queue", "ack", "--concurrency", "2", "--max-jobs", "3")
        self.assertExit(w, 0)
        done = w.events("done")
        self.assertEqual(sorted(r["payload"] for r in done), ["a", "b", "c"])
        self.assertEqual(sorted(r["id"] for r in done), sorted(ids))
        for r in done:
            self.assertEqual((r["queue"], r["group"], r["attempt"], r["priority"]),
                             ("ack", "", 1, 5))
            self.assertLessEqual(r["due_ms"] / 1000, r["t"])
        self.assertEqual(D.jobs("ack"), [])  # every ack applied
        self.assertEqual(D.queue_stat("ack", "acked"), 3)
        self.assertEqual(w.log("stopped")[0]["exit"], "0")

    def test_nack_on_exception_then_higher_attempt(self) -> None:
        [jid] = self.put("fail", "x")
        w = self.worker("fail_once", "-q", "fail", "--max-jobs", "2", "--log-format", "json")
        self.assertExit(w, 0)
        self.assertEqual([(r["ev"], r["attempt"]) for r in w.events()], [("fail", 1), ("done", 2)])
        lines = [json.loads(line) for line in w.stderr().splitlines()]
        failed = [f for f in lines if f["event"] == "job_failed"]
        self.assertEqual(len(failed), 1, lines)
        f = failed[0]
        self.assertEqual((f["level"], f["queue"], f["id"], f["attempt"], f["error_type"],
                          f["error"], f["retry_in"]),
                         ("error", "fail", jid, 1, "ValueError", "boom x", "backoff"))
        self.assertTrue(f["at"].startswith("worker_handlers.py:"), f)
        self.assertEqual([f for f in lines if f["event"] == "job_retry"], [])
        self.assertEqual(D.jobs("fail"), [])

    def test_handler_grows_its_flow(self) -> None:
        # ack_join: the seed's two links join its flow; the parent comes after all three
        with D.client() as c:
            res = c.put_flow(deferd.Put("report", b"report"), [deferd.Put("crawl", b"seed")])
        parent = res.results[0].id
        w = self.worker("crawl", "-q", "crawl", "-c", "2", "--max-jobs", "3", "-v")
        self.assertExit(w, 0)
        self.assertEqual(sorted(r["payload"] for r in w.events("done")),
                         ["link1", "link2", "seed"])
        seed = [f for f in w.log("job_done") if f.get("followups")]
        self.assertEqual([f["followups"] for f in seed], ["2"], w.stderr())
        self.assertEqual(D.jobs("crawl"), [])
        [p] = self.take("report", 1)
        self.assertEqual(p.id, parent)

    def test_followups_dropped_when_the_handler_fails(self) -> None:
        self.put("thenfail", "x")
        w = self.worker("then_fail", "-q", "thenfail", "--max-jobs", "2")
        self.assertExit(w, 0)
        self.assertEqual([(r["ev"], r["payload"], r["attempt"]) for r in w.events()],
                         [("fail", "x", 1), ("done", "x", 2)])
        self.assertEqual(D.jobs("thenfail"), [])  # "never" was not created
        self.put("thenfail", "y")
        w = self.worker("bad_followup", "-q", "thenfail", "--max-jobs", "1")
        self.assertExit(w, 0)
        [failed] = w.log("job_failed")
        self.assertEqual(failed["error_type"], "TypeError", w.stderr())
        self.assertEqual(len(D.jobs("thenfail")), 1)  # nacked, back for its next attempt
        self.take("thenfail", 1)

    def test_settled_jobs_are_not_kept(self) -> None:
        # a worker that runs for months must not keep the jobs it finished (nor payloads):
        # at most the renewal entries not compacted yet (64 beyond twice what it holds)
        import deferd
        import deferd.worker
        with D.client() as c:
            c.put_batch([("free", f"f{i}".encode()) for i in range(300)])
        log = io.StringIO()
        w = deferd.worker.Worker(lambda job: None, ["free"], concurrency=4,
                                 socket_path=D.sock, max_jobs=300,
                                 log=deferd.worker.Log(stream=log))
        self.assertEqual(w.run(), 0, log.getvalue())
        self.assertEqual(w.acked, 300, log.getvalue())
        gc.collect()
        kept = [o for o in gc.get_objects() if isinstance(o, deferd.Job) and o.queue == "free"]
        self.assertLessEqual(len(kept), 64 + 1, f"{len(kept)} finished jobs still referenced")
        self.assertLessEqual(len(w._renew), 64 + 1)

    def test_retry_delay_honoured(self) -> None:
        self.put("retry", "retry", "attr")  # backoff_min = 0: without the delay, at once
        w = self.worker("retry_once", "-q", "retry", "-c", "2", "--max-jobs", "4")
        self.assertExit(w, 0)
        for payload in ("retry", "attr"):
            evs = [r for r in w.events() if r["payload"] == payload]
            self.assertEqual([(r["ev"], r["attempt"]) for r in evs], [("fail", 1), ("done", 2)])
            fail, done = evs
            # moved to a later due time: a new id, the same uid (the job's identity)
            self.assertNotEqual(done["id"], fail["id"])
            self.assertTrue(fail["uid"] and done["uid"] == fail["uid"], evs)
            self.assertGreaterEqual(done["due_ms"] / 1000, fail["t"] + 2 - 0.05, evs)
            self.assertGreaterEqual(done["t"], fail["t"] + 2 - 0.05, evs)
        # An asked-for retry is no error (issue 38): its own event at info, with the delay.
        self.assertEqual(w.log("job_failed"), [])
        retries = w.log("job_retry")
        self.assertEqual(sorted((f["level"], f["delay_ms"], f["attempt"], f["error_type"])
                                for f in retries),
                         [("info", "2000", "1", "deferd.worker.Retry"),
                          ("info", "2000", "1", "worker_handlers.Later")], retries)
        [stopped] = w.log("stopped")
        self.assertEqual((stopped["failed"], stopped["retried"]), ("0", "2"), stopped)
        self.assertEqual(D.jobs("retry"), [])


class Running(WorkerTest):
    def test_concurrency_is_n_at_once(self) -> None:
        self.put("conc", *[f"j{i}" for i in range(6)])
        w = self.worker("block", "-q", "conc", "-c", "3", "--inflight", "6", "--max-jobs", "6")
        w.until(lambda: len(w.events("start")) == 3, "3 handlers running at once")
        # All 6 are pushed to the worker, yet only 3 run: the others wait for a thread.
        w.until(lambda: D.queue_stat("conc", "inflight") == 6, "6 jobs pushed to the worker")
        self.assertEqual(len(w.events("start")), 3)
        w.release()
        self.assertExit(w, 0)
        starts = w.events("start")
        self.assertEqual(len(starts), 6)
        self.assertEqual(max(r["running"] for r in starts), 3)  # reached 3, never more
        self.assertEqual(len(w.events("done")), 6)
        self.assertEqual(D.jobs("conc"), [])

    def test_lease_renewed_while_handler_runs(self) -> None:
        self.put("lease", "3")  # ttr 1 s, the handler takes 3 s
        w = self.worker("sleep", "-q", "lease", "--max-jobs", "1")
        self.assertExit(w, 0)
        self.assertEqual([(r["ev"], r["attempt"]) for r in w.events()], [("done", 1)])
        self.assertEqual(D.jobs("lease"), [])
        for field, value in (("acked", 1), ("delivered", 1), ("expired", 0)):
            self.assertEqual(D.queue_stat("lease", field), value, field)
        self.assertEqual(w.log("lease_expired") + w.log("settle_failed"), [])

    def test_expired_lease_logged_and_failed_ack_survived(self) -> None:
        [jid] = self.put("expire", "e")
        w = self.worker("block", "-q", "expire", "--max-jobs", "2")
        w.until(lambda: w.events("start"), "the handler started")
        os.kill(w.proc.pid, signal.SIGSTOP)  # no renewal: the 1 s lease runs out
        try:
            w.until(lambda: D.queue_stat("expire", "expired") == 1, "the lease expired")
        finally:
            os.kill(w.proc.pid, signal.SIGCONT)
        w.release()
        self.assertExit(w, 0)  # the job came again (attempt 2) and was acked
        self.assertEqual([(r["ev"], r["attempt"]) for r in w.events("done")], [("done", 1),
                                                                               ("done", 2)])
        [expired] = w.log("lease_expired")
        self.assertEqual((expired["id"], expired["running"]), (jid, "True"))
        [failed] = w.log("settle_failed")
        self.assertEqual((failed["id"], failed["action"], failed["code"]),
                         (jid, "ack", "LEASE_LOST"))
        self.assertEqual(D.jobs("expire"), [])


class Leaving(WorkerTest):
    def test_sigterm_finishes_running_gives_back_prefetched(self) -> None:
        self.put("term", "t1", "t2", "t3", "t4")
        w = self.worker("block", "-q", "term", "-c", "2", "--inflight", "4")
        w.until(lambda: len(w.events("start")) == 2, "2 handlers running")
        w.until(lambda: D.queue_stat("term", "inflight") == 4, "2 more pushed ahead")
        w.proc.send_signal(signal.SIGTERM)
        # The 2 prefetched go back while the 2 running still run (blocked): it waits.
        w.until(lambda: D.queue_stat("term", "inflight") == 2, "prefetched jobs given back")
        self.assertIsNone(w.proc.poll())
        w.release()
        self.assertExit(w, 0)
        ran = sorted(r["payload"] for r in w.events("done"))
        self.assertEqual(len(ran), 2)
        self.assertEqual(len(D.jobs("term")), 2)  # the running ones acked, the rest there
        back = self.take("term", 2)
        self.assertEqual(sorted([j.payload.decode() for j in back] + ran),
                         ["t1", "t2", "t3", "t4"])
        self.assertEqual([j.attempt for j in back], [1, 1])  # no attempt spent
        [stopped] = w.log("stopped")
        self.assertEqual((stopped["reason"], stopped["acked"], stopped["given_back"]),
                         ("SIGTERM", "2", "2"))

    def test_max_jobs(self) -> None:
        self.put("maxj", *[f"m{i}" for i in range(5)])
        w = self.worker("record", "-q", "maxj", "-c", "2", "--max-jobs", "3")
        self.assertExit(w, 0)
        self.assertEqual(len(w.events("done")), 3)
        self.assertEqual(len(D.jobs("maxj")), 2)
        self.assertEqual([j.attempt for j in self.take("maxj", 2)], [1, 1])

    def test_killed_worker_job_redelivered_with_higher_attempt(self) -> None:
        self.put("kill", "k")
        w = self.worker("block", "-q", "kill")
        w.until(lambda: w.events("start"), "the handler started")
        os.kill(w.proc.pid, signal.SIGKILL)
        w.proc.wait()
        [again] = self.take("kill", 1)
        self.assertEqual((again.payload, again.attempt), (b"k", 2))


class DaemonRestart(WorkerTest):
    def test_killed_daemon_marks_running_jobs_lost(self) -> None:
        """deferd killed while a handler runs: the handler sees job.lost at once (its lock
        goes with deferd's session), so a long handler stops (docs/limits.md)."""
        d = Daemon("worker-lost", {"lostq": ""}).start()
        try:
            with d.client() as c:
                c.put("lostq", b"a")
            w = self.worker("until_lost", "-q", "lostq", socket=d.sock)
            w.until(lambda: w.events("start"), "the job started")
            assert d.proc is not None
            killed = time.monotonic()
            os.kill(d.proc.pid, signal.SIGKILL)
            d.killed()  # on purpose: not an unclean exit for stop() to report
            w.until(lambda: w.events("stopped"), "the handler saw job.lost", timeout=10)
            self.assertTrue(w.events("stopped")[0]["lost"])
            self.assertLess(time.monotonic() - killed, 5)
            w.proc.send_signal(signal.SIGTERM)
            w.proc.wait(30)
        finally:
            d.stop()

    def test_draining_daemon_then_reconnect(self) -> None:
        d = Daemon("worker-drain", {"dr": ""}).start()
        try:
            with d.client() as c:
                c.put("dr", b"a")
                c.put("dr", b"b")
            w = self.worker("block", "-q", "dr", "--inflight", "2", socket=d.sock)
            w.until(lambda: w.events("start"), "the first job started")
            w.until(lambda: d.queue_stat("dr", "inflight") == 2, "the second pushed ahead")
            assert d.proc is not None
            os.kill(d.proc.pid, signal.SIGTERM)
            w.until(lambda: any(f.get("state") == "DRAINING" for f in w.log("state")),
                     "the worker got STATE DRAINING")
            w.release()
            # deferd exits once nothing is held: the running job acked, the other given back.
            self.assertEqual(d.proc.wait(20), 0)
            w.until(lambda: w.log("disconnected"), "the worker saw deferd go")
            d.start()  # the same socket and ZooKeeper root
            w.until(lambda: len(w.events("done")) == 2, "the worker connected again")
            w.proc.send_signal(signal.SIGTERM)
            self.assertExit(w, 0)
            # the job given back unrun (whichever of the two came second: put in the same
            # millisecond, they are due at once) keeps its attempt unspent
            self.assertEqual(sorted((r["payload"], r["attempt"]) for r in w.events("done")),
                             [("a", 1), ("b", 1)])
            self.assertEqual(w.log("disconnected")[0]["level"], "warning")
            self.assertEqual(len(w.log("reconnected")), 1)
            self.assertEqual(d.jobs("dr"), [])
        finally:
            d.stop()


class Usage(WorkerTest):
    def run_usage(self, *args: str) -> subprocess.CompletedProcess:
        env = dict(os.environ, PYTHONPATH=os.pathsep.join([SRC, HERE]))
        return subprocess.run([sys.executable, "-m", "deferd.worker", *args], env=env,
                              cwd=HERE, capture_output=True, text=True, timeout=30)

    def test_bad_handler_exits_2(self) -> None:
        for spec, message in (
                ("no_such_module_xyz:run", "cannot import module 'no_such_module_xyz'"),
                ("worker_handlers:nosuch", "module 'worker_handlers' has no 'nosuch'"),
                ("worker_handlers", "expected MODULE:FUNCTION"),
                ("worker_handlers:NOT_CALLABLE", "is not callable")):
            p = self.run_usage("--socket", D.sock, "-q", "usage", spec)
            self.assertEqual(p.returncode, 2, (spec, p.stderr))
            self.assertIn(message, p.stderr, spec)
            self.assertEqual(p.stderr.count("\n"), 1, p.stderr)  # one clear line

    def test_other_usage_and_connection_errors(self) -> None:
        p = self.run_usage("worker_handlers:record")  # no --queue
        self.assertEqual(p.returncode, 2, p.stderr)
        p = self.run_usage("-q", "usage", "-c", "4", "--inflight", "2", "worker_handlers:record")
        self.assertEqual(p.returncode, 2, p.stderr)
        self.assertIn("below --concurrency", p.stderr)
        p = self.run_usage("--socket", D.sock, "-q", "nosuchqueue", "worker_handlers:record")
        self.assertEqual(p.returncode, 2, p.stderr)
        self.assertIn("UNKNOWN_QUEUE", p.stderr)
        p = self.run_usage("--socket", os.path.join(D.dir, "nosock"), "-q", "usage",
                           "worker_handlers:record")
        self.assertEqual(p.returncode, 1, p.stderr)
        [line] = [f for f in map(logfmt, p.stderr.splitlines())
                  if f.get("event") == "connect_failed"]
        self.assertEqual(line["code"], "CONNECT_FAILED", line)  # the client's own error


if __name__ == "__main__":
    unittest.main()
