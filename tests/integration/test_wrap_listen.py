"""2026-era `subscriptions/listen` through the wrapper: the acknowledgement and every event of the stream carry the
host's own listen id (upstream they carry the wrapper's), on every transport — a host that does not recognise its id
waits for an acknowledgement that never comes (Claude Code waited ~27 s, then gave up on `list_changed`)."""

from __future__ import annotations

import json
import sys

import anyio
import pytest
from mcp import Client
from mcp.client.subscriptions import ToolsListChanged

from waiting import patience
from wraptools import SDK_SERVER, first_text, sdk_server_behind_http_front, wrap_params, wrapped_client

pytestmark = pytest.mark.anyio


async def listen_and_see_a_change(client: Client) -> None:
    assert client.protocol_version == "2026-07-28"
    # the acknowledgement must be recognised (the client has no read timeout: missed, it would wait for ever)
    with anyio.fail_after(patience(5)):
        async with client.listen(tools_list_changed=True) as subscription:
            assert subscription.honored.tools_list_changed is True
            assert first_text(await client.call_tool("change_tools", {})) == "changed"
            async for event in subscription:
                assert event == ToolsListChanged()
                break


async def test_listen_over_stdio():
    async with wrapped_client([sys.executable, SDK_SERVER], wrap_args=["--no-log"], mode="auto") as client:
        await listen_and_see_a_change(client)


@pytest.mark.slow
async def test_listen_over_http_front_and_http_upstream():
    with sdk_server_behind_http_front() as (front, _direct, _wrapper):
        async with Client(front, mode="auto") as client:
            await listen_and_see_a_change(client)


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
        with anyio.fail_after(patience(10)):
            while b"\n" not in buffer:
                buffer += await process.stdout.receive()
        ack = json.loads(buffer.split(b"\n", 1)[0])
        assert ack.get("method") == "notifications/subscriptions/acknowledged", ack
        assert ack["params"]["_meta"]["io.modelcontextprotocol/subscriptionId"] == "listen-a"
    finally:
        process.terminate()
        await process.wait()
