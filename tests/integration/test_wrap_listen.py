"""2026-era `subscriptions/listen` through the wrapper: the acknowledgement and every event of the stream carry the
host's own listen id (upstream they carry the wrapper's), on every transport — a host that does not recognise its id
waits for an acknowledgement that never comes (Claude Code waited ~27 s, then gave up on `list_changed`)."""

from __future__ import annotations

import json
import subprocess
import sys

import anyio
import pytest
from mcp import Client
from mcp.client.subscriptions import ToolsListChanged

from mcpwatch.ports import free_port, wait_for_port

from conftest import REPO, mcpwatch_cmd
from wraptools import SDK_SERVER, wrap_params, wrapped_client

pytestmark = pytest.mark.anyio


@pytest.fixture
def anyio_backend():
    return "asyncio"


async def listen_and_see_a_change(client: Client) -> None:
    assert client.protocol_version == "2026-07-28"
    with anyio.fail_after(5):  # the acknowledgement must be recognised at once, not after a read timeout
        async with client.listen(tools_list_changed=True) as subscription:
            assert subscription.honored.tools_list_changed is True
            assert (await client.call_tool("change_tools", {})).content[0].text == "changed"
            async for event in subscription:
                assert event == ToolsListChanged()
                break


async def test_listen_over_stdio():
    async with wrapped_client([sys.executable, SDK_SERVER], wrap_args=["--no-log"], mode="auto") as client:
        await listen_and_see_a_change(client)


async def test_listen_over_http_front_and_http_upstream():
    up_port, front_port = free_port(), free_port()
    upstream = subprocess.Popen([sys.executable, SDK_SERVER, "http", str(up_port)], stderr=subprocess.DEVNULL)
    listen = f"http://127.0.0.1:{front_port}/mcp"
    wrapper = None
    try:
        wait_for_port(up_port)
        wrapper = subprocess.Popen(
            mcpwatch_cmd("wrap", "--no-log", "--listen", listen, "--url", f"http://127.0.0.1:{up_port}/mcp"),
            cwd=REPO,
            stdin=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        wait_for_port(front_port)
        async with Client(listen, mode="auto") as client:
            await listen_and_see_a_change(client)
    finally:
        for process in (wrapper, upstream):
            if process is not None:
                process.terminate()
                process.wait(10)


async def test_the_acknowledgement_carries_the_hosts_id_on_the_wire(tmp_path):
    # A raw host, so the exact frame is seen: the id is a string the host chose, never the wrapper's integer.
    params = wrap_params([sys.executable, SDK_SERVER], wrap_args=["--no-log"])
    process = await anyio.open_process([params.command, *params.args], env=params.env, cwd=params.cwd)
    meta = {
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientInfo": {"name": "raw", "version": "1"},
        "io.modelcontextprotocol/clientCapabilities": {},
    }
    listen = {
        "jsonrpc": "2.0",
        "id": "listen-a",
        "method": "subscriptions/listen",
        "params": {"notifications": {"toolsListChanged": True}, "_meta": meta},
    }
    try:
        await process.stdin.send((json.dumps(listen) + "\n").encode())
        buffer = b""
        with anyio.fail_after(10):
            while b"\n" not in buffer:
                buffer += await process.stdout.receive()
        ack = json.loads(buffer.split(b"\n", 1)[0])
        assert ack.get("method") == "notifications/subscriptions/acknowledged", ack
        assert ack["params"]["_meta"]["io.modelcontextprotocol/subscriptionId"] == "listen-a"
    finally:
        process.terminate()
        await process.wait()
