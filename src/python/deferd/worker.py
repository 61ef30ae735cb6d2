"""A worker process: ``python3 -m deferd.worker --queue Q --concurrency N MODULE:FUNCTION``.

It calls ``FUNCTION(job)`` for each job of the queues, up to N calls at once in threads
(handlers are ordinary blocking functions). A return acks the job; an exception nacks it,
after the queue's backoff, or after the delay the exception carries (:class:`Retry`, or any
exception with a ``retry_delay`` attribute). Leases are renewed while a handler runs.
SIGTERM or SIGINT (or ``--max-jobs``) makes it leave cleanly: no new job is started, running
ones finish and are settled, jobs pushed ahead but never started are given back without
spending an attempt, and it exits 0. See docs/python.md, "Worker".

One thread owns the connection: it waits with ``select`` on the socket and on a pipe that
handler threads and signals write to, sends acks and nacks pipelined (never waiting for one
reply before taking the next job) and logs the ones that fail.
"""

from __future__ import annotations

import argparse
import collections
import datetime
import heapq
import importlib
import json
import os
import queue
import select
import signal
import sys
import threading
import time
import traceback
from typing import (Any, Callable, Deque, Dict, Iterable, List, Optional, Sequence, TextIO,
                    Tuple,
                    Union)

from .client import (Cancelled, Client, Deadline, Event, Expired, Job, PutLike, Reply, State,
                     encode_ack)
from .errors import (BadRequest, DeferdError, Disconnected, LeaseLost, NotFound,
                     ProtocolError, UnknownQueue)

EXIT_OK = 0
EXIT_CONNECTION = 1
EXIT_USAGE = 2

Handler = Callable[["WorkerJob"], Any]


class Retry(Exception):
    """Raise it from a handler to nack the job with a delay of your choice: it is due again
    ``delay`` seconds (a number or a timedelta) from now, instead of after the queue's
    backoff. The attempt is spent as for any failure. Any other exception with an attribute
    ``retry_delay`` (seconds or timedelta, not None) is treated the same way."""

    def __init__(self, delay: Union[int, float, datetime.timedelta], message: str = "") -> None:
        super().__init__(message or f"retry in {delay} s")
        self.delay = delay
        self.retry_delay = delay


def retry_delay_of(exc: BaseException) -> Optional[float]:
    """The delay in seconds a handler's exception asks for (its ``retry_delay``), or None for
    the queue's backoff. Read by attribute, so that a :class:`Retry` of another copy of this
    module (``-m`` runs it as ``__main__``) counts too."""
    value = getattr(exc, "retry_delay", None)
    if isinstance(value, datetime.timedelta):
        value = value.total_seconds()
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    return max(0.0, float(value))


