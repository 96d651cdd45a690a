"""The bounds on an HTTP server's connections (sizes, times, how many at once), as settings: no server in them.

`httpserve/limits.py` enforces them in uvicorn's protocol; whoever only builds them (the wrapper at start, before
any connection) needs no uvicorn for that.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Any


@dataclass(frozen=True)
class ConnectionLimits:
    max_head_bytes: int = 64 * 1024
    max_connections: int = 256
    idle_timeout_s: float = 30.0
    head_timeout_s: float = 5.0
    min_body_bytes_s: float = 16 * 1024
    body_grace_s: float = 5.0
    wall_clock: Callable[[], float] = field(default=time.time, compare=False, repr=False)  # the Date header's

    def body_deadline(self, started: float, received: int) -> float:
        """When a body begun at `started`, with `received` bytes in so far, has fallen below the minimum rate."""
        return started + self.body_grace_s + received / self.min_body_bytes_s


def timed_limits(settings: Any, **bounds: Any) -> ConnectionLimits:
    """ConnectionLimits from a config section with `idle_timeout_s`, `head_timeout_s` and `min_body_kib_s` (the
    front's and the operator's): a body's grace is the head's time."""
    return ConnectionLimits(
        idle_timeout_s=settings.idle_timeout_s,
        head_timeout_s=settings.head_timeout_s,
        min_body_bytes_s=settings.min_body_kib_s * 1024,
        body_grace_s=settings.head_timeout_s,
        max_connections=settings.max_connections,
        **bounds,
    )


RESERVED_DESCRIPTORS = 64  # the log, the upstream's pipes (and a respawn's), sockets to an HTTP upstream, the loop


def within_descriptors(limits: ConnectionLimits, share: float) -> ConnectionLimits:
    """`limits` with at most `share` of the descriptors the process may open (after a reserve) as connections: a
    cap above the process's own limit would let idle clients take the descriptors the upstream needs."""
    try:
        import resource

        soft = resource.getrlimit(resource.RLIMIT_NOFILE)[0]
    except (ImportError, OSError, ValueError):
        return limits
    if soft == resource.RLIM_INFINITY:
        return limits
    room = max(4, int((soft - RESERVED_DESCRIPTORS) * share))
    return replace(limits, max_connections=min(limits.max_connections, room))
