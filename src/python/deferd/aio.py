"""The asyncio flavour of the deferd client: the operations of :class:`deferd.Client`, awaited.

::

    import deferd.aio

    async with deferd.aio.Client() as client:       # $DEFERD_SOCKET or /run/deferd/deferd.sock
        await client.put("emails", b"hello", delay=5)

One :class:`Client` is one connection, used from one event loop (any number of its tasks).
A reader task owns the connection's input: it matches replies to requests in the order they
were sent (a FIFO of pending replies, as the protocol answers in request order), queues
pushed jobs and events, and wakes whoever waits for them. Requests are written at once, so
``ack()``/``nack()`` are pipelined: awaiting them waits only for the write buffer to drain,
not for the reply. The wire encoding and parsing are :mod:`deferd.client`'s, shared.
"""

from __future__ import annotations

import asyncio
import time
from typing import Any, AsyncIterator, Callable, Dict, Iterable, Optional, Sequence, Union

from .client import (BaseClient, BaseJob, BaseReply, BatchResult, Event, Payload, Put,
                     PutLike, PutResult, Seconds, When, _parse_batch, _parse_empty,
                     _parse_opt_id, _parse_pong, _parse_put, _parse_stats, encode_ack,
                     encode_batch, encode_cancel, encode_flow, encode_nack, encode_reschedule, encode_stats,
                     encode_subscribe, encode_unsubscribe, PutAttempts)
from .errors import ConnectFailed, DeferdError, Disconnected

__all__ = ["Client", "Job", "Reply"]


class Reply(BaseReply):
    """The future answer to one request: ``done``, then ``value`` or ``error``.
    ``await reply.result()`` waits for it and returns the value or raises the error."""

    _client: "Client"

    def __init__(self, *args: Any, **kw: Any) -> None:
        super().__init__(*args, **kw)
        self._waiter: Optional[asyncio.Future[None]] = None  # made only when awaited

    def _resolve(self, line: str) -> None:
        super()._resolve(line)
        self._wake()

    def _fail(self, error: DeferdError) -> None:
        super()._fail(error)
        self._wake()

    def _wake(self) -> None:
        if self._waiter is not None and not self._waiter.done():
            self._waiter.set_result(None)

    async def result(self, timeout: Optional[float] = None) -> Any:
        """Waits for the reply (at most ``timeout`` s, default the client's) and returns it,
        or raises its :class:`DeferdError`; :class:`TimeoutError` leaves it pending (a late
        reply is still matched to it)."""
        if not self.done:
            if self._waiter is None:
                self._waiter = asyncio.get_running_loop().create_future()
            if timeout is None:
                timeout = self._client.timeout
            try:  # shield: a timeout must not cancel the waiter others may share
                async with asyncio.timeout(timeout):
                    await asyncio.shield(self._waiter)
            except TimeoutError:
                raise TimeoutError("no reply from deferd in time") from None
        if self.error is not None:
            if self.background:
                self._client._forget_error(self)
            raise self.error
        return self.value


class Job(BaseJob):
    """A job delivered to this connection (``JOB`` push), with the attributes of
    :class:`deferd.Job` (``id``, ``uid``, ``queue``, ``attempt``, ``due``, ``priority``,
    ``ttr``, ``payload``, ``lost``, ...). Answer it with ``await job.ack()`` or ``await job.nack()``."""

    _client: "Client"

    async def _settle(self, request: bytes, parse: Callable[[str], Any],
                      blocking_default: bool, wait: Optional[bool]) -> Any:
        wait = self._start_settle(wait, blocking_default)
        self.reply = reply = self._client._write(request, parse, job=self,
                                                 background=not wait, settles=True)
        await self._client._drain()
        return await reply.result() if wait else reply

    async def ack(self, then: Optional[Iterable[PutLike]] = None,
                  wait: Optional[bool] = None, join: bool = False) -> Any:
        """Acknowledges the job: it is deleted.

        With ``then``, the follow-up jobs are created in the same ZooKeeper transaction (all
        or none, with the ack); waits and returns a :class:`deferd.BatchResult`. Otherwise,
        by default, the ack is pipelined: written without waiting for its reply, it returns
        the :class:`Reply`; a failure is raised by the next :meth:`Client.next_job`,
        :meth:`Client.next_event` or :meth:`Client.flush` (or given to ``on_ack_error``).
        ``wait=True`` waits and raises here. ``join=True``: the follow-ups join the job's
        flow (docs/flows.md).
        """
        self._joining = join
        return await self._settle(*encode_ack(self.id, then, join), wait)

    async def nack(self, delay: Optional[Seconds] = None, unrun: bool = False,
                   then: Optional[Iterable[PutLike]] = None, wait: Optional[bool] = None) -> Any:
        """Gives the job back to be delivered again: after ``delay`` seconds, else after the
        queue's backoff; ``unrun=True``: never started, no attempt spent. ``then``: follow-ups
        in the same transaction (waits; a :class:`deferd.BatchResult` whose ``moved_id`` is
        the job's new id). Otherwise pipelined like :meth:`ack`; waited for, it returns the
        job's new id or None."""
        return await self._settle(*encode_nack(self.id, delay, unrun, then), wait)

    async def touch(self, wait: bool = True) -> Optional[Reply]:
        """Renews the lease (another full ttr from now); raises :class:`deferd.LeaseLost` if
        it had already run out. ``wait=False`` pipelines it and returns the :class:`Reply`."""
        reply = await self._client._send(f"TOUCH {self.id}\n".encode(), _parse_empty, job=self,
                                         background=not wait)
        if wait:
            await reply.result()
            return None
        return reply