class WorkerJob:
    """One delivery of a job, as the handler sees it (read-only).

    Attributes:
        payload: the job's bytes.
        id: the job id of this delivery (it changes when the job is nacked with a delay).
        uid: the job's stable id across deliveries, when the client provides one, else None.
        queue, attempt (1 on the first delivery; above 1: an earlier run may have done part
        of the work), priority (lower is more urgent), due_ms (epoch ms), ttr_ms.
    """

    __slots__ = ("_job", "payload", "id", "uid", "queue", "attempt", "priority", "due_ms",
                 "ttr_ms", "_then")

    def __init__(self, job: Job) -> None:
        self._job = job
        self._then: Optional[Tuple[List[PutLike], bool]] = None
        self.payload: bytes = job.payload
        self.id: str = job.id
        self.uid: Optional[str] = getattr(job, "uid", None)
        self.queue: str = job.queue
        self.attempt: int = job.attempt
        self.priority: int = job.priority
        self.due_ms: int = job.due_ms
        self.ttr_ms: int = job.ttr_ms

    @property
    def due(self) -> datetime.datetime:
        """The due time as an aware UTC datetime."""
        return self._job.due

    @property
    def group(self) -> str:
        """The group the job was put with (``put(..., group=)``), "" for none."""
        return self._job.group

    @property
    def ttr(self) -> float:
        """The lease length in seconds (the worker renews it while the handler runs)."""
        return self._job.ttr

    @property
    def lost(self) -> bool:
        """True once the daemon took the job back (lease expired, session lost, cancelled),
        or the worker's connection to the daemon broke (its lock ends with the daemon's
        session): it will be delivered again and this run's result will not count. A long
        handler should check it and stop early: a queue's concurrency limit counts on it
        (docs/limits.md)."""
        return self._job.lost

    def ack_then(self, puts: Iterable[PutLike]) -> None:
        """Acks the job with follow-up jobs (``ACK then=``, docs/protocol.md) when the handler
        returns: created in the ack's own ZooKeeper transaction, or not at all. If the
        handler raises after this, the job is nacked as usual and none is created. The puts
        are checked here (a bad one raises at once); a second call replaces the first."""
        self._followups(puts, False)

    def ack_join(self, puts: Iterable[PutLike]) -> None:
        """As :meth:`ack_then`, and the follow-ups join this job's flow (``join=1``,
        docs/flows.md): its parent waits for them too (a crawler's page adding the links it
        found)."""
        self._followups(puts, True)

    def _followups(self, puts: Iterable[PutLike], join: bool) -> None:
        items = list(puts)
        encode_ack(self.id, items, join)  # the checks of Job.ack, in the handler's thread
        self._then = (items, join)

    def __repr__(self) -> str:
        return (f"WorkerJob(id={self.id!r}, queue={self.queue!r}, attempt={self.attempt}, "
                f"payload={self.payload[:32]!r})")


def _logfmt(value: Any) -> str:
    text = value if isinstance(value, str) else str(value)
    if text and all(c.isprintable() and c not in ' "=' for c in text):
        return text
    return json.dumps(text)


class Log:
    """One line per event on ``stream``: ``key=value`` pairs (``text``) or a JSON object
    (``json``), always with ``ts``, ``level`` and ``event``. ``verbose`` adds a line per job
    done and per lease renewal."""

    def __init__(self, fmt: str = "text", stream: Optional[TextIO] = None,
                 verbose: bool = False) -> None:
        if fmt not in ("text", "json"):
            raise ValueError(f"log format must be text or json, not {fmt!r}")
        self.fmt = fmt
        self.stream = stream
        self.verbose = verbose
        self._lock = threading.Lock()

    def __call__(self, level: str, event: str, **fields: Any) -> None:
        now = datetime.datetime.now(datetime.timezone.utc)
        rec: Dict[str, Any] = {"ts": now.isoformat(timespec="milliseconds").replace(
            "+00:00", "Z"), "level": level, "event": event}
        rec.update((k, v) for k, v in fields.items() if v is not None)
        if self.fmt == "json":
            line = json.dumps(rec, default=str)
        else:
            line = " ".join(f"{k}={_logfmt(v)}" for k, v in rec.items())
        stream = self.stream or sys.stderr
        with self._lock:
            stream.write(line + "\n")
            stream.flush()


def _job_fields(job: Union[Job, WorkerJob, None]) -> Dict[str, Any]:
    if job is None:
        return {}
    return {"queue": job.queue, "id": job.id, "uid": getattr(job, "uid", None),
            "attempt": job.attempt}


def _error_fields(err: BaseException) -> Dict[str, Any]:
    cls = type(err)
    name = cls.__qualname__ if cls.__module__ == "builtins" else f"{cls.__module__}.{cls.__qualname__}"
    frames = traceback.extract_tb(err.__traceback__)
    where = f"{os.path.basename(frames[-1].filename)}:{frames[-1].lineno}" if frames else None
    try:
        text = str(err)
    except Exception as e:  # a broken __str__ must not stop the worker
        text = f"<str() failed: {type(e).__name__}>"
    return {"error_type": name, "error": text, "at": where}


