"""deferd.aio, the asyncio client, against a real deferd and ZooKeeper: every operation, the
pushes, pipelined acks from one task and from many, failed acks reported, error mapping
(run by ctest as python.aio)."""

from __future__ import annotations

import asyncio
import os
import signal
import time
import unittest
from typing import Callable, List

import deferd
import deferd.aio
from harness import Daemon, wait_for

QUEUES = {
    "prod": "", "stats": "", "keys": "", "limited": "max_pending = 2", "batch": "", "batch2": "",
    "cons": "priority = 7\nttr = 30s", "pipe": "", "many": "", "lease": "", "failed": "",
    "forced": "", "follow": "", "out": "", "nacks": "backoff_min = 0", "unrun": "",
}
D: Daemon


def setUpModule() -> None:
    global D
    D = Daemon("aio", QUEUES).start()


def tearDownModule() -> None:
    D.stop()


def pending(queue: str) -> int:
    """How many jobs the queue has in ZooKeeper."""
    return len(D.jobs(queue))


def client(**kw: object) -> deferd.aio.Client:
    """A new asyncio client of the test daemon (20 s reply timeout unless given)."""
    kw.setdefault("timeout", 20.0)
    return deferd.aio.Client(D.sock, **kw)  # type: ignore[arg-type]


async def until(cond: Callable[[], object], what: str, timeout: float = 20.0) -> None:
    """Lets the loop run (the reader task updates the client) until ``cond()`` is true;
    AssertionError after ``timeout`` s."""
    deadline = time.monotonic() + timeout
    while not cond():
        if time.monotonic() > deadline:
            raise AssertionError(f"not within {timeout} s: {what}")
        await asyncio.sleep(0.02)


async def put_and_take(p: deferd.aio.Client, c: deferd.aio.Client, queue: str,
                       payload: bytes, **put: object) -> deferd.aio.Job:
    """Puts one job with ``p``, subscribes ``c`` to its queue and returns the delivery."""
    await p.put(queue, payload, **put)  # type: ignore[arg-type]
    await c.subscribe(queue)
    job = await c.next_job(timeout=10)
    assert job is not None, f"no job of {queue} came"
    return job


