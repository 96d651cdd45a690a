"""A fast hand-written MCP server over stdio (no SDK) for the wrapper's load and memory benchmarks.

Run as `python -m mcpwatch.bench.raw_upstream`. Tools: `noop` (answers at once) and `sleep(ms)` (answers after
`ms` milliseconds, with one progress notification half way when the call has a progress token, and ignores
cancellation, so a call cut by the wrapper's deadline still gets its late answer, which the wrapper must drop).
The SDK's per-message validation would make the upstream, not the wrapper, the bottleneck of a benchmark; this one
costs a few microseconds per call.
"""

from __future__ import annotations

import asyncio
import json
import sys
from typing import Any

TOOLS = [
    {"name": "noop", "description": "Return at once.", "inputSchema": {"type": "object"}},
    {
        "name": "sleep",
        "description": "Answer after `ms` milliseconds; ignores cancellation.",
        "inputSchema": {"type": "object", "properties": {"ms": {"type": "number"}}},
    },
]
_dumps = json.JSONEncoder(separators=(",", ":")).encode


class Server:
    def __init__(self, out: asyncio.WriteTransport | Any) -> None:
        self.out = out
        self.loop = asyncio.get_running_loop()

    def write(self, message: dict[str, Any]) -> None:
        self.out.write(_dumps(message).encode() + b"\n")

    def text(self, request_id: Any, text: str) -> None:
        self.write({"jsonrpc": "2.0", "id": request_id, "result": {"content": [{"type": "text", "text": text}]}})

    def progress(self, token: Any) -> None:
        params = {"progressToken": token, "progress": 1, "total": 2, "message": "half way"}
        self.write({"jsonrpc": "2.0", "method": "notifications/progress", "params": params})

    def handle(self, line: bytes) -> None:
        try:
            message = json.loads(line)
        except ValueError:
            return
        if not isinstance(message, dict):
            return
        method, request_id = message.get("method"), message.get("id")
        if request_id is None or method is None:
            return  # a notification (initialized, cancelled) or a stray response: nothing to answer
        params = got if isinstance(got := message.get("params"), dict) else {}
        if method == "tools/call":
            args = got if isinstance(got := params.get("arguments"), dict) else {}
            if params.get("name") == "sleep":
                delay = max(0.0, float(args.get("ms", 0))) / 1000
                token = (params.get("_meta") or {}).get("progressToken")
                if token is not None:
                    self.loop.call_later(delay / 2, self.progress, token)
                self.loop.call_later(delay, self.text, request_id, "slept")
            else:
                self.text(request_id, "ok")
        elif method == "initialize":
            version = params.get("protocolVersion", "2025-06-18")
            result = {
                "protocolVersion": version,
                "capabilities": {"tools": {"listChanged": False}},
                "serverInfo": {"name": "mcpwatch-bench-raw", "version": "1.0"},
            }
            self.write({"jsonrpc": "2.0", "id": request_id, "result": result})
        elif method == "tools/list":
            self.write({"jsonrpc": "2.0", "id": request_id, "result": {"tools": TOOLS}})
        elif method == "ping":
            self.write({"jsonrpc": "2.0", "id": request_id, "result": {}})
        else:
            error = {"code": -32601, "message": f"Method not found: {method}"}
            self.write({"jsonrpc": "2.0", "id": request_id, "error": error})


class _Lines(asyncio.Protocol):
    def __init__(self, server: Server, done: asyncio.Future[None]) -> None:
        self.server = server
        self.done = done
        self.buffer = b""

    def data_received(self, data: bytes) -> None:
        lines = (self.buffer + data).split(b"\n")
        self.buffer = lines.pop()
        for line in lines:
            if line.strip():
                self.server.handle(line)

    def connection_lost(self, exc: Exception | None) -> None:
        if not self.done.done():
            self.done.set_result(None)


async def main() -> None:
    loop = asyncio.get_running_loop()
    out, _ = await loop.connect_write_pipe(asyncio.Protocol, sys.stdout.buffer)
    server = Server(out)
    done: asyncio.Future[None] = loop.create_future()
    await loop.connect_read_pipe(lambda: _Lines(server, done), sys.stdin.buffer)
    await done


if __name__ == "__main__":
    try:
        import uvloop
    except ImportError:
        uvloop = None  # type: ignore[assignment]  # the module, or None without uvloop
    try:
        uvloop.run(main()) if uvloop is not None else asyncio.run(main())
    except KeyboardInterrupt:
        pass
