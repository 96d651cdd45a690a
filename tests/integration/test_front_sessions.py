"""Every host session on the HTTP front has its own upstream process: capped by `[front] max_sessions`, ended by
DELETE or after `[front] session_idle_s` idle (its process with it), and one host's dying upstream leaves the other
hosts' sessions as they were. DELETE and a request still arriving at the cap are also shown in process
(`tests/unit/test_front_session_app.py`); here, what needs the processes and sockets."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import re
import signal
import socket
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import httpx2
import pytest
from front_tools import ACCEPT, INIT, Host, listening_wrapper, post_bytes, rpc, served_throughout, status_of

from mcpwatch.events import payload_problems, typed_dict_problems
from mcpwatch.operator import Status, status_problems

from waiting import eventually
from wraptools import Operator, registry_entry

pytestmark = pytest.mark.anyio


def children(pid: int) -> list[int]:
    """The wrapper's child processes (its upstreams), oldest first."""
    found: list[int] = []
    for task in Path(f"/proc/{pid}/task").iterdir():
        text = (task / "children").read_text().split()
        found.extend(int(child) for child in text)
    started: dict[int, float] = {}
    for child in found:
        with contextlib.suppress(FileNotFoundError):  # reaped since it was listed
            started[child] = Path(f"/proc/{child}").stat().st_mtime
    return sorted(started, key=started.__getitem__)


async def upstreams(pid: int, count: int, timeout: float = 10.0) -> None:
    """Until the wrapper `pid` has `count` upstream processes."""
    await eventually(lambda: len(children(pid)) == count, timeout, f"{count} upstream processes")


async def calls_in_flight(operator: Operator, count: int) -> None:
    async def reached() -> bool:
        return len((await operator.tool("status"))["in_flight"]) == count

    await eventually(reached, 15, f"{count} calls in flight")


async def initialize(front: Any, http: httpx2.AsyncClient) -> httpx2.Response:
    return await http.post(front.url, json=rpc(0, "initialize", INIT), headers=ACCEPT)


