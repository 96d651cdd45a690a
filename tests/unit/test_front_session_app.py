"""The HTTP front's host sessions in process: its ASGI app with real cores, in-memory upstreams and a manual clock
(`test_front_scaling.py`'s rig). DELETE ends a session and stops its upstream, and a session whose request body is
still arriving is never the one reclaimed for a newcomer. What needs sockets and processes (an upstream process
stopped, a slow upload on a real connection) stays in `tests/integration/test_front_sessions.py`."""

from __future__ import annotations

import asyncio
import json
from typing import Any

from test_front_scaling import INIT, EchoUpstream, _front, _open, _post

from mcpwatch.wrapper.fronts.front_http import HttpFront

ACCEPT = [(b"host", b"127.0.0.1:1"), (b"accept", b"application/json, text/event-stream")]


def _scope(method: str, session: str, length: int = 0) -> dict[str, Any]:
    headers = [*ACCEPT, (b"content-type", b"application/json"), (b"content-length", str(length).encode())]
    headers.append((b"mcp-session-id", session.encode()))
    return {"type": "http", "method": method, "path": "/mcp", "headers": headers, "client": ("127.0.0.1", 5)}


async def _answer(front: HttpFront, scope: dict[str, Any], receive: Any) -> tuple[int, bytes]:
    status, body = 0, b""

    async def send(message: dict[str, Any]) -> None:
        nonlocal status, body
        if message["type"] == "http.response.start":
            status = message["status"]
        else:
            body += message.get("body", b"")

    await front.app(scope, receive, send)
    return status, body


async def _delete(front: HttpFront, session: str) -> int:
    async def receive() -> dict[str, Any]:
        return {"type": "http.request", "body": b"", "more_body": False}

    status, _ = await _answer(front, _scope("DELETE", session), receive)
    return status


def _ping(request_id: str) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": request_id, "method": "ping"}


def test_delete_ends_a_session_and_its_upstream_and_makes_room() -> None:
    asyncio.run(_deleting())


async def _deleting() -> None:
    front = _front(asyncio.get_running_loop(), max_sessions=2)
    first, second = await _open(front), await _open(front)
    upstream = front.pool.sessions[first].upstream
    assert isinstance(upstream, EchoUpstream) and not upstream.closed.is_set()
    assert await _delete(front, first) == 200
    assert upstream.closed.is_set() and list(front.pool.sessions) == [second]
    assert (await _post(front, _ping("late"), first))[0] == 404
    assert await _delete(front, first) == 404
    third = await _open(front)  # room again, without reclaiming the other
    assert sorted(front.pool.sessions) == sorted([second, third]) and front.pool.reclaimed == 0
    status, _, body = await _post(front, _ping("still"), second)
    assert status == 200 and json.loads(body)["id"] == "still"
    await front.pool.close("the test is over")


def test_a_session_whose_request_is_still_arriving_is_never_reclaimed() -> None:
    asyncio.run(_uploading())


async def _uploading() -> None:
    """At the cap, the session seen longest ago is uploading a request: the newcomer takes the other (idle) one,
    and the upload, once whole, is answered, not 404."""
    front = _front(asyncio.get_running_loop(), max_sessions=2)
    now = [0.0]
    front.pool.clock = lambda: now[0]  # when the pool sees its hosts
    uploading = await _open(front)
    now[0] = 1.0
    idle = await _open(front)
    now[0] = 2.0
    body = json.dumps(_ping("slow")).encode()
    rest = asyncio.Event()
    parts = [
        {"type": "http.request", "body": body[: len(body) // 2], "more_body": True},
        {"type": "http.request", "body": body[len(body) // 2 :], "more_body": False},
    ]

    async def receive() -> dict[str, Any]:
        if len(parts) == 1:
            await rest.wait()
        if parts:
            return parts.pop(0)
        await asyncio.Event().wait()  # the host stays connected
        return {"type": "http.disconnect"}

    upload = asyncio.ensure_future(_answer(front, _scope("POST", uploading, len(body)), receive))
    while front.pool.sessions[uploading].receiving != 1:  # the front has the head and half the body
        await asyncio.sleep(0)
    now[0] = 3.0  # the idle host is seen after the upload began: the uploading one was seen longest ago
    assert (await _post(front, _ping("seen"), idle))[0] == 200
    assert front.pool.sessions[uploading].last_seen < front.pool.sessions[idle].last_seen
    newcomer = {"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": INIT}
    status, headers, _ = await _post(front, newcomer)
    assert status == 200 and headers["mcp-session-id"] not in (uploading, idle)
    assert idle not in front.pool.sessions and uploading in front.pool.sessions  # the idle one made room
    rest.set()
    status, answer = await upload
    assert status == 200 and json.loads(answer)["id"] == "slow" and "result" in json.loads(answer)
    assert (await _post(front, _ping("after"), idle))[0] == 404
    assert (await _post(front, _ping("again"), uploading))[0] == 200
    await front.pool.close("the test is over")
