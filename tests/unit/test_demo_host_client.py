"""The demo host's own MCP client (`host_client.PipeClient`), against a scripted server over two pipes; and the
host, driven to its first calls, without the MCP SDK (half a second of CPU before the first call, seconds at load)."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import pytest

from mcpwatch.demo.host_client import PROTOCOL_VERSION, CallFailed, PipeClient


class ScriptedServer:
    """Answers on a thread: initialize, tools/call (with a progress notification first when asked, and a ping
    and a sampling request of its own before its first answer); `error` as a tool name gets a JSON-RPC error."""

    def __init__(self) -> None:
        host_to_server, self.host_write = os.pipe()
        self.host_read, server_to_host = os.pipe()
        self.inbox = os.fdopen(host_to_server, "rb")
        self.outbox = os.fdopen(server_to_host, "wb", 0)
        self.received: list[dict[str, Any]] = []
        self.eof = threading.Event()
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    def _send(self, message: dict[str, Any]) -> None:
        self.outbox.write(json.dumps(message).encode() + b"\n")

    def _serve(self) -> None:
        try:
            self._answer()
        except BrokenPipeError:  # the host closed while an answer was on its way
            pass
        finally:
            self.eof.set()

    def _answer(self) -> None:
        asked = False
        for line in self.inbox:
            message = json.loads(line)
            self.received.append(message)
            method, params = message.get("method"), message.get("params") or {}
            if method == "initialize":
                self._send({"jsonrpc": "2.0", "id": message["id"], "result": {"protocolVersion": PROTOCOL_VERSION}})
            elif method == "tools/call" and params["name"] == "error":
                self._send({"jsonrpc": "2.0", "id": message["id"], "error": {"code": -32000, "message": "no"}})
            elif method == "tools/call":
                if not asked:
                    asked = True
                    self._send({"jsonrpc": "2.0", "id": "s1", "method": "ping"})
                    self._send({"jsonrpc": "2.0", "id": "s2", "method": "sampling/createMessage", "params": {}})
                token = (params.get("_meta") or {}).get("progressToken")
                if token is not None:
                    self._send({"jsonrpc": "2.0", "method": "notifications/progress",
                                "params": {"progressToken": token, "progress": 1, "total": 2}})  # fmt: skip
                name = params["name"]
                models = {"models": [{"id": "m1"}, {"id": "m2"}]} if name == "council.models.list" else {}
                result = {"content": [], "isError": name == "tool_error", "structuredContent": models}
                self._send({"jsonrpc": "2.0", "id": message["id"], "result": result})


async def _session(server: ScriptedServer) -> None:
    client = PipeClient(server.host_read, server.host_write)
    assert await client.start({"name": "host", "version": "1"}) == {"protocolVersion": PROTOCOL_VERSION}
    progress: list[dict[str, Any]] = []

    async def on_progress(params: dict[str, Any]) -> None:
        progress.append(params)

    result = await client.call_tool("consult", {"q": 1}, on_progress)
    assert result["isError"] is False and progress == [{"progressToken": 2, "progress": 1, "total": 2}]
    assert (await client.call_tool("tool_error", {}))["isError"] is True
    with pytest.raises(CallFailed, match="-32000: no"):
        await client.call_tool("error", {})
    client.close()


def test_the_host_client_speaks_the_legacy_handshake_and_tool_calls() -> None:
    server = ScriptedServer()
    asyncio.run(_session(server))
    assert server.eof.wait(10)  # close() is the server's EOF
    first, initialized = server.received[:2]
    assert first["method"] == "initialize" and first["params"] == {
        "protocolVersion": PROTOCOL_VERSION, "capabilities": {}, "clientInfo": {"name": "host", "version": "1"}
    }  # fmt: skip
    assert initialized == {"jsonrpc": "2.0", "method": "notifications/initialized"}
    replies = {m["id"]: m for m in server.received if "method" not in m}
    assert replies["s1"] == {"jsonrpc": "2.0", "id": "s1", "result": {}}  # a ping is answered
    assert replies["s2"]["error"]["code"] == -32601  # what the host does not offer is refused, not left hanging
    calls = [m["params"] for m in server.received if m.get("method") == "tools/call"]
    assert "_meta" in calls[0] and "_meta" not in calls[1]  # a progress token only when someone listens


def test_a_call_open_when_the_server_goes_away_fails_instead_of_hanging() -> None:
    async def scenario() -> None:
        host_to_server, host_write = os.pipe()
        host_read, server_to_host = os.pipe()
        client = PipeClient(host_read, host_write)
        os.write(server_to_host, json.dumps({"jsonrpc": "2.0", "id": 1, "result": {}}).encode() + b"\n")
        await client.start({"name": "host", "version": "1"})
        call = asyncio.ensure_future(client.call_tool("slow", {}))
        await asyncio.sleep(0)
        os.close(server_to_host)  # the server exits without answering
        with pytest.raises(CallFailed, match="closed"):
            await asyncio.wait_for(call, 10)
        client.close()
        os.close(host_to_server)

    asyncio.run(scenario())


DRIVE = """
import asyncio, sys
sys.path.insert(0, {here!r})
from test_demo_host_client import ScriptedServer
from mcpwatch.demo.driver import DriverStats, drive

