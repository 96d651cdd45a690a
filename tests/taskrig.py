"""A wrapper core on a manual clock between a recording host and a recording upstream: the in-process tier.

`CoreRig` is the core alone (the deadline tests); `TaskRig` adds helpers for the MCP Tasks frames (the host's frames
go in with `request`, the upstream's with `answer` and `notify`); `RawRig` puts `RawUpstream`, an in-memory double
of `tests/fixtures/raw_server.py`, behind the core, so a test written against the real server over pipes runs here
with the same tools and exact times. What each side was sent, and the events, are read back."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable, Iterator, Mapping
from dataclasses import replace
from typing import Any

from mcpwatch.clock import ManualClock
from mcpwatch.config import DeadlineSettings, Settings
from mcpwatch.events import Event, UpstreamState
from mcpwatch.operator import UpstreamDetail
from mcpwatch.reliability.deadline import DeadlinePolicy
from mcpwatch.reliability.statesync import StateSync
from mcpwatch.testing.scheduler import ManualScheduler
from mcpwatch.wire import DEADLINE_META
from mcpwatch.wrapper.calls.pending import RawSend
from mcpwatch.wrapper.calls.recorder import Recorder
from mcpwatch.wrapper.core.pump import WrapperCore


class Host:
    send_raw: RawSend | None = None  # takes messages only (a subclass may take frames, as the fronts do)

    def __init__(self, connection: str | None = "stdio", key_prefix: str = "") -> None:
        self.sent: list[dict[str, Any]] = []
        self.connection = connection
        self.key_prefix = key_prefix  # an HTTP front's session names its requests "<session>/<host id>"

    def send(self, message: dict[str, Any]) -> bool | None:
        """Never False: a fake host takes every message (HostLink.send)."""
        self.sent.append(message)
        return None


class Upstream:
    kind = "fake"
    target = "fake upstream"

    def __init__(self) -> None:
        self.sent: list[dict[str, Any]] = []

    def send(self, message: dict[str, Any]) -> str:
        self.sent.append(message)
        return "sent"

    def describe(self) -> UpstreamDetail:
        return {"unsent_bytes": 0}

    def pause_reading(self) -> None:
        """Backpressure from the hosts: a fake upstream has nothing to stop reading."""

    def resume_reading(self) -> None:
        """The hosts caught up: nothing to resume either."""


class CoreRig:
    """A core on a manual clock (its timers and its event times agree) between a recording host and upstream."""

    def __init__(
        self,
        loop: asyncio.AbstractEventLoop,
        host_timeout_s: float = 3.0,
        margin_s: float = 1.0,
        *,
        base: Settings | None = None,
        front: str = "stdio",
        environ: Mapping[str, str] | None = None,
        trace_requests: bool = False,
        **settings: Any,
    ) -> None:
        """`base`: whole settings (as `mcpwatch.toml` gives them) instead of the host timeout and margin;
        `front`: the kind of front the hosts use; `environ`: the variables the deadline policy reads;
        `trace_requests`: as with OpenTelemetry export on (each forwarded request carries the wrapper's span)."""
        if base is None:
            base = replace(Settings(), deadline=DeadlineSettings(host_timeout_s=host_timeout_s, margin_s=margin_s))
        self.settings = replace(base, **settings)
        self.scheduler = ManualScheduler(ManualClock())
        self.recorder = Recorder("manual", None, clock=self.scheduler.clock)
        self.core = WrapperCore(
            settings=self.settings,
            deadline=DeadlinePolicy(self.settings.deadline, environ=dict(environ or {})),
            recorder=self.recorder,
            state_sync=state_sync(self.settings),
            loop=loop,
            scheduler=self.scheduler,
            front=front,
            trace_requests=trace_requests,
        )
        self.host = Host()
        self.upstream = self.make_upstream()
        self.core.attach_upstream(self.upstream)
        self.core.attach_link(self.host)

    def make_upstream(self) -> Upstream:
        return Upstream()


def state_sync(settings: Settings) -> StateSync | None:
    """State Sync as a wrapper builds it from its settings (none when no policy and no default is set)."""
    if not settings.state_sync.enabled:
        return None
    return StateSync(list(settings.state_sync.policies), settings.state_sync.default_cache_control)


class TaskRig(CoreRig):
    """A core whose upstream is ready at once, with helpers for the tasks' frames."""

    def __init__(
        self, loop: asyncio.AbstractEventLoop, host_timeout_s: float = 3.0, margin_s: float = 1.0, **settings: Any
    ) -> None:
        super().__init__(loop, host_timeout_s, margin_s, **settings)
        self.core.session.set_state(UpstreamState.READY)
        self.answered: set[Any] = set()

    def request(self, request_id: Any, method: str, params: dict[str, Any] | None = None, host: Any = None) -> int:
        """A host request; returns the id the upstream saw it under (None when it never reached the upstream)."""
        before = len(self.upstream.sent)
        message: dict[str, Any] = {"jsonrpc": "2.0", "id": request_id, "method": method}
        if params is not None:
            message["params"] = params
        self.core.host_message(host or self.host, message)
        sent = [m for m in self.upstream.sent[before:] if m.get("method") == method]
        return sent[-1]["id"] if sent else None  # type: ignore[return-value]

    def answer(self, up_id: Any, result: Any = None, error: Any = None) -> None:
        self.answered.add(up_id)
        message: dict[str, Any] = {"jsonrpc": "2.0", "id": up_id}
        message.update({"error": error} if error is not None else {"result": result})
        self.core.upstream_message(message)

    def notify(self, method: str, params: dict[str, Any]) -> None:
        self.core.upstream_message({"jsonrpc": "2.0", "method": method, "params": params})

    def replies(self, host: Any = None) -> list[dict[str, Any]]:
        return [m for m in (host or self.host).sent if "id" in m and "method" not in m]

    def events(self, *kinds: str) -> list[Event]:
        return [e for e in self.recorder.since(0, 100_000) if not kinds or e.kind in kinds]

    def upstream_methods(self) -> list[str]:
        return [m.get("method", "<response>") for m in self.upstream.sent]


class RawUpstream(Upstream):
    """In memory, the tools of `tests/fixtures/raw_server.py` on the rig's manual clock: `echo` (its arguments, the
    stamped `deadline_ms` and the progress token it saw), `noop`, `sleep(seconds, steps)` (a progress notification
    per step when the call has a token; it ignores cancellation and answers late), `hang` (never answers),
    `tasks.update(fail)` and `tasks.list` (for State Sync).
    Answers go back through `deliver` from a timer, never from inside `send` (as they would from a real pipe);
    every cancellation received is kept in `cancelled`."""

    TOOLS = ("echo", "noop", "sleep", "hang", "tasks.update", "tasks.list")

    def __init__(self, scheduler: ManualScheduler, deliver: Callable[[dict[str, Any]], None]) -> None:
        super().__init__()
        self.scheduler = scheduler
        self.deliver = deliver
        self.cancelled: list[Any] = []

    def send(self, message: dict[str, Any]) -> str:
        self.sent.append(message)
        method, request_id = message.get("method"), message.get("id")
        if method == "notifications/cancelled":
            self.cancelled.append(message["params"].get("requestId"))
        elif method == "initialize":
            version = message["params"].get("protocolVersion", "2025-06-18")
            info = {"name": "raw-server", "version": "1.0"}
            self._later(
                0, _result(request_id, {"protocolVersion": version, "capabilities": {"tools": {}}, "serverInfo": info})
            )
        elif method == "tools/list":
            tools = [
                {"name": n, "description": f"The {n} tool.", "inputSchema": {"type": "object"}} for n in self.TOOLS
            ]
            self._later(0, _result(request_id, {"tools": tools}))
        elif method == "tools/call":
            self._call(request_id, message.get("params") or {})
        elif method == "ping":
            self._later(0, _result(request_id, {}))
        elif request_id is not None and method is not None:
            self._later(
                0, {"jsonrpc": "2.0", "id": request_id, "error": {"code": -32601, "message": "Method not found"}}
            )
        return "sent"

    def _call(self, request_id: Any, params: dict[str, Any]) -> None:
        name, args = params.get("name"), params.get("arguments") or {}
        meta = params.get("_meta") or {}
        token, deadline_ms = meta.get("progressToken"), meta.get(DEADLINE_META)
        if name == "echo":
            self._later(
                0, _text(request_id, json.dumps({"args": args, "deadline_ms": deadline_ms, "token_seen": token}))
            )
        elif name == "noop":
            self._later(0, _text(request_id, "ok"))
        elif name == "sleep":
            seconds, steps = float(args.get("seconds", 1)), int(args.get("steps", 1))
            for step in range(1, steps + 1):
                if token is not None:
                    progress = {"progressToken": token, "progress": step, "total": steps, "message": f"step {step}"}
                    notification = {"jsonrpc": "2.0", "method": "notifications/progress", "params": progress}
                    self._later(seconds * step / steps, notification)
            self._later(seconds, _text(request_id, f"slept {seconds}"))
        elif name == "tasks.update":
            self._later(0, _text(request_id, json.dumps({"ok": True}), is_error=bool(args.get("fail"))))
        elif name == "tasks.list":
            self._later(0, _text(request_id, "[]"))
        elif name != "hang":
            self._later(0, _text(request_id, f"Unknown tool: {name}", is_error=True))

    def _later(self, delay: float, message: dict[str, Any]) -> None:
        self.scheduler.call_later(delay, self.deliver, message)


def _result(request_id: Any, result: dict[str, Any]) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": request_id, "result": result}


def _text(request_id: Any, text: str, is_error: bool = False) -> dict[str, Any]:
    return _result(request_id, {"content": [{"type": "text", "text": text}], "isError": is_error})


class RawRig(CoreRig):
    """A core in front of `RawUpstream`, ready at once; `call` sends a host's request and lets due answers in."""

    upstream: RawUpstream

    def __init__(self, loop: asyncio.AbstractEventLoop, *args: Any, **kwargs: Any) -> None:
        super().__init__(loop, *args, **kwargs)
        self.core.session.set_state(UpstreamState.READY)
        self.core.session.flush()
        self._next_id = 0

    def make_upstream(self) -> Upstream:
        return RawUpstream(self.scheduler, lambda message: self.core.upstream_message(message))

    def send(
        self, method: str, params: dict[str, Any] | None = None, host: Host | None = None, request_id: Any = None
    ) -> Any:
        """A host's request (answers due now are let in); returns its id."""
        if request_id is None:
            self._next_id += 1
            request_id = self._next_id
        message: dict[str, Any] = {"jsonrpc": "2.0", "id": request_id, "method": method}
        if params is not None:
            message["params"] = params
        self.core.host_message(host or self.host, message)
        self.scheduler.advance(0)
        return request_id

    def call(self, method: str, params: dict[str, Any] | None = None, host: Host | None = None) -> dict[str, Any]:
        """A host's request that the upstream answers at once: its reply."""
        request_id = self.send(method, params, host)
        return self.reply_to(request_id, host)

    def tool(
        self, name: str, arguments: dict[str, Any] | None = None, host: Host | None = None, **params: Any
    ) -> dict[str, Any]:
        return self.call("tools/call", {"name": name, "arguments": arguments or {}, **params}, host)

    def initialize(self, client_name: str, host: Host | None = None, **client: Any) -> dict[str, Any]:
        init = {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": client_name, **client}}
        reply = self.call("initialize", init, host)
        self.core.host_message(host or self.host, {"jsonrpc": "2.0", "method": "notifications/initialized"})
        return reply

    def reply_to(self, request_id: Any, host: Host | None = None) -> dict[str, Any]:
        [reply] = [m for m in (host or self.host).sent if m.get("id") == request_id and "method" not in m]
        return reply

    def notifications(self, host: Host | None = None) -> list[dict[str, Any]]:
        return [m for m in (host or self.host).sent if "method" in m and "id" not in m]

    def events(self, *kinds: str) -> list[Event]:
        return [e for e in self.recorder.since(0, 100_000) if not kinds or e.kind in kinds]


def task_2025(task_id: str, status: str = "working", message: str | None = None, **extra: Any) -> dict[str, Any]:
    task = {
        "taskId": task_id,
        "status": status,
        "createdAt": "2026-11-25T10:00:00Z",
        "lastUpdatedAt": "2026-11-25T10:00:00Z",
        "ttl": 300000,
        "pollInterval": 1000,
        **extra,
    }
    if message is not None:
        task["statusMessage"] = message
    return task


def closing_loop() -> Iterator[asyncio.AbstractEventLoop]:
    """An event loop for one test; the jobs the wrapper left waiting are cancelled before it closes."""
    loop = asyncio.new_event_loop()
    asyncio.set_event_loop(loop)
    yield loop
    jobs = asyncio.all_tasks(loop)
    for job in jobs:
        job.cancel()
    loop.run_until_complete(asyncio.gather(*jobs, return_exceptions=True))
    asyncio.set_event_loop(None)
    loop.close()


def spin(loop: asyncio.AbstractEventLoop) -> None:
    """Let the core's own requests go out (and their answers come in)."""
    for _ in range(5):
        loop.run_until_complete(asyncio.sleep(0))
