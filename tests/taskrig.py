"""A wrapper core on a manual clock between a recording host and a recording upstream, for the MCP Tasks tests:
the host's frames go in with `request`, the upstream's with `answer` and `notify`; what each side was sent, and
the events, are read back. `CoreRig`, the same core without the tasks helpers, serves the core's deadline tests."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from dataclasses import replace
from typing import Any

from mcpwatch.clock import ManualClock
from mcpwatch.config import DeadlineSettings, Settings
from mcpwatch.events import Event, UpstreamState
from mcpwatch.operator import UpstreamDetail
from mcpwatch.reliability.deadline import DeadlinePolicy
from mcpwatch.testing.scheduler import ManualScheduler
from mcpwatch.wrapper.calls.recorder import Recorder
from mcpwatch.wrapper.core.pump import WrapperCore


class Host:
    def __init__(self, connection: str | None = "stdio", key_prefix: str = "") -> None:
        self.sent: list[dict[str, Any]] = []
        self.connection = connection
        self.key_prefix = key_prefix  # an HTTP front's session names its requests "<session>/<host id>"

    def send(self, message: dict[str, Any]) -> None:
        self.sent.append(message)


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
        self, loop: asyncio.AbstractEventLoop, host_timeout_s: float = 3.0, margin_s: float = 1.0, **settings: Any
    ) -> None:
        base = replace(Settings(), deadline=DeadlineSettings(host_timeout_s=host_timeout_s, margin_s=margin_s))
        self.settings = replace(base, **settings)
        self.scheduler = ManualScheduler(ManualClock())
        self.recorder = Recorder("manual", None, clock=self.scheduler.clock)
        self.core = WrapperCore(
            settings=self.settings,
            deadline=DeadlinePolicy(self.settings.deadline, environ={}),
            recorder=self.recorder,
            loop=loop,
            scheduler=self.scheduler,
        )
        self.host = Host()
        self.upstream = Upstream()
        self.core.attach_upstream(self.upstream)
        self.core.attach_link(self.host)


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
