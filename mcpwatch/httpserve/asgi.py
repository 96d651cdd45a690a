"""What mcpwatch's HTTP endpoints (the wrapper's Streamable HTTP front, its operator endpoint, the scrape endpoint)
share.

All are plain ASGI apps served by uvicorn on the wrapper's own loop; uvicorn must leave signals to the wrapper,
which shuts everything down in order.
"""

from __future__ import annotations

import asyncio
import contextlib
import ipaddress
from collections.abc import Awaitable, Callable
from typing import Any, Literal

from mcpwatch.httpserve.bounds import ConnectionLimits

ASGIApp = Callable[
    [dict[str, Any], Callable[[], Awaitable[dict[str, Any]]], Callable[[dict[str, Any]], Awaitable[None]]],
    Awaitable[None],
]
LOOPBACK_NAMES = {"localhost", "localhost."}


def host_of(host_header: str) -> str:
    """The host part of a Host header or an Origin's netloc, lower-case, IPv6 without brackets."""
    host = host_header.strip().lower()
    if host.startswith("["):
        return host[1 : host.find("]")] if "]" in host else host
    return host.rsplit(":", 1)[0] if ":" in host else host


def ip_literal(host: str) -> ipaddress.IPv4Address | ipaddress.IPv6Address | None:
    try:
        return ipaddress.ip_address(host)
    except ValueError:
        return None


def is_loopback_name(host: str) -> bool:
    """`localhost`, or an address of 127.0.0.0/8 or ::1: reachable from this machine only."""
    address = ip_literal(host)
    return host in LOOPBACK_NAMES if address is None else address.is_loopback


def host_is_loopback(host_header: str) -> bool:
    """Whether a Host header (or an Origin's netloc) names this machine: the DNS-rebinding guard."""
    return is_loopback_name(host_of(host_header))


async def respond(
    send: Any, status: int, body: bytes, content_type: bytes, extra: list[tuple[bytes, bytes]] | None = None
) -> None:
    """One whole (non-streaming) HTTP response."""
    headers = [(b"content-type", content_type), (b"content-length", str(len(body)).encode()), *(extra or [])]
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body})


def quiet_server(
    app: ASGIApp, host: str, port: int, limits: ConnectionLimits, *, lifespan: Literal["auto", "on", "off"] = "off"
) -> Any:
    """A uvicorn server that logs only warnings, speaks plain ASGI 3, leaves signal handling to the wrapper, and
    bounds its connections (see limits)."""
    import uvicorn

    from mcpwatch.httpserve.limits import limited_protocol

    class _Server(uvicorn.Server):
        """uvicorn's server without its 10 Hz tick: an idle wrapper is not woken ten times a second per endpoint.
        The tick only watched `should_exit` (now an event) and refreshed the Date header (now done per request by
        the protocol, `limits.LimitedProtocol`)."""

        _exit_now = False
        _exit_event: asyncio.Event | None = None

        @property  # uvicorn's plain attribute, now one that wakes main_loop
        def should_exit(self) -> bool:
            return self._exit_now

        @should_exit.setter
        def should_exit(self, value: bool) -> None:
            self._exit_now = value
            if value and self._exit_event is not None:
                self._exit_event.set()

        async def main_loop(self) -> None:
            await self.on_tick(0)  # the default headers, once
            self._exit_event = asyncio.Event()
            if not self._exit_now:
                await self._exit_event.wait()

        def capture_signals(self) -> contextlib.AbstractContextManager[None]:  # type: ignore[override]  # any manager serves
            return contextlib.nullcontext()

    config = uvicorn.Config(
        app,
        host=host,
        port=port,
        log_level="warning",
        access_log=False,
        lifespan=lifespan,
        ws="none",
        interface="asgi3",
        # the peer is who connected: uvicorn would otherwise take X-Forwarded-For from any local process as the
        # client's address (it trusts 127.0.0.1 by default), so a refused host could name anyone in the log
        proxy_headers=False,
        http=limited_protocol(limits),
    )
    return _Server(config)


async def stop_server(server: Any, task: asyncio.Future[Any] | None, timeout_s: float = 3.0) -> None:
    """Ask a `quiet_server` to exit and wait for it, bounded: a connection that does not close is left behind."""
    if task is None:
        return
    server.should_exit = True
    with contextlib.suppress(TimeoutError, asyncio.CancelledError):
        await asyncio.wait_for(task, timeout_s)