async def main():
    server, stop, stats = ScriptedServer(), asyncio.Event(), DriverStats()
    task = asyncio.ensure_future(drive((server.host_read, server.host_write), stop, stats=stats))
    while stats.calls["admin"] < 1 or sum(n for k, n in stats.calls.items() if ":" in k) < 2:
        await asyncio.sleep(0.01)
    stop.set()
    await asyncio.wait_for(task, 10)
    assert server.eof.wait(10)
    sdk = [m for m in ("mcp", "mcp_types") if m in sys.modules]
    print(stats.calls["admin"] > 0, stats.calls["progress"] > 0, stats.errors, sdk)

asyncio.run(main())
"""


def test_the_demo_host_calls_the_council_without_the_mcp_sdk() -> None:
    code = DRIVE.format(here=str(Path(__file__).parent))
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split("\n")[0] == "True True [] []"  # a model disabled, progress asked for, no error, no SDK


HOSTILE = [
    b'{"jsonrpc":"2.0","method":"notifications/progress","params":[2]}\n',  # params not an object
    b'{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":2,"progress":1}}\n'[:-2] + b"\n",
    b"\xff\xfe\x00\x1b[2J not UTF-8\n",
    b'{"jsonrpc":"2.0","id":2,"result":' + b"[" * 5000 + b"\n",  # too deep for json
    b'{"x":"' + b"a" * 4096 + b'"}\n',  # over the line limit
    b'{"jsonrpc":"2.0","id":[2],"result":{}}\n',  # an id that is no request's
]


@pytest.mark.parametrize("frame", HOSTILE, ids=range(len(HOSTILE)))
def test_a_hostile_frame_from_the_wrapper_side_is_skipped_and_the_call_still_answered(frame: bytes) -> None:
    # The reader ended on the first frame it could not take (a progress whose params were a list, a line over the
    # limit), leaving every open call, and so the demo's host, waiting forever.
    async def scenario() -> dict[str, Any]:
        host_to_server, host_write = os.pipe()
        host_read, server_to_host = os.pipe()
        client = PipeClient(host_read, host_write, line_limit=1024)
        os.write(server_to_host, json.dumps({"jsonrpc": "2.0", "id": 1, "result": {}}).encode() + b"\n")
        await client.start({"name": "host", "version": "1"})
        seen: list[dict[str, Any]] = []

        async def on_progress(params: dict[str, Any]) -> None:
            seen.append(params)

        call = asyncio.ensure_future(client.call_tool("slow", {}, on_progress))
        await asyncio.sleep(0)
        os.write(server_to_host, frame + json.dumps({"jsonrpc": "2.0", "id": 2, "result": {"ok": 1}}).encode() + b"\n")
        try:
            return await asyncio.wait_for(call, 10)  # a hang detector only: the answer is already in the pipe
        finally:
            client.close()
            os.close(host_to_server)
            os.close(server_to_host)

    assert asyncio.run(scenario()) == {"ok": 1}
