"""An upstream that stops being one without exiting, one that cannot be started, and one that leaves a child behind,
as real processes: calls are answered at once with what happened, the wrapper keeps trying, and nothing of the
upstream's process group outlives it."""

from __future__ import annotations

import asyncio
import json
import sys
import time
from pathlib import Path

import pytest
from faultkit import FAULT_SERVER, pid_alive, raw_host, registry_of, session_events, text_of, wait_group_gone

from waiting import eventually, patience, sooner_than
from wraptools import Operator

pytestmark = pytest.mark.anyio
FLOOD_SERVER = [sys.executable, "-m", "mcpwatch.bench.flood_upstream", "stdio"]


async def wait_dead(pid: int, timeout: float, what: str) -> None:
    deadline = time.monotonic() + patience(timeout)
    while pid_alive(pid):
        if time.monotonic() > deadline:
            raise AssertionError(f"{what} (pid {pid}) still runs after {timeout} s")
        await asyncio.sleep(0.05)


@pytest.mark.slow
async def test_an_upstream_that_closes_its_stdout_is_lost_its_calls_answered_at_once_and_it_is_respawned(
    tmp_path: Path, isolated_state: Path
) -> None:
    log = tmp_path / "events.db"
    async with raw_host(FLOOD_SERVER, tmp_path, log=log) as host:
        await host.initialize()
        operator = Operator(await registry_of(isolated_state, host.pid))
        first_pid = (await operator.tool("status"))["wrapper"]["upstream"]["pid"]
        closing = host.request("tools/call", {"name": "close_stdout", "arguments": {}})
        ping = host.request("ping", {})  # sent right behind it: the closed stdout can answer neither
        # answered when the stdout closes, not held: a generous bound, as a busy machine adds seconds
        reply, pong = await asyncio.wait_for(asyncio.gather(closing, ping), 10)
        assert reply["result"]["isError"] is True and "closed its stdout" in text_of(reply), reply
        assert "closed its stdout" in pong["error"]["message"], pong
        await wait_dead(first_pid, 5, "the upstream that closed its stdout")

        listed = await host.call("tools/list", {}, timeout=15)  # the respawned upstream answers
        assert "echo" in [tool["name"] for tool in listed["result"]["tools"]]
        assert (await host.call("ping", {}, timeout=10))["result"] == {}
        upstream = (await operator.tool("status"))["wrapper"]["upstream"]
        assert upstream["state"] == "ready" and upstream["pid"] != first_pid and upstream["restarts"] >= 1
        session = (await registry_of(isolated_state, host.pid))["session_id"]
        assert await host.close() == 0
    host.assert_clean_stderr()
    states = [e.data for e in session_events(log, session) if e.kind == "upstream_state"]
    assert any(s["state"] == "closed" and "closed its stdout" in s.get("reason", "") for s in states), states


@pytest.mark.slow
async def test_a_command_that_cannot_be_started_answers_every_request_at_once_while_retries_go_on(
    tmp_path: Path, isolated_state: Path
) -> None:
    async with raw_host([str(tmp_path / "no-such-server")], tmp_path) as host:
        operator = Operator(await registry_of(isolated_state, host.pid))
        params = {"tools/call": {"name": "echo", "arguments": {}}, "initialize": None}
        for method in ("initialize", "tools/list", "ping", "tools/call", "resources/list", "tools/list"):
            started = time.monotonic()
            reply = await host.call(method, params.get(method, {}) or {}, timeout=10)
            took = time.monotonic() - started
            assert took < sooner_than(10, 5), (
                method,
                took,
            )  # not held for the host's 10 s; a generous bound for a busy machine
            text = text_of(reply) if method == "tools/call" else reply["error"]["message"]
            assert "could not be started" in text and "no-such-server" in text, (method, reply)
            await asyncio.sleep(0.5)  # across backoff waits and new attempts

        async def retried_twice() -> dict | None:  # the retries go on by the backoff's timers, later under load
            upstream = (await operator.tool("status"))["wrapper"]["upstream"]
            return upstream if upstream["restarts"] >= 2 else None

        upstream = await eventually(retried_twice, 10, "two restarts")
        assert upstream["state"] in ("backoff", "connecting", "closed"), upstream
        assert await host.close() == 0
    host.assert_clean_stderr()


@pytest.mark.slow
async def test_the_upstreams_whole_process_group_ends_with_it(tmp_path: Path, isolated_state: Path) -> None:
    async with raw_host(FLOOD_SERVER, tmp_path) as host:
        await host.initialize()
        operator = Operator(await registry_of(isolated_state, host.pid))
        first = int(text_of(await host.tool("grandchild")))
        assert pid_alive(first)
        host.request("tools/call", {"name": "exit", "arguments": {"code": 0}})  # the server exits on its own
        await wait_dead(first, 3, "the grandchild of an upstream that exited")

        second = int(text_of(await host.tool("grandchild", timeout=15)))  # the respawned one starts another
        assert pid_alive(second) and second != first
        upstream_pid = (await operator.tool("status"))["wrapper"]["upstream"]["pid"]
        assert await host.close() == 0  # the host goes away: the wrapper stops its upstream, and the group with it
        assert not pid_alive(upstream_pid)
        await wait_dead(second, 3, "the grandchild of an upstream stopped at shutdown")
        await wait_group_gone(upstream_pid, 3)  # its keeper too


