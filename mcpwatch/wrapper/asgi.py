"""What the wrapper's two HTTP endpoints (the Streamable HTTP front and the operator endpoint) share.

Both are plain ASGI apps served by uvicorn on the wrapper's own loop; uvicorn must leave signals to the wrapper,
which shuts everything down in order.
"""

from __future__ import annotations

import contextlib
from collections.abc import Awaitable, Callable
from typing import Any

from mcpwatch.wrapper import frames

ASGIApp = Callable[
    [dict[str, Any], Callable[[], Awaitable[dict[str, Any]]], Callable[[dict[str, Any]], Awaitable[None]]],
    Awaitable[None],
]
LOOPBACK_HOSTS = {"127.0.0.1", "localhost", "[::1]", "::1"}


def host_is_loopback(host_header: str) -> bool:
    """Whether a Host header (or an Origin's netloc) names this machine: the DNS-rebinding guard."""
    host = host_header.strip().lower()
    if host.startswith("["):
        host = host[: host.find("]") + 1]
    elif ":" in host:
        host = host.rsplit(":", 1)[0]
    return host in LOOPBACK_HOSTS


async def respond(
    send: Any, status: int, body: bytes, content_type: bytes, extra: list[tuple[bytes, bytes]] | None = None
) -> None:
    """One whole (non-streaming) HTTP response."""
    headers = [(b"content-type", content_type), (b"content-length", str(len(body)).encode()), *(extra or [])]
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body})


async def respond_json(send: Any, status: int, payload: Any, extra: list[tuple[bytes, bytes]] | None = None) -> None:
    body = b"" if payload is None else frames.encode(payload)
    await respond(send, status, body, b"application/json", extra)


def quiet_server(app: ASGIApp, host: str, port: int, *, lifespan: str = "off") -> Any:
    """A uvicorn server that logs only warnings, speaks plain ASGI 3, and leaves signal handling to the wrapper."""
    import uvicorn

    class _Server(uvicorn.Server):
        def capture_signals(self) -> contextlib.AbstractContextManager[None]:
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
    )
    return _Server(config)
