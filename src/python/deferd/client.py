"""A client for deferd's Unix socket protocol (docs/protocol.md), standard library only.

One :class:`Client` is one connection. It is not thread-safe: use one per thread.
Replies are matched to requests in the order they were sent; pushes (``JOB``, ``DEADLINE``,
``EXPIRED``, ``CANCELLED``, ``STATE``) may arrive between any two replies and are queued.

The wire encoding and parsing (``encode_*``, :func:`parse_job_header`, :func:`take_message`,
:func:`push_event`, :func:`reply_outcome`) are pure functions shared with the asyncio client
(:mod:`deferd.aio`), so that both speak the protocol the same way.
"""

from __future__ import annotations

import collections
import dataclasses
import datetime
import os
import re
import secrets
import select
import socket
import time
from typing import (Any, Callable, Deque, Dict, Generic, Iterable, Iterator, List, Mapping,
                    NamedTuple, Optional, Self, Sequence, Tuple, Type, TypeVar, Union)

from .errors import (ConnectFailed, DeferdError, Disconnected, LeaseLost, NotFound,
                     ProtocolError, from_reply)

DEFAULT_SOCKET = "/run/deferd/deferd.sock"

Seconds = Union[int, float, datetime.timedelta]
When = Union[int, float, datetime.datetime]
Payload = Union[bytes, bytearray, memoryview, str]


def _ms(value: Seconds) -> int:
    """Seconds (a number or a timedelta) as whole milliseconds for the wire."""
    if isinstance(value, datetime.timedelta):
        value = value.total_seconds()
    if value < 0:
        raise ValueError("durations must not be negative")
    return int(round(value * 1000))


def _epoch_ms(value: When) -> int:
    """A datetime (naive = local time) or epoch seconds as epoch milliseconds."""
    if isinstance(value, datetime.datetime):
        value = value.timestamp()
    return max(0, int(round(value * 1000)))


def _token(name: str, value: str) -> str:
    if not value or any(c in value for c in " \r\n\t\0"):
        raise ValueError(f"{name} must be a non-empty word without spaces: {value!r}")
    return value


@dataclasses.dataclass
class Put:
    """One job to create: an item of :meth:`Client.put_batch` or of ``then=`` follow-ups.

    ``delay`` and ``ttr`` are in seconds (or timedeltas), ``at`` a datetime or epoch seconds.
    """

    queue: str
    payload: Payload
    delay: Optional[Seconds] = None
    at: Optional[When] = None
    priority: Optional[int] = None
    ttr: Optional[Seconds] = None
    key: Optional[str] = None
    #: a put token (``idem=``): the same put sent again answers the job its first try made
    idem: Optional[str] = None
    #: the job's group: a queue's groups take turns at delivery (docs/limits.md)
    group: Optional[str] = None

    def encode(self) -> bytes:
        """The ``PUT`` request: header line, payload and its ``\\n``."""
        data = self.payload.encode() if isinstance(self.payload, str) else bytes(self.payload)
        words = ["PUT", _token("queue", self.queue), str(len(data))]
        if self.delay is not None and self.at is not None:
            raise ValueError("give delay or at, not both")
        if self.delay is not None:
            words.append(f"delay={_ms(self.delay)}")
        if self.at is not None:
            words.append(f"at={_epoch_ms(self.at)}")
        if self.priority is not None:
            words.append(f"prio={int(self.priority)}")
        if self.ttr is not None:
            words.append(f"ttr={_ms(self.ttr)}")
        if self.key is not None:
            words.append("key=" + _token("key", self.key))
        if self.idem is not None:
            words.append("idem=" + _token("idem", self.idem))
        if self.group is not None:
            words.append("group=" + _token("group", self.group))
        return " ".join(words).encode() + b"\n" + data + b"\n"


PutLike = Union[Put, Mapping[str, Any], Tuple[Any, ...]]


def _as_put(item: PutLike) -> Put:
    if isinstance(item, Put):
        return item
    if isinstance(item, Mapping):
        return Put(**item)
    return Put(*item)


@dataclasses.dataclass(frozen=True)
class PutResult:
    """A stored job: its id, and whether its key was taken (``duplicate``: the id is the
    existing job's and nothing was created)."""

    id: str
    duplicate: bool = False


@dataclasses.dataclass(frozen=True)
class BatchResult:
    """The answer to a batch or to follow-ups: one :class:`PutResult` per item, in order.

    ``moved_id`` is the nacked job's new id for ``nack(then=...)`` (None when it kept its id);
    ``parts`` is how many ZooKeeper transactions a batch took.
    """

    results: List[PutResult]
    parts: int = 1
    moved_id: Optional[str] = None

    @property
    def ids(self) -> List[str]:
        """The job ids in request order."""
        return [r.id for r in self.results]


# Events: pushes other than JOB, in the order they arrived.

@dataclasses.dataclass(frozen=True)
class Deadline:
    """``DEADLINE``: the lease of ``job_id`` ends in ``ms_left`` ms; ``touch()`` to keep it."""

    job_id: str
    ms_left: int
    job: Optional["BaseJob"] = None


@dataclasses.dataclass(frozen=True)
class Expired:
    """``EXPIRED``: the lease of ``job_id`` ran out or its lock was lost; it will come again.
    Answer the job (ack or nack, which fail with LeaseLost) to free its inflight place."""

    job_id: str
    job: Optional["BaseJob"] = None


@dataclasses.dataclass(frozen=True)
class Cancelled:
    """``CANCELLED``: the held job ``job_id`` was cancelled (force) and is gone. Answer it
    (ack or nack, which fail with LeaseLost) to free its inflight place."""

    job_id: str
    job: Optional["BaseJob"] = None


@dataclasses.dataclass(frozen=True)
class State:
    """``STATE``: the daemon's ZooKeeper session changed (``CONNECTED``, ``SUSPENDED``,
    ``RECONNECTED``, ``LOST``) or it is ``DRAINING`` for shutdown; other words may come."""

    state: str


