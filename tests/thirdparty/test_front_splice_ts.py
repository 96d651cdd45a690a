"""A plain call's 64 KB answer from the TypeScript SDK's `server-everything` on stdio, through `mcpwatch wrap
--listen`. That SDK writes `result` before `jsonrpc` and `id`, and its echo's text starts `Echo: `: a colon in a
string, which the splice cannot tell from a key's without reading the strings (`framing.splice`), so the answer is
not proved to hold each key once and reaches the host encoded again, exactly as before. An MCP SDK host reads the
exact text; a raw host's body is orjson's encoding with its own id, not the upstream's order. (The spliced case with
a real SDK server and host: `tests/integration/test_front_splice_sdk.py`.)"""

from __future__ import annotations

from pathlib import Path

import httpx2
import orjson
import pytest
from mcp import Client
from test_front_hosts import ACCEPT, process

from mcpwatch.ports import free_port
from mcpwatch.wrapper.framing import frames

from checkout import mcpwatch_cmd
from wraptools import first_text

pytestmark = pytest.mark.anyio
MESSAGE = ('caf\u00e9 \U0001f600 "quoted" \\ tab\t ' * 2048)[:65536]


async def _open(http: httpx2.AsyncClient, url: str) -> dict[str, str]:
    """A raw host's session: its headers for the calls that follow."""
    params = {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "raw", "version": "1"}}
    init = {"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": params}
    reply = await http.post(url, json=init, headers=ACCEPT)
    headers = {**ACCEPT, "Mcp-Session-Id": reply.headers["mcp-session-id"], "MCP-Protocol-Version": "2025-11-25"}
    await http.post(url, json={"jsonrpc": "2.0", "method": "notifications/initialized"}, headers=headers)
    return headers


async def test_a_ts_servers_64_kb_answer_with_a_colon_in_its_text_is_encoded_as_before(
    npm_bin: Path, tmp_path: Path
) -> None:
    port = free_port()
    wrap = ["--log", str(tmp_path / "log.db"), "--listen", f"http://127.0.0.1:{port}/mcp"]
    async with process(mcpwatch_cmd("wrap", *wrap, "--", str(npm_bin / "mcp-server-everything")), port):
        url = f"http://127.0.0.1:{port}/mcp"
        async with Client(url, mode="legacy") as client:
            assert first_text(await client.call_tool("echo", {"message": MESSAGE})) == f"Echo: {MESSAGE}"
        async with httpx2.AsyncClient(timeout=30) as http:
            headers = await _open(http, url)
            for host_id in ("h\u00e9-1", 7, 2**63 - 1):
                params = {"name": "echo", "arguments": {"message": MESSAGE}}
                call = {"jsonrpc": "2.0", "id": host_id, "method": "tools/call", "params": params}
                reply = await http.post(url, content=orjson.dumps(call), headers=headers)
                assert reply.status_code == 200 and reply.headers["content-type"] == "application/json"
                result = {"content": [{"type": "text", "text": f"Echo: {MESSAGE}"}]}
                assert reply.content == frames.encode({"jsonrpc": "2.0", "id": host_id, "result": result})
