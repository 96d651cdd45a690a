"""The wrapper going away: the host closes stdin, or a signal arrives, mid-call. Upstream calls are cancelled, the
log is flushed and closed, the registry file is removed, exit code 0. Killed outright mid-load, it leaves a log that
opens intact and a registry entry that is ignored."""

from __future__ import annotations

import asyncio
import json
import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from faultkit import (
    FAULT_SERVER,
    RAW_SERVER,
    integrity,
    pid_alive,
    raw_host,
    read_jsonl,
    registry_of,
    session_events,
    text_of,
    wait_group_gone,
)

from mcpwatch import registry
from mcpwatch.store import EventReader

from checkout import mcpwatch_cmd
from waiting import patience, sooner_than
from wraptools import Operator

pytestmark = pytest.mark.anyio


async def wait_gone(pid: int, timeout: float) -> None:
    deadline = time.monotonic() + patience(timeout)
    while pid_alive(pid):
        assert time.monotonic() < deadline, f"process {pid} is still running"
        await asyncio.sleep(0.05)


@pytest.mark.parametrize("how", ["stdin closed", "SIGTERM", "SIGINT", "SIGHUP"])
async def test_leaving_mid_call_cancels_upstream_flushes_the_log_and_unregisters(
    tmp_path: Path, isolated_state: Path, how: str
) -> None:
    log = tmp_path / "events.db"
    cancels = tmp_path / "cancels.jsonl"
    async with raw_host(RAW_SERVER, tmp_path, log=log, env={"RAW_SERVER_LOG": str(cancels)}) as host:
        await host.initialize()
        entry = await registry_of(isolated_state, host.pid)
        operator = Operator(entry)
        calls = [host.request("tools/call", {"name": "sleep", "arguments": {"seconds": 30}}) for _ in range(3)]
        calls += [host.request("tools/call", {"name": "hang", "arguments": {}}) for _ in range(2)]
        deadline = time.monotonic() + patience(10)
        while len((status := await operator.tool("status"))["in_flight"]) < 5:
            assert time.monotonic() < deadline, status
            await asyncio.sleep(0.05)
        upstream_pid = status["wrapper"]["upstream"]["pid"]
        started = time.monotonic()
        if how == "stdin closed":
            code = await host.close()
        else:
            await host.signal(getattr(signal, how))
            code = await host.wait_exit()
        assert code == 0
        assert time.monotonic() - started < sooner_than(30, 8)  # not the calls' 30 s
        if how != "stdin closed":  # the host is still there: each call gets its one answer before the end
            for call in calls:
                reply = await asyncio.wait_for(call, patience(1))  # written before it exited
                assert reply["result"]["_meta"]["dev.mcpwatch/partial"]["outcome"] == "shutdown"
    host.assert_clean_stderr()
    host.assert_clean_stdout()
    assert all(len(replies) == 1 for replies in host.responses.values())
    await wait_gone(upstream_pid, 5)
    assert not (isolated_state / "wrappers" / f"{host.pid}.json").exists()

    events = session_events(log, entry["session_id"])
    up_ids = {e.data["up_id"] for e in events if e.kind == "request_start" and e.data["method"] == "tools/call"}
    assert len(up_ids) == 5
    assert {c["cancelled"] for c in read_jsonl(cancels)} == up_ids  # the raw server saw each cancellation
    ends = [e for e in events if e.kind == "request_end" and e.data["method"] == "tools/call"]
    assert [e.data["outcome"] for e in ends] == ["cancelled"] * 5
    assert {e.data["error"] for e in ends} == {"shutdown"}
    assert [e.kind for e in events][-1] == "session_end"
    reason = "host closed the connection" if how == "stdin closed" else f"received {how}"
    assert events[-1].data["reason"] == reason
    assert events[-1].data["counters"]["cancelled"] == 5
    assert [e.seq for e in events] == list(range(1, len(events) + 1))  # nothing lost on the way out
    with EventReader(log) as reader:
        session = reader.session(entry["session_id"])
    assert session.ended_at is not None and session.end_reason == reason


@pytest.mark.slow
async def test_sigkill_mid_load_leaves_a_log_that_opens_intact(tmp_path: Path, isolated_state: Path) -> None:
    log = tmp_path / "events.db"
    rng = random.Random(7)
    async with raw_host(FAULT_SERVER, tmp_path, log=log) as host:
        await host.initialize()
        entry = await registry_of(isolated_state, host.pid)
        upstream_pid = (await Operator(entry).tool("status"))["wrapper"]["upstream"]["pid"]
        in_flight: set[asyncio.Future[dict[str, object]]] = set()
        stop_at = time.monotonic() + 1.5
        sent = 0
        while time.monotonic() < stop_at or sent <= 1000:  # under load, as long as it takes to send 1,000
            while len(in_flight) < 200:
                params = {"name": "delay", "arguments": {"ms": rng.randint(0, 40)}, "_meta": {"progressToken": sent}}
                future = host.request("tools/call", params)
                in_flight.add(future)
                future.add_done_callback(in_flight.discard)
                sent += 1
            await asyncio.sleep(0.005)
        await host.signal(signal.SIGKILL)
        assert await host.wait_exit() == -signal.SIGKILL
        for future in in_flight:
            future.cancel()
    assert sent > 1000, sent
    assert integrity(log) == "ok"
    with EventReader(log) as reader:
        sessions = reader.sessions()
        assert [s.id for s in sessions] == [entry["session_id"]]
        assert sessions[0].ended_at is None  # it never got to say goodbye
        events = list(reader.events(entry["session_id"]))
    assert len(events) > 1000
    assert [e.seq for e in events] == list(range(1, len(events) + 1))  # what was committed is a clean prefix
    assert events[0].kind == "session_start"
    await wait_gone(upstream_pid, 5)  # its upstream saw stdin close and went too: no orphan
    assert registry.running_wrappers(isolated_state / "wrappers") == []  # the stale entry is ignored

    # the same file takes a new wrapper at once
    async with raw_host(FAULT_SERVER, tmp_path, log=log, name="second") as host:
        await host.initialize()
        assert "result" in await host.tool("echo", {"again": True})
        assert await host.close() == 0
    assert integrity(log) == "ok"
    with EventReader(log) as reader:
        assert len(reader.sessions()) == 2


