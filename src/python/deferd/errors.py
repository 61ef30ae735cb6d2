"""Exceptions of the deferd client, one per error code of the protocol (docs/protocol.md, Errors).

Every ``ERR <CODE> [<key>=<value> ...] <text>`` reply is raised as the subclass of
:class:`DeferdError` named after its code (``QUEUE_FULL`` -> :class:`QueueFull`); a code this
client does not know is raised as :class:`DeferdError` itself with ``code`` set. ``retryable``
says whether sending the same request again later may succeed, as the protocol's table does.
The fields after the code (``stored=no reason=draining``) are what a program decides from
(``fields``, ``stored``, ``reason``); the text is for people.
"""

from __future__ import annotations

import errno
import re
from typing import Dict, List, Optional, Tuple, Type

# One field of an ERR reply (docs/protocol.md, Errors); the first word that is not one starts
# the text for people.
_FIELD = re.compile(r"([a-z_]+)=([A-Za-z0-9_.,-]+)(?: |$)")


def parse_fields(text: str) -> Tuple[Dict[str, str], str]:
    """The ``key=value`` fields at the front of an ERR reply's text (after its code), and the
    rest. No fields: a daemon older than them, or an error that has none."""
    fields: Dict[str, str] = {}
    at = 0
    while True:
        m = _FIELD.match(text, at)
        if m is None:
            return fields, text[at:]
        fields.setdefault(m.group(1), m.group(2))
        at = m.end()


class DeferdError(Exception):
    """An error answered by the daemon (``ERR <CODE> <text>``) or met by the client.

    Attributes:
        code: the protocol's error code, e.g. ``"LEASE_LOST"``.
        text: the daemon's text after the code (its fields included).
        fields: the reply's ``key=value`` fields after the code (docs/protocol.md, Errors);
            empty from a daemon older than them.
        stored: the ``stored`` field: ``"no"``, ``"maybe"`` (the answer was lost), ``"yes"``,
            the number of jobs stored (``PARTIAL``), or None when not said.
        reason: the ``reason`` field (``"draining"``, ``"not_connected"``, ...), or None.
        retryable: True when the same request may succeed if sent again later.
        job: for an answer to ``ACK``/``NACK``/``TOUCH``, the :class:`deferd.Job` it was about.
    """

    code: str = "ERROR"
    retryable: bool = False

    def __init__(self, text: str = "", code: Optional[str] = None) -> None:
        if code is not None:
            self.code = code
        self.text = text
        self.fields, _ = parse_fields(text)
        self.stored: Optional[str] = self.fields.get("stored")
        self.reason: Optional[str] = self.fields.get("reason")
        self.job = None  # type: ignore[var-annotated]
        super().__init__(f"{self.code} {text}".rstrip())


class BadRequest(DeferdError):
    """``BAD_REQUEST``: malformed header, unknown command or key, bad number."""

    code = "BAD_REQUEST"


class UnknownQueue(DeferdError):
    """``UNKNOWN_QUEUE``: the queue is not configured on this daemon."""

    code = "UNKNOWN_QUEUE"


class TooLarge(DeferdError):
    """``TOO_LARGE``: payload over ``[daemon] max_payload``, or a transaction over one packet."""

    code = "TOO_LARGE"


class NotFound(DeferdError):
    """``NOT_FOUND``: no such job, or this connection does not hold it."""

    code = "NOT_FOUND"


class QueueFull(DeferdError):
    """``QUEUE_FULL``: the queue holds its ``max_pending`` jobs; nothing was stored."""

    code = "QUEUE_FULL"
    retryable = True


class LeaseLost(DeferdError):
    """``LEASE_LOST``: the job's lease expired or its lock was lost (or it was cancelled)."""

    code = "LEASE_LOST"


class Unavailable(DeferdError):
    """``UNAVAILABLE``: ZooKeeper not connected, the operation failed there, or draining."""

    code = "UNAVAILABLE"
    retryable = True


