"""The Python clients (sync and deferd.aio) against a scripted fake daemon: the bytes they
send, how they match replies in order among pushes, unknown pushes and codes, PARTIAL
(ctest: python.wire)."""

from __future__ import annotations

import errno
import io
import os
import re
import shutil
import socket
import tempfile
import threading
import asyncio
import unittest
from typing import List, Optional, Tuple

import deferd
import deferd.aio
import deferd.worker


# Two jobs pushed, both acked pipelined; the daemon closes before answering either.
ACKS_CUT_OFF = [
    (b"SUB q inflight=2\n",
     b"OK\nJOB q/1 q 1 1 0 30000 1\na\nJOB q/2 q 1 1 0 30000 1\nb\n"),
    (b"ACK q/1\nACK q/2\n", b""),
]


# SUB answered with the two jobs due before it in the same write.
SUB_WITH_JOBS = b"OK\nJOB q/1 q 1 1 0 30000 1\na\nJOB q/2 q 1 1 0 30000 1\nb\n"


# Where a request carries a put token the client made (" idem=<13 digits>-<16 hex>"): any
# bytes match; the tokens seen are kept in FakeDaemon.tokens.
TOKEN = b" idem=" + b"\0" * 30


def matches(expected: bytes, got: bytes, tokens: List[bytes]) -> bool:
    if len(expected) != len(got):
        return False
    at = expected.find(TOKEN)
    if at < 0:
        return expected == got
    tok = got[at + 6:at + len(TOKEN)]
    if not re.fullmatch(rb"[0-9]{13}-[0-9a-f]{16}", tok):
        return False
    tokens.append(tok)
    return expected[:at] == got[:at] and matches(expected[at + len(TOKEN):],
                                                 got[at + len(TOKEN):], tokens)


class FakeDaemon:
    """Accepts one connection; for each (expected, answer) reads exactly the expected bytes,
    records a mismatch, then writes the answer. Closes after the script."""

    def __init__(self, script: List[Tuple[bytes, bytes]]) -> None:
        self.dir = tempfile.mkdtemp(prefix="deferd-py-wire-")
        self.path = os.path.join(self.dir, "fake.sock")
        self.srv = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.srv.bind(self.path)
        self.srv.listen(1)
        self.script = script
        self.mismatch: Optional[str] = None
        self.tokens: List[bytes] = []
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _run(self) -> None:
        conn, _ = self.srv.accept()
        with conn:
            for expected, answer in self.script:
                got = b""
                while len(got) < len(expected):
                    chunk = conn.recv(len(expected) - len(got))
                    if not chunk:
                        break
                    got += chunk
                if not matches(expected, got, self.tokens) and self.mismatch is None:
                    self.mismatch = f"expected {expected!r}, got {got!r}"
                conn.sendall(answer)

    def done(self, test: unittest.TestCase) -> None:
        self.thread.join(10)
        self.srv.close()
        os.unlink(self.path)
        os.rmdir(self.dir)
        test.assertIsNone(self.mismatch)


# The push tests' start: SUB answered with two jobs and pushes around and between them; two
# pipelined ACKs answered only after the second, the second with an error.
PUSH_SCRIPT = [
    (b"SUB q,r inflight=2\n",
     b"JOB q/1 q 1 1000 5 30000 3 uid=u1\nx\ny\nDEADLINE q/1 200\nFUTURE thing\n"
     b"JOB r/2 r 3 2000 0 1000 0 later=x\n\nSTATE WEIRD\nOK\n"),
    (b"ACK q/1\n", b""),
    (b"ACK r/2\n", b"OK\nEXPIRED q/9\nERR NOT_FOUND job r/2 is not held here\n"),
]


