"""The connection bounds of mcpwatch's HTTP servers (the front, the operator endpoint, the scrape endpoint),
enforced in uvicorn's protocol; the bounds themselves are settings in `httpserve/bounds.py`.

uvicorn's httptools protocol keeps any header however long (its parser joins the pieces), keeps a connection that
never sends a request open forever, and waits for a body however slowly it comes. A peer could hold memory or file
descriptors until the wrapper cannot respawn its upstream, or hold every connection slot with a trickle. This
protocol bounds what a client owes us, in size and in time:

- a request head of at most `max_head_bytes` (else 431 and the connection is closed); the body is not head, and is
  capped by the app (`[front] max_body_mb`), whether it arrives with its head in one read or in many;
- a head that has begun must be complete within `head_timeout_s`, and a body must arrive at `min_body_bytes_s` on
  average after its first `body_grace_s` (else 408 and the connection is closed): a trickle of a byte every few
  seconds is disconnected, whatever the gaps between its bytes;
- `idle_timeout_s` without a byte from a client that owes one closes the connection;
- at most `max_connections` open at once: a newcomer closes the connection quiet longest among those that owe us
  bytes (between requests, in a head, in a body), sparing those that were answered before (a real client's
  kept-alive connections), and gets 503 only when every connection waits on the wrapper.

A connection waiting on the wrapper — a long call, an event stream — owes nothing and is never timed out.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from email.utils import formatdate
from typing import Any, ClassVar

from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

from mcpwatch.httpserve.bounds import ConnectionLimits

RECHECK_S = 1.0  # while reading is paused by us (the app has not taken the body yet), the rate is not the client's


def _refusal(status: int, reason: str, text: str) -> bytes:
    body = text.encode()
    head = f"HTTP/1.1 {status} {reason}\r\ncontent-type: text/plain; charset=utf-8\r\n"
    head += f"content-length: {len(body)}\r\nconnection: close\r\n\r\n"
    return head.encode() + body


def _refresh_date(server_state: Any, config: Any, wall_clock: Callable[[], float]) -> list[tuple[bytes, bytes]]:
    """The default headers with the Date of the second a response starts: made when a response starts (once a
    second at most, per server) rather than by uvicorn's 10 Hz tick, which `asgi.quiet_server` does without so an
    idle wrapper sleeps. Not when its request arrived: a long call's answer is dated when it is sent."""
    now = int(wall_clock())
    if getattr(server_state, "mcpwatch_date_second", None) != now:
        server_state.mcpwatch_date_second = now
        date = [(b"date", formatdate(now, usegmt=True).encode())] if config.date_header else []
        server_state.default_headers = date + config.encoded_headers
    headers: list[tuple[bytes, bytes]] = server_state.default_headers
    return headers


class HeadWithBody:
    """A response's transport until its first body bytes: uvicorn writes the head (status line and headers) as soon
    as the app starts the response, and the body in a write of its own, so each answer took two system calls and
    woke its client twice (it reads the head, then waits for the body). The head is held and written with the first
    body bytes, the same bytes in one write. Only for a response of known length, whose body follows at once: an
    event stream's head goes out at once (a host waits for it before any event)."""

    def __init__(self, cycle: Any, transport: Any) -> None:
        self._cycle = cycle
        self._transport = transport
        self._head: bytes | None = None

    def write(self, data: bytes) -> None:
        if self._head is None:
            self._head = bytes(data)
            return
        self._cycle.transport = self._transport  # from now on the cycle writes to the connection itself
        self._transport.write(self._head + data)

    def __getattr__(self, name: str) -> Any:  # close, is_closing, get_extra_info: the connection's own
        return getattr(self._transport, name)


