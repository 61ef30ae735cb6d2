"""deferd: a Python client for the deferd job scheduler (docs/python.md).

Pure standard library. The daemon's socket protocol is docs/protocol.md.

>>> import deferd
>>> with deferd.Client() as c:                      # $DEFERD_SOCKET or /run/deferd/deferd.sock
...     c.put("emails", b"hello", delay=5).id       # doctest: +SKIP

The asyncio flavour is :mod:`deferd.aio` (``deferd.aio.Client``); it is imported on first use,
so that ``import deferd`` does not load asyncio.
"""

from typing import Any

from .client import (DEFAULT_SOCKET, BaseJob, BatchResult, Cancelled, Client, Deadline, Event,
                     Expired, Job, Put, PutResult, Reply, State, UnknownPush, job_flow_results,
                     job_group, job_uid)
from .errors import (BadRequest, ConnectFailed, DeferdError, Disconnected, InFlight, Internal,
                     LeaseLost, NotFound, Partial, PermissionDenied, ProtocolError, QueueFull,
                     TooLarge, Unavailable, UnknownQueue)

__version__ = "0.3.0"

__all__ = [
    "DEFAULT_SOCKET", "BaseJob", "BatchResult", "Cancelled", "Client", "Deadline", "Event",
    "Expired", "Job", "Put", "PutResult", "Reply", "State", "UnknownPush", "job_flow_results",
    "job_group", "job_uid",
    "BadRequest", "ConnectFailed", "DeferdError", "Disconnected", "InFlight", "Internal",
    "LeaseLost", "NotFound", "Partial", "PermissionDenied", "ProtocolError", "QueueFull",
    "TooLarge", "Unavailable", "UnknownQueue",
]


def __getattr__(name: str) -> Any:
    """``deferd.aio`` without importing it first (module attributes, PEP 562)."""
    if name == "aio":
        import importlib
        return importlib.import_module(".aio", __name__)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