class Producer(unittest.IsolatedAsyncioTestCase):
    async def test_connect_ping_put_stats(self) -> None:
        c = await deferd.aio.Client.connect(D.sock)
        try:
            await c.ping()
            r = await c.put("stats", b"hello", delay=60, priority=3, ttr=5)
            self.assertIsInstance(r, deferd.PutResult)
            self.assertTrue(r.id.startswith("stats/"), r.id)
            self.assertFalse(r.duplicate)
            r2 = await c.put("stats", "text", at=time.time() + 60)
            self.assertNotEqual(r.id, r2.id)
            k1 = await c.put("keys", b"a", delay=60, key="order-1")
            k2 = await c.put("keys", b"b", delay=60, key="order-1")
            self.assertEqual((k2.id, k2.duplicate), (k1.id, True))
            s = await c.stats()
            self.assertEqual(s["zk_state"], "CONNECTED")
            self.assertIsInstance(s["zk_state_ms"], int)
            q = await c.stats("stats")
            self.assertEqual((q["queue"], q["put"]), ("stats", 2))
            self.assertEqual(pending("stats"), 2)
            self.assertEqual(D.jobs("keys"), [k1.id])
            self.assertEqual(await c.cancel(r.id), r.id)
            self.assertEqual(await c.cancel(r2.id), r2.id)
        finally:
            await c.close()
        with self.assertRaises(deferd.Disconnected):
            await c.ping()  # closed

    async def test_default_socket_from_environment(self) -> None:
        old = os.environ.get("DEFERD_SOCKET")
        os.environ["DEFERD_SOCKET"] = D.sock
        try:
            async with deferd.aio.Client() as c:
                self.assertEqual(c.socket_path, D.sock)
                await c.ping()
        finally:
            if old is None:
                del os.environ["DEFERD_SOCKET"]
            else:
                os.environ["DEFERD_SOCKET"] = old

    async def test_errors(self) -> None:
        async with client() as c:
            with self.assertRaises(deferd.UnknownQueue) as e:
                await c.put("nosuchqueue", b"x")
            self.assertEqual(e.exception.code, "UNKNOWN_QUEUE")
            self.assertFalse(e.exception.retryable)
            with self.assertRaises(deferd.BadRequest) as e:
                await c.put("prod", b"x", ttr=0.5)  # below 1 s
            self.assertFalse(e.exception.retryable)
            with self.assertRaises(deferd.TooLarge):
                await c.put("prod", b"x" * 5000)  # max_payload = 4KiB
            with self.assertRaises(deferd.NotFound) as e:
                await c.cancel("prod/1763769600123-10-5f1e0c2a9b3d4e01")
            self.assertFalse(e.exception.retryable)
            with self.assertRaises(deferd.UnknownQueue):
                await c.stats("nosuchqueue")
            with self.assertRaises(deferd.UnknownQueue):
                await c.subscribe("nosuchqueue")
            with self.assertRaises(deferd.BadRequest):
                await c.subscribe("prod", inflight=0)
            with self.assertRaises(ValueError):
                await c.reschedule("prod/x")  # neither delay nor at: not sent
            await c.put("limited", b"1", delay=60)
            await c.put("limited", b"2", delay=60)
            with self.assertRaises(deferd.QueueFull) as e:
                await c.put("limited", b"3", delay=60)
            self.assertTrue(e.exception.retryable)
            self.assertIsInstance(e.exception, deferd.DeferdError)
            await c.ping()  # the connection stays usable after every error
            self.assertEqual(c.unanswered, 0)
            self.assertEqual(pending("limited"), 2)

    async def test_cancel_reschedule(self) -> None:
        async with client() as c:
            job = (await c.put("prod", b"r", delay=60)).id
            moved = await c.reschedule(job, delay=120)
            self.assertNotEqual(moved, job)
            self.assertTrue(moved.startswith("prod/"))
            moved2 = await c.reschedule(moved, at=time.time() + 30)
            self.assertEqual(await c.cancel(moved2), moved2)
            with self.assertRaises(deferd.NotFound):
                await c.cancel(moved2)
            with self.assertRaises(deferd.NotFound):
                await c.reschedule(job, delay=1)
            by_key = (await c.put("keys", b"k", delay=60, key="resched-1")).id
            again = await c.reschedule(queue="keys", key="resched-1", delay=90)
            self.assertNotEqual(again, by_key)
            self.assertEqual(await c.cancel(queue="keys", key="resched-1"), again)

    async def test_put_batch_all_or_none_and_concurrent_puts(self) -> None:
        async with client() as c:
            old = (await c.put("batch", b"old", delay=60, key="b-2")).id
            res = await c.put_batch([
                deferd.Put("batch", b"one", delay=60),
                {"queue": "batch", "payload": b"two", "delay": 60, "key": "b-2"},
                ("batch2", b"three", 60),
            ])
            self.assertIsInstance(res, deferd.BatchResult)
            self.assertEqual([r.duplicate for r in res.results], [False, True, False])
            self.assertEqual(res.ids[1], old)
            self.assertTrue(res.ids[2].startswith("batch2/"))
            with self.assertRaises(deferd.UnknownQueue) as e:
                await c.put_batch([("batch", b"four", 60), ("nosuchqueue", b"five")])
            self.assertIn("item 2", e.exception.text)
            self.assertEqual((pending("batch"), pending("batch2")), (2, 1))  # none stored
            # Many tasks on one connection: each gets the reply to its own request.
            keys = [f"c-{i}" for i in range(20)]
            results = await asyncio.gather(*(c.put("batch2", k.encode(), delay=60, key=k)
                                             for k in keys))
            again = await asyncio.gather(*(c.put("batch2", b"x", key=k) for k in keys))
            self.assertEqual([r.id for r in again], [r.id for r in results])
            self.assertTrue(all(r.duplicate for r in again))
            self.assertEqual(len({r.id for r in results}), 20)
            self.assertTrue(all(r.id.endswith(f"-k{k}") for r, k in zip(results, keys)))