DEAF_SERVER = r"""
import json, signal, sys, time
# Answers initialize, then stops listening: the end of its stdin means nothing to it, and it ignores SIGHUP.
signal.signal(signal.SIGHUP, signal.SIG_IGN)
message = json.loads(sys.stdin.readline())
result = {"protocolVersion": message["params"]["protocolVersion"], "capabilities": {},
          "serverInfo": {"name": "deaf", "version": "1"}}
print(json.dumps({"jsonrpc": "2.0", "id": message["id"], "result": result}), flush=True)
sys.stdin.close()
while True:
    time.sleep(1)
"""


async def test_sigkill_of_the_wrapper_takes_an_upstream_that_ignores_its_stdin_with_it(tmp_path: Path) -> None:
    server = tmp_path / "deaf.py"
    server.write_text(DEAF_SERVER)
    async with raw_host([sys.executable, str(server)], tmp_path, log=None) as host:
        assert (await host.initialize())["result"]["serverInfo"]["name"] == "deaf"
        upstream_pid = await upstream_pid_of(host.pid)
        await host.signal(signal.SIGKILL)
        assert await host.wait_exit() == -signal.SIGKILL
    await wait_gone(upstream_pid, 5)  # the kernel told it its parent died: no orphan left running


FLOOD_SERVER = [sys.executable, "-m", "mcpwatch.bench.flood_upstream", "stdio"]


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the keeper of the upstream's group is Linux-only")
async def test_sigkill_of_the_wrapper_takes_the_upstreams_children_with_it(tmp_path: Path) -> None:
    """The server dies of the kernel's SIGTERM, but a child it started (a `sleep` in its process group) would
    outlive both: the group's keeper sees the wrapper's end of its lifeline close and ends the whole group."""
    async with raw_host(FLOOD_SERVER, tmp_path, log=None) as host:
        await host.initialize()
        grandchild = int(text_of(await host.tool("grandchild")))
        stubborn = int(text_of(await host.tool("grandchild", {"ignore_term": True})))  # SIGKILL is needed
        upstream_pid = await upstream_pid_of(host.pid)
        for pid in (grandchild, stubborn):
            assert pid_alive(pid) and os.getpgid(pid) == upstream_pid
        await host.signal(signal.SIGKILL)
        assert await host.wait_exit() == -signal.SIGKILL
    await wait_gone(upstream_pid, 10)
    await wait_gone(grandchild, 10)
    await wait_gone(stubborn, 10)
    await wait_group_gone(upstream_pid, 10)  # the keeper goes last, with its SIGKILL to the group


async def upstream_pid_of(wrapper_pid: int, timeout: float = 10.0) -> int:
    """The wrapper's child process (its upstream), from /proc."""
    deadline = time.monotonic() + patience(timeout)
    while time.monotonic() < deadline:
        children = Path(f"/proc/{wrapper_pid}/task/{wrapper_pid}/children").read_text().split()
        if children:
            return int(children[0])
        await asyncio.sleep(0.05)
    raise AssertionError(f"wrapper {wrapper_pid} has no child process")


@pytest.mark.parametrize("stdin", ["file", "devnull"])
def test_stdin_and_stdout_that_are_files_not_pipes(tmp_path: Path, isolated_state: Path, stdin: str) -> None:
    # A host (or a person) may hand the wrapper a file or /dev/null: no pipe for the event loop to watch.
    frames = tmp_path / "in.jsonl"
    frames.write_text('{"jsonrpc":"2.0","id":1,"method":"ping"}\nnot json\n', encoding="utf-8")
    out = tmp_path / "out.jsonl"
    source = str(frames) if stdin == "file" else "/dev/null"
    with open(source, "rb") as host_in, open(out, "wb") as host_out:
        done = subprocess.run(
            mcpwatch_cmd("wrap", "--no-log", "--", sys.executable, str(RAW_SERVER)),
            stdin=host_in,
            stdout=host_out,
            stderr=subprocess.PIPE,
            timeout=30,
        )
    assert done.returncode == 0, done.stderr.decode()
    assert b"Traceback" not in done.stderr and not list((isolated_state / "wrappers").glob("*.json"))
    replies = {json.dumps(m.get("id")): m for m in read_jsonl(out)}
    if stdin == "file":  # the ping is answered (by the server, or as abandoned at shutdown), the garbage refused
        assert set(replies) == {"1", "null"} and replies["null"]["error"]["code"] == -32700
    else:
        assert replies == {}
