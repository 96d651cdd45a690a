"""The wrapper is transparent: an ordinary SDK server behind `mcpwatch wrap` behaves as it does directly."""

from __future__ import annotations

import sys

import pytest
from mcp import Client, StdioServerParameters

from wraptools import SDK_SERVER, wrapped_client

pytestmark = pytest.mark.anyio


@pytest.mark.slow
@pytest.mark.filterwarnings("ignore:ping is removed")  # a legacy-era session still pings
async def test_tools_progress_resources_prompts_pass_through_unchanged():
    direct = StdioServerParameters(command=sys.executable, args=[SDK_SERVER])
    async with Client(direct, mode="legacy") as client:
        direct_tools = await client.list_tools()
        direct_info = client.server_info
    seen: list[tuple[float, float | None, str | None]] = []

    async def on_progress(progress: float, total: float | None, message: str | None) -> None:
        seen.append((progress, total, message))

    async with wrapped_client([sys.executable, SDK_SERVER], wrap_args=["--no-log"]) as client:
        assert client.server_info.name == direct_info.name == "sdk-fixture"
        tools = await client.list_tools()
        assert [t.model_dump() for t in tools.tools] == [t.model_dump() for t in direct_tools.tools]
        added = await client.call_tool("add", {"a": 2, "b": 40})
        assert added.structured_content == {"result": 42}
        counted = await client.call_tool("count", {"n": 3, "delay": 0.01}, progress_callback=on_progress)
        assert counted.content[0].text == "counted to 3"
        assert seen == [(1, 3, "step 1/3"), (2, 3, "step 2/3"), (3, 3, "step 3/3")]
        resources = await client.list_resources()
        assert [str(r.uri) for r in resources.resources] == ["fixture://greeting"]
        read = await client.read_resource("fixture://greeting")
        assert read.contents[0].text == "hello"
        prompts = await client.list_prompts()
        assert [p.name for p in prompts.prompts] == ["review"]
        prompt = await client.get_prompt("review", {"code": "x = 1"})
        assert "Review this: x = 1" in prompt.messages[0].content.text
        await client.send_ping()


async def test_modern_era_discover_flow_passes_through():
    async with wrapped_client([sys.executable, SDK_SERVER], wrap_args=["--no-log"], mode="auto") as client:
        assert client.protocol_version == "2026-07-28"
        result = await client.call_tool("add", {"a": 1, "b": 2})
        assert result.structured_content == {"result": 3}


STRICT_SERVER = r"""
import json, sys
# Answers one initialize; a second one on the same connection is an error, as a strict server may make it.
initialized = 0
for line in sys.stdin:
    message = json.loads(line)
    if "id" not in message:
        continue
    reply = {"jsonrpc": "2.0", "id": message["id"]}
    if message["method"] == "initialize":
        initialized += 1
        with open(sys.argv[1], "a") as seen:
            seen.write("initialize\n")
        if initialized > 1:
            reply["error"] = {"code": -32600, "message": "already initialized"}
        else:
            reply["result"] = {
                "protocolVersion": message["params"]["protocolVersion"],
                "capabilities": {"tools": {}},
                "serverInfo": {"name": "strict", "version": "1"},
            }
    elif message["method"] == "tools/list":
        reply["result"] = {"tools": [{"name": "echo", "inputSchema": {"type": "object"}}]}
    elif message["method"] == "tools/call":
        reply["result"] = {"content": [{"type": "text", "text": json.dumps(message["params"]["arguments"])}]}
    else:
        reply["error"] = {"code": -32601, "message": "Method not found"}
    print(json.dumps(reply), flush=True)
"""


async def test_a_strict_server_sees_the_hosts_initialize_exactly_once(tmp_path):
    server, seen = tmp_path / "strict.py", tmp_path / "seen.txt"
    server.write_text(STRICT_SERVER)
    async with wrapped_client([sys.executable, str(server), str(seen)], wrap_args=["--no-log"]) as client:
        assert client.server_info.name == "strict"
        result = await client.call_tool("echo", {"x": 1})
        assert result.content[0].text == '{"x": 1}'
    assert seen.read_text() == "initialize\n"
