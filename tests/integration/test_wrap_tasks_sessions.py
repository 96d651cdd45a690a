"""An offered task over the HTTP front belongs to the host session that made it, never to a client name: a second
session with the same name, or a sessionless request naming it, never reaches it; the host resumes it by id from
a new session once its old one has ended; a wrapper of another server sharing the log, or one holding another
token, never answers it."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import httpx2
import pytest
from front_tools import ACCEPT, Front, listening_wrapper, rpc

from mcpwatch.store import EventReader

from wraptools import TASK_SERVER

pytestmark = pytest.mark.anyio
TASKS: dict[str, Any] = {"tasks": {"list": {}, "cancel": {}, "requests": {}}}


@pytest.fixture
def anyio_backend():
    return "asyncio"


class TaskHost:
    """A 2025-11-25 host with tasks, on its own HTTP session."""

    def __init__(self, http: httpx2.AsyncClient, front: Front, name: str) -> None:
        self.http, self.front, self.name = http, front, name
        self.headers = {**ACCEPT, "MCP-Protocol-Version": "2025-11-25", **front.headers}
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


def unknown(task_id: str) -> str:
    return f"no task {task_id!r} (unknown, expired, or another host's)"


async def sessionless(http: httpx2.AsyncClient, front: Front, method: str, params: dict[str, Any]) -> dict[str, Any]:
    """A 2026-era request with no session, naming the host's client (any local process can send it)."""
    meta = {
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientInfo": {"name": "Visual Studio Code", "version": "1"},
        "io.modelcontextprotocol/clientCapabilities": {"extensions": {"io.modelcontextprotocol/tasks": {}}},
    }
    headers = {**ACCEPT, "MCP-Protocol-Version": "2026-07-28"}
    reply = await http.post(front.url, json=rpc("s", method, {**params, "_meta": meta}), headers=headers)
    assert reply.status_code == 200, reply.text
    return reply.json()


async def test_two_hosts_with_the_same_client_name_never_reach_each_others_tasks(tmp_path: Path) -> None:
    """Two windows of one host (or a local process copying its name) on one front: each session's tasks are its
        own; a sessionless request naming the host reaches none; the host resumes a finished task by id once its session
    has ended (a running task's call ends with its session: each session has its own upstream)."""
    config = '[tasks]\noffer = ["slow"]\npoll_ms = 100\n'
    wrapper = listening_wrapper(tmp_path, config=config, upstream=TASK_SERVER)
    async with wrapper as front, httpx2.AsyncClient(timeout=30) as http:
        first = await TaskHost(http, front, "Visual Studio Code").open()
        call = {"name": "slow", "arguments": {"seconds": 60}, "task": {"ttl": 600000}}
        task_id = (await first.call("tools/call", call))["result"]["task"]["taskId"]
        twin = await TaskHost(http, front, "Visual Studio Code").open()

        assert (await twin.call("tasks/list", {}))["result"]["tasks"] == []
        for method in ("tasks/get", "tasks/result", "tasks/cancel"):
            assert (await twin.call(method, {"taskId": task_id}))["error"]["message"] == unknown(task_id)
        for method in ("tasks/get", "tasks/cancel"):
            answer = await sessionless(http, front, method, {"taskId": task_id})
            assert answer["error"]["message"] == unknown(task_id)
        assert (await first.call("tasks/get", {"taskId": task_id}))["result"]["status"] == "working"
        listed = (await first.call("tasks/list", {}))["result"]["tasks"]
        assert [t["taskId"] for t in listed] == [task_id]
        cancelled = await first.call("tasks/cancel", {"taskId": task_id})
        assert cancelled["result"]["status"] == "cancelled"

        short = {"name": "slow", "arguments": {"seconds": 0.2}, "task": {"ttl": 600000}}
        done_id = (await first.call("tools/call", short))["result"]["task"]["taskId"]
        assert (await first.call("tasks/result", {"taskId": done_id}))["result"]["content"][0]["text"] == "done"
        ended = await http.delete(front.url, headers=first.headers)  # the first window closes its session
        assert ended.status_code in (200, 204), ended.text
        again = await TaskHost(http, front, "Visual Studio Code").open()  # … and comes back, holding the id
        resumed = await again.call("tasks/result", {"taskId": done_id})
        assert resumed["result"]["content"][0]["text"] == "done"
        assert [t["taskId"] for t in (await again.call("tasks/list", {}))["result"]["tasks"]] == [done_id]
        got = await twin.call("tasks/get", {"taskId": done_id})
        assert "error" in got, (got, front.stderr)
        assert got["error"]["message"] == unknown(done_id)
    with EventReader(front.log) as reader:
        (session,) = reader.sessions()
        ends = [e.data for e in reader.events(session.id, kinds=["request_end"]) if e.tool == "slow"]
    assert [e["outcome"] for e in ends] == ["cancelled", "ok"]  # the first cancelled upstream, not left running


async def test_a_kept_task_is_answered_only_by_a_wrapper_of_its_server_holding_its_token(tmp_path: Path) -> None:
    """A finished task's result, kept in the log, is served by a wrapper of the same server started again with the
    same `--token-file`, and never by one of another server sharing the log (the id alone used to be enough) nor
    by one started with another token (tasks belong to the token's holders too)."""
    config = '[tasks]\noffer = ["slow"]\npoll_ms = 100\n'
    call = {"name": "slow", "arguments": {"seconds": 0.2}, "task": {"ttl": 600000}}
    another = [sys.executable, "-u", *TASK_SERVER[1:]]  # another command: another server

    def token(text: str) -> list[str]:
        path = tmp_path / f"token-{text}"
        path.write_text(f"{text}-token-of-enough-length\n")
        path.chmod(0o600)
        return ["--token-file", str(path)]

    async def served(text: str, upstream: list[str]) -> Any:
        wrapper = listening_wrapper(tmp_path, *token(text), config=config, upstream=upstream)
        front = await wrapper.__aenter__()
        front.headers = {"Authorization": f"Bearer {text}-token-of-enough-length"}
        return wrapper, front

    wrapper, front = await served("first", TASK_SERVER)
    try:
        async with httpx2.AsyncClient(timeout=30) as http:
            host = await TaskHost(http, front, "vsc").open()
            task_id = (await host.call("tools/call", call))["result"]["task"]["taskId"]
            assert (await host.call("tasks/result", {"taskId": task_id}))["result"]["content"][0]["text"] == "done"
    finally:
        await wrapper.__aexit__(None, None, None)
    for text, upstream, kept in (
        ("first", another, False),
        ("other", TASK_SERVER, False),
        ("first", TASK_SERVER, True),
    ):
        wrapper, front = await served(text, upstream)
        try:
            async with httpx2.AsyncClient(timeout=30) as http:
                host = await TaskHost(http, front, "vsc").open()
                answer = await host.call("tasks/result", {"taskId": task_id})
                if kept:
                    assert answer["result"]["content"][0]["text"] == "done", answer
                else:
                    assert answer["error"]["message"] == unknown(task_id), (text, upstream, answer)
        finally:
            await wrapper.__aexit__(None, None, None)


async def test_a_tool_cut_on_one_http_session_is_offered_to_the_next_session(tmp_path: Path) -> None:
    wrapper = listening_wrapper(
        tmp_path, "--deadline", "1", config="[tasks]\noffer_slow = true\n", upstream=TASK_SERVER
    )
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
