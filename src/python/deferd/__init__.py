"""deferd: a Python client for the deferd job scheduler (docs/python.md).

Pure standard library. The daemon's socket protocol is docs/protocol.md.

>>> import deferd
>>> with deferd.Client() as c:                      # $DEFERD_SOCKET or /run/deferd/deferd.sock
...     c.put("emails", b"hello", delay=5).id       # doctest: +SKIP
"""

from .client import (DEFAULT_SOCKET, BatchResult, Cancelled, Client, Deadline, Event, Expired,
                     Job, Put, PutResult, Reply, State, UnknownPush)
from .errors import (BadRequest, DeferdError, Disconnected, InFlight, Internal, LeaseLost,
                     NotFound, Partial, PermissionDenied, ProtocolError, QueueFull, TooLarge,
                     Unavailable, UnknownQueue)

__version__ = "0.1.0"

__all__ = [
    "DEFAULT_SOCKET", "BatchResult", "Cancelled", "Client", "Deadline", "Event", "Expired",
    "Job", "Put", "PutResult", "Reply", "State", "UnknownPush",
    "BadRequest", "DeferdError", "Disconnected", "InFlight", "Internal", "LeaseLost",
    "NotFound", "Partial", "PermissionDenied", "ProtocolError", "QueueFull", "TooLarge",
    "Unavailable", "UnknownQueue",
]
