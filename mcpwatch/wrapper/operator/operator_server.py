"""The operator endpoint: an MCP server over Streamable HTTP on 127.0.0.1, for `mcpwatch watch` and scripts.

Every request needs `Authorization: Bearer <token>`; a Host header that is not loopback is refused before
anything else, so a web page cannot reach it through DNS rebinding.
"""

from __future__ import annotations

import asyncio
import json
import secrets
import socket
from collections.abc import Awaitable, Callable, Mapping
from typing import Any, TypedDict

from mcpwatch import __version__
from mcpwatch import operator as contract
from mcpwatch.errors import UserError
from mcpwatch.events import DeadlineBlock, DeadlineKey, HealthCheckData
from mcpwatch.httpserve.asgi import ASGIApp, quiet_server, stop_server
from mcpwatch.httpserve.bounds import ConnectionLimits
from mcpwatch.httpserve.guard import FrontGuard
from mcpwatch.reliability.seconds import InvalidValue
from mcpwatch.wrapper.calls.recorder import Recorder
from mcpwatch.wrapper.framing import frames
from mcpwatch.wrapper.framing.json_reply import respond_json
from mcpwatch.wrapper.operator.actions import OperatorActions

MAX_WAIT_MS = 30_000
MAX_LIMIT = 10_000
MAX_WHOLE = 2**53  # beyond it a JSON number is not exact in every client; no count or sequence gets near it
MAX_DIGITS = 16
LISTEN_BACKLOG = 2048  # uvicorn's own default


class GuardMiddleware:
    """One loopback Host header first (400, 421), a loopback Origin if any (403), then the bearer token (401),
    then the MCP app."""

    def __init__(self, app: ASGIApp, token: str) -> None:
        self.app = app
        self.guard = FrontGuard(token=token)

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] == "http":
            refusal = self.guard.refusal(scope.get("headers") or [])
            if refusal is not None:
                text = {
                    421: "the operator endpoint only answers on loopback",
                    401: "missing or wrong bearer token (see the wrapper's registry file)",
                }.get(refusal.status, refusal.text)
                await respond_json(send, refusal.status, {"error": text}, [(b"connection", b"close")])
                return
        await self.app(scope, receive, send)


def _schema(properties: dict[str, Any], required: tuple[str, ...] = ()) -> dict[str, Any]:
    schema: dict[str, Any] = {"type": "object", "properties": properties}
    if required:
        schema["required"] = list(required)
    return schema


_SECONDS = {"seconds": {"description": "seconds"}}
TOOLS: list[dict[str, Any]] = [
    {
        "name": name,
        "description": description,
        "inputSchema": schema,
        "outputSchema": {"type": "object", "additionalProperties": True},
    }
    for name, description, schema in (
        (contract.TOOL_STATUS, "The wrapper's whole state: upstream, deadline, tombstones, calls.", _schema({})),
        (
            contract.TOOL_EVENTS,
            "Events after a sequence number (long poll with wait_ms).",
            _schema(
                {
                    "after": {"type": "integer", "default": 0, "minimum": 0, "maximum": MAX_WHOLE},
                    "limit": {"type": "integer", "default": 1000, "minimum": 1, "maximum": MAX_LIMIT},
                    "wait_ms": {"type": "integer", "default": 0, "minimum": 0, "maximum": MAX_WAIT_MS},
                }
            ),
        ),
        (contract.TOOL_HEALTH_CHECK, "Ping the upstream and call its health tool, if any.", _schema({})),
        (contract.TOOL_SET_MARGIN, "Set the deadline margin (seconds) until reset.", _schema(_SECONDS, ("seconds",))),
        (
            contract.TOOL_SET_HOST_TIMEOUT,
            "Set the host's tools/call timeout (seconds).",
            _schema(_SECONDS, ("seconds",)),
        ),
        (
            contract.TOOL_SET_DEADLINE,
            "Set an explicit deadline (seconds; ≤0 disables; null clears).",
            _schema({"seconds": {"description": "seconds, or null", "default": None}}),
        ),
        (
            contract.TOOL_RESET_DEADLINE,
            "Undo every operator change to the budget: the environment and mcpwatch.toml apply again.",
            _schema({}),
        ),
        (
            contract.TOOL_CANCEL,
            "Cancel an in-flight call as a deadline would.",
            _schema({"request_id": {"type": "string"}}, ("request_id",)),
        ),
        (
            contract.TOOL_CALL_UPSTREAM,
            "Call one of the upstream's tools for the operator (e.g. council.models.disable); logged.",
            _schema(
                {
                    "name": {"type": "string"},
                    "arguments": {"type": "object", "default": {}},
                    "timeout_s": {"type": "number", "default": 30},
                },
                ("name",),
            ),
        ),
    )
]
# Versions reachable with the initialize handshake; the endpoint is stateless, so they all behave alike.
PROTOCOL_VERSIONS = ("2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25")
MAX_BODY_BYTES = 1024 * 1024