def check_sub_pushes(test: unittest.TestCase, j1: Optional[deferd.BaseJob],
                     j2: Optional[deferd.BaseJob], events: List[deferd.Event]) -> None:
    """The two jobs of PUSH_SCRIPT's SUB parsed, its other pushes surfaced in order."""
    assert j1 is not None and j2 is not None
    test.assertEqual((j1.id, j1.queue, j1.attempt, j1.due_ms, j1.priority, j1.ttr_ms,
                      j1.payload), ("q/1", "q", 1, 1000, 5, 30000, b"x\ny"))
    test.assertEqual(j1.uid, "u1")
    # a key this client does not know is skipped; a job without uid= has None
    test.assertEqual((j2.id, j2.uid, j2.attempt, j2.ttr, j2.payload),
                     ("r/2", None, 3, 1.0, b""))
    test.assertEqual(events, [deferd.Deadline("q/1", 200, j1), deferd.UnknownPush("FUTURE thing"),
                              deferd.State("WEIRD")])
    test.assertEqual(j1.deadline_ms_left, 200)


MAYBE = b"ERR UNAVAILABLE the job may have been stored: the connection to ZooKeeper broke " \
        b"before its answer (connection loss)\n"
NOT_STORED = b"ERR UNAVAILABLE not stored (ZooKeeper did not come back within [daemon] " \
             b"hold_writes)\n"
KEYED = b"PUT q 1 key=k1\na\n"
TOKENED = b"PUT q 1" + TOKEN + b"\na\n"
UNKEYED = b"PUT q 1\na\n"
CURATOR_MAYBE = MAYBE[:-1] + b"; a Curator format queue keeps no put tokens: a retry may " \
                b"store it twice\n"
# A daemon older than refusal fields, whose words decide: a keyed put whose outcome is
# unknown is sent again, byte for byte, and its first try's job comes back as the key's
# duplicate; a put without a key carries a token of its own and is sent again with it;
# "not stored" is sent again; a Curator queue's "may have been stored" and a denial are
# raised at once; a daemon that refuses idem= gets the put without it, and no token from
# then on; with put_retry = 0 no token is made and nothing sent again.
RETRY_SCRIPT = [
    (KEYED, MAYBE), (KEYED, NOT_STORED), (KEYED, b"OK q/1-5-ab-kk1 duplicate\n"),
    (TOKENED, MAYBE), (TOKENED, NOT_STORED), (TOKENED, b"OK q/2\n"),
    (TOKENED, CURATOR_MAYBE),
    (TOKENED, b"ERR UNAVAILABLE not stored: permission denied by ZooKeeper\n"),
    (TOKENED, b"ERR BAD_REQUEST unknown or repeated option 'idem'\n"), (UNKEYED, b"OK q/3\n"),
    (UNKEYED, MAYBE),
]


# A daemon with refusal fields: they decide, though each text says the opposite. stored=no
# is sent again (the same token), then stored=maybe with a token; reason=permission and
# tokens=no are raised at once; a keyed stored=maybe is sent again; reason=draining is
# raised; option=prio is not idem, option=idem is: the put goes again without a token.
FIELDS_SCRIPT = [
    (TOKENED, b"ERR UNAVAILABLE stored=no reason=zookeeper ZooKeeper said no\n"),
    (TOKENED, b"ERR UNAVAILABLE stored=maybe reason=connection_lost gone\n"),
    (TOKENED, b"OK q/2\n"),
    (TOKENED, b"ERR UNAVAILABLE stored=no reason=permission not stored\n"),
    (TOKENED, b"ERR UNAVAILABLE stored=maybe reason=connection_lost tokens=no " + MAYBE[16:]),
    (KEYED, b"ERR UNAVAILABLE stored=maybe reason=connection_lost gone\n"),
    (KEYED, b"OK q/1-5-ab-kk1 duplicate\n"),
    (TOKENED, b"ERR UNAVAILABLE stored=no reason=draining not stored\n"),
    (TOKENED, b"ERR BAD_REQUEST option=prio unknown or repeated option 'idem'\n"),
    (TOKENED, b"ERR BAD_REQUEST option=idem unknown option\n"), (UNKEYED, b"OK q/3\n"),
]


