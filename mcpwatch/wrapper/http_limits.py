"""Connection-level bounds for the wrapper's HTTP servers (the front and the operator endpoint).

uvicorn's httptools protocol keeps any header however long (its parser joins the pieces) and keeps a connection
that never sends a request open forever. A peer could hold memory or file descriptors until the wrapper cannot
respawn its upstream. This protocol adds three bounds: a request head of at most `max_head_bytes` (else 431 and
the connection is closed), at most `max_connections` open at once (the longest-idle connection waiting on its
client makes room, else the newcomer gets 503), and `idle_timeout_s` without a byte from a client that owes us
one (a request head or body) closes the connection. A connection waiting on the wrapper — a long call, an event
stream — is never idle.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, replace
from typing import Any

from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol


@dataclass(frozen=True)
class ConnectionLimits:
    max_head_bytes: int = 64 * 1024
    max_connections: int = 256
    idle_timeout_s: float = 30.0


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


def _refusal(status: int, reason: str, text: str) -> bytes:
    body = text.encode()
    head = f"HTTP/1.1 {status} {reason}\r\ncontent-type: text/plain; charset=utf-8\r\n"
    head += f"content-length: {len(body)}\r\nconnection: close\r\n\r\n"
    return head.encode() + body


def limited_protocol(limits: ConnectionLimits) -> type[asyncio.Protocol]:
    """A uvicorn HTTP protocol class bound to `limits` (one class per server: its connections are counted together)."""
    open_connections: set[LimitedProtocol] = set()

    class LimitedProtocol(HttpToolsProtocol):
        _head_bytes = 0
        _awaiting_head = True
        _last_active = 0.0
        _idle_timer: asyncio.TimerHandle | None = None
        _closed = False

        def connection_made(self, transport: Any) -> None:  # type: ignore[override]
            super().connection_made(transport)
            self._last_active = self.loop.time()
            open_connections.add(self)
            if len(open_connections) > limits.max_connections and not self._make_room():
                self._refuse(503, "Service Unavailable", "too many connections: try again later")
                return
            self._idle_timer = self.loop.call_later(limits.idle_timeout_s, self._check_idle)

        def connection_lost(self, exc: Exception | None) -> None:
            self._closed = True
            open_connections.discard(self)
            if self._idle_timer is not None:
                self._idle_timer.cancel()
            super().connection_lost(exc)

        def data_received(self, data: bytes) -> None:
            self._last_active = self.loop.time()
            super().data_received(data)
            if self._awaiting_head and not self._closed:
                # Counted after parsing, so a body that arrives with its head in one read is not taken for head.
                self._head_bytes += len(data)
                if self._head_bytes > limits.max_head_bytes:
                    kib = limits.max_head_bytes // 1024
                    self._refuse(431, "Request Header Fields Too Large", f"request headers are limited to {kib} KiB")

        def on_headers_complete(self) -> None:
            self._awaiting_head = False
            super().on_headers_complete()

        def on_message_complete(self) -> None:
            super().on_message_complete()
            self._awaiting_head = True
            self._head_bytes = 0

        def owes_bytes(self) -> bool:
            """Whether the connection waits on its client: between requests, in a head, or in a body."""
            cycle = self.cycle  # the current request, once its head is in
            return cycle is None or cycle.response_complete or cycle.more_body

        def _check_idle(self) -> None:
            if self._closed:
                return
            quiet = self.loop.time() - self._last_active
            if quiet >= limits.idle_timeout_s and self.owes_bytes():
                self._closed = True
                self.transport.close()
                return
            wait = limits.idle_timeout_s - quiet if quiet < limits.idle_timeout_s else limits.idle_timeout_s
            self._idle_timer = self.loop.call_later(wait, self._check_idle)

        def _make_room(self) -> bool:
            """Close the longest-quiet connection that has no request in progress; False if there is none."""
            idle = [
                c
                for c in open_connections
                if c is not self and not c._closed and (c.cycle is None or c.cycle.response_complete)
            ]
            if not idle:
                return False
            oldest = min(idle, key=lambda c: c._last_active)
            oldest._closed = True
            open_connections.discard(oldest)
            oldest.transport.close()
            return True

        def _refuse(self, status: int, reason: str, text: str) -> None:
            self._closed = True
            open_connections.discard(self)
            self.transport.write(_refusal(status, reason, text))
            self.transport.close()

    return LimitedProtocol
