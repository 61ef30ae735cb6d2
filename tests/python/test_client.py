"""deferd's Python client against a real deferd and ZooKeeper: every operation, the pushes,
pipelined acks, error mapping, batches and follow-ups (run by ctest as python.client)."""

from __future__ import annotations

import os
import signal
import time
import unittest

import deferd
from harness import Daemon, wait_for

QUEUES = {
    "prod": "", "stats": "", "keys": "", "limited": "max_pending = 2", "batch": "", "batch2": "",
    "cons": "priority = 7\nttr = 30s", "pipe": "", "lease": "", "forced": "",
    "follow": "", "out": "", "nacks": "backoff_min = 0", "unrun": "",
    "subq": "", "empty": "", "lastnack": "max_attempts = 1", "grouped": "",
    "fanout": "", "fanin": "", "seeds": "", "grown": "",
}
D: Daemon


def setUpModule() -> None:
    global D
    D = Daemon("client", QUEUES).start()


def tearDownModule() -> None:
    D.stop()


def pending(queue: str) -> int:
    """How many jobs the queue has in ZooKeeper."""
    return len(D.jobs(queue))


class Producer(unittest.TestCase):
    def test_ping_put_stats(self) -> None:
        with D.client() as c:
            c.ping()
            r = c.put("stats", b"hello", delay=60, priority=3, ttr=5)
            self.assertTrue(r.id.startswith("stats/"), r.id)
            self.assertFalse(r.duplicate)
            r2 = c.put("stats", "text", at=time.time() + 60)
            self.assertNotEqual(r.id, r2.id)
            k1 = c.put("keys", b"a", delay=60, key="order-1")
            k2 = c.put("keys", b"b", delay=60, key="order-1")
            self.assertEqual((k2.id, k2.duplicate), (k1.id, True))
            s = c.stats()
            self.assertEqual(s["zk_state"], "CONNECTED")
            self.assertIsInstance(s["zk_state_ms"], int)
            q = c.stats("stats")
            self.assertEqual((q["queue"], q["put"]), ("stats", 2))
            self.assertIn("pending", q)
            self.assertEqual(pending("stats"), 2)
            self.assertEqual(D.jobs("keys"), [k1.id])

    def test_errors(self) -> None:
        with D.client() as c:
            with self.assertRaises(deferd.UnknownQueue) as e:
                c.put("nosuchqueue", b"x")
            self.assertEqual(e.exception.code, "UNKNOWN_QUEUE")
            self.assertFalse(e.exception.retryable)
            with self.assertRaises(deferd.BadRequest) as e:
                c.put("prod", b"x", ttr=0.5)  # below 1 s
            self.assertFalse(e.exception.retryable)
            with self.assertRaises(deferd.BadRequest):
                c._send(b"FROB x\n", lambda rest: rest).result()
            with self.assertRaises(deferd.TooLarge):
                c.put("prod", b"x" * 5000)  # max_payload = 4KiB
            with self.assertRaises(deferd.NotFound) as e:
                c.cancel("prod/1763769600123-10-5f1e0c2a9b3d4e01")
            self.assertFalse(e.exception.retryable)
            with self.assertRaises(deferd.UnknownQueue):
                c.stats("nosuchqueue")
            with self.assertRaises(deferd.UnknownQueue):
                c.subscribe("nosuchqueue")
            with self.assertRaises(deferd.BadRequest):
                c.subscribe("subq", inflight=0)
            with self.assertRaises(deferd.UnknownQueue):  # then no queue is subscribed
                c.subscribe(["subq", "nosuchqueue"])
            c.put("subq", b"not for c")
            self.assertIsNone(c.next_job(timeout=1))
            c.put("limited", b"1", delay=60)
            c.put("limited", b"2", delay=60)
            with self.assertRaises(deferd.QueueFull) as e:
                c.put("limited", b"3", delay=60)
            self.assertTrue(e.exception.retryable)
            self.assertIsInstance(e.exception, deferd.DeferdError)
            c.ping()  # the connection stays usable after every error
            self.assertEqual(pending("limited"), 2)

    def test_cancel_reschedule(self) -> None:
        with D.client() as c:
            job = c.put("prod", b"r", delay=60).id
            moved = c.reschedule(job, delay=120)
            self.assertNotEqual(moved, job)
            self.assertTrue(moved.startswith("prod/"))
            moved2 = c.reschedule(moved, at=time.time() + 30)
            self.assertEqual(c.cancel(moved2), moved2)
            with self.assertRaises(deferd.NotFound):
                c.cancel(moved2)
            with self.assertRaises(deferd.NotFound):
                c.reschedule(job, delay=1)
            by_key = c.put("keys", b"k", delay=60, key="resched-1").id
            again = c.reschedule(queue="keys", key="resched-1", delay=90)
            self.assertNotEqual(again, by_key)
            self.assertEqual(c.cancel(queue="keys", key="resched-1"), again)
            with self.assertRaises(ValueError):
                c.reschedule(job)

    def test_put_batch_all_or_none(self) -> None:
        with D.client() as c:
            old = c.put("batch", b"old", delay=60, key="b-2").id
            res = c.put_batch([
                deferd.Put("batch", b"one", delay=60),
                {"queue": "batch", "payload": b"two", "delay": 60, "key": "b-2"},
                ("batch2", b"three", 60),
            ])
            self.assertEqual(len(res.results), 3)
            self.assertEqual(res.parts, 1)
            self.assertEqual([r.duplicate for r in res.results], [False, True, False])
            self.assertEqual(res.ids[1], old)
            self.assertTrue(res.ids[2].startswith("batch2/"))
            self.assertEqual((pending("batch"), pending("batch2")), (2, 1))
            with self.assertRaises(deferd.DeferdError) as e:
                c.put_batch([("batch", b"four", 60), ("nosuchqueue", b"five"),
                             ("batch2", b"six", 60)])
            self.assertIsInstance(e.exception, deferd.UnknownQueue)
            self.assertIn("item 2", e.exception.text)
            self.assertEqual((pending("batch"), pending("batch2")), (2, 1))  # none stored
            c.ping()

    def test_put_flow(self) -> None:
        """The parent waits until both children are acked, then comes with its own id."""
        with D.client() as p, D.client() as c:
            res = p.put_flow(deferd.Put("fanin", b"assemble"),
                             [("fanout", b"page 1"), {"queue": "fanout", "payload": b"page 2"}])
            self.assertEqual(len(res.ids), 3)
            self.assertTrue(res.ids[0].startswith("fanin/") and res.ids[1].startswith("fanout/"))
            self.assertEqual((pending("fanin"), pending("fanout")), (0, 2))
            c.subscribe(["fanout", "fanin"], inflight=4)
            seen = []
            for _ in range(2):
                job = c.next_job(timeout=10)
                self.assertIsNotNone(job)
                seen.append(job.id)
                self.assertEqual(pending("fanin"), 0)  # not due while a child is pending
                job.ack()
            self.assertEqual(sorted(seen), sorted(res.ids[1:]))
            parent = c.next_job(timeout=10)
            self.assertIsNotNone(parent)
            self.assertEqual((parent.id, parent.payload), (res.ids[0], b"assemble"))
            self.assertIsNone(parent.flow_results)
            parent.ack()
            # on="complete": the parent's id says how its children ended
            res = p.put_flow(("fanin", b"report"), [("fanout", b"page")], on="complete")
            c.next_job(timeout=10).ack()
            parent = c.next_job(timeout=10)
            self.assertEqual(parent.id, res.ids[0] + "-r1.0")
            self.assertEqual((parent.flow_results, parent.uid),
                             ((1, 0), deferd.job_uid(res.ids[0])))
            parent.ack()
            with self.assertRaises(ValueError):
                p.put_flow(("fanin", b"x"), [("fanout", b"y")], on="maybe")
            with self.assertRaises(ValueError):
                p.put_flow(("fanin", b"x"), [])

    def test_flow_grows(self) -> None:
        """A child acked with join=True adds its follow-ups to the flow: the parent waits."""
        with D.client() as p, D.client() as c:
            res = p.put_flow(("grown", b"report"), [("seeds", b"seed")])
            c.subscribe(["seeds", "grown"], inflight=4)
            seed = c.next_job(timeout=10)
            self.assertEqual(seed.id, res.ids[1])
            links = seed.ack(then=[("seeds", b"link 1"), ("seeds", b"link 2")], join=True)
            self.assertEqual(len(links.ids), 2)
            self.assertEqual(pending("grown"), 0)
            for _ in range(2):
                job = c.next_job(timeout=10)
                self.assertIn(job.id, links.ids)
                self.assertEqual(pending("grown"), 0)
                job.ack(wait=True)
            parent = c.next_job(timeout=10)
            self.assertEqual(parent.id, res.ids[0])
            parent.ack()
            with self.assertRaises(ValueError):
                deferd.client.encode_ack("a/1-2-u", None, True)
            # a flow cancelled under its child: join fails (NOT_FOUND), the job is still held
            res = p.put_flow(("grown", b"report"), [("seeds", b"seed 2")])
            seed = c.next_job(timeout=10)
            p.cancel(res.ids[0])
            with self.assertRaises(deferd.NotFound):
                seed.ack(then=[("seeds", b"link")], join=True)
            seed.ack(wait=True)
            self.assertEqual(pending("seeds"), 0)