def check_fields_errors(test: unittest.TestCase, errors: List[deferd.DeferdError],
                        tokens: List[bytes]) -> None:
    """What the puts of FIELDS_SCRIPT raised, and the tokens they sent."""
    test.assertEqual([(type(e), e.stored, e.reason) for e in errors], [
        (deferd.Unavailable, "no", "permission"), (deferd.Unavailable, "maybe", "connection_lost"),
        (deferd.Unavailable, "no", "draining"), (deferd.BadRequest, None, None)])
    test.assertEqual(errors[1].fields, {"stored": "maybe", "reason": "connection_lost",
                                        "tokens": "no"})
    test.assertEqual(tokens[0], tokens[2])
    test.assertEqual(len(set(tokens)), 6)


def check_retry_rules(test: unittest.TestCase) -> None:
    """put_retry_safe() and put_retry_pauses(), the rules both clients follow."""
    from deferd.client import put_retry_pauses, put_retry_safe
    maybe = deferd.DeferdError("the job may have been stored: (connection loss)", "UNAVAILABLE")
    test.assertTrue(put_retry_safe(maybe, True))
    test.assertFalse(put_retry_safe(maybe, False))
    test.assertTrue(put_retry_safe(maybe, False, True))
    curator = deferd.DeferdError(CURATOR_MAYBE.decode()[len("ERR UNAVAILABLE "):], "UNAVAILABLE")
    test.assertFalse(put_retry_safe(curator, False, True))
    test.assertTrue(put_retry_safe(deferd.DeferdError("not stored (x)", "UNAVAILABLE"), False))
    test.assertFalse(put_retry_safe(deferd.DeferdError("not stored (x)", "QUEUE_FULL"), True))
    test.assertFalse(put_retry_safe(deferd.DeferdError("deferd is stopping; the job was not "
                                                       "stored", "UNAVAILABLE"), True))
    # fields decide, whatever the words
    def err(text: str, code: str = "UNAVAILABLE") -> deferd.DeferdError:
        return deferd.DeferdError(text, code)
    test.assertTrue(put_retry_safe(err("stored=no reason=hold_expired"), False))
    test.assertTrue(put_retry_safe(err("stored=no reason=later_one stopping"), False))
    test.assertFalse(put_retry_safe(err("stored=no reason=draining not stored"), True, True))
    test.assertFalse(put_retry_safe(err("stored=no reason=permission not stored"), True))
    test.assertFalse(put_retry_safe(err("stored=maybe reason=connection_lost not stored"),
                                    False))
    test.assertTrue(put_retry_safe(err("stored=maybe reason=no_session"), False, True))
    test.assertFalse(put_retry_safe(err("stored=maybe reason=x tokens=no"), False, True))
    test.assertTrue(put_retry_safe(err("stored=maybe reason=x tokens=no"), True, True))
    test.assertFalse(put_retry_safe(err("stored=yes not stored"), True, True))
    test.assertFalse(put_retry_safe(err("stored=no reason=zookeeper", "QUEUE_FULL"), True))
    e = err("stored=no reason=max_connections too many connections")
    test.assertEqual((e.stored, e.reason, e.text), ("no", "max_connections",
                                                   "stored=no reason=max_connections too "
                                                   "many connections"))
    test.assertFalse(put_retry_safe(e, True, True))
    test.assertEqual(err("not stored: stored=no").fields, {})  # fields only at the front
    test.assertEqual(err("stored=no; x").fields, {})
    pauses = list(put_retry_pauses(10.0))
    test.assertEqual(pauses[:6], [0.1, 0.2, 0.4, 0.8, 1.6, 2.0])
    test.assertLessEqual(sum(pauses), 10.0)
    test.assertEqual(list(put_retry_pauses(0)), [])