@dataclasses.dataclass(frozen=True)
class UnknownPush:
    """A one-line push this client does not know (later daemons may add some)."""

    line: str


Event = Union[Deadline, Expired, Cancelled, State, UnknownPush]


class BaseReply:
    """The answer to one request as the sync and asyncio clients both keep it: ``done``, then
    ``value`` or ``error``; a settling answer updates its job's state."""

    def __init__(self, client: Any, parse: Callable[[str], Any],
                 job: Optional["BaseJob"] = None, background: bool = False,
                 settles: bool = False) -> None:
        self._client = client
        self._parse = parse
        self.job = job
        self._settles = settles
        self.background = background
        self.done = False
        self.value: Any = None
        self.error: Optional[DeferdError] = None

    def _resolve(self, line: str) -> None:
        self.done = True
        self.value, self.error = reply_outcome(line, self._parse)
        if self.error is not None:
            self.error.job = self.job
        if self.job is not None and self._settles:
            self.job._answered(self)

    def _fail(self, error: DeferdError) -> None:
        self.done = True
        self.error = error
        error.job = self.job


class Reply(BaseReply):
    """The future answer to one request. :meth:`result` waits for it (reading and queueing
    pushes meanwhile) and returns the parsed value or raises the :class:`DeferdError`."""

    def result(self, timeout: Optional[float] = None) -> Any:
        """Waits for the reply (at most ``timeout`` s, default the client's) and returns it."""
        self._client._wait(self, timeout)
        if self.error is not None:
            if self.background:
                self._client._forget_error(self)
            raise self.error
        return self.value


class BaseJob:
    """A job delivered to a connection (``JOB`` push): what sync and asyncio jobs share.

    Attributes:
        id: the job id (it changes when the job is nacked with a delay or rescheduled):
            the handle for ack, nack, touch, cancel and reschedule of this delivery.
        uid: the job's stable identity, the same on every delivery, after nacks and
            reschedules: for logs and dedupe tables, with the queue (None for a Curator
            format queue's item, which has none).
        queue, attempt (1 on first delivery), priority (lower is more urgent).
        due_ms: due time in epoch ms; ``due`` the same as an aware UTC datetime.
        ttr_ms: this delivery's lease in ms; ``ttr`` in seconds.
        payload: the job's bytes.
        lost: set when the daemon took the job back (``EXPIRED`` or ``CANCELLED``);
        lost_reason: ``"expired"`` or ``"cancelled"``.
        deadline_ms_left: the last ``DEADLINE`` push's ``ms left`` (None before one came).
        settled: True once an ack or nack was sent for it.
        reply: the :class:`Reply` of that ack or nack.
    """

    def __init__(self, client: Any, id: str, queue: str, attempt: int, due_ms: int,
                 priority: int, ttr_ms: int, payload: bytes, uid: Optional[str] = None) -> None:
        self._client = client
        self.id = id
        self.uid = uid
        self.queue = queue
        self.attempt = attempt
        self.due_ms = due_ms
        self.priority = priority
        self.ttr_ms = ttr_ms
        self.payload = payload
        self.lost = False
        self.lost_reason: Optional[str] = None
        self.deadline_ms_left: Optional[int] = None
        self.settled = False
        self._joining = False  # the last ack's follow-ups join its flow (join=True)
        self.reply: Optional[BaseReply] = None

    @classmethod
    def from_header(cls, client: Any, header: JobHeader, payload: bytes) -> Self:
        """The job of a parsed ``JOB`` header and its payload."""
        return cls(client, header.id, header.queue, header.attempt, header.due_ms,
                   header.priority, header.ttr_ms, payload,
                   header.uid if header.uid is not None else job_uid(header.id))

    @property
    def group(self) -> str:
        """The group the job was put with (``put(..., group=)``), "" for none."""
        return job_group(self.id)

    @property
    def flow_results(self) -> Optional[Tuple[int, int]]:
        """``(acked, dead)``: how the children of a flow's parent ended (``put_flow(...,
        on="complete")``); None for any other job."""
        return job_flow_results(self.id)

    @property
    def due(self) -> datetime.datetime:
        """The due time as an aware UTC datetime."""
        return datetime.datetime.fromtimestamp(self.due_ms / 1000, datetime.timezone.utc)

    @property
    def ttr(self) -> float:
        """The lease length in seconds."""
        return self.ttr_ms / 1000

    def __repr__(self) -> str:
        return (f"Job(id={self.id!r}, uid={self.uid!r}, queue={self.queue!r}, "
                f"attempt={self.attempt}, payload={self.payload[:32]!r})")

    def _answered(self, reply: BaseReply) -> None:
        # NOT_FOUND to an ack with join=True: the flow is gone, the job is still held
        still_held = self._joining and isinstance(reply.error, NotFound)
        if reply.error is None or (isinstance(reply.error, (LeaseLost, NotFound)) and
                                   not still_held):
            self._client._held.pop(self.id, None)
        else:  # nothing changed (UNAVAILABLE, a bad follow-up): still held, may be sent again
            self.settled = False

    def _start_settle(self, wait: Optional[bool], blocking_default: bool) -> bool:
        """Marks the job answered (once only) and says whether to wait for the reply."""
        if self.settled:
            raise ValueError(f"job {self.id} was already acked or nacked")
        self.settled = True
        return (blocking_default or not self._client.pipeline) if wait is None else wait