class _Rec:
    """The worker's state of one delivery it holds."""

    __slots__ = ("job", "wjob", "client", "running", "renew_at", "quiet", "action",
                 "tries")

    def __init__(self, job: Job, client: Client) -> None:
        self.job = job
        self.wjob = WorkerJob(job)
        self.client = client
        self.running = False
        self.renew_at = 0.0
        self.quiet = False  # answered only to free its place: a LEASE_LOST is expected
        self.action: Tuple[str, Dict[str, Any]] = ("ack", {})
        self.tries = 0


class Worker:
    """Runs ``handler`` on the jobs of ``queues`` until told to stop; :meth:`run` returns the
    exit code. See the module's docstring and docs/python.md.

    Args:
        handler: called with a :class:`WorkerJob`; return = ack, exception = nack.
        queues: the queues to consume.
        concurrency: handler calls at once (threads).
        inflight: jobs the daemon may push ahead (at least ``concurrency``; default 2N).
        socket_path: the daemon's socket (default as for :class:`deferd.Client`).
        max_jobs: leave after starting this many jobs (None: never).
        log: where events go (default: text lines on stderr).
        reconnect: seconds to keep trying to connect again after the connection broke
            (0: exit 1 at once).
        timeout: seconds to wait for a reply to SUB and UNSUB.
    """

    def __init__(self, handler: Handler, queues: Sequence[str], concurrency: int = 1,
                 inflight: Optional[int] = None, socket_path: Optional[str] = None,
                 max_jobs: Optional[int] = None, log: Optional[Log] = None,
                 reconnect: float = 30.0, timeout: float = 30.0) -> None:
        if concurrency < 1:
            raise ValueError("concurrency must be at least 1")
        self.handler = handler
        self.queues = list(queues)
        self.concurrency = concurrency
        self.inflight = inflight if inflight is not None else 2 * concurrency
        if self.inflight < concurrency:
            raise ValueError("inflight must be at least the concurrency")
        self.socket_path = socket_path
        self.max_jobs = max_jobs
        self.log = log or Log()
        self.reconnect = reconnect
        self.timeout = timeout
        self.client: Optional[Client] = None
        self._waiting: Deque[_Rec] = collections.deque()
        self._recs: Dict[Job, _Rec] = {}  # held and not settled yet
        self._events: Deque[Event] = collections.deque()
        self._ack_errors: Deque[DeferdError] = collections.deque()
        self._renew: List[Tuple[float, int, _Rec]] = []
        self._resettle: List[Tuple[float, int, _Rec]] = []
        self._seq = 0
        self._work: "queue.SimpleQueue[Optional[_Rec]]" = queue.SimpleQueue()
        self._done: "queue.SimpleQueue[Tuple[_Rec, Optional[BaseException], float]]" = \
            queue.SimpleQueue()
        self._running = 0
        self.started = 0
        self.acked = 0
        self.failed = 0
        self.retried = 0
        self.given_back = 0
        self._stop_reason: Optional[str] = None
        self._leaving = False
        self._unsub: Optional[Reply] = None  # the leaving UNSUB, until answered
        self._abort = False
        self._draining = False  # deferd said DRAINING: its closing the connection is expected
        self._signals = 0
        self._exit = EXIT_OK
        self._reconnect_at: Optional[float] = None
        self._reconnect_until = 0.0
        self._backoff = 0.1
        self._wake_r, self._wake_w = os.pipe2(os.O_NONBLOCK | os.O_CLOEXEC)
        self._threads: List[threading.Thread] = []

    # -- control ----------------------------------------------------------------------------

    def stop(self, reason: str = "stop") -> None:
        """Starts leaving (safe from a signal handler or another thread): no new job starts,
        running ones finish and are settled, prefetched ones are given back."""
        if self._stop_reason is None:
            self._stop_reason = reason
        self._wake()

    def _wake(self) -> None:
        try:
            os.write(self._wake_w, b".")
        except (BlockingIOError, OSError):
            pass  # a byte is waiting already, or we are closing

    def _on_signal(self, signum: int, frame: Any) -> None:
        self._signals += 1
        if self._signals > 1:
            self._abort = True
        self.stop(signal.Signals(signum).name)

    def install_signal_handlers(self) -> None:
        """SIGTERM and SIGINT start leaving; a second one stops waiting for running handlers
        (the daemon releases their jobs, which come again) and exits 1. Main thread only."""
        signal.signal(signal.SIGTERM, self._on_signal)
        signal.signal(signal.SIGINT, self._on_signal)

    # -- the loop ---------------------------------------------------------------------------

    def run(self) -> int:
        """Connects, subscribes and runs jobs until stopped; returns the exit code: 0 after a
        clean leave, 1 on a connection that could not be made or kept, 2 when the daemon
        refused the queues or the inflight."""
        try:
            self.client = self._connect()
        except (UnknownQueue, BadRequest) as e:
            self.log("error", "subscribe_failed", queues=",".join(self.queues), code=e.code,
                     error=e.text)
            return EXIT_USAGE
        except (OSError, DeferdError) as e:
            self.log("error", "connect_failed", socket=self._socket_name(),
                     code=getattr(e, "code", None), error=str(e))
            return EXIT_CONNECTION
        self.log("info", "started", queues=",".join(self.queues), concurrency=self.concurrency,
                 inflight=self._sub_inflight(), socket=self._socket_name(), pid=os.getpid())
        for i in range(self.concurrency):
            t = threading.Thread(target=self._thread, name=f"deferd-worker-{i + 1}", daemon=True)
            t.start()
            self._threads.append(t)
        try:
            while not self._finished():
                try:
                    self._step()
                except (Disconnected, ProtocolError, TimeoutError) as e:
                    self._lost_connection(e)
        finally:
            for _ in self._threads:
                self._work.put(None)
            if self.client is not None:
                self.client.close()
            if not self._running:  # else a handler thread may still write to it
                for t in self._threads:  # idle: each takes its None and ends at once; a
                    t.join()             # thread between its result and its wake-up
                os.close(self._wake_r)   # must not write to a reused descriptor
                os.close(self._wake_w)
        if self._abort:
            self._exit = EXIT_CONNECTION
        self.log("info" if self._exit == EXIT_OK else "error", "stopped",
                 reason=self._stop_reason, started=self.started, acked=self.acked,
                 failed=self.failed, retried=self.retried, given_back=self.given_back,
                 exit=self._exit, running=self._running or None,
                 cpu_s=round(time.process_time(), 3))
        return self._exit

    def _socket_name(self) -> str:
        return self.socket_path or os.environ.get("DEFERD_SOCKET") or "/run/deferd/deferd.sock"

    def _sub_inflight(self) -> int:
        if self.max_jobs is None:
            return self.inflight
        return max(1, min(self.inflight, self.max_jobs - self.started))

    def _connect(self) -> Client:
        client = Client(self.socket_path, timeout=self.timeout, on_event=self._events.append,
                        on_ack_error=self._ack_errors.append)
        try:
            client.subscribe(self.queues, inflight=self._sub_inflight())
        except BaseException:
            client.close()
            raise
        return client

    def _finished(self) -> bool:
        if self._abort:
            if self._running:
                self.log("error", "abandoned", running=self._running,
                         note="second signal: running jobs are released and come again")
            return True
        if not self._leaving or self._running:
            return False
        if self.client is None:
            return True
        return not self._recs and not self._resettle and self.client.unanswered == 0

    def _timeout(self, now: float) -> Optional[float]:
        # Jobs and events read along with a reply (SUB's, say) make the socket no more
        # readable: waiting on it then would leave them unstarted for ever.
        if self._events or self._ack_errors or (self.client is not None and self.client.ready):
            return 0.0
        times = [t for t, _, _ in self._renew[:1] + self._resettle[:1]]
        if self.client is None and self._reconnect_at is not None and not self._leaving:
            times.append(self._reconnect_at)
        return max(0.0, min(times) - now) if times else None

    def _step(self) -> None:
        fds = [self._wake_r]
        if self.client is not None:
            fds.append(self.client.fileno())
        ready, _, _ = select.select(fds, [], [], self._timeout(time.monotonic()))
        if self._wake_r in ready:
            try:
                while os.read(self._wake_r, 4096):
                    pass
            except BlockingIOError:
                pass
        if self.client is not None and fds[-1] in ready and fds[-1] != self._wake_r:
            self.client.poll(0)
        self._take_jobs()
        self._handle_events()
        self._handle_ack_errors()
        self._handle_done()
        self._unsubscribed()
        now = time.monotonic()
        self._renew_leases(now)
        self._retry_settles(now)
        self._start_jobs()
        if self._stop_reason is not None and not self._leaving:
            self._leave()
        if self.client is None and not self._leaving and self._reconnect_at is not None \
                and now >= self._reconnect_at:
            self._try_reconnect(now)

    # -- handler threads --------------------------------------------------------------------

    def _thread(self) -> None:
        while True:
            rec = self._work.get()
            if rec is None:
                return
            t0 = time.monotonic()
            err: Optional[BaseException] = None
            try:
                self.handler(rec.wjob)
            except BaseException as e:  # noqa: B902 - any failure is the job's, not ours
                err = e
            self._done.put((rec, err, time.monotonic() - t0))
            self._wake()

    # -- jobs -------------------------------------------------------------------------------

    def _renew_period(self, job: Job) -> float:
        return max(0.2, job.ttr_ms / 2000)

    def _push_renew(self, rec: _Rec, when: float) -> None:
        rec.renew_at = when
        self._seq += 1
        heapq.heappush(self._renew, (when, self._seq, rec))

    def _take_jobs(self) -> None:
        client = self.client
        if client is None:
            return
        now = time.monotonic()
        while (job := client.next_job(0)) is not None:
            rec = _Rec(job, client)
            # found again from the job when its ack fails; the job<->record cycle goes with
            # the job once the client lets go of it (a mapping here would keep every job)
            job._worker_rec = rec  # type: ignore[attr-defined]
            if job.lost:  # expired before it was taken: answer it to free its place
                self._answer_lost(rec)
            elif self._leaving:
                self._give_back(rec)
            else:
                self._recs[job] = rec
                self._waiting.append(rec)
                self._push_renew(rec, now + self._renew_period(job))

    def _start_jobs(self) -> None:
        while self._waiting and self._running < self.concurrency and self._stop_reason is None:
            rec = self._waiting.popleft()
            rec.running = True
            self._running += 1
            self.started += 1
            self._work.put(rec)
            if self.max_jobs is not None and self.started >= self.max_jobs:
                self.stop("max-jobs")

    def _handle_done(self) -> None:
        while True:
            try:
                rec, err, seconds = self._done.get_nowait()
            except queue.Empty:
                return
            self._running -= 1
            rec.running = False
            fields = _job_fields(rec.job)
            delay = retry_delay_of(err) if err is not None else None
            if err is not None and delay is not None:
                # The handler asked for this retry (Retry, or a retry_delay): no error.
                self.retried += 1
                self.log("info", "job_retry", **fields, delay_ms=round(delay * 1000),
                         **_error_fields(err), seconds=round(seconds, 3))
            elif err is not None:
                self.failed += 1
                self.log("error", "job_failed", **fields, **_error_fields(err),
                         seconds=round(seconds, 3), retry_in="backoff")
            if rec.client is not self.client:
                self.log("warning", "unsettled", **fields,
                         note="the connection was lost while it ran; the job comes again")
                continue
            if err is None:
                then = rec.wjob._then
                if self.log.verbose:
                    self.log("info", "job_done", **fields, seconds=round(seconds, 3),
                             followups=len(then[0]) if then else None)
                self._settle(rec, "ack", {"then": then[0], "join": then[1]} if then else {})
            else:
                self._settle(rec, "nack", {} if delay is None else {"delay": delay})

    def _settle(self, rec: _Rec, action: str, kw: Dict[str, Any]) -> None:
        """Sends the ack or nack pipelined; a failure comes back through on_ack_error."""
        rec.action = (action, kw)
        if action == "ack":
            rec.job.ack(wait=False, **kw)
            self.acked += 1
        else:
            rec.job.nack(wait=False, **kw)
        self._recs.pop(rec.job, None)

    def _answer_lost(self, rec: _Rec) -> None:
        rec.quiet = True
        self._settle(rec, "nack", {"unrun": True})

    def _give_back(self, rec: _Rec) -> None:
        """NACK unrun=1: a job pushed ahead and never started goes back, attempt unspent."""
        if rec.job.lost:
            self._answer_lost(rec)
            return
        self._settle(rec, "nack", {"unrun": True})
        self.given_back += 1

    def _give_back_waiting(self) -> int:
        n = self.given_back
        while self._waiting:
            self._give_back(self._waiting.popleft())
        return self.given_back - n

    def _leave(self) -> None:
        """UNSUB, then give back what was pushed ahead; running jobs finish and are settled."""
        self._leaving = True
        self.log("info", "leaving", reason=self._stop_reason, running=self._running,
                 prefetched=len(self._waiting))
        if self.client is None:
            self._exit = EXIT_CONNECTION
            return
        # not waited for: its reply may queue behind acks the daemon holds (ZooKeeper
        # suspended), and leases must be renewed meanwhile; jobs pushed before it are given
        # back as they come (_take_jobs), and leaving ends once it is answered (_finished)
        self._unsub = self.client.unsubscribe(wait=False)
        self._give_back_waiting()

    def _unsubscribed(self) -> None:
        reply = self._unsub
        if reply is None or not reply.done:
            return
        self._unsub = None
        if reply.error is not None:
            self.log("warning", "unsubscribe_failed", code=reply.error.code,
                     error=reply.error.text)

    # -- leases, pushes, failed answers -----------------------------------------------------

    def _touch(self, rec: _Rec, now: float) -> None:
        if rec.job.settled or rec.job.lost or rec.client is not self.client:
            return
        rec.job.touch(wait=False)
        if self.log.verbose:
            self.log("info", "touched", **_job_fields(rec.job), running=rec.running)
        self._push_renew(rec, now + self._renew_period(rec.job))

    def _renew_leases(self, now: float) -> None:
        while self._renew and self._renew[0][0] <= now:
            when, _, rec = heapq.heappop(self._renew)
            if self._recs.get(rec.job) is rec and rec.renew_at == when:
                self._touch(rec, now)
        # settled jobs' entries would stay until their time (ttr/2, maybe hours) with their
        # payloads: keep the heap at the size of what is held
        if len(self._renew) > 2 * len(self._recs) + 64:
            self._renew = [e for e in self._renew
                           if self._recs.get(e[2].job) is e[2] and e[2].renew_at == e[0]]
            heapq.heapify(self._renew)

    def _handle_events(self) -> None:
        while self._events:
            ev = self._events.popleft()
            if isinstance(ev, Deadline):
                rec = self._recs.get(ev.job) if ev.job is not None else None
                if rec is not None:
                    self._touch(rec, time.monotonic())
            elif isinstance(ev, (Expired, Cancelled)):
                self._job_taken(ev)
            elif isinstance(ev, State):
                self._state(ev.state)

    def _job_taken(self, ev: Union[Expired, Cancelled]) -> None:
        rec = self._recs.get(ev.job) if ev.job is not None else None
        running = rec is not None and rec.running
        what = "lease_expired" if isinstance(ev, Expired) else "job_cancelled"
        fields = _job_fields(ev.job) if ev.job is not None else {"id": ev.job_id}
        self.log("warning", what, **fields, running=running,
                 note=("its handler runs on; the result will not count" if running else None))
        if rec is not None and rec in self._waiting:
            self._waiting.remove(rec)
            self._answer_lost(rec)

    def _state(self, state: str) -> None:
        notes = {
            "SUSPENDED": "deferd lost ZooKeeper; acks are held until it is back",
            "LOST": "deferd's ZooKeeper session expired; held jobs are taken back",
            "DRAINING": "deferd is shutting down; prefetched jobs are given back, running "
                        "ones finish",
        }
        self.log("warning" if state in notes else "info", "state", state=state,
                 note=notes.get(state))
        if state == "DRAINING":
            self._draining = True
            self._give_back_waiting()

    def _handle_ack_errors(self) -> None:
        while self._ack_errors:
            err = self._ack_errors.popleft()
            job = err.job
            rec = getattr(job, "_worker_rec", None)
            fields = _job_fields(job)
            if job is None or job.reply is None or job.reply.error is not err:
                if not isinstance(err, NotFound):  # a touch that crossed its job's ack
                    self.log("warning", "touch_failed", **fields, code=err.code,
                             error=err.text)
                continue
            if rec is None or rec.quiet:
                continue
            action = rec.action[0]
            if err.retryable and not isinstance(err, Disconnected) and rec.tries < 5 \
                    and rec.client is self.client:
                rec.tries += 1
                self._recs[job] = rec
                self._seq += 1
                self._resettle.append((time.monotonic() + 1.0, self._seq, rec))
                self.log("warning", "settle_failed", **fields, action=action, code=err.code,
                         error=err.text, retry_in=1.0)
                continue
            if action == "ack":
                self.acked -= 1
            note = None
            if isinstance(err, LeaseLost):
                note = ("the job was cancelled" if job.lost_reason == "cancelled"
                        else "the job comes again")
            self.log("error", "settle_failed", **fields, action=action, code=err.code,
                     error=err.text, note=note)

    def _retry_settles(self, now: float) -> None:
        while self._resettle and self._resettle[0][0] <= now:
            _, _, rec = self._resettle.pop(0)
            self._recs.pop(rec.job, None)
            if rec.client is self.client and not rec.job.settled:
                self._settle(rec, *rec.action)

    # -- connection -------------------------------------------------------------------------

    def _lost_connection(self, err: BaseException) -> None:
        self.log("warning" if self._draining else "error", "disconnected", error=str(err),
                 running=self._running, prefetched=len(self._waiting),
                 note="held jobs are released by deferd and come again")
        self._draining = False
        for rec in self._recs.values():  # running handlers see job.lost and may stop
            if not rec.job.settled:
                rec.job.lost = True
                rec.job.lost_reason = "disconnected"
        if self.client is not None:
            self.client.close()
        self.client = None
        self._waiting.clear()
        self._recs.clear()
        self._renew.clear()
        self._resettle.clear()
        self._events.clear()
        self._ack_errors.clear()
        if self._leaving or self.reconnect <= 0:
            self._exit = EXIT_CONNECTION
            self._leaving = True
            return
        now = time.monotonic()
        self._reconnect_at = now
        self._reconnect_until = now + self.reconnect
        self._backoff = 0.1

    def _try_reconnect(self, now: float) -> None:
        try:
            self.client = self._connect()
        except (OSError, DeferdError) as e:
            if now >= self._reconnect_until:
                self.log("error", "connect_failed", socket=self._socket_name(),
                         code=getattr(e, "code", None), error=str(e),
                         note=f"gave up after {self.reconnect:g} s")
                self._exit = EXIT_CONNECTION
                self._leaving = True
                return
            self._backoff = min(2.0, self._backoff * 2)
            self._reconnect_at = now + self._backoff
            return
        self._reconnect_at = None
        self.log("info", "reconnected", socket=self._socket_name())