class Wire(unittest.TestCase):
    def test_put_retried_when_safe(self) -> None:
        check_retry_rules(self)
        f = FakeDaemon(RETRY_SCRIPT)
        with deferd.Client(f.path, timeout=10) as c:
            self.assertEqual(c.put("q", "a", key="k1"), deferd.PutResult("q/1-5-ab-kk1", True))
            self.assertEqual(c.put("q", "a").id, "q/2")
            with self.assertRaises(deferd.Unavailable) as e:
                c.put("q", "a")
            self.assertIn("keeps no put tokens", e.exception.text)
            with self.assertRaises(deferd.Unavailable) as e:
                c.put("q", "a")
            self.assertIn("permission denied", e.exception.text)
            self.assertEqual(c.put("q", "a").id, "q/3")
            c.put_retry = 0
            with self.assertRaises(deferd.Unavailable) as e:
                c.put("q", "a")
            self.assertIn("may have been stored", e.exception.text)
        f.done(self)
        # the three tries of the second put sent one token; each put had its own
        self.assertEqual(f.tokens[0], f.tokens[1])
        self.assertEqual(f.tokens[1], f.tokens[2])
        self.assertEqual(len(set(f.tokens)), 4)

    def test_put_retried_by_fields(self) -> None:
        f = FakeDaemon(FIELDS_SCRIPT)
        errors: List[deferd.DeferdError] = []
        with deferd.Client(f.path, timeout=10) as c:
            self.assertEqual(c.put("q", "a").id, "q/2")
            for _ in range(2):
                with self.assertRaises(deferd.Unavailable) as e:
                    c.put("q", "a")
                errors.append(e.exception)
            self.assertEqual(c.put("q", "a", key="k1"), deferd.PutResult("q/1-5-ab-kk1", True))
            with self.assertRaises(deferd.Unavailable) as e:
                c.put("q", "a")
            errors.append(e.exception)
            with self.assertRaises(deferd.BadRequest) as e2:
                c.put("q", "a")
            errors.append(e2.exception)
            self.assertEqual(c.put("q", "a").id, "q/3")
        f.done(self)
        check_fields_errors(self, errors, f.tokens)

    def test_put_bytes_and_reply(self) -> None:
        f = FakeDaemon([
            (b"PUT q 3 delay=1500 prio=3 ttr=2000 key=k1\na\nb\n", b"OK q/1-3-ab duplicate\n"),
            (b"PUT q 0 at=1700000000000" + TOKEN + b"\n\n", b"OK q/2\n"),
            (b"BATCH 2\nPUT q 1\nx\nPUT r 1 delay=0\ny\n",
             b"OK n=2 parts=1 ids=q/3,r/4 dup=2\n"),
            (b"CANCEL q key=k1 force=1\n", b"OK q/1-3-ab\n"),
            (b"RESCHEDULE q/2 at=1700000005000\n", b"OK q/5\n"),
            (b"STATS\n", b"OK zk_state=CONNECTED txn.puts=3/2 lateness_p50_ms=2.5 x=-\n"),
            (b"PING\n", b"OK PONG\n"),
        ])
        with deferd.Client(f.path, timeout=10) as c:
            self.assertEqual(c.put("q", "a\nb", delay=1.5, priority=3, ttr=2, key="k1"),
                             deferd.PutResult("q/1-3-ab", True))
            self.assertEqual(c.put("q", b"", at=1700000000).id, "q/2")
            res = c.put_batch([("q", b"x"), deferd.Put("r", b"y", delay=0)])
            self.assertEqual(res.results, [deferd.PutResult("q/3"), deferd.PutResult("r/4", True)])
            self.assertEqual(c.cancel(queue="q", key="k1", force=True), "q/1-3-ab")
            self.assertEqual(c.reschedule("q/2", at=1700000005), "q/5")
            self.assertEqual(c.stats(), {"zk_state": "CONNECTED", "txn.puts": "3/2",
                                         "lateness_p50_ms": 2.5, "x": "-"})
            c.ping()
        f.done(self)

    def test_pushes_between_replies_and_pipelined_acks(self) -> None:
        events: List[deferd.Event] = []
        f = FakeDaemon([
            *PUSH_SCRIPT,
            (b"TOUCH q/1\n", b"ERR NEWCODE from a later daemon\n"),
        ])
        with deferd.Client(f.path, timeout=10, on_event=events.append) as c:
            c.subscribe(["q", "r"], inflight=2)
            j1, j2 = c.next_job(1), c.next_job(1)
            check_sub_pushes(self, j1, j2, events)
            assert j1 is not None and j2 is not None
            j1.ack()
            j2.ack()
            self.assertEqual(c.unanswered, 2)
            with self.assertRaises(deferd.NotFound) as e:
                c.flush()
            self.assertIs(e.exception.job, j2)
            self.assertEqual(e.exception.text, "job r/2 is not held here")
            self.assertIsNone(j1.reply.error if j1.reply else "no reply")
            self.assertEqual(events[-1], deferd.Expired("q/9", None))
            with self.assertRaises(deferd.DeferdError) as e2:
                j1.touch()
            self.assertEqual((type(e2.exception), e2.exception.code),
                             (deferd.DeferdError, "NEWCODE"))
        f.done(self)

    def test_jobs_read_with_the_sub_reply_are_ready_and_run(self) -> None:
        # The jobs come in the same read as SUB's OK, so the socket is not readable again:
        # a client that waited on fileno() first never saw them (a worker hung so, now and
        # then, when the jobs were due before it subscribed).
        f = FakeDaemon([(b"SUB q inflight=2\n", SUB_WITH_JOBS)])
        with deferd.Client(f.path, timeout=10) as c:
            c.subscribe("q", inflight=2)
            self.assertEqual(c.ready, 2)
            self.assertEqual(c.next_job(0).payload, b"a")  # type: ignore[union-attr]
            self.assertEqual(c.ready, 1)
        f.done(self)
        f = FakeDaemon([(b"SUB q inflight=2\n", SUB_WITH_JOBS),
                        (b"ACK q/1\nACK q/2\n", b"OK\nOK\n")])
        ran: List[bytes] = []
        both = threading.Event()

        def handler(job: deferd.worker.WorkerJob) -> None:
            ran.append(job.payload)
            if len(ran) == 2:
                both.set()
        w = deferd.worker.Worker(handler, ["q"], inflight=2, socket_path=f.path, reconnect=0,
                                 log=deferd.worker.Log(stream=io.StringIO()))
        t = threading.Thread(target=w.run, daemon=True)
        t.start()
        self.assertTrue(both.wait(10), f"the worker ran {ran} of the jobs that came with OK")
        t.join(10)  # the fake closes after the acks: the worker exits (reconnect=0)
        self.assertFalse(t.is_alive())
        self.assertEqual(sorted(ran), [b"a", b"b"])
        f.done(self)

    def test_partial_and_disconnect(self) -> None:
        f = FakeDaemon([
            (b"BATCH 1\nPUT q 1\nx\n",
             b"ERR PARTIAL stored=2 ids=q/1,q/2 dup=2; the rest was not stored: boom\n"),
            (b"PING\n", b""),
        ])
        with deferd.Client(f.path, timeout=10) as c:
            with self.assertRaises(deferd.Partial) as e:
                c.put_batch([("q", b"x")])
            self.assertEqual((e.exception.stored_ids, e.exception.duplicates), (["q/1", "q/2"],
                                                                               [1]))
            self.assertTrue(e.exception.retryable)
            with self.assertRaises(deferd.Disconnected):
                c.ping()
            with self.assertRaises(ConnectionError):
                c.ping()
        f.done(self)


    def test_acks_cut_off_by_a_disconnect_are_reported(self) -> None:
        # two pipelined acks, the daemon gone before answering them: flush() must not say
        # they went through
        f = FakeDaemon(ACKS_CUT_OFF)
        with deferd.Client(f.path, timeout=10) as c:
            c.subscribe("q", inflight=2)
            for _ in range(2):
                job = c.next_job(5)
                assert job is not None
                job.ack()
            with self.assertRaises(deferd.Disconnected) as e:
                c.flush()
            errors = [e.exception] + c.failed_acks()
            self.assertTrue(all(isinstance(x, deferd.Disconnected) for x in errors), errors)
            self.assertEqual({x.job.id for x in errors if x.job is not None}, {"q/1", "q/2"})
        f.done(self)


    def test_no_daemon_is_the_clients_own_error(self) -> None:
        # a missing socket file and one nobody listens on: ConnectFailed with the path and
        # the OS's errno, caught as the errors users already catch (issue 38)
        for path, errno_name in dead_sockets(self):
            with self.assertRaises(deferd.ConnectFailed) as e:
                deferd.Client(path, timeout=5)
            check_connect_failed(self, e.exception, path, errno_name)


    def test_version_is_the_projects(self) -> None:
        # one version for the whole tree: the C header's (CMake and the .debs read it)
        top = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
        with open(os.path.join(top, "include", "deferd", "client.h")) as f:
            parts = dict(re.findall(r"#define DEFERD_VERSION_(MAJOR|MINOR|PATCH) (\d+)", f.read()))
        want = f"{parts['MAJOR']}.{parts['MINOR']}.{parts['PATCH']}"
        self.assertEqual(deferd.__version__, want)
        with open(os.path.join(top, "src", "python", "pyproject.toml")) as f:
            self.assertIn(f'\nversion = "{want}"\n', f.read())


    def test_job_uid_from_the_id(self) -> None:
        # the name's third field, wherever the job lives; none for a Curator item
        self.assertEqual(deferd.job_uid("q/1763769605123-10-5f1e0c2a9b3d4e01"),
                         "5f1e0c2a9b3d4e01")
        self.assertEqual(deferd.job_uid("q/s1a2b3c4d-0/1-0-abc-a2-t30000-kK-1"), "abc")
        for bad in ("r/queue-|1A2016B292A|0000001999#2", "q/1-2-", "q/1-2-ABC", "q/x-2-abc",
                    "q/1-2-0123456789abcdefghijklmnopqrstuvw"):
            self.assertIsNone(deferd.job_uid(bad), bad)


    def test_flow_results_from_the_id(self) -> None:
        # a released on=complete parent's -r<acked>.<dead>; none elsewhere, none in a key
        self.assertEqual(deferd.job_flow_results("q/1-2-abc-gx-fp0-r998.2"), (998, 2))
        self.assertEqual(deferd.job_flow_results("q/s1/1-2-abc-a1-r0.4294967295"),
                         (0, 4294967295))
        for none in ("q/1-2-abc", "q/1-2-abc-kr1.2", "q/1-2-abc-r1", "q/1-2-abc-r01.1",
                     "q/1-2-abc-r1.4294967296"):
            self.assertIsNone(deferd.job_flow_results(none), none)