class Job(BaseJob):
    """A job delivered to this connection (``JOB`` push); see :class:`BaseJob` for its
    attributes. Answer it with :meth:`ack` or :meth:`nack`."""

    _client: "Client"

    def _settle(self, line: bytes, parse: Callable[[str], Any], blocking_default: bool,
                wait: Optional[bool]) -> Any:
        wait = self._start_settle(wait, blocking_default)
        self.reply = self._client._send(line, parse, job=self, background=not wait,
                                        settles=True)
        return self.reply.result() if wait else self.reply

    def ack(self, then: Optional[Iterable[PutLike]] = None,
            wait: Optional[bool] = None, join: bool = False) -> Any:
        """Acknowledges the job: it is deleted.

        With ``then``, the follow-up jobs are created in the same ZooKeeper transaction as the
        ack (all or none, with it); the call waits and returns a :class:`BatchResult`. With
        ``join=True`` (a flow's child, docs/flows.md) they join the job's flow: its parent
        waits for them too.
        Otherwise, by default (``Client(pipeline=True)``), the ack is sent without waiting:
        the returned :class:`Reply` is checked as it arrives and a failure is raised by the
        next :meth:`Client.next_job`, :meth:`Client.next_event` or :meth:`Client.flush`.
        ``wait=True`` waits and raises here.
        """
        self._joining = join
        return self._settle(*encode_ack(self.id, then, join), wait)

    def nack(self, delay: Optional[Seconds] = None, unrun: bool = False,
             then: Optional[Iterable[PutLike]] = None, wait: Optional[bool] = None) -> Any:
        """Gives the job back to be delivered again.

        ``delay`` (seconds): due again after that; without it, the queue's backoff decides.
        ``unrun=True``: the job was never started; this delivery does not count as an attempt
        (not with ``delay`` or ``then``). ``then``: follow-up jobs created in the same
        transaction (waits, returns a :class:`BatchResult` whose ``moved_id`` is the job's new
        id). Otherwise the call is pipelined like :meth:`ack`; waited for, it returns the
        job's new id, or None when it kept its id (or was dead-lettered).
        """
        return self._settle(*encode_nack(self.id, delay, unrun, then), wait)

    def touch(self, wait: bool = True) -> Optional[Reply]:
        """Renews the lease (another full ttr from now). Raises :class:`LeaseLost` if it had
        already run out. ``wait=False`` sends it pipelined and returns the :class:`Reply`."""
        reply = self._client._send(f"TOUCH {self.id}\n".encode(), _parse_empty, job=self,
                                   background=not wait)
        if wait:
            reply.result()
            return None
        return reply


def _parse_empty(rest: str) -> None:
    return None


def _parse_opt_id(rest: str) -> Optional[str]:
    return rest.split()[0] if rest.strip() else None


def _parse_nack(rest: str) -> Optional[str]:
    """The job's new id; None when it kept its id or went to the dead letters (``dead=ID``)."""
    words = rest.split()
    return words[0] if words and not words[0].startswith("dead=") else None


def _parse_put(rest: str) -> PutResult:
    words = rest.split()
    return PutResult(words[0], len(words) > 1 and words[1] == "duplicate")


def _fields(rest: str) -> Dict[str, str]:
    return dict(w.split("=", 1) for w in rest.split() if "=" in w)


def _parse_batch(rest: str) -> BatchResult:
    words = rest.split()
    moved = words[0] if words and "=" not in words[0] else None
    f = _fields(rest)
    ids = f["ids"].split(",") if f.get("ids", "-") != "-" else []
    dups = {int(p) for p in f.get("dup", "-").split(",") if p.isdigit()}
    if "n" in f and int(f["n"]) != len(ids):
        raise ValueError("n= and ids= disagree")
    results = [PutResult(i, n + 1 in dups) for n, i in enumerate(ids)]
    return BatchResult(results, int(f.get("parts", "1")), moved)


_parse_then = _parse_batch


def _parse_stats(rest: str) -> Dict[str, Union[int, float, str]]:
    out: Dict[str, Union[int, float, str]] = {}
    for key, value in _fields(rest).items():
        if value.isdigit():
            out[key] = int(value)
        else:
            try:
                out[key] = float(value) if "." in value else value
            except ValueError:
                out[key] = value
    return out


def _parse_pong(rest: str) -> None:
    if rest.strip() != "PONG":
        raise ValueError("not PONG")


# -- wire helpers shared with deferd.aio: requests as bytes, messages from bytes ------------

def reply_outcome(line: str, parse: Callable[[str], Any]) -> Tuple[Any, Optional[DeferdError]]:
    """``(value, None)`` for an ``OK`` reply line that ``parse`` accepts, else ``(None, the
    error)``: the ``ERR`` code's exception, or :class:`ProtocolError` for an unparsable OK."""
    if line == "OK" or line.startswith("OK "):
        try:
            return parse(line[3:]), None
        except (ValueError, IndexError) as e:
            return None, ProtocolError(f"cannot parse reply {line!r}: {e}")
    return None, from_reply(line)


class JobHeader(NamedTuple):
    """The header line of a ``JOB`` push; ``length`` payload bytes and a ``\n`` follow."""

    id: str
    queue: str
    attempt: int
    due_ms: int
    priority: int
    ttr_ms: int
    length: int
    uid: Optional[str] = None


def parse_job_header(line: str) -> JobHeader:
    """Parses ``JOB <id> <queue> <attempt> <due ms> <prio> <ttr ms> <length> [key=value
    ...]`` (no ``\n``); of the keys, ``uid`` is kept and unknown ones skipped."""
    words = line.split(" ")
    # key=value words after the length: the ones SUB asked for (uid=1)
    extra = dict(w.split("=", 1) for w in words[8:] if "=" in w[1:])
    if len(words) < 8 or words[0] != "JOB" or len(extra) != len(words) - 8:
        raise ProtocolError(f"bad JOB push {line!r}")
    try:
        return JobHeader(words[1], words[2], int(words[3]), int(words[4]), int(words[5]),
                         int(words[6]), int(words[7]), extra.get("uid"))
    except ValueError:
        raise ProtocolError(f"bad number in JOB push {line!r}") from None