Handler = Callable[[dict[str, Any]], Awaitable[Mapping[str, object]]]  # a tool's JSON answer


class Refused(Exception):
    """A tool said no: its message goes back to the operator as the tool's error text."""


def _whole(arguments: dict[str, Any], name: str, default: int, low: int, high: int) -> int:
    """A whole-number argument within [low, high]; else Refused, saying the range (nothing is clamped quietly)."""
    span = f"{name} must be a whole number from {_shown(low)} to {_shown(high)}"
    value = arguments.get(name, default)
    digits = value.strip().removeprefix("-") if isinstance(value, str) else ""
    if digits.isascii() and digits.isdigit():  # "12" yes; "¹²" (a digit to isdigit) no
        if len(digits) > MAX_DIGITS:
            raise Refused(f"{span}, got a {len(digits)}-digit number")
        value = int(value)
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    if isinstance(value, bool) or not isinstance(value, int):
        raise Refused(f"{span}, got {frames.text_of(value, 80)}")
    if not low <= value <= high:
        shown = f"a {len(str(abs(value)))}-digit number" if abs(value) > MAX_WHOLE else str(value)
        if value.bit_length() >= 13_000:
            shown = "a many-thousand-digit number"
        raise Refused(f"{span}, got {shown}")
    return value


def _shown(bound: int) -> str:
    return "2^53" if bound == MAX_WHOLE else str(bound)


class _OfferedSlow(TypedDict, total=False):
    """`status`'s optional part, spread into the answer: a key that is there only with `[tasks] offer_slow` on."""

    offered_slow: contract.OfferedSlowStatus


