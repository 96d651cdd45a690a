"""Every host session on the HTTP front has its own upstream process: capped by `[front] max_sessions`, ended by
DELETE or after `[front] session_idle_s` idle (its process with it), and one host's dying upstream leaves the other
hosts' sessions as they were."""

from __future__ import annotations

import asyncio
import os
import signal
import time
from pathlib import Path

import httpx2
import pytest
from front_tools import INIT, Host, listening_wrapper, rpc, served_throughout

from mcpwatch.events import payload_problems
from mcpwatch.operator import status_problems

from wraptools import Operator, registry_entry

pytestmark = pytest.mark.anyio


@pytest.fixture
def anyio_backend():
    return "asyncio"


def children(pid: int) -> list[int]:
    """The wrapper's child processes (its upstreams), oldest first."""
    found: list[int] = []
    for task in Path(f"/proc/{pid}/task").iterdir():
        text = (task / "children").read_text().split()
        found.extend(int(child) for child in text)
    return sorted(found, key=lambda child: Path(f"/proc/{child}").stat().st_mtime)


async def wait_until(predicate, timeout: float = 10.0) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < deadline, "condition not reached in time"
        await asyncio.sleep(0.05)


async def test_the_cap_refuses_the_next_host_and_delete_ends_a_session_and_its_upstream(tmp_path):
    async with listening_wrapper(tmp_path, config="[front]\nmax_sessions = 2\n") as front:
        pid = front.process.pid
        async with Host(front) as first, Host(front) as second:
            await first.ping()
            await second.ping()
            await wait_until(lambda: len(children(pid)) == 2)
            async with httpx2.AsyncClient(timeout=20) as http, served_throughout(second):
                refused = await http.post(front.url, json=rpc(0, "initialize", INIT), headers=first.headers | {
                    "Mcp-Session-Id": ""})  # fmt: skip
                assert refused.status_code == 503
                error = refused.json()["error"]
                assert error["code"] == -32603 and "max_sessions" in error["message"] and "2 open" in error["message"]
                assert "mcp-session-id" not in refused.headers
                ended = await http.delete(front.url, headers=first.headers)
                assert ended.status_code == 200
                await wait_until(lambda: len(children(pid)) == 1)
                gone = await first.post(rpc("late", "ping"))
                assert gone.status_code == 404
                assert (await http.delete(front.url, headers=first.headers)).status_code == 404
                async with Host(front) as third:  # room again
                    await third.ping()
                    await wait_until(lambda: len(children(pid)) == 2)


async def test_an_idle_session_expires_with_its_upstream_while_a_busy_one_stays(tmp_path):
    config = "[front]\nsession_idle_s = 1\n"
    async with listening_wrapper(tmp_path, config=config) as front:
        pid = front.process.pid
        async with Host(front) as idle, Host(front) as busy:
            await idle.ping()
            await wait_until(lambda: len(children(pid)) == 2)
            async with served_throughout(busy):
                await wait_until(lambda: len(children(pid)) == 1, timeout=8)
                await asyncio.sleep(1.5)  # longer than the idle limit: the pinging host is never idle
            assert (await idle.post(rpc("after", "ping"))).status_code == 404
            await busy.ping()
            assert len(children(pid)) == 1


async def test_a_dying_upstream_of_one_host_does_not_touch_another_hosts_session(tmp_path):
    async with listening_wrapper(tmp_path) as front:
        pid = front.process.pid
        async with Host(front) as victim:
            await victim.ping()
            await wait_until(lambda: len(children(pid)) == 1)
            victim_upstream = children(pid)[0]
            async with Host(front) as other:
                await other.ping()
                await wait_until(lambda: len(children(pid)) == 2)
                other_upstream = next(child for child in children(pid) if child != victim_upstream)
                async with served_throughout(other):
                    os.kill(victim_upstream, signal.SIGKILL)
                    await wait_until(lambda: victim_upstream not in children(pid))
                    await wait_until(lambda: len(children(pid)) == 2, timeout=15)  # respawned, for the victim only
                    await asyncio.wait_for(victim.ping(), 15)  # its handshake replayed on the new process
                assert other_upstream in children(pid)
                await other.ping()


async def test_the_operator_sees_every_session_and_cancels_in_the_right_one(tmp_path, isolated_state):
    """Two hosts both call with id 1: status lists both calls apart, cancel ends only the one named, every event
    names its host session, and the console's keys (request ids) never collide."""
    async with listening_wrapper(tmp_path) as front:
        operator = Operator(registry_entry(isolated_state))
        async with Host(front) as first, Host(front) as second:
            call = rpc(1, "tools/call", {"name": "sleep", "arguments": {"seconds": 30, "steps": 1}})
            calls = [asyncio.ensure_future(host.post(call)) for host in (first, second)]
            for _ in range(200):
                status = await operator.tool("status")
                if len(status["in_flight"]) == 2:
                    break
                await asyncio.sleep(0.05)
            assert status_problems(status) == []
            sessions = status["wrapper"]["host_sessions"]
            assert sessions["open"] == 2 and sessions["upstreams_ready"] == 2 and sessions["max"] == 16
            assert len({row["upstream_pid"] for row in sessions["sessions"]}) == 2
            keys = sorted(call["request_id"] for call in status["in_flight"])
            tags = sorted(call["host_session"] for call in status["in_flight"])
            assert keys == [f"{tag}/1" for tag in tags] and len(set(tags)) == 2
            first_tag = first.headers["Mcp-Session-Id"][:8]
            await operator.tool("cancel", request_id=f"{first_tag}/1")
            cut = await asyncio.wait_for(calls[0], 10)
            assert "cancel" in cut.text.lower()
            status = await operator.tool("status")
            assert [call["host_session"] for call in status["in_flight"]] == [second.headers["Mcp-Session-Id"][:8]]
            assert (await operator.tool("health_check"))["ok"] is True
            called = await operator.tool("call_upstream", name="echo", arguments={"text": "admin"})
            # every host session has its own server process: an operator's call reaches each of them
            assert called["ok"] is True and sorted(row["host_session"] for row in called["sessions"]) == tags
            calls[1].cancel()
        events = (await operator.tool("events", after=0, limit=1000))["events"]
        starts = [e for e in events if e["kind"] == "request_start" and e["data"].get("method") == "tools/call"]
        assert sorted(e["request_id"] for e in starts) == keys
        assert all(e["data"]["host_session"] == e["request_id"].split("/")[0] for e in starts)
        assert [(e["kind"], p) for e in events for p in payload_problems(e["kind"], e["data"])] == []