def take_message(buf: bytearray) -> Optional[Tuple[str, Optional[JobHeader], bytes]]:
    """Removes the first complete message from ``buf`` and returns ``(line, header,
    payload)``: ``header`` is set for a ``JOB`` push (with its payload), None for a reply or
    another push. None, leaving ``buf`` as it is, while the message is incomplete."""
    nl = buf.find(b"\n")
    if nl < 0:
        return None
    line = buf[:nl].decode("utf-8", "replace")
    if not line.startswith("JOB "):
        del buf[:nl + 1]
        return line, None, b""
    header = parse_job_header(line)
    end = nl + 1 + header.length
    if len(buf) < end + 1:  # the payload and its \n
        return None
    payload = bytes(buf[nl + 1:end])
    del buf[:end + 1]
    return line, header, payload


def push_event(line: str, held: Mapping[str, BaseJob]) -> Event:
    """The :class:`Event` of a one-line push; marks the held job it names (``held`` by id):
    ``deadline_ms_left`` for ``DEADLINE``, ``lost`` for ``EXPIRED`` and ``CANCELLED``."""
    word, _, rest = line.partition(" ")
    args = rest.split()
    if word == "DEADLINE" and len(args) == 2 and args[1].isdigit():
        job = held.get(args[0])
        if job is not None:
            job.deadline_ms_left = int(args[1])
        return Deadline(args[0], int(args[1]), job)
    if word in ("EXPIRED", "CANCELLED") and len(args) == 1:
        job = held.get(args[0])
        if job is not None:
            job.lost = True
            job.lost_reason = word.lower()
        return (Expired if word == "EXPIRED" else Cancelled)(args[0], job)
    if word == "STATE" and len(args) == 1:
        return State(args[0])
    return UnknownPush(line)


def _names(queues: Union[str, Sequence[str]]) -> str:
    return _token("queues", queues if isinstance(queues, str) else ",".join(queues))


def _target(job_id: Optional[str], queue: Optional[str], key: Optional[str]) -> List[str]:
    if job_id is not None and queue is None and key is None:
        return [_token("job id", job_id)]
    if job_id is None and queue is not None and key is not None:
        return [_token("queue", queue), "key=" + _token("key", key)]
    raise ValueError("give a job id, or a queue and a key")


def _puts(items: Iterable[PutLike]) -> Tuple[int, bytes]:
    puts = [_as_put(i).encode() for i in items]
    return len(puts), b"".join(puts)


# Reasons after which sending a put again cannot help soon: the daemon stops, refused the
# connection, or ZooKeeper's ACL denies it (docs/protocol.md, Errors).
_FUTILE_REASONS = ("draining", "max_connections", "permission")


def put_retry_safe(error: DeferdError, keyed: bool, tokened: bool = False) -> bool:
    """Whether a put answered ``error`` may be sent again without making a second job, decided
    by the reply's fields: ``stored=no``, or ``stored=maybe`` with a key (a stored first try
    answers as the key's duplicate) or a put token (it answers with its job; not with
    ``tokens=no``, a Curator format queue, which keeps none); never after ``reason=draining``,
    ``max_connections`` or ``permission``. A reply without fields comes from a daemon older
    than them: its words decide (:func:`_put_retry_safe_by_text`)."""
    if error.code != "UNAVAILABLE":
        return False
    if not error.fields:
        return _put_retry_safe_by_text(error.text, keyed, tokened)
    if error.reason in _FUTILE_REASONS:
        return False
    if error.stored == "maybe":
        return keyed or (tokened and error.fields.get("tokens") != "no")
    return error.stored == "no"


def _put_retry_safe_by_text(text: str, keyed: bool, tokened: bool) -> bool:
    """The fallback for daemons older than refusal fields: ``not stored``, or ``may have been
    stored`` with a key or a token (not in a queue that ``keeps no put tokens``); not after a
    denial, nor from a daemon that is stopping."""
    if "permission denied" in text or "stopping" in text:
        return False
    if "may have been stored" in text:
        return keyed or (tokened and "keeps no put tokens" not in text)
    return "not stored" in text


def idem_refused(error: DeferdError) -> bool:
    """A daemon older than put tokens refused ``idem=``: it names the option in ``option=``,
    or (older than refusal fields, too) only in its text."""
    if error.code != "BAD_REQUEST":
        return False
    if error.fields:
        return error.fields.get("option") == "idem"
    return "option 'idem'" in error.text


def new_put_token() -> str:
    """A put token (``idem=``): this host's clock in ms and 64 random bits."""
    return f"{int(time.time() * 1000)}-{secrets.token_hex(8)}"


class PutAttempts:
    """The tries of one ``put()``: its request (with a put token unless it has a key, the
    retry is off, or the daemon is older than tokens) and, after each error, the pause
    before the next try or None (raise it). Shared by both clients."""

    def __init__(self, client: "BaseClient[Any, Any]", put: Put) -> None:
        self._client = client
        self._put = put
        if put.key is None and client.put_retry > 0 and not client._no_tokens:
            put.idem = new_put_token()
        self._pauses = put_retry_pauses(client.put_retry)

    def request(self) -> bytes:
        return self._put.encode()

    def after(self, error: DeferdError) -> Optional[float]:
        if self._put.idem is not None and idem_refused(error):
            self._client._no_tokens = True  # a daemon older than put tokens
            self._put.idem = None
            return 0.0
        if not put_retry_safe(error, self._put.key is not None, self._put.idem is not None):
            return None
        return next(self._pauses, None)


def put_retry_pauses(budget: float) -> Iterator[float]:
    """The pauses before each new try of a put, for ``budget`` seconds in all (the tries'
    own time counted): 0.1 s, then twice as long each time, at most 2 s."""
    until = time.monotonic() + budget  # now, not at the first pause: the first try counts

    def pauses() -> Iterator[float]:
        pause, spent = 0.1, 0.0
        while spent + pause <= budget and time.monotonic() + pause <= until:
            yield pause
            spent += pause
            pause = min(pause * 2, 2.0)
    return pauses()