class Consumer(unittest.TestCase):
    def test_subscribe_ack_iterate(self) -> None:
        with D.client() as p, D.client() as c:
            ids = [p.put("cons", f"job {i}".encode()).id for i in range(3)]
            c.subscribe("cons", inflight=2)
            got = []
            for job in c.jobs(idle=10):
                self.assertEqual((job.queue, job.attempt, job.priority), ("cons", 1, 7))
                self.assertEqual(job.ttr_ms, 30000)
                self.assertEqual(job.ttr, 30.0)
                self.assertLessEqual(job.due_ms, int(time.time() * 1000))
                self.assertEqual(job.due.timestamp(), job.due_ms / 1000)
                self.assertIn(job, c.held)
                job.ack(wait=True)
                self.assertNotIn(job, c.held)
                got.append((job.id, job.payload))
                if len(got) == 3:
                    break
            self.assertEqual(sorted(got), sorted(zip(ids, [b"job 0", b"job 1", b"job 2"])))
            c.unsubscribe()
            p.put("cons", b"after unsub")
            self.assertIsNone(c.next_job(timeout=0.5))
            wait_for(lambda: pending("cons") == 1, "the job put after UNSUB stays pending")
            c.subscribe(["cons"])
            job = c.next_job(timeout=10)
            assert job is not None
            self.assertEqual(job.payload, b"after unsub")
            job.ack()
            c.flush()
            wait_for(lambda: pending("cons") == 0, "cons is empty")

    def test_group(self) -> None:
        """put(group=) and put_batch's Put(group=) reach the consumer as job.group."""
        with D.client() as p, D.client() as c:
            one = p.put("grouped", b"x", group="stripe-17")
            self.assertIn("-gstripe~17", one.id)
            self.assertEqual(deferd.job_group(one.id), "stripe-17")
            p.put_batch([deferd.Put("grouped", b"y", group="b.2"), deferd.Put("grouped", b"z")])
            with self.assertRaises(deferd.BadRequest):
                p.put("grouped", b"x", group="-bad")
            c.subscribe("grouped", inflight=3)
            groups = set()
            for job in c.jobs(idle=10):
                groups.add(job.group)
                if job.group == "b.2":  # a follow-up with a group of its own
                    job.ack(then=[deferd.Put("grouped", b"f", group="fu")])
                else:
                    job.ack(wait=True)
                if len(groups) == 4:
                    break
            self.assertEqual(groups, {"stripe-17", "b.2", "", "fu"})

    def test_pipelined_acks(self) -> None:
        n = 300
        with D.client() as p, D.client() as c:
            for start in range(0, n, 100):
                p.put_batch([("pipe", b"%d" % i) for i in range(start, start + 100)])
            c.subscribe("pipe", inflight=64)
            seen, most_unanswered = set(), 0
            while len(seen) < n:
                job = c.next_job(timeout=20)
                assert job is not None, f"only {len(seen)} of {n} jobs came"
                seen.add(job.payload)
                reply = job.ack()  # pipelined: returns at once
                self.assertIsInstance(reply, deferd.Reply)
                most_unanswered = max(most_unanswered, c.unanswered)
            self.assertGreater(most_unanswered, 1, "acks were not pipelined")
            c.flush()
            self.assertEqual(c.unanswered, 0)
            self.assertEqual(seen, {b"%d" % i for i in range(n)})
            self.assertEqual(pending("pipe"), 0)  # every ack answered OK: gone from ZooKeeper
            self.assertEqual(D.queue_stat("pipe", "acked"), n)

    def test_empty_payload(self) -> None:
        with D.client() as p, D.client() as c:
            jid = p.put("empty", b"").id
            c.subscribe("empty")
            job = c.next_job(timeout=10)
            assert job is not None
            self.assertEqual((job.id, job.payload), (jid, b""))
            job.ack(wait=True)
            self.assertEqual(pending("empty"), 0)

    def test_nack(self) -> None:
        with D.client() as p, D.client() as c:
            p.put("nacks", b"n")
            c.subscribe("nacks")
            job = c.next_job(timeout=10)
            assert job is not None
            self.assertIsNone(job.nack(wait=True))  # backoff_min = 0: keeps its id
            again = c.next_job(timeout=10)
            assert again is not None
            self.assertEqual((again.id, again.attempt), (job.id, 2))
            new_id = again.nack(delay=0.1, wait=True)
            self.assertTrue(new_id and new_id != job.id, new_id)
            third = c.next_job(timeout=10)
            assert third is not None
            self.assertEqual((third.id, third.attempt, third.payload), (new_id, 3, b"n"))
            # the id moved with the due time; the uid did not (the daemon keeps it in the name),
            # the name's third field
            self.assertTrue(job.uid and third.uid == again.uid == job.uid, (job, third))
            self.assertEqual(third.id.split("/")[-1].split("-")[2], job.uid)
            with self.assertRaises(ValueError):
                third.nack(delay=1, unrun=True)
            third.nack(delay=0)  # pipelined
            fourth = c.next_job(timeout=10)
            assert fourth is not None
            self.assertEqual(fourth.attempt, 4)
            fourth.ack()
            with self.assertRaises(ValueError):
                fourth.ack()  # answered already
            c.flush()
            wait_for(lambda: pending("nacks") == 0, "nacks is empty")

    def test_nack_of_the_last_attempt(self) -> None:
        # the daemon answers "OK dead=<id>": no new id to deliver again under; the job is
        # in the dead letters, no longer pending
        with D.client() as c:
            c.put("lastnack", b"once")
            c.subscribe("lastnack")
            job = c.next_job(timeout=10)
            self.assertIsNotNone(job)
            self.assertIsNone(job.nack(wait=True))  # type: ignore[union-attr]
            wait_for(lambda: pending("lastnack") == 0, "lastnack is empty")

    def test_nack_unrun_and_give_back(self) -> None:
        with D.client() as p, D.client() as c:
            p.put("unrun", b"u")
            c.subscribe("unrun")
            job = c.next_job(timeout=10)
            assert job is not None
            job.nack(unrun=True, wait=True)
            again = c.next_job(timeout=10)
            assert again is not None
            self.assertEqual((again.id, again.attempt), (job.id, 1))  # no attempt spent
            again.ack(wait=True)
            # give_back(): jobs pushed ahead but never taken go back unrun.
            p.put_batch([("unrun", b"g1"), ("unrun", b"g2")])
            c.subscribe("unrun", inflight=2)
            wait_for(lambda: c.poll(0.05) >= 0 and len(c.held) == 2, "two jobs pushed ahead")
            self.assertEqual(c.give_back(), 2)
            with D.client() as c2:
                c2.subscribe("unrun", inflight=2)
                back = [c2.next_job(timeout=10) for _ in range(2)]
                self.assertEqual(sorted(j.payload for j in back if j), [b"g1", b"g2"])
                self.assertEqual([j.attempt for j in back if j], [1, 1])
                for j in back:
                    assert j is not None
                    j.ack()
                c2.flush()

    def test_lease_deadline_expired_touch(self) -> None:
        with D.client() as p, D.client() as c:
            p.put("lease", b"short", ttr=1)
            c.subscribe("lease")
            job = c.next_job(timeout=10)
            assert job is not None
            self.assertEqual(job.ttr_ms, 1000)
            ev = c.next_event(timeout=5)
            self.assertIsInstance(ev, deferd.Deadline)
            assert isinstance(ev, deferd.Deadline)
            self.assertIs(ev.job, job)
            self.assertLessEqual(ev.ms_left, 1000)
            self.assertEqual(job.deadline_ms_left, ev.ms_left)
            ev = c.next_event(timeout=5)
            self.assertIsInstance(ev, deferd.Expired)
            assert isinstance(ev, deferd.Expired)
            self.assertEqual((ev.job_id, ev.job), (job.id, job))
            self.assertTrue(job.lost)
            self.assertEqual(job.lost_reason, "expired")
            job.ack()  # pipelined; fails with LEASE_LOST, reported by flush()
            with self.assertRaises(deferd.LeaseLost) as e:
                c.flush()
            self.assertIs(e.exception.job, job)
            self.assertFalse(e.exception.retryable)
            c.flush()  # reported once
            # Redelivered with a higher attempt; touch keeps it past its ttr.
            again = c.next_job(timeout=10)
            assert again is not None
            self.assertEqual((again.payload, again.attempt), (b"short", 2))
            until = time.monotonic() + 2.5
            while time.monotonic() < until:  # touched every 0.3 s: never within 0.7 s of its end
                again.touch()
                ev = c.next_event(timeout=0.3)
                self.assertNotIsInstance(ev, deferd.Expired)
            self.assertFalse(again.lost)
            again.ack(wait=True)
            wait_for(lambda: pending("lease") == 0, "lease is empty")

    def test_failed_ack_reported_by_next_job(self) -> None:
        errors = []
        with D.client() as p, D.client() as c, D.client(on_ack_error=errors.append) as cb:
            p.put("lease", b"one", ttr=1)
            c.subscribe("lease")
            job = c.next_job(timeout=10)
            assert job is not None
            wait_for(lambda: c.poll(0.05) >= 0 and job.lost, "lease ran out")
            job.ack()
            with self.assertRaises(deferd.LeaseLost):
                c.next_job(timeout=10)  # the failed ack comes first
            again = c.next_job(timeout=10)
            assert again is not None
            again.ack(wait=True)
            p.put("lease", b"two", ttr=1)
            cb.subscribe("lease")
            job = cb.next_job(timeout=10)
            assert job is not None
            wait_for(lambda: cb.poll(0.05) >= 0 and job.lost, "lease ran out")
            job.nack()
            cb.flush()  # reported to the callback instead
            self.assertEqual([type(e) for e in errors], [deferd.LeaseLost])
            self.assertIs(errors[0].job, job)
            again = cb.next_job(timeout=10)
            assert again is not None
            again.ack(wait=True)

    def test_cancel_force_pushes_cancelled(self) -> None:
        with D.client() as p, D.client() as c:
            jid = p.put("forced", b"f").id
            c.subscribe("forced")
            job = c.next_job(timeout=10)
            assert job is not None and job.id == jid
            with self.assertRaises(deferd.InFlight) as e:
                p.cancel(jid)
            self.assertTrue(e.exception.retryable)
            self.assertEqual(p.cancel(jid, force=True), jid)
            ev = c.next_event(timeout=10)
            self.assertIsInstance(ev, deferd.Cancelled)
            assert isinstance(ev, deferd.Cancelled)
            self.assertIs(ev.job, job)
            self.assertEqual(job.lost_reason, "cancelled")
            with self.assertRaises(deferd.LeaseLost):
                job.ack(wait=True)
            self.assertEqual(pending("forced"), 0)

    def test_follow_ups(self) -> None:
        with D.client() as p, D.client() as c:
            p.put("follow", b"parent")
            c.subscribe("follow")
            job = c.next_job(timeout=10)
            assert job is not None
            with self.assertRaises(deferd.UnknownQueue):  # nothing changed, still held
                job.ack(then=[("out", b"x", 60), ("nosuchqueue", b"y")])
            self.assertFalse(job.settled)
            self.assertEqual(pending("out"), 0)
            res = job.ack(then=[deferd.Put("out", b"c1", delay=60),
                                {"queue": "out", "payload": "c2", "delay": 60, "key": "f-1"}])
            self.assertEqual(len(res.ids), 2)
            self.assertTrue(all(i.startswith("out/") for i in res.ids))
            self.assertIsNone(res.moved_id)
            self.assertEqual((pending("follow"), pending("out")), (0, 2))
            p.put("follow", b"second")
            job = c.next_job(timeout=10)
            assert job is not None
            res = job.nack(delay=60, then=[dict(queue="out", payload=b"c3", delay=60, key="f-1")])
            self.assertTrue(res.moved_id and res.moved_id != job.id, res)
            self.assertTrue(res.results[0].duplicate)
            self.assertEqual((pending("follow"), pending("out")), (1, 2))