class Client(BaseClient[Job, Reply]):
    """One asyncio connection to a deferd daemon.

    Open it with ``async with Client(...) as client`` or ``client = await
    Client.connect(...)`` (then ``await client.close()``). The arguments are those of
    :class:`deferd.Client`:

    Args:
        socket_path: default ``$DEFERD_SOCKET``, else ``/run/deferd/deferd.sock``.
        timeout: seconds to wait for a reply (or for the daemon to take a request) before
            :class:`TimeoutError`; the connection stays usable.
        pipeline: ``ack()``/``nack()`` do not wait for their reply (default).
        on_event: called (from the reader task; it must not block) with each
            :class:`deferd.Event` instead of queueing it for :meth:`next_event`.
        on_ack_error: called with each failed pipelined ack, nack or touch instead of
            raising it later.

    An exception raised by a callback, or a message that cannot be parsed, closes the
    connection: the next call raises :class:`deferd.Disconnected` with it as the cause.

    Also as in :class:`deferd.Client`: :meth:`failed_acks`, ``unanswered``, ``held``. The
    reader task keeps ``held`` and each job's ``lost`` current: there is no ``poll()``.
    """

    _job_class = Job

    def __init__(self, socket_path: Optional[str] = None, timeout: Optional[float] = 30.0,
                 pipeline: bool = True, on_event: Optional[Callable[[Event], None]] = None,
                 on_ack_error: Optional[Callable[[DeferdError], None]] = None) -> None:
        super().__init__(socket_path, timeout, pipeline, on_event, on_ack_error)
        self._reader: Optional[asyncio.StreamReader] = None
        self._writer: Optional[asyncio.StreamWriter] = None
        self._reading: Optional[asyncio.Task[None]] = None
        # Set and replaced whenever the reader task handled something: waiters re-check.
        self._arrived = asyncio.Event()

    @classmethod
    async def connect(cls, socket_path: Optional[str] = None, timeout: Optional[float] = 30.0,
                      pipeline: bool = True, on_event: Optional[Callable[[Event], None]] = None,
                      on_ack_error: Optional[Callable[[DeferdError], None]] = None) -> "Client":
        """Opens a connection; the arguments are the constructor's."""
        client = cls(socket_path, timeout, pipeline, on_event, on_ack_error)
        await client._open()
        return client

    async def _open(self) -> None:
        if self._writer is not None:
            return
        try:
            self._reader, self._writer = await asyncio.open_unix_connection(self.socket_path)
        except OSError as e:
            raise ConnectFailed(self.socket_path, e) from None  # as deferd.Client does
        self._reading = asyncio.create_task(self._read_loop(),
                                            name=f"deferd reader {self.socket_path}")

    async def __aenter__(self) -> "Client":
        await self._open()
        return self

    async def __aexit__(self, *exc: Any) -> None:
        await self.close()

    async def close(self) -> None:
        """Closes the connection. Jobs still held are released by the daemon (they come
        again with a higher attempt); see :meth:`give_back` for a clean leave."""
        if self._reading is not None:
            self._reading.cancel()
            try:
                await self._reading
            except asyncio.CancelledError:
                pass
            self._reading = None
        self._disconnect(Disconnected("client closed"))
        if self._writer is not None:
            self._writer.close()
            try:
                await self._writer.wait_closed()
            except OSError:  # the daemon went first; closed all the same
                pass
            self._writer = None

    # -- producing --------------------------------------------------------------------------

    async def put(self, queue: str, payload: Payload, delay: Optional[Seconds] = None,
                  at: Optional[When] = None, priority: Optional[int] = None,
                  ttr: Optional[Seconds] = None, key: Optional[str] = None,
                  group: Optional[str] = None) -> PutResult:
        """Schedules a job; returns its :class:`deferd.PutResult` once ZooKeeper stored it
        (``duplicate=True`` with the existing job's id when ``key`` was taken). The
        arguments are those of :meth:`deferd.Client.put`, and so is the retry of an
        ``UNAVAILABLE`` answer (:attr:`put_retry`)."""
        tries = PutAttempts(self, Put(queue, payload, delay, at, priority, ttr, key,
                                      group=group))
        while True:
            try:
                return await self._request(tries.request(), _parse_put)
            except DeferdError as e:
                pause = tries.after(e)
                if pause is None:
                    raise
                await asyncio.sleep(pause)

    async def put_batch(self, items: Iterable[PutLike]) -> BatchResult:
        """Stores several jobs, all or none (``BATCH``); items as for
        :meth:`deferd.Client.put_batch`."""
        return await self._request(encode_batch(items), _parse_batch)

    async def put_flow(self, parent: PutLike, children: Iterable[PutLike],
                       on: str = "success") -> BatchResult:
        """Stores a flow, all or none (``FLOW``); as :meth:`deferd.Client.put_flow`."""
        return await self._request(encode_flow(parent, children, on), _parse_batch)

    async def cancel(self, job_id: Optional[str] = None, *, queue: Optional[str] = None,
                     key: Optional[str] = None, force: bool = False) -> str:
        """Removes a pending job, by id or by ``queue`` and ``key``; returns its id.
        ``force=True`` also cancels a job a consumer holds (it gets ``CANCELLED``)."""
        return await self._request(encode_cancel(job_id, queue, key, force), _parse_opt_id)

    async def reschedule(self, job_id: Optional[str] = None, *,
                         delay: Optional[Seconds] = None, at: Optional[When] = None,
                         queue: Optional[str] = None, key: Optional[str] = None) -> str:
        """Moves a pending job to a new due time (``delay`` or ``at``); returns its new id."""
        req = encode_reschedule(job_id, delay, at, queue, key)
        return await self._request(req, _parse_opt_id)

    async def stats(self, queue: Optional[str] = None) -> Dict[str, Union[int, float, str]]:
        """The daemon's counters, or one queue's, by name (as :meth:`deferd.Client.stats`)."""
        return await self._request(encode_stats(queue), _parse_stats)

    async def ping(self) -> None:
        """Round trip to the daemon (``PING``, answered ``OK PONG``)."""
        await self._request(b"PING\n", _parse_pong)

    # -- consuming --------------------------------------------------------------------------

    async def subscribe(self, queues: Union[str, Sequence[str]], inflight: int = 1) -> None:
        """Becomes a consumer of ``queues`` (a name, a comma-separated string or a list);
        the daemon pushes up to ``inflight`` jobs not yet acked or nacked."""
        await self._request(encode_subscribe(queues, inflight), _parse_empty)

    async def unsubscribe(self, queues: Union[None, str, Sequence[str]] = None) -> None:
        """Takes no more jobs of ``queues`` (all when None); jobs held stay held."""
        await self._request(encode_unsubscribe(queues), _parse_empty)

    async def next_job(self, timeout: Optional[float] = None) -> Optional[Job]:
        """The next job pushed to this connection, waiting at most ``timeout`` seconds (None:
        for ever); None on timeout. Raises a failed pipelined ack/nack first, if any."""
        self._raise_failed()
        await self._wait_until(lambda: bool(self._jobs or self._failed), timeout)
        self._raise_failed()
        return self._jobs.popleft() if self._jobs else None

    async def jobs(self, idle: Optional[float] = None) -> AsyncIterator[Job]:
        """Iterates (``async for``) over jobs as they come; stops once none came for ``idle``
        seconds (None: never)."""
        while (job := await self.next_job(idle)) is not None:
            yield job

    def __aiter__(self) -> AsyncIterator[Job]:
        return self.jobs()

    async def next_event(self, timeout: Optional[float] = 0) -> Optional[Event]:
        """The next push other than ``JOB`` (:class:`deferd.Deadline`, ``Expired``,
        ``Cancelled``, ``State``, ``UnknownPush``), waiting at most ``timeout`` seconds
        (default: only what has arrived; None: for ever); None if there is none."""
        self._raise_failed()
        await self._wait_until(lambda: bool(self._events or self._failed), timeout)
        self._raise_failed()
        return self._events.popleft() if self._events else None

    async def flush(self, timeout: Optional[float] = None) -> None:
        """Waits for the replies to every request sent so far (pipelined acks and nacks
        included) and raises the first failure not yet reported (:meth:`failed_acks` has the
        rest). ``timeout``: seconds, default the client's."""
        if self._pending:
            last = self._pending[-1]
            if timeout is None:
                timeout = self.timeout
            await self._wait_until(lambda: last.done, timeout, TimeoutError(
                "no reply from deferd in time"))
        self._raise_failed()

    wait_acks = flush

    async def give_back(self) -> int:
        """Leaves cleanly: unsubscribes from every queue, then answers ``NACK unrun=1`` for
        each job received but not yet taken by :meth:`next_job` (their attempt is not
        spent), and waits for the replies. Returns how many jobs were given back."""
        await self.unsubscribe()
        jobs = self._unrun_jobs(self._write)
        for job in jobs:
            await job.nack(unrun=True, wait=False)
        if self._pending:
            last = self._pending[-1]
            await self._wait_until(lambda: last.done, None)
        return len(jobs)

    # -- plumbing ---------------------------------------------------------------------------

    async def _request(self, data: bytes, parse: Callable[[str], Any]) -> Any:
        return await (await self._send(data, parse)).result()

    async def _send(self, data: bytes, parse: Callable[[str], Any], job: Optional[Job] = None,
                    background: bool = False) -> Reply:
        reply = self._write(data, parse, job, background)
        await self._drain()
        return reply

    def _write(self, data: bytes, parse: Callable[[str], Any], job: Optional[Job] = None,
               background: bool = False, settles: bool = False) -> Reply:
        """Queues the reply and writes the request, with no await between: the FIFO of
        replies stays in the order of the bytes, whichever tasks send."""
        if self._writer is None or self._closed_error is not None:
            raise self._closed_error or Disconnected("not connected")
        reply = Reply(self, parse, job, background, settles)
        self._pending.append(reply)
        self._writer.write(data)
        return reply

    async def _drain(self) -> None:
        """Waits while the write buffer is over its limit (the daemon does not read: flow
        control), at most the client's timeout. The request stays whole in the buffer, so a
        timeout leaves the connection in step and the reply still comes."""
        writer = self._writer
        if writer is None:
            raise self._closed_error or Disconnected("not connected")
        transport = writer.transport
        try:
            if transport.get_write_buffer_size() <= transport.get_write_buffer_limits()[1]:
                await writer.drain()  # not paused: returns at once, no timer task per ack
            else:
                async with asyncio.timeout(self.timeout):
                    await writer.drain()
        except TimeoutError:
            raise TimeoutError("deferd did not read the request in time") from None
        except OSError as e:
            self._disconnect(Disconnected(f"send failed: {e}"))
            raise self._closed_error from e  # type: ignore[misc]

    async def _wait_until(self, ready: Callable[[], bool], timeout: Optional[float],
                          on_timeout: Optional[BaseException] = None) -> None:
        """Waits until ``ready()`` or ``timeout`` s passed (then raises ``on_timeout`` if
        given, else returns); raises the connection's error once it is closed."""
        deadline = None if timeout is None else time.monotonic() + timeout
        while not ready():
            if self._closed_error is not None:
                raise self._closed_error
            left = None if deadline is None else deadline - time.monotonic()
            if left is not None and left <= 0:
                if on_timeout is not None:
                    raise on_timeout
                return
            try:  # asyncio.timeout, not wait_for: no task per wait (3x the jobs/s at inflight 64)
                async with asyncio.timeout(left):
                    await self._arrived.wait()
            except TimeoutError:
                pass

    def _notify(self) -> None:
        self._arrived.set()
        self._arrived = asyncio.Event()

    async def _read_loop(self) -> None:
        """The reader task: reads, dispatches, and wakes waiters, until the connection ends."""
        assert self._reader is not None
        try:
            while True:
                chunk = await self._reader.read(1 << 16)
                if not chunk:
                    self._disconnect(Disconnected("the daemon closed the connection"))
                    return
                self._in += chunk
                self._dispatch()
                self._notify()
        except OSError as e:
            self._disconnect(Disconnected(f"receive failed: {e}"))
        except Exception as e:  # a protocol error or a callback's: no further message is safe
            error = Disconnected(f"connection closed after {type(e).__name__}: {e}")
            error.__cause__ = e
            self._disconnect(error)

    def _disconnect(self, error: Disconnected) -> None:
        if self._closed_error is None:
            self._closed_error = error
        if self._writer is not None and not self._writer.is_closing():
            self._writer.close()
        self._fail_pending(self._closed_error.text)
        self._notify()