def encode_batch(items: Iterable[PutLike]) -> bytes:
    """``BATCH <n>`` and its ``PUT`` requests."""
    n, puts = _puts(items)
    return f"BATCH {n}\n".encode() + puts


def encode_flow(parent: PutLike, children: Iterable[PutLike], on: str = "success") -> bytes:
    """``FLOW <n> on=<on>``: the parent's ``PUT``, then its children's (docs/flows.md)."""
    if on not in ("success", "complete"):
        raise ValueError("on is 'success' or 'complete'")
    jobs = [_as_put(parent), *(_as_put(c) for c in children)]
    if len(jobs) < 2:
        raise ValueError("a flow has at least one child")
    if any(j.key is not None or j.idem is not None for j in jobs):
        raise ValueError("a flow's jobs take no key or idem")
    return f"FLOW {len(jobs)} on={on}\n".encode() + b"".join(j.encode() for j in jobs)


def encode_cancel(job_id: Optional[str], queue: Optional[str], key: Optional[str],
                  force: bool) -> bytes:
    """``CANCEL`` by id, or by queue and key."""
    words = ["CANCEL", *_target(job_id, queue, key)]
    if force:
        words.append("force=1")
    return (" ".join(words) + "\n").encode()


def encode_reschedule(job_id: Optional[str], delay: Optional[Seconds], at: Optional[When],
                      queue: Optional[str], key: Optional[str]) -> bytes:
    """``RESCHEDULE`` by id, or by queue and key, to ``delay`` or ``at`` (exactly one)."""
    if (delay is None) == (at is None):
        raise ValueError("give exactly one of delay and at")
    words = ["RESCHEDULE", *_target(job_id, queue, key)]
    words.append(f"delay={_ms(delay)}" if delay is not None else f"at={_epoch_ms(at)}")
    return (" ".join(words) + "\n").encode()


def encode_stats(queue: Optional[str]) -> bytes:
    """``STATS`` or ``STATS <queue>``."""
    return (f"STATS {_token('queue', queue)}\n" if queue is not None else "STATS\n").encode()


def encode_subscribe(queues: Union[str, Sequence[str]], inflight: int) -> bytes:
    """``SUB <queues> inflight=<n>``. Not ``uid=1``: a daemon older than uids refuses it,
    and the uid follows from the id anyway (:func:`job_uid`)."""
    return f"SUB {_names(queues)} inflight={int(inflight)}\n".encode()


_UID_IN_NAME = re.compile(r"[0-9]+-[0-9]+-([0-9a-z]{1,32})(?:-|$)")


def job_group(job_id: str) -> str:
    """The group a job was put with (``group=``), read from its id (its name's ``-g`` field,
    ``~`` standing for ``-``); "" for a job without one."""
    for field in job_id.rpartition("/")[2].split("-")[3:]:
        if field.startswith("k"):
            break  # the key is last and may hold dashes
        if field.startswith("g"):
            return field[1:].replace("~", "-")
    return ""


_RESULTS = re.compile(r"r(0|[1-9][0-9]{0,9})\.(0|[1-9][0-9]{0,9})")


def job_flow_results(job_id: str) -> Optional[Tuple[int, int]]:
    """``(acked, dead)`` of a flow's released parent (``on="complete"``), read from its id
    (its name's ``-r<acked>.<dead>`` field); None for a job without one."""
    for field in job_id.rpartition("/")[2].split("-")[3:]:
        if field.startswith("k"):
            break  # the key is last and may hold dashes
        m = _RESULTS.fullmatch(field)
        if m and max(int(m.group(1)), int(m.group(2))) < 2 ** 32:
            return int(m.group(1)), int(m.group(2))
    return None


def job_uid(job_id: str) -> Optional[str]:
    """The stable uid in a job id of deferd's own format (its name's third field, kept
    across nacks, reschedules and redeliveries: docs/protocol.md, job uid); None for a
    Curator format queue's item, which has none."""
    m = _UID_IN_NAME.match(job_id.rpartition("/")[2])
    return m.group(1) if m else None


def encode_unsubscribe(queues: Union[None, str, Sequence[str]]) -> bytes:
    """``UNSUB`` (every queue) or ``UNSUB <queues>``."""
    return b"UNSUB\n" if queues is None else f"UNSUB {_names(queues)}\n".encode()


Settle = Tuple[bytes, Callable[[str], Any], bool]


def encode_ack(job_id: str, then: Optional[Iterable[PutLike]], join: bool = False) -> Settle:
    """``ACK``, with ``then=`` follow-ups if given (``join=1``: they join the job's flow):
    ``(request, reply parser, whether the caller waits by default)`` (follow-ups are waited
    for: their ids are the answer)."""
    if join and then is None:
        raise ValueError("join=True goes with then=")
    if then is not None:
        n, puts = _puts(then)
        extra = " join=1" if join else ""
        return f"ACK {job_id} then={n}{extra}\n".encode() + puts, _parse_then, True
    return f"ACK {job_id}\n".encode(), _parse_empty, False


def encode_nack(job_id: str, delay: Optional[Seconds], unrun: bool,
                then: Optional[Iterable[PutLike]]) -> Settle:
    """``NACK`` with ``delay=``, ``unrun=1`` or ``then=`` follow-ups; as :func:`encode_ack`."""
    words = ["NACK", job_id]
    if unrun:
        if delay is not None or then is not None:
            raise ValueError("unrun takes no delay or then")
        words.append("unrun=1")
    if delay is not None:
        words.append(f"delay={_ms(delay)}")
    if then is not None:
        n, puts = _puts(then)
        words.append(f"then={n}")
        return " ".join(words).encode() + b"\n" + puts, _parse_then, True
    return " ".join(words).encode() + b"\n", _parse_nack, False


JobT = TypeVar("JobT", bound=BaseJob)
ReplyT = TypeVar("ReplyT", bound=BaseReply)