def build_operator_app(
    actions: OperatorActions,
    recorder: Recorder,
    *,
    token: str,
    log_info: Callable[[], contract.LogStatus],
    health_tool: str | None,
    otel_info: Callable[[], dict[str, Any] | None] = lambda: None,
    offered_slow: Callable[[], contract.OfferedSlowStatus] | None = None,
) -> ASGIApp:
    """The operator tools behind the guard. A small hand-written MCP server (stateless Streamable HTTP, JSON
    answers): the SDK's server would import its pydantic protocol models, ~35 MB of resident memory in a process
    whose whole budget is 60 MB, for nine tools."""

    async def status(arguments: dict[str, Any]) -> contract.Status:
        # [tasks] offer_slow: the tools offered for how their calls ended, and why
        slow: _OfferedSlow = {} if offered_slow is None else {"offered_slow": offered_slow()}
        return {**actions.status(), "log": log_info(), "otel": otel_info(), **slow}

    async def events(arguments: dict[str, Any]) -> dict[str, Any]:
        after = _whole(arguments, "after", 0, 0, MAX_WHOLE)
        limit = _whole(arguments, "limit", 1000, 1, MAX_LIMIT)
        wait_s = _whole(arguments, "wait_ms", 0, 0, MAX_WAIT_MS) / 1000
        batch = await recorder.wait_for(after, limit, wait_s)
        return {
            "events": [e.to_dict() for e in batch],
            "next": batch[-1].seq if batch else after,
            "latest": recorder.seq,
        }

    async def health_check(arguments: dict[str, Any]) -> HealthCheckData:
        return await actions.health_check(health_tool)

    def setter(key: DeadlineKey, required: bool) -> Handler:
        async def change(arguments: dict[str, Any]) -> DeadlineBlock:
            if required and "seconds" not in arguments:
                raise Refused("seconds is required")
            try:
                return actions.change_deadline(key, arguments.get("seconds"))
            except InvalidValue as exc:
                raise Refused(str(exc)) from None

        return change

    async def reset(arguments: dict[str, Any]) -> DeadlineBlock:
        return actions.reset_deadline()

    async def cancel(arguments: dict[str, Any]) -> dict[str, Any]:
        request_id = arguments.get("request_id")
        if isinstance(request_id, bool) or not isinstance(request_id, str | int):
            raise Refused(f"request_id must be a string, got {request_id!r}")
        if not actions.cancel(str(request_id)):
            raise Refused(f"no call with request id {str(request_id)!r} is in flight")
        return {"cancelled": str(request_id)}

    async def call_upstream(arguments: dict[str, Any]) -> dict[str, Any]:
        try:
            return await actions.call_upstream(
                arguments.get("name"), arguments.get("arguments"), arguments.get("timeout_s")
            )
        except ValueError as exc:  # CallRefused
            raise Refused(str(exc)) from None

    handlers: dict[str, Handler] = {
        contract.TOOL_STATUS: status,
        contract.TOOL_EVENTS: events,
        contract.TOOL_HEALTH_CHECK: health_check,
        contract.TOOL_SET_MARGIN: setter("margin_s", True),
        contract.TOOL_SET_HOST_TIMEOUT: setter("host_timeout_s", True),
        contract.TOOL_SET_DEADLINE: setter("override_s", False),
        contract.TOOL_RESET_DEADLINE: reset,
        contract.TOOL_CANCEL: cancel,
        contract.TOOL_CALL_UPSTREAM: call_upstream,
    }
    return GuardMiddleware(OperatorApp(handlers), token)


class OperatorApp:
    """MCP over stateless Streamable HTTP: one JSON-RPC message per POST, answered with one JSON body (notifications
    and responses get 202); no sessions, so no GET stream and no DELETE."""

    def __init__(self, handlers: dict[str, Handler]) -> None:
        self.handlers = handlers

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] == "lifespan":
            while True:
                message = await receive()
                if message["type"] == "lifespan.startup":
                    await send({"type": "lifespan.startup.complete"})
                elif message["type"] == "lifespan.shutdown":
                    await send({"type": "lifespan.shutdown.complete"})
                    return
        if scope["type"] != "http":
            return
        if scope.get("path") != contract.OPERATOR_PATH:
            await respond_json(send, 404, {"error": f"the operator endpoint is at {contract.OPERATOR_PATH}"})
            return
        if scope.get("method") != "POST":
            await respond_json(send, 405, {"error": "POST one JSON-RPC message per request"}, [(b"allow", b"POST")])
            return
        body = bytearray()
        while True:
            message = await receive()
            body += message.get("body", b"")
            if len(body) > MAX_BODY_BYTES:
                await respond_json(send, 413, {"error": f"a request body is at most {MAX_BODY_BYTES} bytes"})
                return
            if not message.get("more_body"):
                break
        try:
            request = frames.decode(bytes(body))
        except ValueError:
            await respond_json(send, 400, frames.error_response(None, frames.PARSE_ERROR, "Parse error"))
            return
        kind = frames.kind_of(request)
        if kind in (frames.NOTIFICATION, frames.RESPONSE):
            await respond_json(send, 202, None)
        elif kind == frames.REQUEST:
            await respond_json(send, 200, await self.answer(request))
        else:
            request_id = request.get("id") if isinstance(request, dict) and frames.valid_id(request.get("id")) else None
            await respond_json(send, 400, frames.error_response(request_id, frames.INVALID_REQUEST, "Invalid Request"))

    async def answer(self, request: dict[str, Any]) -> dict[str, Any]:
        method, request_id = request["method"], request["id"]
        params = got if isinstance(got := request.get("params"), dict) else {}
        if method == "initialize":
            asked = params.get("protocolVersion")
            result: dict[str, Any] = {
                "protocolVersion": asked if asked in PROTOCOL_VERSIONS else PROTOCOL_VERSIONS[-1],
                "capabilities": {"tools": {"listChanged": False}},
                "serverInfo": {"name": "mcpwatch-operator", "version": __version__},
            }
        elif method == "ping":
            result = {}
        elif method == "tools/list":
            result = {"tools": TOOLS}
        elif method == "tools/call":
            result = await self.call(params.get("name"), params.get("arguments"))
        else:
            return frames.error_response(request_id, -32601, "Method not found", method)
        return {"jsonrpc": "2.0", "id": request_id, "result": result}

    async def call(self, name: Any, arguments: Any) -> dict[str, Any]:
        handler = self.handlers.get(name) if isinstance(name, str) else None
        if handler is None:
            return _tool_error(f"Unknown tool: {name}")
        if arguments is not None and not isinstance(arguments, dict):
            return _tool_error(f"Error executing tool {name}: arguments must be an object")
        try:
            value = await handler(arguments or {})
        except Refused as exc:
            return _tool_error(f"Error executing tool {name}: {exc}")
        try:
            text = json.dumps(value, indent=2, ensure_ascii=False, allow_nan=False)
        except (TypeError, ValueError):  # a non-finite number or an odd type: made JSON, as the text shows it
            value = json.loads(json.dumps(frames.finite(value), default=str))
            text = json.dumps(value, indent=2, ensure_ascii=False)
        return {"content": [{"type": "text", "text": text}], "structuredContent": value, "isError": False}


