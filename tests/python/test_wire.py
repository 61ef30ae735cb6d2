"""The Python client against a scripted fake daemon: the bytes it sends, how it matches
replies in order among pushes, unknown pushes and codes, PARTIAL (ctest: python.wire)."""

from __future__ import annotations

import os
import socket
import tempfile
import threading
import unittest
from typing import List, Optional, Tuple

import deferd


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
                if got != expected and self.mismatch is None:
                    self.mismatch = f"expected {expected!r}, got {got!r}"
                conn.sendall(answer)

    def done(self, test: unittest.TestCase) -> None:
        self.thread.join(10)
        self.srv.close()
        os.unlink(self.path)
        os.rmdir(self.dir)
        test.assertIsNone(self.mismatch)


class Wire(unittest.TestCase):
    def test_put_bytes_and_reply(self) -> None:
        f = FakeDaemon([
            (b"PUT q 3 delay=1500 prio=3 ttr=2000 key=k1\na\nb\n", b"OK q/1-3-ab duplicate\n"),
            (b"PUT q 0 at=1700000000000\n\n", b"OK q/2\n"),
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
            (b"SUB q,r inflight=2 uid=1\n",
             b"JOB q/1 q 1 1000 5 30000 3 uid=u1\nx\ny\nDEADLINE q/1 200\nFUTURE thing\n"
             b"JOB r/2 r 3 2000 0 1000 0 later=x\n\nSTATE WEIRD\nOK\n"),
            (b"ACK q/1\n", b""),
            (b"ACK r/2\n", b"OK\nEXPIRED q/9\nERR NOT_FOUND job r/2 is not held here\n"),
            (b"TOUCH q/1\n", b"ERR NEWCODE from a later daemon\n"),
        ])
        with deferd.Client(f.path, timeout=10, on_event=events.append) as c:
            c.subscribe(["q", "r"], inflight=2)
            j1, j2 = c.next_job(1), c.next_job(1)
            assert j1 is not None and j2 is not None
            self.assertEqual((j1.id, j1.queue, j1.attempt, j1.due_ms, j1.priority, j1.ttr_ms,
                              j1.payload), ("q/1", "q", 1, 1000, 5, 30000, b"x\ny"))
            self.assertEqual(j1.uid, "u1")
            # a key this client does not know is skipped; a job without uid= has None
            self.assertEqual((j2.id, j2.uid, j2.attempt, j2.ttr, j2.payload),
                             ("r/2", None, 3, 1.0, b""))
            self.assertEqual(events, [deferd.Deadline("q/1", 200, j1),
                                      deferd.UnknownPush("FUTURE thing"),
                                      deferd.State("WEIRD")])
            self.assertEqual(j1.deadline_ms_left, 200)
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


if __name__ == "__main__":
    unittest.main()