class BaseClient(Generic[JobT, ReplyT]):
    """What :class:`Client` and :class:`deferd.aio.Client` share, free of I/O: the settings,
    what the daemon sent (replies matched to the FIFO of pending requests, jobs, events) and
    the failed pipelined answers not yet reported."""

    _job_class: Type[JobT]
    #: Seconds for which :meth:`put` sends a put again after ``UNAVAILABLE`` when that
    #: cannot make a second job (:func:`put_retry_safe`); 0: never.
    put_retry: float = 10.0
    _no_tokens = False

    def __init__(self, socket_path: Optional[str], timeout: Optional[float], pipeline: bool,
                 on_event: Optional[Callable[[Event], None]],
                 on_ack_error: Optional[Callable[[DeferdError], None]]) -> None:
        self.socket_path = socket_path or os.environ.get("DEFERD_SOCKET") or DEFAULT_SOCKET
        self.timeout = timeout
        self.pipeline = pipeline
        self.on_event = on_event
        self.on_ack_error = on_ack_error
        self._in = bytearray()
        self._pending: Deque[ReplyT] = collections.deque()
        self._jobs: Deque[JobT] = collections.deque()
        self._events: Deque[Event] = collections.deque()
        self._held: Dict[str, JobT] = {}
        self._failed: List[ReplyT] = []
        self._closed_error: Optional[Disconnected] = None

    def failed_acks(self) -> List[DeferdError]:
        """Takes the failures of pipelined acks, nacks and touches not yet reported."""
        out = [r.error for r in self._failed if r.error is not None]
        self._failed.clear()
        return out

    @property
    def unanswered(self) -> int:
        """Requests sent whose reply has not arrived yet."""
        return len(self._pending)

    @property
    def ready(self) -> int:
        """Jobs and events already read from the socket and not yet taken (by ``next_job``,
        ``next_event``): a caller that waits on :meth:`fileno` must take these first, as no
        more bytes may come for them (a reply often arrives with the jobs behind it)."""
        return len(self._jobs) + len(self._events)

    @property
    def held(self) -> List[JobT]:
        """Jobs pushed to this connection and not yet acked or nacked."""
        return list(self._held.values())

    def _unrun_jobs(self, send: Callable[..., ReplyT]) -> List[JobT]:
        """For ``give_back``: takes the jobs received but not taken by ``next_job``, answers
        those the daemon took back already (with ``send``, only to free their inflight place:
        their LeaseLost is not reported) and returns the others, to be nacked unrun."""
        unrun = []
        while self._jobs:
            job = self._jobs.popleft()
            if job.lost:
                job.settled = True
                job.reply = send(f"ACK {job.id}\n".encode(), _parse_empty, job=job, settles=True)
            else:
                unrun.append(job)
        return unrun

    def _report(self, reply: ReplyT) -> None:
        """A pipelined request failed: to ``on_ack_error``, or kept for the next call."""
        if self.on_ack_error is not None:
            self.on_ack_error(reply.error)  # type: ignore[arg-type]
        else:
            self._failed.append(reply)

    def _fail_pending(self, why: str) -> None:
        """The connection is gone: every unanswered request fails with Disconnected, and
        pipelined acks and nacks among them are reported like refused ones, since nobody
        knows whether the daemon applied them (a job it still held comes back)."""
        while self._pending:
            reply = self._pending.popleft()
            reply._fail(Disconnected(why))
            if reply.background:
                try:
                    self._report(reply)
                except Exception:  # noqa: BLE001 - the connection is gone already: nowhere to go
                    pass

    def _forget_error(self, reply: ReplyT) -> None:
        if reply in self._failed:
            self._failed.remove(reply)

    def _raise_failed(self) -> None:
        if self._failed:
            raise self._failed.pop(0).error  # type: ignore[misc]

    def _dispatch(self) -> int:
        """Handles every complete message in the input buffer; returns how many."""
        n = 0
        while (msg := take_message(self._in)) is not None:
            line, header, payload = msg
            if header is not None:
                job = self._job_class.from_header(self, header, payload)
                self._held[job.id] = job
                self._jobs.append(job)
            else:
                self._line(line)
            n += 1
        return n

    def _line(self, line: str) -> None:
        word = line.partition(" ")[0]
        if word in ("OK", "ERR"):
            if not self._pending:
                raise ProtocolError(f"reply {line!r} to no request")
            reply = self._pending.popleft()
            reply._resolve(line)
            if reply.error is not None and reply.background:
                self._report(reply)
            return
        event = push_event(line, self._held)
        if self.on_event is not None:
            self.on_event(event)
        else:
            self._events.append(event)