class Draining(unittest.TestCase):
    def test_state_push_on_sigterm(self) -> None:
        d = Daemon("drain", {"q": ""}).start()
        try:
            with d.client() as c:
                c.put("q", b"held")
                c.subscribe("q")
                job = c.next_job(timeout=10)
                assert job is not None and d.proc is not None
                os.kill(d.proc.pid, signal.SIGTERM)
                ev = c.next_event(timeout=10)
                self.assertEqual(ev, deferd.State("DRAINING"))
                with self.assertRaises(deferd.Unavailable):
                    c.put("q", b"refused while draining")
                job.ack(wait=True)  # still allowed; then the daemon exits
                self.assertEqual(d.proc.wait(20), 0)
        finally:
            d.stop()

    def test_exit_without_draining_when_nothing_held(self) -> None:
        d = Daemon("exit", {"q": ""}).start()
        try:
            with d.client() as c:
                c.subscribe("q")
                assert d.proc is not None
                os.kill(d.proc.pid, signal.SIGTERM)
                with self.assertRaises(deferd.Disconnected):
                    c.next_event(timeout=10)  # end of file, no STATE DRAINING first
                self.assertEqual(d.proc.wait(20), 0)
        finally:
            d.stop()


if __name__ == "__main__":
    unittest.main()