@pytest.mark.slow
async def test_at_the_cap_the_session_idle_longest_is_reclaimed_and_busy_ones_never(tmp_path, isolated_state):
    """Hosts that exit without DELETE, many times over, never lock a new host out: at the cap the session idle
    longest makes room (its upstream stopped, a 404 afterwards, logged); only when every session has a call in
    flight or a stream open is a newcomer refused."""
    async with listening_wrapper(tmp_path, config="[front]\nmax_sessions = 3\n") as front:
        pid = front.process.pid
        operator = Operator(registry_entry(isolated_state))
        async with httpx2.AsyncClient(timeout=20) as http:
            abandoned = []
            for _ in range(5):  # initialize, call, exit without DELETE
                opened = await initialize(front, http)
                assert opened.status_code == 200, opened.text
                abandoned.append(opened.headers["mcp-session-id"])
            await upstreams(pid, 3)  # never more upstreams than the cap
            for session_id in abandoned[:-3]:  # the oldest were reclaimed: 404, as after DELETE
                gone = await http.post(front.url, json=rpc(1, "ping"), headers=ACCEPT | {"Mcp-Session-Id": session_id})
                assert gone.status_code == 404
            sessions = (await operator.tool("status"))["wrapper"]["host_sessions"]
            assert (sessions["opened"], sessions["reclaimed"], sessions["refused"]) == (5, 2, 0)
            async with Host(front) as busy_a, Host(front) as busy_b, Host(front) as busy_c:
                # every session busy: one has a call in flight, one a request body still arriving, one a call and
                # a GET stream
                call = rpc("long", "tools/call", {"name": "sleep", "arguments": {"seconds": 30}})
                calls = [asyncio.ensure_future(host.post(call)) for host in (busy_a, busy_c)]
                async with (
                    slow_upload(front, busy_b, rpc("slow", "ping")) as upload,
                    busy_c.http.stream("GET", front.url, headers=busy_c.headers) as stream,
                ):
                    assert stream.status_code == 200
                    await upstreams(pid, 3)
                    await calls_in_flight(operator, 2)
                    await receiving(operator, 1)
                    refused = await initialize(front, http)
                    assert refused.status_code == 503 and "every host session is busy" in refused.text
                    assert "mcp-session-id" not in refused.headers
                    calls[0].cancel()
                    cancel = {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": "long"}}
                    await busy_a.post(cancel)
                    await calls_in_flight(operator, 1)
                    newcomer = await initialize(front, http)  # busy_a is idle again: it makes room
                    assert newcomer.status_code == 200
                    assert (await busy_a.post(rpc("after", "ping"))).status_code == 404
                    assert status_of(upload.finish()) == 200  # its whole request answered, never a 404
                    await busy_c.ping()  # the busy ones were left alone
                calls[1].cancel()
            sessions = (await operator.tool("status"))["wrapper"]["host_sessions"]
            assert (sessions["reclaimed"], sessions["refused"]) == (6, 1), sessions  # 2, 3 for busy_*, 1
        events = (await operator.tool("events", after=0, limit=5000))["events"]
        ends = [e["data"]["message"] for e in events if e["kind"] == "warning" and "ended:" in e["data"]["message"]]
        assert sum("reclaimed for a new host at the max_sessions cap (3)" in text for text in ends) == 6, ends
        (refusal,) = [e["data"] for e in events if e["kind"] == "host_session_refused"]  # the console shows it
        assert payload_problems("host_session_refused", refusal) == []
        assert (refusal["open"], refusal["max"], refusal["refused"]) == (3, 3, 1)
        said = r"a new host session from 127\.0\.0\.1:\d+ was refused: every session is busy"
        assert re.fullmatch(said, refusal["message"]), refusal


class SlowUpload:
    """A POST on a raw socket whose body is half sent: the rest comes with `finish`, which returns the answer."""

    def __init__(self, front: Any, host: Host, payload: Any) -> None:
        body = json.dumps(payload).encode()
        session = f"Mcp-Session-Id: {host.headers['Mcp-Session-Id']}\r\n"
        request = post_bytes(urlsplit(front.url).path, front.port, body, session)
        self.rest = request[len(request) - len(body) // 2 :]
        self.sock = socket.create_connection(("127.0.0.1", front.port), timeout=20)
        self.sock.sendall(request[: len(request) - len(body) // 2])

    def finish(self) -> bytes:
        self.sock.sendall(self.rest)
        received = b""
        while b"\r\n\r\n" not in received or not received.rstrip().endswith(b"}"):
            chunk = self.sock.recv(65536)
            if not chunk:
                break
            received += chunk
        return received


@asynccontextmanager
async def slow_upload(front: Any, host: Host, payload: Any):
    upload = SlowUpload(front, host, payload)
    try:
        yield upload
    finally:
        upload.sock.close()


async def receiving(operator: Operator, count: int) -> None:
    """Wait until `count` request bodies are arriving (the front has their heads and part of their bodies)."""

    async def reached() -> bool:
        rows = (await operator.tool("status"))["wrapper"]["host_sessions"]["sessions"]
        return sum(row["receiving"] for row in rows) == count

    await eventually(reached, 15, f"{count} bodies arriving")


@pytest.mark.slow
async def test_one_process_holding_every_slot_with_get_streams_never_keeps_a_newcomer_out(tmp_path, isolated_state):
    """A tokenless local process opens `max_sessions` sessions, each with a GET stream, and holds them: a GET
    stream is listening, not work, so each newcomer takes one of its slots; its stream ends cleanly."""
    async with listening_wrapper(tmp_path, config="[front]\nmax_sessions = 3\n") as front:
        operator = Operator(registry_entry(isolated_state))
        async with contextlib.AsyncExitStack() as stack:
            hogs = [await stack.enter_async_context(Host(front)) for _ in range(3)]
            streams = [
                await stack.enter_async_context(hog.http.stream("GET", front.url, headers=hog.headers)) for hog in hogs
            ]
            assert [stream.status_code for stream in streams] == [200, 200, 200]
            for _ in range(3):  # hosts that stay, listening as SDK clients do
                newcomer = await stack.enter_async_context(Host(front))  # never a 503
                listen = await stack.enter_async_context(
                    newcomer.http.stream("GET", front.url, headers=newcomer.headers)
                )
                assert listen.status_code == 200
                await newcomer.ping()
            for stream in streams:  # every hog's stream ended (its session reclaimed), none hangs
                await asyncio.wait_for(stream.aread(), 10)
            for hog in hogs:
                assert (await hog.post(rpc("after", "ping"))).status_code == 404
            sessions = (await operator.tool("status"))["wrapper"]["host_sessions"]
            assert (sessions["reclaimed"], sessions["refused"]) == (3, 0), sessions


@pytest.mark.slow
async def test_an_idle_session_expires_with_its_upstream_while_a_busy_one_stays(tmp_path):
    config = "[front]\nsession_idle_s = 1\n"
    async with listening_wrapper(tmp_path, config=config) as front:
        pid = front.process.pid
        async with Host(front) as idle, Host(front) as busy:
            await idle.ping()
            await upstreams(pid, 2)
            async with served_throughout(busy):
                await upstreams(pid, 1, 8)
                await asyncio.sleep(1.5)  # longer than the idle limit: the pinging host is never idle
            assert (await idle.post(rpc("after", "ping"))).status_code == 404
            await busy.ping()
            assert len(children(pid)) == 1


@pytest.mark.slow
async def test_a_dying_upstream_of_one_host_does_not_touch_another_hosts_session(tmp_path):
    async with listening_wrapper(tmp_path) as front:
        pid = front.process.pid
        async with Host(front) as victim:
            await victim.ping()
            await upstreams(pid, 1)
            victim_upstream = children(pid)[0]
            async with Host(front) as other:
                await other.ping()
                await upstreams(pid, 2)
                other_upstream = next(child for child in children(pid) if child != victim_upstream)
                async with served_throughout(other):
                    os.kill(victim_upstream, signal.SIGKILL)
                    await eventually(lambda: victim_upstream not in children(pid), 10, "the victim's upstream gone")
                    await upstreams(pid, 2, 15)  # respawned, for the victim only
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
            await calls_in_flight(operator, 2)
            status = await operator.tool("status")
            assert status_problems(status) == [] and typed_dict_problems(Status, status, "status") == []
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


async def test_a_held_request_ends_cleanly_when_cancelled_or_when_its_session_ends(tmp_path, isolated_state):
    """Nothing streamed yet, and no answer will come: the POST ends as an empty event stream (no 503 saying that
    mcpwatch is shutting down, which it is not)."""
    async with listening_wrapper(tmp_path) as front, Host(front) as host:
        operator = Operator(registry_entry(isolated_state))
        for ending in ("cancel", "delete"):
            call = rpc(f"held-{ending}", "tools/call", {"name": "sleep", "arguments": {"seconds": 30}})
            held = asyncio.ensure_future(host.post(call))
            await calls_in_flight(operator, 1)
            assert not held.done()
            if ending == "cancel":
                params = {"requestId": f"held-{ending}", "reason": "the user pressed Esc"}
                note = {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": params}
                assert (await host.post(note)).status_code == 202
            else:
                assert (await host.http.delete(front.url, headers=host.headers)).status_code == 200
            reply = await asyncio.wait_for(held, 10)
            assert reply.status_code == 200 and reply.headers["content-type"] == "text/event-stream", reply.text
            assert reply.text == ""
    assert "Traceback" not in front.stderr