# -- command line ----------------------------------------------------------------------------

class HandlerError(Exception):
    """MODULE:FUNCTION could not be loaded (exit 2)."""


def load_handler(spec: str) -> Handler:
    """Imports ``MODULE:FUNCTION`` (FUNCTION may be dotted: ``module:Class.method``) and
    returns the callable; raises :class:`HandlerError` saying what is wrong. The current
    directory is searched first, as ``python3 -m`` does."""
    module_name, sep, attr = spec.partition(":")
    if not sep or not module_name or not attr:
        raise HandlerError(f"expected MODULE:FUNCTION (e.g. tasks:send_email), got {spec!r}")
    if os.getcwd() not in sys.path and "" not in sys.path:
        sys.path.insert(0, os.getcwd())
    try:
        module = importlib.import_module(module_name)
    except ImportError as e:
        if e.name is not None and module_name.startswith(e.name):
            raise HandlerError(f"cannot import module {module_name!r}: {e} "
                               f"(searched {os.pathsep.join(p or '.' for p in sys.path)})")
        raise HandlerError(f"importing module {module_name!r} failed: "
                           f"{type(e).__name__}: {e}") from e
    except Exception as e:
        where = traceback.extract_tb(e.__traceback__)[-1]
        raise HandlerError(f"importing module {module_name!r} failed: {type(e).__name__}: "
                           f"{e} ({where.filename}:{where.lineno})") from e
    obj: Any = module
    for part in attr.split("."):
        try:
            obj = getattr(obj, part)
        except AttributeError:
            raise HandlerError(f"module {module_name!r} has no {attr!r} "
                               f"({module.__file__})") from None
    if not callable(obj):
        raise HandlerError(f"{spec!r} is not callable: {type(obj).__name__}")
    return obj