class InFlight(DeferdError):
    """``IN_FLIGHT``: cancel/reschedule of a job a consumer holds; nothing changed."""

    code = "IN_FLIGHT"
    retryable = True


class PermissionDenied(DeferdError):
    """``PERMISSION_DENIED``: the queue's producers/consumers rule does not name this user."""

    code = "PERMISSION_DENIED"


class Partial(DeferdError):
    """``PARTIAL``: a batch split into parts failed after its first parts were stored.

    Attributes:
        stored_ids: the ids of the jobs that were stored, in request order.
        duplicates: positions (from 0) among them that were duplicates.
    """

    code = "PARTIAL"
    retryable = True

    def __init__(self, text: str = "", code: Optional[str] = None) -> None:
        super().__init__(text, code)
        self.stored_ids: List[str] = []
        self.duplicates: List[int] = []
        for tok in text.split(";", 1)[0].split():
            if tok.startswith("ids="):
                self.stored_ids = [i for i in tok[4:].split(",") if i and i != "-"]
            elif tok.startswith("dup="):
                self.duplicates = [int(p) - 1 for p in tok[4:].split(",") if p.isdigit()]


class Internal(DeferdError):
    """``INTERNAL``: anything else; the daemon logged it. Retrying may help."""

    code = "INTERNAL"
    retryable = True


class Disconnected(DeferdError, ConnectionError):
    """The connection to the daemon was closed or broke; requests in flight have no answer."""

    code = "DISCONNECTED"
    retryable = True


class ConnectFailed(Disconnected):
    """No connection could be made to the daemon's socket: deferd is not running there, the
    path is not its socket, or the socket's mode keeps this user out.

    Still a :class:`Disconnected` (and so an ``OSError``): code that catches those catches this
    one. Nothing was sent, so any request may be tried again once deferd is up.

    Attributes:
        socket_path: the path that was tried.
        errno: the OS's error number (``ECONNREFUSED``, ``ENOENT``, ``EACCES``, ...), or None.
        retryable: False for a permission error (trying again will not help), else True.
    """

    code = "CONNECT_FAILED"

    # Why, by errno; each names what the user can do about it.
    _HINTS = {
        errno.ECONNREFUSED: "nothing listens on it: deferd is not running (the socket file "
                            "is left from one that stopped)",
        errno.ENOENT: "no such socket: is deferd running, with this [daemon] socket in its "
                      "deferd.ini?",
        errno.EACCES: "permission denied: the socket's socket_mode/socket_group (deferd.ini) "
                      "do not let this user in",
        errno.ENOTSOCK: "that file is not a socket: is the path deferd's [daemon] socket?",
    }
    _HINTS[errno.EPERM] = _HINTS[errno.EACCES]

    def __init__(self, socket_path: str, error: OSError) -> None:
        hint = self._HINTS.get(error.errno) if error.errno is not None else None
        why = hint or (error.strerror or str(error))
        super().__init__(f"cannot connect to deferd at {socket_path}: {why} (the path is "
                         "socket_path=, else $DEFERD_SOCKET, else /run/deferd/deferd.sock)")
        self.socket_path = socket_path
        self.errno = error.errno
        if error.errno in (errno.EACCES, errno.EPERM):
            self.retryable = False


class ProtocolError(DeferdError):
    """The daemon sent something this client cannot parse (a bug on one side)."""

    code = "PROTOCOL"


ERRORS: Dict[str, Type[DeferdError]] = {
    cls.code: cls
    for cls in (BadRequest, UnknownQueue, TooLarge, NotFound, QueueFull, LeaseLost,
                Unavailable, InFlight, PermissionDenied, Partial, Internal)
}


def from_reply(line: str) -> DeferdError:
    """The exception for an ``ERR <CODE> <text>`` reply line (without its ``\\n``)."""
    parts = line.split(" ", 2)
    code = parts[1] if len(parts) > 1 else "INTERNAL"
    text = parts[2] if len(parts) > 2 else ""
    cls = ERRORS.get(code)
    return cls(text) if cls else DeferdError(text, code)