def dead_sockets(test: unittest.TestCase) -> List[Tuple[str, str]]:
    """Two paths no daemon answers on, with the errno connecting gives: no file; a socket
    file left by a process that is gone (bound, never listened)."""
    tmp = tempfile.mkdtemp(prefix="deferd-wire-")
    test.addCleanup(shutil.rmtree, tmp, True)
    stale = os.path.join(tmp, "stale.sock")
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
        s.bind(stale)
    return [(os.path.join(tmp, "missing.sock"), "ENOENT"), (stale, "ECONNREFUSED")]


def check_connect_failed(test: unittest.TestCase, err: BaseException, path: str,
                         errno_name: str) -> None:
    test.assertIsInstance(err, deferd.Disconnected)   # what pipelined users catch
    test.assertIsInstance(err, deferd.DeferdError)
    test.assertIsInstance(err, ConnectionError)       # and so OSError, as before
    assert isinstance(err, deferd.ConnectFailed)
    test.assertEqual((err.code, err.socket_path, errno.errorcode[err.errno or 0]),
                     ("CONNECT_FAILED", path, errno_name))
    test.assertTrue(err.retryable)
    test.assertIn(path, str(err))
    test.assertIn("DEFERD_SOCKET", str(err))          # where the path came from
    test.assertTrue(err.__suppress_context__)         # no raw OSError traceback above it


