"""A plain call's 64 KB answer through `mcpwatch wrap --listen` to a real MCP SDK host, from a real SDK server on
stdio: the front sends it in the upstream's bytes with the host's id (`HttpSession.send_raw`), which for the SDK's
encoding (pydantic writes as orjson does) is byte for byte what the front encoded before. The SDK client reads the
exact text; a raw host's body is checked byte for byte against that encoding, with its own id."""

from __future__ import annotations

import sys
from pathlib import Path

import httpx2
import orjson
import pytest
from mcp import Client
from test_front_hosts_sdk import open_raw, running

from mcpwatch.ports import free_port
from mcpwatch.wrapper.framing import frames

from checkout import mcpwatch_cmd
from wraptools import FIXTURES, first_text

pytestmark = pytest.mark.anyio

SERVER = str(FIXTURES / "large_result_server.py")
SIZE = 65536


def _expected(size: int) -> str:
    unit = 'caf\u00e9 "q" \\ \U0001f600\n'
    return (unit * (size // len(unit) + 1))[:size]


async def test_an_sdk_host_reads_a_64_kb_answer_as_the_front_encoded_it_before(tmp_path: Path) -> None:
    port = free_port()
    wrap = ["--log", str(tmp_path / "log.db"), "--listen", f"http://127.0.0.1:{port}/mcp"]
    async with running(mcpwatch_cmd("wrap", *wrap, "--", sys.executable, SERVER), port) as url:
        async with Client(url, mode="legacy") as client:
            for size in (SIZE, 100):  # spliced, and below `SPLICE_BYTES` encoded again
                assert first_text(await client.call_tool("large", {"size": size})) == _expected(size)
        async with httpx2.AsyncClient(timeout=30) as http:
            headers = await open_raw(http, url, {})
            for host_id in ("h\u00e9-1", 2**53):
                params = {"name": "large", "arguments": {"size": SIZE}}
                call = {"jsonrpc": "2.0", "id": host_id, "method": "tools/call", "params": params}
                reply = await http.post(url, content=orjson.dumps(call), headers=headers)
                assert reply.status_code == 200 and reply.headers["content-type"] == "application/json"
                message = orjson.loads(reply.content)
                assert message["id"] == host_id and message["result"]["content"][0]["text"] == _expected(SIZE)
                assert reply.content == frames.encode(message)  # the bytes the front encoded before
