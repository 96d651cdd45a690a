"""Three MCP SDK hosts on one `mcpwatch wrap --listen` front over the SDK fixture server, compared with the
same server serving Streamable HTTP itself: notifications and progress reach only the host they belong to, in both
eras, and an answer to a server request is taken only from the host that was asked."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import AsyncIterator, Iterator
from contextlib import AsyncExitStack, asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import httpx2
import pytest
from mcp import Client, types

from mcpwatch.ports import free_port

from checkout import REPO, mcpwatch_cmd
from waiting import eventually, stop_process, wait_for_port
from wraptools import SDK_SERVER, first_text

pytestmark = pytest.mark.anyio


@asynccontextmanager
async def running(argv: list[str], port: int) -> AsyncIterator[str]:
    proc = subprocess.Popen(argv, cwd=REPO, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL)
    try:
        await anyio.to_thread.run_sync(wait_for_port, port, 30)
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        stop_process(proc)


@pytest.fixture(scope="module")
def server_url() -> Iterator[str]:
    """The fixture server serving Streamable HTTP itself, started once for the module: every test's direct run and
    the front's HTTP upstream (each host session is a session of its own there, as with any HTTP server)."""
    port = free_port()
    proc = subprocess.Popen(
        [sys.executable, SDK_SERVER, "http", str(port)], cwd=REPO, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL
    )
    try:
        wait_for_port(port, 30)
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        stop_process(proc)


@asynccontextmanager
async def arrangement(name: str, tmp_path: Path, direct: str) -> AsyncIterator[str]:
    """ "direct": the fixture server over HTTP; "stdio"/"http": the wrapper's front over it, by either upstream."""
    if name == "direct":
        yield direct
        return
    port = free_port()
    wrap = ["--log", str(tmp_path / f"{name}.db"), "--listen", f"http://127.0.0.1:{port}/mcp"]
    upstream = ["--url", direct] if name == "http" else ["--", sys.executable, SDK_SERVER]
    async with running(mcpwatch_cmd("wrap", *wrap, *upstream), port) as url:
        yield url


async def host_observes(client: Client, name: str, seen: dict[str, Any], notes: list[str]) -> None:
    reported: list[float] = []

    async def on_progress(progress: float, total: float | None, message: str | None) -> None:
        reported.append(progress)

    if name == "a":
        assert first_text(await client.call_tool("touch", {})) == "touched"
    result = await client.call_tool("count", {"n": 4, "delay": 0.05}, progress_callback=on_progress)
    seen[f"{name}.result"] = first_text(result)
    seen[f"{name}.progress"] = reported
    seen[f"{name}.protocol"] = client.protocol_version


async def hosts_on(url: str, names: str, mode: str) -> dict[str, Any]:
    seen: dict[str, Any] = {}
    notes: dict[str, list[str]] = {name: [] for name in names}

    def handler(name: str):
        async def on_message(message: Any) -> None:
            if isinstance(message, types.ResourceUpdatedNotification):
                notes[name].append(str(message.params.uri))

        return on_message

    async with AsyncExitStack() as stack:
        clients = {
            name: await stack.enter_async_context(Client(url, mode=mode, message_handler=handler(name)))
            for name in names
        }
        with anyio.fail_after(30):
            async with anyio.create_task_group() as group:
                for name, client in clients.items():
                    group.start_soon(host_observes, client, name, seen, notes[name])
        if mode == "legacy":  # the update of what a touched comes on its own stream (a GET), in its own time
            await eventually(lambda: notes["a"], 10, "the resource update a caused")
        await anyio.sleep(0.3)  # room for an update wrongly sent to another host too
    for name in names:
        seen[f"{name}.resource_updates"] = notes[name]
    return seen


@pytest.mark.slow
async def test_sdk_hosts_see_only_their_own_notifications(tmp_path, server_url):
    """Three hosts: what each of two sees is checked as well (a run with two hosts alone, its own test before,
    asserted the same of a and b)."""
    names = "abc"
    async with arrangement("direct", tmp_path, server_url) as url:
        direct = await hosts_on(url, names, "legacy")
    assert direct["a.resource_updates"] == ["fixture://state"] and direct["b.resource_updates"] == []
    assert direct["b.progress"] == [1, 2, 3, 4]
    for wrapped in ("stdio", "http"):  # the front over either upstream, each against the one direct run
        async with arrangement(wrapped, tmp_path, server_url) as url:
            through = await hosts_on(url, names, "legacy")
        assert through == direct, wrapped


@pytest.mark.slow
async def test_sessionless_hosts_share_an_upstream_but_get_only_their_own_progress(tmp_path, server_url):
    async with arrangement("direct", tmp_path, server_url) as url:
        direct = await hosts_on(url, "abc", "auto")
    async with arrangement("stdio", tmp_path, server_url) as url:
        through = await hosts_on(url, "abc", "auto")
    assert direct["a.protocol"] == "2026-07-28" and direct["c.progress"] == [1, 2, 3, 4]
    assert {k: v for k, v in through.items() if "resource_updates" not in k} == {
        k: v for k, v in direct.items() if "resource_updates" not in k
    }


ACCEPT = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}


async def open_raw(http: httpx2.AsyncClient, url: str, capabilities: dict[str, Any]) -> dict[str, str]:
    init = {
        "protocolVersion": "2025-11-25",
        "capabilities": capabilities,
        "clientInfo": {"name": "raw", "version": "1"},
    }
    reply = await http.post(
        url, json={"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": init}, headers=ACCEPT
    )
    headers = {**ACCEPT, "Mcp-Session-Id": reply.headers["mcp-session-id"], "MCP-Protocol-Version": "2025-11-25"}
    await http.post(url, json={"jsonrpc": "2.0", "method": "notifications/initialized"}, headers=headers)
    return headers


@pytest.mark.slow
async def test_only_the_host_that_was_asked_can_answer_a_server_request(tmp_path):
    """Host b answers (with the right id) the roots request the server sent host a: ignored; a's own answer counts.
    The server is `roots_server.py`'s tool hand-written: the front starts one for each host session."""
    roots_server = Path(__file__).parent.parent / "fixtures" / "raw_roots_server.py"
    port = free_port()
    wrap = ["--log", str(tmp_path / "events.db"), "--listen", f"http://127.0.0.1:{port}/mcp"]
    argv = mcpwatch_cmd("wrap", *wrap, "--", sys.executable, str(roots_server))
    async with running(argv, port) as url, httpx2.AsyncClient(timeout=30) as http:
        a = await open_raw(http, url, {"roots": {}})
        b = await open_raw(http, url, {"roots": {}})
        call = {"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": {"name": "roots", "arguments": {}}}
        async with http.stream("POST", url, json=call, headers=a) as stream:
            lines = stream.aiter_lines()
            asked = None
            async for line in lines:
                if line.startswith("data:"):
                    asked = json.loads(line[5:])
                    break
            assert asked is not None and asked["method"] == "roots/list"
            forged = {"jsonrpc": "2.0", "id": asked["id"], "result": {"roots": [{"uri": "file:///b"}]}}
            assert (await http.post(url, json=forged, headers=b)).status_code == 202
            own = {"jsonrpc": "2.0", "id": asked["id"], "result": {"roots": [{"uri": "file:///a"}]}}
            assert (await http.post(url, json=own, headers=a)).status_code == 202
            async for line in lines:
                if line.startswith("data:"):
                    answer = json.loads(line[5:])
                    break
        assert answer["id"] == 7
        assert answer["result"]["content"][0]["text"] == "file:///a"
