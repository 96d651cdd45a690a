"""The operator endpoint: an MCP server over Streamable HTTP on 127.0.0.1, for `mcpwatch watch` and scripts.

Every request needs `Authorization: Bearer <token>`; a Host header that is not loopback is refused before
anything else, so a web page cannot reach it through DNS rebinding.
"""

from __future__ import annotations

import contextlib
import hmac
import json
import logging
import secrets
from collections.abc import Awaitable, Callable
from typing import Any

from mcpwatch import operator as contract
from mcpwatch.reliability.deadline import InvalidValue
from mcpwatch.wrapper.core import WrapperCore
from mcpwatch.wrapper.recorder import Recorder

ASGIApp = Callable[
    [dict[str, Any], Callable[[], Awaitable[dict[str, Any]]], Callable[[dict[str, Any]], Awaitable[None]]],
    Awaitable[None],
]
LOOPBACK_HOSTS = {"127.0.0.1", "localhost", "[::1]", "::1"}
MAX_WAIT_MS = 30_000
MAX_LIMIT = 10_000


def host_is_loopback(host_header: str) -> bool:
    host = host_header.strip().lower()
    if host.startswith("["):
        host = host[: host.find("]") + 1]
    elif ":" in host:
        host = host.rsplit(":", 1)[0]
    return host in LOOPBACK_HOSTS


class GuardMiddleware:
    """Loopback Host header first (421), then the bearer token (401), then the MCP app."""

    def __init__(self, app: ASGIApp, token: str) -> None:
        self.app = app
        self.expected = f"Bearer {token}".encode()

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] == "http":
            headers = dict(scope.get("headers") or [])
            host = headers.get(b"host", b"").decode("latin-1")
            if not host_is_loopback(host):
                await _reply(send, 421, "the operator endpoint only answers on loopback")
                return
            if not hmac.compare_digest(headers.get(b"authorization", b""), self.expected):
                await _reply(send, 401, "missing or wrong bearer token (see the wrapper's registry file)")
                return
        await self.app(scope, receive, send)


async def _reply(send: Any, status: int, message: str) -> None:
    body = json.dumps({"error": message}).encode()
    await send(
        {
            "type": "http.response.start",
            "status": status,
            "headers": [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())],
        }
    )
    await send({"type": "http.response.body", "body": body})


def build_operator_app(
    core: WrapperCore,
    recorder: Recorder,
    *,
    token: str,
    log_info: Callable[[], dict[str, Any]],
    health_tool: str | None,
) -> ASGIApp:
    from mcp.server import MCPServer
    from mcp.server.mcpserver.exceptions import ToolError

    logging.getLogger("mcp").setLevel(logging.WARNING)
    server = MCPServer("mcpwatch-operator", log_level="WARNING")

    @server.tool(
        name=contract.TOOL_STATUS, description="The wrapper's whole state: upstream, deadline, tombstones, calls."
    )
    async def status() -> dict[str, Any]:
        return {**core.status(), "log": log_info()}

    @server.tool(name=contract.TOOL_EVENTS, description="Events after a sequence number (long poll with wait_ms).")
    async def events(after: int = 0, limit: int = 1000, wait_ms: int = 0) -> dict[str, Any]:
        limit = max(1, min(int(limit), MAX_LIMIT))
        wait_s = max(0, min(int(wait_ms), MAX_WAIT_MS)) / 1000
        batch = await recorder.wait_for(int(after), limit, wait_s)
        return {
            "events": [e.to_dict() for e in batch],
            "next": batch[-1].seq if batch else max(int(after), 0),
            "latest": recorder.seq,
        }

    @server.tool(name=contract.TOOL_HEALTH_CHECK, description="Ping the upstream and call its health tool, if any.")
    async def health_check() -> dict[str, Any]:
        return await core.health_check(health_tool)

    def _change(key: str, value: Any) -> dict[str, Any]:
        try:
            return core.change_deadline(key, value)
        except InvalidValue as exc:
            raise ToolError(str(exc)) from None

    @server.tool(name=contract.TOOL_SET_MARGIN, description="Set the deadline margin (seconds) until reset.")
    async def set_margin(seconds: Any) -> dict[str, Any]:
        return _change("margin_s", seconds)

    @server.tool(name=contract.TOOL_SET_HOST_TIMEOUT, description="Set the host's tools/call timeout (seconds).")
    async def set_host_timeout(seconds: Any) -> dict[str, Any]:
        return _change("host_timeout_s", seconds)

    @server.tool(
        name=contract.TOOL_SET_DEADLINE, description="Set an explicit deadline (seconds; ≤0 disables; null clears)."
    )
    async def set_deadline(seconds: Any = None) -> dict[str, Any]:
        return _change("override_s", seconds)

    @server.tool(name=contract.TOOL_CANCEL, description="Cancel an in-flight call as a deadline would.")
    async def cancel(request_id: str) -> dict[str, Any]:
        if not core.cancel(str(request_id)):
            raise ToolError(f"no call with request id {request_id!r} is in flight")
        return {"cancelled": str(request_id)}

    app = server.streamable_http_app(
        streamable_http_path=contract.OPERATOR_PATH, stateless_http=True, json_response=True
    )
    return GuardMiddleware(app, token)


class OperatorServer:
    """Runs the operator app with uvicorn on the wrapper's own loop, on 127.0.0.1."""

    def __init__(self, app: ASGIApp, port: int = 0) -> None:
        import uvicorn

        class _Server(uvicorn.Server):
            def capture_signals(self) -> contextlib.AbstractContextManager[None]:  # the wrapper owns signals
                return contextlib.nullcontext()

        config = uvicorn.Config(
            app,
            host="127.0.0.1",
            port=port,
            log_level="warning",
            access_log=False,
            lifespan="on",
            ws="none",
            interface="asgi3",
        )
        self._server = _Server(config)
        self._task: Any = None
        self.url = ""

    async def start(self) -> str:
        import asyncio

        self._task = asyncio.ensure_future(self._server.serve())
        while not self._server.started:
            if self._task.done():
                self._task.result()
                raise RuntimeError("the operator endpoint did not start")
            await asyncio.sleep(0.01)
        port = self._server.servers[0].sockets[0].getsockname()[1]
        self.url = f"http://127.0.0.1:{port}{contract.OPERATOR_PATH}"
        return self.url

    async def stop(self) -> None:
        import asyncio

        if self._task is None:
            return
        self._server.should_exit = True
        with contextlib.suppress(TimeoutError, asyncio.CancelledError):
            await asyncio.wait_for(self._task, 3)


def new_token() -> str:
    return secrets.token_urlsafe(32)