class Consumer(unittest.IsolatedAsyncioTestCase):
    async def test_subscribe_iterate_ack_unsubscribe(self) -> None:
        async with client() as p, client() as c:
            ids = [(await p.put("cons", f"job {i}".encode())).id for i in range(3)]
            await c.subscribe("cons", inflight=2)
            got = []
            async for job in c.jobs(idle=10):
                self.assertIsInstance(job, deferd.aio.Job)
                self.assertEqual((job.queue, job.attempt, job.priority), ("cons", 1, 7))
                self.assertEqual((job.ttr_ms, job.ttr), (30000, 30.0))
                self.assertLessEqual(job.due_ms, int(time.time() * 1000))
                self.assertIn(job, c.held)
                self.assertIsNone(await job.ack(wait=True))
                self.assertNotIn(job, c.held)
                got.append((job.id, job.payload))
                if len(got) == 3:
                    break
            self.assertEqual(sorted(got), sorted(zip(ids, [b"job 0", b"job 1", b"job 2"])))
            await c.unsubscribe()
            await p.put("cons", b"after unsub")
            self.assertIsNone(await c.next_job(timeout=0.5))
            wait_for(lambda: pending("cons") == 1, "the job put after UNSUB stays pending")
            await c.subscribe(["cons"])
            async for job in c:  # the client itself iterates, for ever
                self.assertEqual(job.payload, b"after unsub")
                await job.ack()
                break
            await c.flush()
            wait_for(lambda: pending("cons") == 0, "cons is empty")

    async def test_pipelined_acks(self) -> None:
        n = 300
        async with client() as p, client() as c:
            for start in range(0, n, 100):
                await p.put_batch([("pipe", b"%d" % i) for i in range(start, start + 100)])
            await c.subscribe("pipe", inflight=64)
            seen, most_unanswered = set(), 0
            while len(seen) < n:
                job = await c.next_job(timeout=20)
                assert job is not None, f"only {len(seen)} of {n} jobs came"
                seen.add(job.payload)
                reply = await job.ack()  # pipelined: returns once written
                self.assertIsInstance(reply, deferd.aio.Reply)
                most_unanswered = max(most_unanswered, c.unanswered)
            self.assertGreater(most_unanswered, 1, "acks were not pipelined")
            await c.flush()
            self.assertEqual(c.unanswered, 0)
            self.assertEqual(seen, {b"%d" % i for i in range(n)})
            self.assertEqual(pending("pipe"), 0)  # every ack answered OK: gone from ZooKeeper
            self.assertEqual(D.queue_stat("pipe", "acked"), n)

    async def test_jobs_handled_by_concurrent_tasks(self) -> None:
        n, tasks = 200, 8
        running = most_running = 0
        async with client() as p, client() as c:
            await p.put_batch([("many", b"%d" % i) for i in range(n)])
            await c.subscribe("many", inflight=16)
            done: List[bytes] = []

            async def work() -> None:
                nonlocal running, most_running
                while len(done) < n:
                    job = await c.next_job(timeout=0.5)
                    if job is None:
                        continue
                    running += 1
                    most_running = max(most_running, running)
                    await asyncio.sleep(0.005)  # a handler that waits on I/O
                    running -= 1
                    done.append(job.payload)
                    await job.ack()

            await asyncio.wait_for(asyncio.gather(*(work() for _ in range(tasks))), 60)
            await c.flush()
            self.assertEqual(sorted(done), sorted(b"%d" % i for i in range(n)))
            self.assertGreater(most_running, 1, "the tasks never handled jobs at once")
            self.assertEqual(pending("many"), 0)

    async def test_nack_delay_unrun(self) -> None:
        async with client() as p, client() as c:
            job = await put_and_take(p, c, "nacks", b"n")
            self.assertIsNone(await job.nack(wait=True))  # backoff_min = 0: keeps its id
            again = await c.next_job(timeout=10)
            assert again is not None
            self.assertEqual((again.id, again.attempt), (job.id, 2))
            new_id = await again.nack(delay=0.1, wait=True)
            self.assertTrue(new_id and new_id != job.id, new_id)
            third = await c.next_job(timeout=10)
            assert third is not None
            self.assertEqual((third.id, third.attempt, third.payload), (new_id, 3, b"n"))
            # SUB asked for uids: the id moved with the due time, the uid did not
            self.assertTrue(job.uid and third.uid == again.uid == job.uid, (job, third))
            with self.assertRaises(ValueError):
                await third.nack(delay=1, unrun=True)
            self.assertFalse(third.settled)  # refused before anything was sent
            await third.nack(unrun=True)  # pipelined; no attempt spent
            fourth = await c.next_job(timeout=10)
            assert fourth is not None
            self.assertEqual(fourth.attempt, 3)
            await fourth.ack()
            with self.assertRaises(ValueError):
                await fourth.ack()  # answered already
            await c.flush()
            wait_for(lambda: pending("nacks") == 0, "nacks is empty")

    async def test_give_back(self) -> None:
        async with client() as p, client() as c:
            await p.put_batch([("unrun", b"g1"), ("unrun", b"g2")])
            await c.subscribe("unrun", inflight=2)
            await until(lambda: len(c.held) == 2, "two jobs pushed ahead")
            self.assertEqual(await c.give_back(), 2)
            self.assertEqual((c.held, c.unanswered), ([], 0))
            async with client() as c2:
                await c2.subscribe("unrun", inflight=2)
                back = [await c2.next_job(timeout=10) for _ in range(2)]
                self.assertEqual(sorted(j.payload for j in back if j), [b"g1", b"g2"])
                self.assertEqual([j.attempt for j in back if j], [1, 1])  # not spent
                for j in back:
                    assert j is not None
                    await j.ack()
                await c2.flush()
            wait_for(lambda: pending("unrun") == 0, "unrun is empty")

    async def test_lease_deadline_expired_touch(self) -> None:
        async with client() as p, client() as c:
            job = await put_and_take(p, c, "lease", b"short", ttr=1)
            self.assertEqual(job.ttr_ms, 1000)
            ev = await c.next_event(timeout=5)
            assert isinstance(ev, deferd.Deadline), ev
            self.assertIs(ev.job, job)
            self.assertLessEqual(ev.ms_left, 1000)
            self.assertEqual(job.deadline_ms_left, ev.ms_left)
            ev = await c.next_event(timeout=5)
            assert isinstance(ev, deferd.Expired), ev
            self.assertEqual((ev.job_id, ev.job), (job.id, job))
            self.assertTrue(job.lost)
            self.assertEqual(job.lost_reason, "expired")
            await job.ack()  # pipelined; fails with LEASE_LOST, reported by flush()
            with self.assertRaises(deferd.LeaseLost) as e:
                await c.flush()
            self.assertIs(e.exception.job, job)
            self.assertFalse(e.exception.retryable)
            await c.flush()  # reported once
            # Redelivered with a higher attempt; touch keeps it past its ttr.
            again = await c.next_job(timeout=10)
            assert again is not None
            self.assertEqual((again.payload, again.attempt), (b"short", 2))
            until_t = time.monotonic() + 2.5
            while time.monotonic() < until_t:  # touched every 0.3 s: never near its end
                await again.touch()
                ev = await c.next_event(timeout=0.3)
                self.assertNotIsInstance(ev, deferd.Expired)
            self.assertFalse(again.lost)
            await again.ack(wait=True)
            wait_for(lambda: pending("lease") == 0, "lease is empty")

    async def test_failed_ack_reported_by_next_job_or_callback(self) -> None:
        errors: List[deferd.DeferdError] = []
        async with client() as p, client() as c, client(on_ack_error=errors.append) as cb:
            job = await put_and_take(p, c, "failed", b"one", ttr=1)
            await until(lambda: job.lost, "lease ran out")
            await job.ack()
            with self.assertRaises(deferd.LeaseLost) as e:
                await c.next_job(timeout=10)  # the failed ack comes first
            self.assertIs(e.exception.job, job)
            self.assertEqual(c.failed_acks(), [])
            again = await c.next_job(timeout=10)
            assert again is not None
            await again.ack(wait=True)
            job2 = await put_and_take(p, cb, "failed", b"two", ttr=1)
            await until(lambda: job2.lost, "lease ran out")
            await job2.nack()
            await cb.flush()  # reported to the callback instead
            self.assertEqual([type(e) for e in errors], [deferd.LeaseLost])
            self.assertIs(errors[0].job, job2)
            again = await cb.next_job(timeout=10)
            assert again is not None
            await again.ack(wait=True)

    async def test_cancel_force_pushes_cancelled(self) -> None:
        events: List[deferd.Event] = []
        async with client() as p, client(on_event=events.append) as c:
            jid = (await p.put("forced", b"f")).id
            await c.subscribe("forced")
            job = await c.next_job(timeout=10)
            assert job is not None and job.id == jid
            with self.assertRaises(deferd.InFlight) as e:
                await p.cancel(jid)
            self.assertTrue(e.exception.retryable)
            self.assertEqual(await p.cancel(jid, force=True), jid)
            await until(lambda: events, "CANCELLED pushed")
            self.assertEqual(events, [deferd.Cancelled(jid, job)])  # to on_event, not queued
            self.assertIsNone(await c.next_event())
            self.assertEqual(job.lost_reason, "cancelled")
            with self.assertRaises(deferd.LeaseLost):
                await job.ack(wait=True)
            self.assertEqual(pending("forced"), 0)

    async def test_follow_ups(self) -> None:
        async with client() as p, client() as c:
            job = await put_and_take(p, c, "follow", b"parent")
            with self.assertRaises(deferd.UnknownQueue):  # nothing changed, still held
                await job.ack(then=[("out", b"x", 60), ("nosuchqueue", b"y")])
            self.assertFalse(job.settled)
            res = await job.ack(then=[deferd.Put("out", b"c1", delay=60),
                                      {"queue": "out", "payload": "c2", "delay": 60,
                                       "key": "f-1"}])
            self.assertIsInstance(res, deferd.BatchResult)
            self.assertEqual(len(res.ids), 2)
            self.assertIsNone(res.moved_id)
            self.assertEqual((pending("follow"), pending("out")), (0, 2))
            await p.put("follow", b"second")
            job = await c.next_job(timeout=10)
            assert job is not None
            res = await job.nack(delay=60, then=[dict(queue="out", payload=b"c3", delay=60,
                                                      key="f-1")])
            self.assertTrue(res.moved_id and res.moved_id != job.id, res)
            self.assertTrue(res.results[0].duplicate)
            self.assertEqual((pending("follow"), pending("out")), (1, 2))


class Draining(unittest.IsolatedAsyncioTestCase):
    async def test_state_push_then_disconnected(self) -> None:
        d = Daemon("aio-drain", {"q": ""}).start()
        try:
            async with deferd.aio.Client(d.sock, timeout=20) as c:
                await c.put("q", b"held")
                await c.subscribe("q")
                job = await c.next_job(timeout=10)
                assert job is not None and d.proc is not None
                os.kill(d.proc.pid, signal.SIGTERM)
                ev = await c.next_event(timeout=10)
                self.assertEqual(ev, deferd.State("DRAINING"))
                with self.assertRaises(deferd.Unavailable) as e:
                    await c.put("q", b"refused while draining")
                self.assertTrue(e.exception.retryable)
                await job.ack(wait=True)  # still allowed; then the daemon exits
                with self.assertRaises(deferd.Disconnected):
                    await c.next_event(timeout=20)  # end of file
                with self.assertRaises(ConnectionError):
                    await c.ping()
                self.assertEqual(d.proc.wait(20), 0)
        finally:
            d.stop()


if __name__ == "__main__":
    unittest.main()