class LimitedProtocol(HttpToolsProtocol):
    """uvicorn's HTTP protocol with the connection limits: heads and bodies bounded in size and time, idle
    connections closed, a cap on connections open at once. `limited_protocol` binds it to one server's limits."""

    limits: ClassVar[ConnectionLimits]
    open_connections: ClassVar[set[LimitedProtocol]]  # this server's, counted together

    _awaiting_head = True
    _head_bytes = 0  # of the current head, in reads that held nothing else
    _head_started: float | None = None  # the first byte of the current head
    _body_started = 0.0
    _body_bytes = 0
    _last_active = 0.0
    _chunk = b""  # the read being parsed, and how much head came before it
    _chunk_head_base = 0
    _heads_in_chunk = 0
    _ended_in_chunk = 0
    _head_too_large = False
    _answered = 0  # responses completed on this connection
    _timer: asyncio.TimerHandle | None = None
    _closed = False

    def connection_made(self, transport: Any) -> None:
        super().connection_made(transport)
        self._last_active = self.loop.time()
        self.open_connections.add(self)
        if len(self.open_connections) > self.limits.max_connections and not self._make_room():
            self._refuse(503, "Service Unavailable", "too many connections: try again later")
            return
        self._arm()

    def connection_lost(self, exc: Exception | None) -> None:
        self._closed = True
        self.open_connections.discard(self)
        if self._timer is not None:
            self._timer.cancel()
        super().connection_lost(exc)

    def data_received(self, data: bytes) -> None:
        now = self._last_active = self.loop.time()
        starting = self._awaiting_head and self._head_started is None
        if starting:
            self._head_started = now
        self._chunk, self._chunk_head_base = data, self._head_bytes
        self._heads_in_chunk = self._ended_in_chunk = 0
        super().data_received(data)
        self._chunk = b""
        if self._closed:
            return
        if self._head_too_large:
            self._refuse_head()
        elif self._awaiting_head and self._ended_in_chunk:
            # A whole request in this read; what follows of a pipelined next head is counted from the next one.
            self._head_bytes, self._head_started = 0, None
        elif self._awaiting_head:
            self._head_bytes += len(data)
            if self._head_bytes > self.limits.max_head_bytes:
                self._refuse_head()
        if starting:
            self._arm()

    def on_headers_complete(self) -> None:
        if self._heads_in_chunk == 0:
            end = self._chunk.find(b"\r\n\r\n")  # -1: the blank line began in the previous read
            if self._chunk_head_base + (end + 4 if end >= 0 else 0) > self.limits.max_head_bytes:
                self._head_too_large = True
                return
        self._heads_in_chunk += 1
        self._awaiting_head = False
        self._head_started = None
        self._body_started, self._body_bytes = self.loop.time(), 0
        super().on_headers_complete()
        self._date_when_sent()
        self._arm()

    def send_400_response(self, msg: str) -> None:
        """uvicorn's answer to a request it cannot parse, from the default headers: dated now, as any answer."""
        _refresh_date(self.server_state, self.config, self.limits.wall_clock)
        super().send_400_response(msg)

    def _date_when_sent(self) -> None:
        """The new request's response takes the default headers (its Date) when it starts, not now; a response of
        known length goes out in one write with its first body bytes (`HeadWithBody`)."""
        cycle = self.cycle
        if cycle is None:
            return
        plain_send, server_state, config = cycle.send, self.server_state, self.config

        async def send(message: Any) -> None:
            if message["type"] == "http.response.start":
                cycle.default_headers = _refresh_date(server_state, config, self.limits.wall_clock)
                headers = message.get("headers", ())
                if cycle.scope["method"] != "HEAD" and any(name.lower() == b"content-length" for name, _ in headers):
                    held: Any = HeadWithBody(cycle, cycle.transport)  # (HEAD: uvicorn writes no body at all)
                    cycle.transport = held
            await plain_send(message)

        cycle.send = send  # type: ignore[method-assign]  # the app and uvicorn's own 500 both send through it

    def on_body(self, body: bytes) -> None:
        if self._head_too_large:
            return
        self._body_bytes += len(body)
        super().on_body(body)

    def on_message_complete(self) -> None:
        if self._head_too_large:
            return
        super().on_message_complete()
        self._ended_in_chunk += 1
        self._awaiting_head = True
        self._head_bytes = 0

    def on_response_complete(self) -> None:
        self._last_active = self.loop.time()  # quiet while the wrapper worked is not the client's silence
        self._answered += 1
        super().on_response_complete()
        self._arm()

    def owes_bytes(self) -> bool:
        """Whether the connection waits on its client: between requests, in a head, or in a body."""
        cycle = self.cycle  # the current request, once its head is in
        return cycle is None or cycle.response_complete or (cycle.more_body and not cycle.response_started)

    def deadline(self) -> float | None:
        """When this connection is to be closed unless its client sends more; None while the wrapper owes."""
        if not self.owes_bytes():
            return None
        idle = self._last_active + self.limits.idle_timeout_s
        if self._awaiting_head:
            started = self._head_started
            return idle if started is None else min(idle, started + self.limits.head_timeout_s)
        if self.flow.read_paused:  # we stopped reading (the app has not taken the body yet)
            return self.loop.time() + RECHECK_S
        return min(idle, self.limits.body_deadline(self._body_started, self._body_bytes))

    def _arm(self) -> None:
        """(Re)schedule the check for the deadline, if it is sooner than the one scheduled."""
        if self._closed:
            return
        due = self.deadline()
        when = due if due is not None else self.loop.time() + self.limits.idle_timeout_s
        timer = self._timer
        if timer is None or timer.cancelled() or when < timer.when():
            if timer is not None:
                timer.cancel()
            self._timer = self.loop.call_at(when, self._check)

    def _check(self) -> None:
        self._timer = None
        if self._closed:
            return
        due = self.deadline()
        if due is not None and self.loop.time() >= due:
            self._expire()
        else:
            self._arm()

    def _expire(self) -> None:
        if self._awaiting_head and self._head_started is None:  # between requests: nothing is owed but a visit
            self._closed = True
            self.open_connections.discard(self)
            self.transport.close()
            return
        what = "request head" if self._awaiting_head else "request body"
        self._refuse(408, "Request Timeout", f"the {what} did not arrive in time")

    def _make_room(self) -> bool:
        """Close a connection that owes us bytes, one never answered before one a client has used (a host's
        kept-alive connection, which it may reuse at any moment), the quietest first; False if none owes."""
        owing = [c for c in self.open_connections if c is not self and not c._closed and c.owes_bytes()]
        if not owing:
            return False
        oldest = min(owing, key=lambda c: (c._answered > 0, c._last_active))
        oldest._closed = True
        self.open_connections.discard(oldest)
        oldest.transport.close()
        return True

    def _refuse_head(self) -> None:
        kib = self.limits.max_head_bytes // 1024
        self._refuse(431, "Request Header Fields Too Large", f"request headers are limited to {kib} KiB")

    def _refuse(self, status: int, reason: str, text: str) -> None:
        self._closed = True
        self.open_connections.discard(self)
        if self.cycle is None or not self.cycle.response_started:
            self.transport.write(_refusal(status, reason, text))
        self.transport.close()


def limited_protocol(limits: ConnectionLimits) -> type[asyncio.Protocol]:
    """A uvicorn HTTP protocol class bound to `limits` (one class per server: its connections are counted together)."""
    bound: dict[str, Any] = {"limits": limits, "open_connections": set()}
    return type("LimitedProtocol", (LimitedProtocol,), bound)
