"""An offered task over the HTTP front belongs to its host, not to the session that made it: the same host (same
client name) polls, fetches and cancels it from a new session while it still runs; another host never sees it."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import httpx2
import pytest
from front_tools import ACCEPT, Front, listening_wrapper, rpc

from mcpwatch.store import EventReader

pytestmark = pytest.mark.anyio
NOOP = [sys.executable, "-m", "mcpwatch.bench.noop_server"]
TASKS = {"tasks": {"list": {}, "cancel": {}, "requests": {}}}


@pytest.fixture
def anyio_backend():
    return "asyncio"


class TaskHost:
    """A 2025-11-25 host with tasks, on its own HTTP session."""

    def __init__(self, http: httpx2.AsyncClient, front: Front, name: str) -> None:
        self.http, self.front, self.name = http, front, name
        self.headers = {**ACCEPT, "MCP-Protocol-Version": "2025-11-25"}
        self._next = 0

    async def open(self) -> TaskHost:
        init = {"protocolVersion": "2025-11-25", "capabilities": TASKS, "clientInfo": {"name": self.name}}
        opened = await self.http.post(self.front.url, json=rpc(0, "initialize", init), headers=self.headers)
        assert opened.status_code == 200, opened.text
        self.headers["Mcp-Session-Id"] = opened.headers["mcp-session-id"]
        await self.notify("notifications/initialized")
        return self

    async def notify(self, method: str, params: dict[str, Any] | None = None) -> None:
        note: dict[str, Any] = {"jsonrpc": "2.0", "method": method, **({"params": params} if params else {})}
        assert (await self.http.post(self.front.url, json=note, headers=self.headers)).status_code == 202

    async def call(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        self._next += 1
        reply = await self.http.post(self.front.url, json=rpc(self._next, method, params), headers=self.headers)
        assert reply.status_code == 200, reply.text
        return reply.json()


async def test_a_running_offered_task_is_seen_by_its_host_from_a_new_session_only(tmp_path: Path) -> None:
    config = '[tasks]\noffer = ["slow"]\npoll_ms = 100\n'
    wrapper = listening_wrapper(tmp_path, config=config, upstream=NOOP)
    async with wrapper as front, httpx2.AsyncClient(timeout=30) as http:
        first = await TaskHost(http, front, "vsc").open()
        call = {"name": "slow", "arguments": {"seconds": 60}, "task": {"ttl": 600000}}
        task_id = (await first.call("tools/call", call))["result"]["task"]["taskId"]
        again = await TaskHost(http, front, "vsc").open()  # the same host, reconnected
        stranger = await TaskHost(http, front, "someone-else").open()

        assert (await again.call("tasks/get", {"taskId": task_id}))["result"]["status"] == "working"
        listed = (await again.call("tasks/list", {}))["result"]["tasks"]
        assert [t["taskId"] for t in listed] == [task_id]
        foreign = await stranger.call("tasks/get", {"taskId": task_id})
        assert foreign["error"]["message"] == f"no task {task_id!r} (unknown, expired, or another host's)"
        assert (await stranger.call("tasks/list", {}))["result"]["tasks"] == []
        assert "error" in await stranger.call("tasks/cancel", {"taskId": task_id})

        cancelled = await again.call("tasks/cancel", {"taskId": task_id})  # cancelled from the new session
        assert cancelled["result"]["status"] == "cancelled"
        assert (await first.call("tasks/get", {"taskId": task_id}))["result"]["status"] == "cancelled"
    with EventReader(front.log) as reader:
        (session,) = reader.sessions()
        ends = [e.data for e in reader.events(session.id, kinds=["request_end"]) if e.tool == "slow"]
    assert [e["outcome"] for e in ends] == ["cancelled"]  # the call upstream was cancelled, not left running


async def test_a_tool_cut_on_one_http_session_is_offered_to_the_next_session(tmp_path: Path) -> None:
    wrapper = listening_wrapper(tmp_path, "--deadline", "1", config="[tasks]\noffer_slow = true\n", upstream=NOOP)
    async with wrapper as front, httpx2.AsyncClient(timeout=30) as http:
        first = await TaskHost(http, front, "vsc").open()
        cut = await first.call("tools/call", {"name": "slow", "arguments": {"seconds": 3}})
        assert "result" in cut  # the partial answer at the 1 s budget
        later = await TaskHost(http, front, "another-host").open()  # its own core and upstream: the offer is shared
        tools = (await later.call("tools/list", {}))["result"]["tools"]
        assert next(t for t in tools if t["name"] == "slow")["execution"] == {"taskSupport": "optional"}
        call = {"name": "slow", "arguments": {"seconds": 2}, "task": {"ttl": 60000}}
        task_id = (await later.call("tools/call", call))["result"]["task"]["taskId"]
        done = await later.call("tasks/result", {"taskId": task_id})  # blocks until the task ends, past the budget
        assert done["result"]["content"] == [{"type": "text", "text": "done"}]