def _tool_error(text: str) -> dict[str, Any]:
    return {"content": [{"type": "text", "text": text}], "isError": True}


class OperatorServer:
    """Runs the operator app with uvicorn on the wrapper's own loop, on 127.0.0.1.

    The socket listens from `start` (its address goes in the registry at once), but uvicorn is imported and started
    only when the first client connects: most wrappers are never looked at, and uvicorn would be a third of what a
    stdio wrapper imports before answering its host. The first client's connection waits in the socket's backlog
    until then, and every request is answered as if uvicorn had listened from the start."""

    def __init__(self, app: ASGIApp, port: int = 0, limits: ConnectionLimits | None = None) -> None:
        self._app = app
        self._port = port
        self._limits = limits or ConnectionLimits(max_connections=64)
        self._socket: socket.socket | None = None
        self._server: Any = None
        self._task: Any = None
        self.url = ""

    async def start(self) -> str:
        try:
            sock = socket.create_server(("127.0.0.1", self._port), backlog=LISTEN_BACKLOG)
        except OSError as exc:
            raise UserError(f"the operator endpoint cannot listen on 127.0.0.1:{self._port} ({exc.strerror})") from None
        sock.setblocking(False)
        self._socket = sock
        asyncio.get_running_loop().add_reader(sock.fileno(), self._serve_now)
        self.url = f"http://127.0.0.1:{sock.getsockname()[1]}{contract.OPERATOR_PATH}"
        return self.url

    @property
    def serving(self) -> bool:
        """Whether uvicorn has been started (a client has connected)."""
        return self._server is not None

    def _serve_now(self) -> None:
        """A client is waiting to be accepted: uvicorn takes the socket over."""
        sock = self._socket
        if sock is None or self._server is not None:
            return
        asyncio.get_running_loop().remove_reader(sock.fileno())
        self._server = quiet_server(self._app, "127.0.0.1", self._port, self._limits, lifespan="on")
        self._task = asyncio.ensure_future(self._server.serve(sockets=[sock]))

    async def stop(self) -> None:
        if self._server is not None:
            await stop_server(self._server, self._task)
            return
        if self._socket is not None:
            asyncio.get_running_loop().remove_reader(self._socket.fileno())
            self._socket.close()
            self._socket = None


def new_token() -> str:
    return secrets.token_urlsafe(32)