@pytest.mark.slow
async def test_an_upstream_that_stops_reading_is_stuck_its_calls_answered_and_it_is_restarted(
    tmp_path: Path, isolated_state: Path
) -> None:
    """Its input blocked past write_timeout_s: every call it held is answered at once (not at the end of a 600 s
    budget) with what happened, the process is stopped and a new one started, and later calls work on it."""
    log = tmp_path / "events.db"
    config = tmp_path / "mcpwatch.toml"
    config.write_text("[upstream]\nwrite_timeout_s = 0.5\n")
    env = {"MCPWATCH_TOOL_CALL_DEADLINE_SEC": "600"}
    async with raw_host(FAULT_SERVER, tmp_path, log=log, env=env, wrap_args=["--config", str(config)]) as host:
        await host.initialize()
        operator = Operator(await registry_of(isolated_state, host.pid))
        first_pid = (await operator.tool("status"))["wrapper"]["upstream"]["pid"]
        hangs = [host.request("tools/call", {"name": "hang", "arguments": {}}) for _ in range(3)]
        assert text_of(await host.tool("stop_reading")) == "stopped reading"
        blob = "x" * (256 * 1024)  # more than the pipe holds: the rest waits in the wrapper's buffer
        blobs = [host.request("tools/call", {"name": "echo", "arguments": {"blob": blob}}) for _ in range(4)]
        for reply in await asyncio.wait_for(asyncio.gather(*hangs, *blobs), 30):
            assert reply["result"]["isError"] is True, reply
            assert "stopped reading its input" in text_of(reply) and "write_timeout_s" in text_of(reply), reply
        await wait_dead(first_pid, 5, "the stuck upstream")

        echo = await host.tool("echo", {"n": 1}, timeout=15)  # the new process answers
        assert json.loads(text_of(echo))["args"] == {"n": 1}
        upstream = (await operator.tool("status"))["wrapper"]["upstream"]
        assert upstream["state"] == "ready" and upstream["pid"] != first_pid and upstream["restarts"] >= 1
        assert upstream["stuck"] is False
        session = (await registry_of(isolated_state, host.pid))["session_id"]
        assert await host.close() == 0
    host.assert_clean_stderr()
    assert all(len(replies) == 1 for replies in host.responses.values()), "a request was answered twice"
    events = session_events(log, session)
    closed = [e for e in events if e.kind == "upstream_state" and e.data["state"] == "closed"]
    assert "stopped reading its input" in closed[0].data["reason"], closed[0].data
    states = [e.data["state"] for e in events if e.kind == "upstream_state"]
    assert states[states.index("closed") :][:4] == ["closed", "backoff", "connecting", "ready"], states
    buried = {e.request_id for e in events if e.kind == "tombstone_add"}
    assert buried == {json.dumps(r.result()["id"]) for r in [*hangs, *blobs]}  # its late answers would be dropped


@pytest.mark.slow
async def test_a_slow_reader_is_not_taken_for_a_stuck_one(tmp_path: Path, isolated_state: Path) -> None:
    """An upstream that takes its input a read at a time, with pauses, holds the wrapper's writes back far longer
    than write_timeout_s in all, but never that long without taking something: it is never restarted."""
    config = tmp_path / "mcpwatch.toml"
    config.write_text("[upstream]\nwrite_timeout_s = 2\n")
    env = {"MCPWATCH_TOOL_CALL_DEADLINE_SEC": "600"}
    async with raw_host(FAULT_SERVER, tmp_path, env=env, wrap_args=["--config", str(config)]) as host:
        await host.initialize()
        operator = Operator(await registry_of(isolated_state, host.pid))
        first_pid = (await operator.tool("status"))["wrapper"]["upstream"]["pid"]
        assert text_of(await host.tool("read_slowly", {"ms": 100})) == "reading slowly"
        blob = "x" * (1024 * 1024)
        started = time.monotonic()
        calls = [host.request("tools/call", {"name": "echo", "arguments": {"blob": blob, "n": n}}) for n in range(16)]
        for n, reply in enumerate(await asyncio.wait_for(asyncio.gather(*calls), 120)):
            assert json.loads(text_of(reply))["args"] == {"blob": blob, "n": n}, text_of(reply)[:200]
        assert time.monotonic() - started > 2 * 2  # the attack held: writes were blocked for longer than the timeout
        upstream = (await operator.tool("status"))["wrapper"]["upstream"]
        assert upstream["pid"] == first_pid and upstream["restarts"] == 0, upstream
        assert await host.close() == 0
    host.assert_clean_stderr()