def _positive(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a whole number: {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1: {text!r}")
    return value


def parser() -> argparse.ArgumentParser:
    """The command line of ``python3 -m deferd.worker``."""
    p = argparse.ArgumentParser(
        prog="python3 -m deferd.worker",
        description="Calls MODULE:FUNCTION(job) for each job of the queues: return = ack, "
                    "exception = nack (the queue's backoff, or the exception's retry_delay). "
                    "SIGTERM/SIGINT: finish running jobs, give back the rest, exit 0.",
        epilog="exit status: 0 after a clean leave, 1 connection error, 2 usage error "
               "(bad MODULE:FUNCTION, unknown queue). See docs/python.md.")
    p.add_argument("function", metavar="MODULE:FUNCTION",
                   help="the handler, e.g. tasks:send_email (the current directory is on "
                        "the import path)")
    p.add_argument("-q", "--queue", action="append", required=True, metavar="Q[,Q2]",
                   help="queue(s) to consume; may be given more than once")
    p.add_argument("-c", "--concurrency", type=_positive, default=1, metavar="N",
                   help="handler calls at once, in threads (default 1)")
    p.add_argument("--inflight", type=_positive, metavar="M",
                   help="jobs deferd may push ahead, at least N (default 2N)")
    p.add_argument("-s", "--socket", metavar="PATH",
                   help="deferd's socket (default $DEFERD_SOCKET, else /run/deferd/deferd.sock)")
    p.add_argument("--max-jobs", type=_positive, metavar="K",
                   help="leave after starting K jobs")
    p.add_argument("--log-format", choices=("text", "json"), default="text",
                   help="stderr lines as key=value (default) or JSON")
    p.add_argument("-v", "--verbose", action="store_true",
                   help="also a line per job done and per lease renewal")
    p.add_argument("--reconnect", type=float, default=30.0, metavar="SECONDS",
                   help="keep trying to connect again this long after the connection broke "
                        "(default 30; 0: exit 1 at once)")
    return p


def main(argv: Optional[Sequence[str]] = None) -> int:
    """``python3 -m deferd.worker``: parses ``argv``, loads the handler and runs a
    :class:`Worker` with signal handlers; returns the exit status."""
    p = parser()
    args = p.parse_args(argv)
    queues = [q for arg in args.queue for q in arg.split(",") if q]
    if not queues:
        p.error("--queue names no queue")
    inflight = args.inflight if args.inflight is not None else 2 * args.concurrency
    if inflight < args.concurrency:
        p.error(f"--inflight {inflight} is below --concurrency {args.concurrency}")
    try:
        handler = load_handler(args.function)
    except HandlerError as e:
        print(f"{p.prog}: {e}", file=sys.stderr)
        return EXIT_USAGE
    worker = Worker(handler, queues, concurrency=args.concurrency, inflight=inflight,
                    socket_path=args.socket, max_jobs=args.max_jobs,
                    log=Log(args.log_format, verbose=args.verbose), reconnect=args.reconnect)
    worker.install_signal_handlers()
    return worker.run()


if __name__ == "__main__":
    # Run the package's copy, so that handlers importing deferd.worker share its classes.
    from deferd.worker import main as _main
    sys.exit(_main())