class AioWire(unittest.IsolatedAsyncioTestCase):
    """deferd.aio speaks the same bytes; concurrent tasks get their own replies."""

    async def test_no_daemon_is_the_clients_own_error(self) -> None:
        for path, errno_name in dead_sockets(self):
            with self.assertRaises(deferd.ConnectFailed) as e:
                async with deferd.aio.Client(path, timeout=5):
                    pass
            check_connect_failed(self, e.exception, path, errno_name)
            with self.assertRaises(deferd.ConnectFailed):
                await deferd.aio.Client.connect(path)

    async def test_put_retried_when_safe(self) -> None:
        f = FakeDaemon(RETRY_SCRIPT)
        async with deferd.aio.Client(f.path, timeout=10) as c:
            self.assertEqual(await c.put("q", "a", key="k1"),
                             deferd.PutResult("q/1-5-ab-kk1", True))
            self.assertEqual((await c.put("q", "a")).id, "q/2")
            with self.assertRaises(deferd.Unavailable):
                await c.put("q", "a")
            with self.assertRaises(deferd.Unavailable):
                await c.put("q", "a")
            self.assertEqual((await c.put("q", "a")).id, "q/3")
            c.put_retry = 0
            with self.assertRaises(deferd.Unavailable):
                await c.put("q", "a")
        f.done(self)

    async def test_put_retried_by_fields(self) -> None:
        f = FakeDaemon(FIELDS_SCRIPT)
        errors: List[deferd.DeferdError] = []
        async with deferd.aio.Client(f.path, timeout=10) as c:
            self.assertEqual((await c.put("q", "a")).id, "q/2")
            for _ in range(2):
                with self.assertRaises(deferd.Unavailable) as e:
                    await c.put("q", "a")
                errors.append(e.exception)
            self.assertEqual(await c.put("q", "a", key="k1"),
                             deferd.PutResult("q/1-5-ab-kk1", True))
            with self.assertRaises(deferd.Unavailable) as e:
                await c.put("q", "a")
            errors.append(e.exception)
            with self.assertRaises(deferd.BadRequest) as e2:
                await c.put("q", "a")
            errors.append(e2.exception)
            self.assertEqual((await c.put("q", "a")).id, "q/3")
        f.done(self)
        check_fields_errors(self, errors, f.tokens)

    async def test_requests_from_concurrent_tasks(self) -> None:
        f = FakeDaemon([
            (b"PUT q 3 delay=1500 prio=3 ttr=2000 key=k1\na\nb\n", b""),
            (b"BATCH 2\nPUT q 1\nx\nPUT r 1 delay=0\ny\n", b""),
            (b"PING\n", b"OK q/1-3-ab duplicate\nOK n=2 parts=1 ids=q/3,r/4 dup=2\nOK PONG\n"),
            (b"CANCEL q key=k1 force=1\n", b"OK q/1-3-ab\n"),
            (b"RESCHEDULE q/2 at=1700000005000\n", b"OK q/5\n"),
            (b"STATS q\n", b"OK queue=q put=3 lateness_p50_ms=2.5\n"),
            (b"UNSUB q,r\n", b"OK\n"),
        ])
        async with deferd.aio.Client(f.path, timeout=10) as c:
            # Sent in this order by three tasks; the daemon answers only after the third.
            put, batch, pong = await asyncio.gather(
                c.put("q", "a\nb", delay=1.5, priority=3, ttr=2, key="k1"),
                c.put_batch([("q", b"x"), deferd.Put("r", b"y", delay=0)]),
                c.ping())
            self.assertEqual(put, deferd.PutResult("q/1-3-ab", True))
            self.assertEqual(batch.results, [deferd.PutResult("q/3"),
                                             deferd.PutResult("r/4", True)])
            self.assertIsNone(pong)
            self.assertEqual(await c.cancel(queue="q", key="k1", force=True), "q/1-3-ab")
            self.assertEqual(await c.reschedule("q/2", at=1700000005), "q/5")
            self.assertEqual(await c.stats("q"), {"queue": "q", "put": 3,
                                                  "lateness_p50_ms": 2.5})
            await c.unsubscribe(["q", "r"])
        f.done(self)

    async def test_pushes_between_replies_and_pipelined_acks(self) -> None:
        events: List[deferd.Event] = []
        f = FakeDaemon([
            *PUSH_SCRIPT,
            (b"TOUCH q/1\n", b"JOB q/3 q 1 1 1 1000 1\nz\nERR NEWCODE from a later daemon\n"),
            (b"NACK q/3 unrun=1\n", b"OK\n"),
        ])
        async with deferd.aio.Client(f.path, timeout=10, on_event=events.append) as c:
            await c.subscribe(["q", "r"], inflight=2)
            j1, j2 = await c.next_job(1), await c.next_job(1)
            check_sub_pushes(self, j1, j2, events)
            assert j1 is not None and j2 is not None
            self.assertIsInstance(j1, deferd.aio.Job)
            r1 = await j1.ack()
            await j2.ack()
            self.assertIsInstance(r1, deferd.aio.Reply)
            self.assertEqual(c.unanswered, 2)  # pipelined: nothing answered yet
            with self.assertRaises(deferd.NotFound) as e:
                await c.flush()
            self.assertIs(e.exception.job, j2)
            self.assertEqual(e.exception.text, "job r/2 is not held here")
            self.assertTrue(r1.done)
            self.assertIsNone(r1.error)
            self.assertEqual(events[-1], deferd.Expired("q/9", None))
            with self.assertRaises(deferd.DeferdError) as e2:
                await j1.touch()
            self.assertEqual((type(e2.exception), e2.exception.code),
                             (deferd.DeferdError, "NEWCODE"))
            j3 = await c.next_job(1)
            assert j3 is not None
            self.assertEqual((j3.id, j3.payload), ("q/3", b"z"))
            self.assertIsNone(await j3.nack(unrun=True, wait=True))
            self.assertEqual(c.held, [])
        f.done(self)

    async def test_partial_timeout_and_disconnect(self) -> None:
        f = FakeDaemon([
            (b"BATCH 1\nPUT q 1\nx\n",
             b"ERR PARTIAL stored=2 ids=q/1,q/2 dup=2; the rest was not stored: boom\n"),
            (b"PING\n", b""),
            (b"PING\n", b"OK PONG\nOK PONG\n"),
            (b"PING\n", b""),
        ])
        c = await deferd.aio.Client.connect(f.path, timeout=10)
        try:
            with self.assertRaises(deferd.Partial) as e:
                await c.put_batch([("q", b"x")])
            self.assertEqual((e.exception.stored_ids, e.exception.duplicates),
                             (["q/1", "q/2"], [1]))
            self.assertTrue(e.exception.retryable)
            late = await c._send(b"PING\n", lambda rest: rest)
            with self.assertRaises(TimeoutError):
                await late.result(timeout=0.2)
            await c.ping()  # the late reply is matched to the first PING, this one's after
            self.assertEqual(await late.result(), "PONG")
            with self.assertRaises(deferd.Disconnected):
                await c.ping()  # the daemon closes after the script
            with self.assertRaises(ConnectionError):
                await c.ping()
            with self.assertRaises(deferd.Disconnected):
                await c.next_job(10)  # not 10 s: at once
        finally:
            await c.close()
        f.done(self)


    async def test_acks_cut_off_by_a_disconnect_are_reported(self) -> None:
        f = FakeDaemon(ACKS_CUT_OFF)
        seen: List[deferd.DeferdError] = []
        c = await deferd.aio.Client.connect(f.path, timeout=10, on_ack_error=seen.append)
        try:
            await c.subscribe("q", inflight=2)
            for _ in range(2):
                job = await c.next_job(5)
                assert job is not None
                await job.ack()
            with self.assertRaises(deferd.Disconnected):
                await c.next_job(10)
            self.assertEqual(sorted(x.job.id for x in seen if x.job), ["q/1", "q/2"])
            self.assertTrue(all(isinstance(x, deferd.Disconnected) for x in seen), seen)
        finally:
            await c.close()
        f.done(self)


if __name__ == "__main__":
    unittest.main()