class Client(BaseClient[Job, Reply]):
    """One connection to a deferd daemon.

    Args:
        socket_path: the daemon's socket; default ``$DEFERD_SOCKET``, else
            ``/run/deferd/deferd.sock``.
        timeout: seconds to wait for a reply before raising :class:`TimeoutError` (the
            connection stays usable: a late reply is still matched to its request).
        pipeline: send ``ack()``/``nack()`` without waiting for their reply (default).
        on_event: if given, called with each :class:`Event` instead of queueing it for
            :meth:`next_event`.
        on_ack_error: if given, called with each failed pipelined ack, nack or touch (a
            :class:`DeferdError` whose ``job`` is set) instead of raising it later.

    Producing: :meth:`put`, :meth:`put_batch`, :meth:`cancel`, :meth:`reschedule`.
    Consuming: :meth:`subscribe`, then :meth:`next_job` or iterate :meth:`jobs`; answer each
    :class:`Job` with ``ack()`` or ``nack()``; read pushes with :meth:`next_event`.
    """

    _job_class = Job

    def __init__(self, socket_path: Optional[str] = None, timeout: Optional[float] = 30.0,
                 pipeline: bool = True, on_event: Optional[Callable[[Event], None]] = None,
                 on_ack_error: Optional[Callable[[DeferdError], None]] = None) -> None:
        super().__init__(socket_path, timeout, pipeline, on_event, on_ack_error)
        self._sock: Optional[socket.socket] = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            self._sock.connect(self.socket_path)
        except OSError as e:
            self._sock.close()
            self._sock = None
            # The path and what to do, not a bare ConnectionRefusedError; errno stays on it.
            raise ConnectFailed(self.socket_path, e) from None
        self._sock.setblocking(False)

    # -- context manager --------------------------------------------------------------------

    def __enter__(self) -> "Client":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def close(self) -> None:
        """Closes the connection. Jobs still held are released by the daemon (they come
        again with a higher attempt); see :meth:`give_back` for a clean leave."""
        if self._sock is not None:
            self._sock.close()
            self._sock = None
        self._disconnect("client closed")

    # -- producing --------------------------------------------------------------------------

    def put(self, queue: str, payload: Payload, delay: Optional[Seconds] = None,
            at: Optional[When] = None, priority: Optional[int] = None,
            ttr: Optional[Seconds] = None, key: Optional[str] = None,
            group: Optional[str] = None) -> PutResult:
        """Schedules a job and returns its id once ZooKeeper stored it.

        ``delay`` (seconds or timedelta) or ``at`` (datetime or epoch seconds): when it is due
        (neither: now). ``priority``: lower is more urgent. ``ttr`` (seconds, 1 s .. 7 days):
        each delivery's lease. ``key``: idempotency key; if a job with it exists, nothing is
        created and the result has ``duplicate=True`` and that job's id. ``group``: the
        job's group (1-32 of ``[A-Za-z0-9_.:@-]``): a queue's groups take turns at delivery
        (docs/limits.md); the consumer reads it as ``job.group``.

        Without a ``key`` the put carries a put token of its own (``idem=``), so that sending
        it again cannot make a second job. An :class:`Unavailable` answer is sent again for
        up to :attr:`put_retry` seconds when that is safe (:func:`put_retry_safe`):
        ``stored == "no"``, or ``"maybe"`` (the connection to ZooKeeper broke before its
        answer: the token, or the key, answers the retry with the job the first try made).
        The error raised says which in ``stored``, and why in ``reason``. ``put_retry = 0``
        turns both off.
        """
        tries = PutAttempts(self, Put(queue, payload, delay, at, priority, ttr, key,
                                      group=group))
        while True:
            try:
                return self._send(tries.request(), _parse_put).result()
            except DeferdError as e:
                pause = tries.after(e)
                if pause is None:
                    raise
                time.sleep(pause)

    def put_batch(self, items: Iterable[PutLike]) -> BatchResult:
        """Stores several jobs, all or none (``BATCH``). Items are :class:`Put` objects,
        dicts of its fields or ``(queue, payload, ...)`` tuples. Raises the error naming the
        first invalid item (nothing stored), or :class:`Partial` for a batch split into parts
        whose later part failed."""
        return self._send(encode_batch(items), _parse_batch).result()

    def put_flow(self, parent: PutLike, children: Iterable[PutLike],
                 on: str = "success") -> BatchResult:
        """Stores a flow, all or none (``FLOW``, docs/flows.md): ``parent`` waits until its
        ``children`` are settled (``on="success"``: every one acked, a dead one sends the
        parent to the dead letters; ``"complete"``: acked or dead-lettered), then it is due.
        Items as for :meth:`put_batch`, without ``key`` or ``idem``. The result's ids are the
        parent's, then the children's. Never sent again on its own: after ``stored=maybe``
        look for the parent's children before putting the flow again."""
        return self._send(encode_flow(parent, children, on), _parse_batch).result()

    def cancel(self, job_id: Optional[str] = None, *, queue: Optional[str] = None,
               key: Optional[str] = None, force: bool = False) -> str:
        """Removes a pending job, by id or by ``queue`` and ``key``; returns its id.
        ``force=True`` also cancels a job a consumer holds (it gets ``CANCELLED``)."""
        return self._send(encode_cancel(job_id, queue, key, force), _parse_opt_id).result()

    def reschedule(self, job_id: Optional[str] = None, *, delay: Optional[Seconds] = None,
                   at: Optional[When] = None, queue: Optional[str] = None,
                   key: Optional[str] = None) -> str:
        """Moves a pending job to a new due time (``delay`` or ``at``); returns its new id."""
        req = encode_reschedule(job_id, delay, at, queue, key)
        return self._send(req, _parse_opt_id).result()

    def stats(self, queue: Optional[str] = None) -> Dict[str, Union[int, float, str]]:
        """The daemon's counters (``STATS``), or one queue's (``STATS <queue>``), by name.
        Whole numbers are ints, decimals floats, anything else (``30/30``, ``-``) strings."""
        return self._send(encode_stats(queue), _parse_stats).result()

    def ping(self) -> None:
        """Round trip to the daemon (``PING``, answered ``OK PONG``)."""
        self._send(b"PING\n", _parse_pong).result()

    # -- consuming --------------------------------------------------------------------------

    def subscribe(self, queues: Union[str, Sequence[str]], inflight: int = 1) -> None:
        """Becomes a consumer of ``queues`` (a name, a comma-separated string or a list);
        the daemon pushes up to ``inflight`` jobs not yet acked or nacked."""
        self._send(encode_subscribe(queues, inflight), _parse_empty).result()

    def unsubscribe(self, queues: Union[None, str, Sequence[str]] = None,
                    wait: bool = True) -> Optional[Reply]:
        """Takes no more jobs of ``queues`` (all when None). Jobs held stay held; after this
        returns no more ``JOB`` of those queues comes (some may already be queued here).
        ``wait=False`` returns the :class:`Reply` at once, for a program that must go on
        (touching leases, say) while the daemon answers: no ``JOB`` comes after its reply."""
        reply = self._send(encode_unsubscribe(queues), _parse_empty)
        if not wait:
            return reply
        reply.result()
        return None

    def next_job(self, timeout: Optional[float] = None) -> Optional[Job]:
        """The next job pushed to this connection, waiting at most ``timeout`` seconds (None:
        for ever); None on timeout. Raises a failed pipelined ack/nack first, if any."""
        self._raise_failed()
        deadline = None if timeout is None else time.monotonic() + timeout
        while not self._jobs:
            if not self._pump(deadline):
                self._raise_failed()
                return None
        self._raise_failed()
        return self._jobs.popleft()

    def jobs(self, idle: Optional[float] = None) -> Iterator[Job]:
        """Iterates over jobs as they come; stops once none came for ``idle`` seconds
        (None: never)."""
        while True:
            job = self.next_job(idle)
            if job is None:
                return
            yield job

    def __iter__(self) -> Iterator[Job]:
        return self.jobs()

    def next_event(self, timeout: Optional[float] = 0) -> Optional[Event]:
        """The next push other than ``JOB`` (:class:`Deadline`, :class:`Expired`,
        :class:`Cancelled`, :class:`State`, :class:`UnknownPush`), waiting at most ``timeout``
        seconds (default: only what has arrived; None: for ever); None if there is none."""
        self._raise_failed()
        deadline = None if timeout is None else time.monotonic() + timeout
        while not self._events:
            if not self._pump(deadline):
                break
        self._raise_failed()
        return self._events.popleft() if self._events else None

    def poll(self, timeout: Optional[float] = 0) -> int:
        """Reads what arrives within ``timeout`` seconds (default: only what is there;
        None: until something comes), updating replies, held jobs and queued events, and
        returns how many messages were handled. Raises nothing for failed acks."""
        deadline = None if timeout is None else time.monotonic() + timeout
        n = self._dispatch()
        while not n and self._pump(deadline):
            n += 1
        return n

    def flush(self, timeout: Optional[float] = None) -> None:
        """Waits for the replies to every request sent so far (pipelined acks and nacks
        included) and raises the first failure not yet reported (:meth:`failed_acks` has
        the rest). ``timeout``: seconds, default the client's."""
        if self._pending:
            self._wait(self._pending[-1], timeout)
        self._raise_failed()

    wait_acks = flush

    def fileno(self) -> int:
        """The socket's file descriptor, to wait for it with ``select`` beside other files;
        then :meth:`poll` reads what came. Wait only while :attr:`ready` is 0: what was
        read with a reply is not signalled again. Raises :class:`Disconnected` once closed."""
        if self._sock is None:
            raise self._closed_error or Disconnected("not connected")
        return self._sock.fileno()

    def give_back(self) -> int:
        """Leaves cleanly: unsubscribes from every queue, then answers ``NACK unrun=1`` for
        each job received but not yet taken by :meth:`next_job` (their attempt is not
        spent), and waits for the replies. Returns how many jobs were given back."""
        self.unsubscribe()
        jobs = self._unrun_jobs(self._send)
        for job in jobs:
            job.nack(unrun=True, wait=False)
        if self._pending:
            self._wait(self._pending[-1], None)
        return len(jobs)

    # -- plumbing ---------------------------------------------------------------------------

    def _send(self, data: bytes, parse: Callable[[str], Any], job: Optional[Job] = None,
              background: bool = False, settles: bool = False) -> Reply:
        if self._sock is None:
            raise self._closed_error or Disconnected("not connected")
        reply = Reply(self, parse, job, background, settles)
        self._pending.append(reply)
        view = memoryview(data)
        deadline = None if self.timeout is None else time.monotonic() + self.timeout
        while view:
            try:
                sent = self._sock.send(view)
                view = view[sent:]
                continue
            except BlockingIOError:
                pass
            except OSError as e:
                self._disconnect(f"send failed: {e}")
                raise self._closed_error  # type: ignore[misc]
            # The daemon reads no more until we read its replies: read while we wait.
            left = None if deadline is None else max(0.0, deadline - time.monotonic())
            r, w, _ = select.select([self._sock], [self._sock], [], left)
            if not r and not w:  # part of a request sent: the connection is out of step
                self._disconnect("deferd did not read the request in time")
                raise TimeoutError("deferd did not read the request in time")
            if r:
                self._read_some()
                self._dispatch()
        return reply

    def _wait(self, reply: Reply, timeout: Optional[float]) -> None:
        if timeout is None:
            timeout = self.timeout
        deadline = None if timeout is None else time.monotonic() + timeout
        while not reply.done:
            if not self._pump(deadline):
                raise TimeoutError("no reply from deferd in time")

    def _pump(self, deadline: Optional[float]) -> bool:
        """Reads and dispatches what arrives until something was dispatched or ``deadline``
        (monotonic) passed; False on timeout."""
        if self._dispatch():
            return True
        while True:
            if self._sock is None:
                raise self._closed_error or Disconnected("not connected")
            left = None if deadline is None else max(0.0, deadline - time.monotonic())
            r, _, _ = select.select([self._sock], [], [], left)
            if r:
                self._read_some()
                if self._dispatch():
                    return True
            elif left == 0.0:  # also a timeout of 0 reads what the socket already has
                return False

    def _read_some(self) -> None:
        assert self._sock is not None
        try:
            chunk = self._sock.recv(1 << 16)
        except BlockingIOError:
            return
        except OSError as e:
            self._disconnect(f"receive failed: {e}")
            raise self._closed_error  # type: ignore[misc]
        if not chunk:
            self._disconnect("the daemon closed the connection")
            raise self._closed_error  # type: ignore[misc]
        self._in += chunk

    def _disconnect(self, why: str) -> None:
        if self._closed_error is None:
            self._closed_error = Disconnected(why)
        if self._sock is not None:
            self._sock.close()
            self._sock = None
        self._fail_pending(why)
