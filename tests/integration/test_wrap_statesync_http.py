"""State Sync through a real wrapper, and the Streamable HTTP front and upstream."""

from __future__ import annotations

import json
import subprocess
import sys

import httpx2
import pytest
from front_tools import rpc
from mcp import Client
from statesync_sample import POLICIES

from mcpwatch.ports import free_port

from checkout import REPO, mcpwatch_cmd
from waiting import eventually, wait_for_port
from wraptools import RAW_SERVER, SDK_SERVER, Operator, registry_entry, sdk_server_behind_http_front, wrapped_client

pytestmark = pytest.mark.anyio


async def test_state_sync_decorates_lists_and_invalidates_after_successful_mutations(tmp_path, isolated_state):
    config = tmp_path / "mcpwatch.toml"
    config.write_text(POLICIES)
    notifications: list[str] = []

    async def on_message(message) -> None:
        root = getattr(message, "root", message)
        if getattr(root, "method", None) == "notifications/resources/updated":
            notifications.append(str(root.params.uri))

    async with wrapped_client(
        [sys.executable, RAW_SERVER], wrap_args=["--config", str(config)], message_handler=on_message
    ) as client:
        tools = {t.name: t.description for t in (await client.list_tools()).tools}
        assert tools["tasks.list"] == "The tasks.list tool. [Cache-Control: immutable]"
        assert tools["echo"] == "The echo tool. [Cache-Control: no-store]"
        updated = await client.call_tool("tasks.update", {})
        assert updated.content[0].text == "[System: Cache invalidated for tasks.*, sprints.* — caused by tasks.update]"
        assert updated.content[1].text == '{"ok": true}'
        failed = await client.call_tool("tasks.update", {"fail": True})
        assert failed.is_error and len(failed.content) == 1
        await eventually(lambda: len(notifications) >= 2, 5, "both notifications")
        assert notifications == ["mcpwatch://stale/tasks.*", "mcpwatch://stale/sprints.*"]
        status = await Operator(registry_entry(isolated_state)).tool("status")
        assert status["counters"]["invalidations"] == 1
        assert status["state_sync"]["policies"] == 2


async def test_http_upstream_and_http_front(tmp_path):
    up_port, front_port = free_port(), free_port()
    upstream = subprocess.Popen([sys.executable, SDK_SERVER, "http", str(up_port)], stderr=subprocess.DEVNULL)
    wrapper = None
    try:
        wait_for_port(up_port)
        # a stdio host in front of an HTTP upstream
        progress: list[float] = []

        async def on_progress(value: float, total: float | None, message: str | None) -> None:
            progress.append(value)

        params = __import__("wraptools").wrap_params(
            [], wrap_args=["--no-log", "--url", f"http://127.0.0.1:{up_port}/mcp"]
        )
        params.args = [a for a in params.args if a != "--"]
        async with Client(params, mode="legacy") as client:
            assert (await client.call_tool("add", {"a": 20, "b": 22})).structured_content == {"result": 42}
            counted = await client.call_tool("count", {"n": 2, "delay": 0.01}, progress_callback=on_progress)
            assert counted.content[0].text == "counted to 2" and progress == [1, 2]
        # an HTTP host in front of the same HTTP upstream
        listen = f"http://127.0.0.1:{front_port}/mcp"
        wrapper = subprocess.Popen(
            mcpwatch_cmd("wrap", "--no-log", "--listen", listen, "--url", f"http://127.0.0.1:{up_port}/mcp"),
            cwd=REPO,
            stdin=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        wait_for_port(front_port)
        progress.clear()
        async with Client(listen, mode="legacy") as client:
            assert client.server_info.name == "sdk-fixture"
            assert (await client.call_tool("add", {"a": 1, "b": 2})).structured_content == {"result": 3}
            counted = await client.call_tool("count", {"n": 3, "delay": 0.01}, progress_callback=on_progress)
            assert counted.content[0].text == "counted to 3" and progress == [1, 2, 3]
        async with httpx2.AsyncClient() as http:
            evil = await http.post(listen, json={}, headers={"Host": "evil.example"})
            assert evil.status_code == 421
            # A lone answer comes back as plain JSON; a call that streams progress first gets an event stream.
            accept = {"Accept": "application/json, text/event-stream"}
            init = {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "raw", "version": "1"}}
            opened = await http.post(listen, json=rpc(1, "initialize", init), headers=accept)
            session = {**accept, "Mcp-Session-Id": opened.headers["mcp-session-id"]}
            note = {"jsonrpc": "2.0", "method": "notifications/initialized"}
            assert (await http.post(listen, json=note, headers=session)).status_code == 202
            add = {"name": "add", "arguments": {"a": 2, "b": 3}}
            added = await http.post(listen, json=rpc(2, "tools/call", add), headers=session)
            assert added.headers["content-type"] == "application/json"
            assert added.json()["id"] == 2 and added.json()["result"]["structuredContent"] == {"result": 5}
            count = {"name": "count", "arguments": {"n": 2, "delay": 0.01}, "_meta": {"progressToken": "t"}}
            counted = await http.post(listen, json=rpc(3, "tools/call", count), headers=session)
            assert counted.headers["content-type"] == "text/event-stream"
            frames = [json.loads(line[6:]) for line in counted.text.splitlines() if line.startswith("data: ")]
            assert [f.get("method") for f in frames] == ["notifications/progress"] * 2 + [None]
            assert frames[0]["params"]["progressToken"] == "t" and frames[-1]["id"] == 3
    finally:
        for process in (wrapper, upstream):
            if process is not None:
                process.terminate()
                process.wait(10)


async def test_the_2026_era_over_http_front_and_upstream(tmp_path):
    # An auto-mode SDK client negotiates 2026-07-28 through the wrapper as it does directly: sessionless POSTs at
    # the front, routing headers (MCP-Protocol-Version, Mcp-Method, Mcp-Name) on the way upstream.
    with sdk_server_behind_http_front() as (listen, direct_url, wrapper):
        async with Client(direct_url, mode="auto") as direct:
            assert direct.protocol_version == "2026-07-28"
        async with Client(listen, mode="auto") as client:
            assert client.protocol_version == "2026-07-28"
            assert (await client.call_tool("add", {"a": 4, "b": 5})).structured_content == {"result": 9}
            progress: list[float] = []

            async def on_progress(value: float, total: float | None, message: str | None) -> None:
                progress.append(value)

            counted = await client.call_tool("count", {"n": 2, "delay": 0.01}, progress_callback=on_progress)
            assert counted.content[0].text == "counted to 2" and progress == [1, 2]
        async with httpx2.AsyncClient() as http:  # malformed posts are refused before anything is forwarded
            for body in (b"7", b'[{"jsonrpc":"2.0","id":5,"method":"ping"},7]', b"[]"):
                reply = await http.post(listen, content=body, headers={"Content-Type": "application/json"})
                assert reply.status_code == 400 and reply.json()["error"]["code"] == -32600, body
    assert wrapper.stderr is not None and b"Traceback" not in wrapper.stderr.read()
