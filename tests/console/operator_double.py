"""A contract test double of the wrapper's operator endpoint (DESIGN.md "Operator endpoint").

It implements the contract's tools with MCPServer over real loopback HTTP (uvicorn on 127.0.0.1, in a thread) and
checks the bearer token, so the console's client and app are tested against the wire they will meet. It holds a
small fake wrapper state; tests push events into it and read back the operator calls it received. It is not the
wrapper: tests against the real one live beside these and run when `mcpwatch wrap` exists.
"""

from __future__ import annotations

import math
import os
import threading
import time
from dataclasses import asdict
from pathlib import Path
from typing import Any

import anyio
import uvicorn
from starlette.responses import JSONResponse
from starlette.types import ASGIApp, Receive, Scope, Send

from mcpwatch import registry
from mcpwatch.events import Event, Kind
from mcpwatch.reliability.seconds import ABSURD_S
from mcpwatch.testing.sample import COUNCIL_TIERS, EventFactory, deadline_block, session_start

from waiting import patience


class _BearerOnly:
    """Refuses any request without the right `Authorization: Bearer` header, as the wrapper does."""

    def __init__(self, app: ASGIApp, token: str) -> None:
        self.app, self.token = app, token

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and dict(scope["headers"]).get(b"authorization") != f"Bearer {self.token}".encode():
            await JSONResponse({"error": "unauthorized"}, status_code=401)(scope, receive, send)
            return
        await self.app(scope, receive, send)


