"""The HTTP front's work per request does not grow with the number of host sessions open.

A front with 64 hosts must answer each call with the same work as one with 4: no scan over the sessions (the idle
check, the reclaim order, the stream lookup) and nothing else that grows with the session table on a request's
path. Counted, not timed: the interpreter's function calls and lines for one `tools/call` through the ASGI app, its
core and an in-memory upstream, with 4 and with 64 sessions open. A load on the machine changes no count.
"""

from __future__ import annotations

import asyncio
import json
import sys
from collections.abc import Awaitable, Callable
from functools import partial
from types import FrameType
from typing import Any

from mcpwatch.clock import ManualClock
from mcpwatch.config import Settings
from mcpwatch.operator import UpstreamDetail
from mcpwatch.reliability.deadline import DeadlinePolicy
from mcpwatch.testing.scheduler import ManualScheduler
from mcpwatch.wrapper.calls.recorder import Recorder
from mcpwatch.wrapper.core.pump import WrapperCore
from mcpwatch.wrapper.fronts.front_http import HttpFront
from mcpwatch.wrapper.fronts.front_sessions import SHARED_TAG, SessionPool

INIT = {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}
SERVER = {"protocolVersion": "2025-11-25", "capabilities": {"tools": {}}, "serverInfo": {"name": "e", "version": "1"}}


class EchoUpstream:
    """An upstream in memory: answers every request on the next loop pass (a noop result, or its handshake)."""

    kind = "fake"
    target = "echo"

    def __init__(self, core: WrapperCore) -> None:
        self.core = core
        self.closed = asyncio.Event()

    async def run(self) -> None:
        self.core.upstream_connecting()
        await self.core.upstream_started()
        await self.closed.wait()

    async def close(self) -> None:
        self.closed.set()

    def send(self, message: dict[str, Any]) -> str:
        if "id" in message and "method" in message:
            result = SERVER if message["method"] == "initialize" else {"content": []}
            answer = {"jsonrpc": "2.0", "id": message["id"], "result": result}
            asyncio.get_running_loop().call_soon(self.core.upstream_message, answer)
        return "sent"

    def describe(self) -> UpstreamDetail:
        return {"unsent_bytes": 0}

    def pause_reading(self) -> None:
        """Nothing to stop reading: its answers are already in memory."""

    def resume_reading(self) -> None:
        """Nothing to resume either."""


def _front(loop: asyncio.AbstractEventLoop, max_sessions: int) -> HttpFront:
    settings = Settings()
    scheduler = ManualScheduler(ManualClock())
    recorder = Recorder("manual", None, clock=scheduler.clock)
    deadline = DeadlinePolicy(settings.deadline, environ={})

    def make_core(tag: str) -> WrapperCore:
        return WrapperCore(
            settings=settings, deadline=deadline, recorder=recorder, loop=loop, scheduler=scheduler, front="http"
        )

    pool = SessionPool(
        make_core=make_core,
        make_upstream=EchoUpstream,
        shared_core=make_core(SHARED_TAG),
        max_sessions=max_sessions,
        idle_s=600.0,
        clock=scheduler.time,
    )
    return HttpFront(pool, "http://127.0.0.1:1/mcp")


async def _post(front: HttpFront, message: dict[str, Any], session: str = "") -> tuple[int, dict[str, str], bytes]:
    """One POST through the ASGI app; its status, headers and body."""
    body = json.dumps(message).encode()
    headers = [(b"host", b"127.0.0.1:1"), (b"content-type", b"application/json")]
    headers += [(b"accept", b"application/json, text/event-stream"), (b"content-length", str(len(body)).encode())]
    if session:
        headers.append((b"mcp-session-id", session.encode()))
    scope = {"type": "http", "method": "POST", "path": "/mcp", "headers": headers, "client": ("127.0.0.1", 5)}
    given = [False]
    never: asyncio.Future[None] = asyncio.get_running_loop().create_future()

    async def receive() -> dict[str, Any]:
        if not given[0]:
            given[0] = True
            return {"type": "http.request", "body": body, "more_body": False}
        await never  # the host stays connected
        return {"type": "http.disconnect"}

    status, answer_headers, answer = 0, {}, b""

    async def send(message: dict[str, Any]) -> None:
        nonlocal status, answer_headers, answer
        if message["type"] == "http.response.start":
            status = message["status"]
            answer_headers = {k.decode(): v.decode() for k, v in message["headers"]}
        else:
            answer += message.get("body", b"")

    await front.app(scope, receive, send)
    return status, answer_headers, answer


async def _open(front: HttpFront) -> str:
    status, headers, _ = await _post(front, {"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": INIT})
    assert status == 200, status
    session = headers["mcp-session-id"]
    await _post(front, {"jsonrpc": "2.0", "method": "notifications/initialized"}, session)
    return session


def _counted(run: Callable[[], Awaitable[Any]], loop: asyncio.AbstractEventLoop) -> tuple[int, Any]:
    """The interpreter's steps while `run` runs to its end on `loop`: function calls (Python and C) and Python lines
    executed (a loop over the sessions runs its line once per session, even in a comprehension), and its result."""
    count = [0]

    def profile(frame: FrameType, event: str, arg: Any) -> None:
        if event in ("call", "c_call"):
            count[0] += 1

    def trace(frame: FrameType, event: str, arg: Any) -> Any:
        if event == "line":
            count[0] += 1
        return trace

    sys.setprofile(profile)
    sys.settrace(trace)
    try:
        result = loop.run_until_complete(run())
    finally:
        sys.settrace(None)
        sys.setprofile(None)
    return count[0], result


def _calls_per_request(sessions: int) -> list[int]:
    """The interpreter's steps for each of three `tools/call`s on one session; the others open, each called once."""
    loop = asyncio.new_event_loop()
    try:
        front = _front(loop, max_sessions=sessions)
        ids = [loop.run_until_complete(_open(front)) for _ in range(sessions)]
        call = {"jsonrpc": "2.0", "method": "tools/call", "params": {"name": "noop", "arguments": {}}}
        for n, session in enumerate(ids):
            status, _, _ = loop.run_until_complete(_post(front, {**call, "id": n + 1}, session))
            assert status == 200
        counts = []
        for request_id in (1000, 1001, 1002):
            message = {**call, "id": request_id}
            count, (status, _, body) = _counted(partial(_post, front, message, ids[0]), loop)
            assert status == 200 and json.loads(body)["id"] == request_id
            counts.append(count)
        assert len(front.pool.sessions) == sessions
        loop.run_until_complete(front.pool.close("the test is over"))
        return counts
    finally:
        loop.close()


def test_a_call_costs_the_same_work_with_64_hosts_as_with_4() -> None:
    with_4, with_64 = _calls_per_request(4), _calls_per_request(64)
    assert min(with_4) > 100  # the profile saw the request's path
    assert min(with_64) == min(with_4), (with_4, with_64)