class OperatorContractDouble:
    """A fake wrapper's operator endpoint: `start()`, push events with `emit`, inspect `calls`, `stop()`."""

    def __init__(
        self,
        name: str = "council",
        token: str = "test-token",
        *,
        pid: int | None = None,
        session_id: str = "double-session",
        origin_ts: float | None = None,
        with_session_start: bool = True,
    ) -> None:
        self.name = name
        self.token = token
        self.pid = pid if pid is not None else os.getpid()
        self.session_id = session_id
        self.factory = EventFactory(session_id, origin_ts if origin_ts is not None else time.time())
        self.deadline = deadline_block()
        self.events: list[Event] = []
        self.calls: list[tuple[str, dict[str, Any]]] = []
        self.in_flight: dict[str, dict[str, Any]] = {}
        self._lock = threading.Lock()
        self._server: uvicorn.Server | None = None
        self._thread: threading.Thread | None = None
        self.port: int | None = None
        if with_session_start:
            self.emit_event(session_start(self.factory, 0.0, name=name))

    # -- fake wrapper state ----------------------------------------------------------------------------------

    def now_mono(self) -> float:
        return time.time() - self.factory.origin_ts

    def emit(self, kind: str, mono: float | None = None, **kw: Any) -> Event:
        event = self.factory.make(kind, self.now_mono() if mono is None else mono, **kw)
        self.emit_event(event)
        return event

    def emit_event(self, event: Event) -> None:
        with self._lock:
            self.events.append(event)
            if event.kind == Kind.REQUEST_START and event.request_id:
                self.in_flight[event.request_id] = {
                    "request_id": event.request_id,
                    "method": event.data.get("method", "tools/call"),
                    "tool": event.tool,
                    "start": event.mono,
                    "budget_s": event.data.get("budget_s"),
                }
            elif event.kind == Kind.REQUEST_END and event.request_id:
                self.in_flight.pop(event.request_id, None)

    def status(self) -> dict[str, Any]:
        now = self.now_mono()
        return {
            "wrapper": {
                "name": self.name,
                "pid": self.pid,
                "version": "0.1.0",
                "upstream": {"kind": "stdio", "target": "mcpwatch council", "state": "ready", "generation": 1},
                "host": {"name": "double-host", "version": "1"},
            },
            "deadline": dict(self.deadline),
            "tombstones": {"count": 0, "ttl_s": 155.0, "terms": {}, "late_dropped": 0, "items": []},
            "in_flight": [
                {**{k: v for k, v in r.items() if k != "start"}, "elapsed_s": now - r["start"]}
                for r in self.in_flight.values()
            ],
            "counters": {"requests": len(self.in_flight)},
            "state_sync": {"policies": 0, "overlaps": []},
            "log": {"path": "/dev/null", "session_id": self.session_id, "events_written": len(self.events)},
        }

    def _check_seconds(self, what: str, seconds: float | None, *, allow_zero: bool = True) -> float:
        if seconds is None or not math.isfinite(seconds):
            raise ValueError(f"{what} must be a finite number of seconds, got {seconds!r}")
        if seconds < 0 or (seconds == 0 and not allow_zero):
            raise ValueError(f"{what} must be {'>' if not allow_zero else '≥'} 0 seconds, got {seconds:g}")
        if seconds > ABSURD_S:
            raise ValueError(f"{what} of {seconds:g}s is absurd (at most {ABSURD_S:.0f}s)")
        return seconds

    def _change(self, key: str, new: Any) -> dict[str, Any]:
        old = self.deadline.get(key)
        if key == "margin_s":
            self.deadline = deadline_block(self.deadline["host_timeout_s"], new, self.deadline["override_s"])
        elif key == "host_timeout_s":
            self.deadline = deadline_block(new, self.deadline["margin_s"], self.deadline["override_s"])
        else:
            self.deadline = deadline_block(self.deadline["host_timeout_s"], self.deadline["margin_s"], new)
        self.emit(Kind.CONFIG_CHANGE, key=key, old=old, new=new, source="operator", deadline=dict(self.deadline))
        return dict(self.deadline)

    # -- the endpoint --------------------------------------------------------------------------------------------

    def _build_app(self) -> ASGIApp:
        from mcp.server import MCPServer
        from mcp.server.mcpserver.exceptions import ToolError

        mcp = MCPServer("mcpwatch-operator-double", log_level="WARNING")
        double = self

        def record(tool: str, **args: Any) -> None:
            double.calls.append((tool, args))

        def refuse(problem: Exception) -> ToolError:
            return ToolError(str(problem))

        @mcp.tool()
        def status() -> dict[str, Any]:
            record("status")
            return double.status()

        @mcp.tool()
        async def events(after: int = 0, limit: int = 1000, wait_ms: int = 0) -> dict[str, Any]:
            until = time.monotonic() + max(0, wait_ms) / 1000.0
            while True:
                with double._lock:
                    page = [e for e in double.events if e.seq > after][: max(1, limit)]
                if page or time.monotonic() >= until:
                    break
                await anyio.sleep(0.01)
            return {"events": [e.to_dict() for e in page], "next": page[-1].seq if page else after}

        @mcp.tool()
        def health_check() -> dict[str, Any]:
            record("health_check")
            result: dict[str, Any] = {"ok": True, "ping_ms": 1.5, "tool": "council_health_check", "error": None}
            result["result"] = {"tiers": COUNCIL_TIERS, "timeout_multiplier": 1.0}
            double.emit(Kind.HEALTH_CHECK, **result)
            return result

        @mcp.tool()
        def set_margin(seconds: float | None) -> dict[str, Any]:
            record("set_margin", seconds=seconds)
            try:
                return double._change("margin_s", double._check_seconds("margin", seconds))
            except ValueError as exc:
                raise refuse(exc) from None

        @mcp.tool()
        def set_host_timeout(seconds: float | None) -> dict[str, Any]:
            record("set_host_timeout", seconds=seconds)
            try:
                return double._change(
                    "host_timeout_s", double._check_seconds("host timeout", seconds, allow_zero=False)
                )
            except ValueError as exc:
                raise refuse(exc) from None

        @mcp.tool()
        def set_deadline(seconds: float | None = None) -> dict[str, Any]:
            record("set_deadline", seconds=seconds)
            try:
                value = None if seconds is None else double._check_seconds("deadline", seconds)
            except ValueError as exc:
                raise refuse(exc) from None
            return double._change("override_s", value)

        @mcp.tool()
        def cancel(request_id: str) -> dict[str, Any]:
            record("cancel", request_id=request_id)
            request = double.in_flight.get(request_id)
            if request is None:
                raise ToolError(f"no call {request_id} is in flight")
            up_id = f"u{request_id}"
            double.emit(Kind.TOMBSTONE_ADD, request_id=request_id, up_id=up_id, ttl_s=155.0, reason="operator_cancel")
            double.emit(
                Kind.REQUEST_END,
                request_id=request_id,
                tool=request["tool"],
                outcome="cancelled",
                duration_s=double.now_mono() - request["start"],
                error="cancelled by the operator",
            )
            return {"cancelled": request_id}

        return _BearerOnly(mcp.streamable_http_app(), self.token)

    @property
    def url(self) -> str:
        assert self.port is not None, "start() the double first"
        return f"http://127.0.0.1:{self.port}/mcp"

    def start(self, port: int = 0) -> OperatorContractDouble:
        config = uvicorn.Config(
            self._build_app(),
            host="127.0.0.1",
            port=port,
            log_level="warning",
            lifespan="on",
            timeout_graceful_shutdown=1,
        )
        self._server = uvicorn.Server(config)
        self._thread = threading.Thread(target=self._server.run, name=f"operator-double-{self.name}", daemon=True)
        self._thread.start()
        deadline = time.monotonic() + patience(10)
        while not self._server.started:
            if time.monotonic() > deadline or not self._thread.is_alive():
                raise RuntimeError("the operator double did not start")
            time.sleep(0.01)
        self.port = self._server.servers[0].sockets[0].getsockname()[1]
        return self

    def stop(self) -> None:
        if self._server is not None:
            self._server.should_exit = True
            self._server.force_exit = True
        if self._thread is not None:
            self._thread.join(timeout=10)
        self._server = self._thread = None

    def entry(self) -> registry.WrapperEntry:
        return registry.WrapperEntry(
            pid=self.pid,
            name=self.name,
            operator_url=self.url,
            token=self.token,
            log_path="/dev/null",
            session_id=self.session_id,
            upstream="mcpwatch council",
            started_at=self.factory.origin_ts,
        )

    def register(self, directory: Path | None = None) -> Path:
        return registry.register(self.entry(), directory)

    def entry_dict(self) -> dict[str, Any]:
        return asdict(self.entry())
