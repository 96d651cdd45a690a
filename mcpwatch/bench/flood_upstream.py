"""Hostile MCP servers (no SDK) for the flood benchmarks and tests: they send as fast as the wrapper reads.

`python -m mcpwatch.bench.flood_upstream stdio` serves over stdio; `... http PORT` over Streamable HTTP (a raw
HTTP/1.1 server: a framework would be slower than the flood it must produce). Tools:

- `echo`: answers at once (the call whose latency a flood must not spoil);
- `flood(seconds, kind, at_least)`: `kind` "progress" sends progress for the call's token, "message" log
  notifications, without pause for `seconds` (and until `at_least` are sent: a volume however slow the machine),
  then answers;
- `big(mb)`: answers with a text of `mb` MB (a response over the frame cap, its id first);
- `endless(bare)` (HTTP): an event-stream line that never ends (an answer's start, then text; `bare`: text only);
- `close_stdout` (stdio): closes its stdout and keeps running;
- `grandchild(ignore_term)` (stdio): starts a `sleep` in its process group (one that ignores SIGTERM with
  `ignore_term`) and answers with its pid; `exit(code)` exits.

Over stdio every write blocks when the pipe is full (a thread sends the flood), so the server is held back exactly
as far as the wrapper stops reading.
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import threading
import time
from typing import Any

NAMES = ("echo", "flood", "big", "endless", "close_stdout", "grandchild", "exit")
TOOLS = [{"name": n, "description": f"The {n} tool.", "inputSchema": {"type": "object"}} for n in NAMES]
_dumps = json.JSONEncoder(separators=(",", ":")).encode
_PAD = "x" * 120  # a flood message of about 250 bytes, as a real progress line with a message is


def text(request_id: Any, body: str) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": request_id, "result": {"content": [{"type": "text", "text": body}]}}


def flood_message(kind: str, token: Any, step: int) -> dict[str, Any]:
    if kind == "message":
        params: dict[str, Any] = {"level": "info", "data": f"line {step} {_PAD}"}
        return {"jsonrpc": "2.0", "method": "notifications/message", "params": params}
    params = {"progressToken": token, "progress": step, "message": f"step {step} {_PAD}"}
    return {"jsonrpc": "2.0", "method": "notifications/progress", "params": params}


def answer(message: dict[str, Any]) -> dict[str, Any] | None:
    """The immediate answer to a request, or None for tools that answer on their own."""
    method, request_id = message.get("method"), message.get("id")
    params = got if isinstance(got := message.get("params"), dict) else {}
    if method == "initialize":
        result = {
            "protocolVersion": params.get("protocolVersion", "2025-06-18"),
            "capabilities": {"tools": {"listChanged": False}, "logging": {}},
            "serverInfo": {"name": "mcpwatch-flood", "version": "1.0"},
        }
        return {"jsonrpc": "2.0", "id": request_id, "result": result}
    if method == "tools/list":
        return {"jsonrpc": "2.0", "id": request_id, "result": {"tools": TOOLS}}
    if method == "ping":
        return {"jsonrpc": "2.0", "id": request_id, "result": {}}
    if method == "tools/call":
        args = got if isinstance(got := params.get("arguments"), dict) else {}
        name = params.get("name")
        if name == "echo":
            return text(request_id, _dumps(args))
        if name == "big":
            return text(request_id, "b" * int(float(args.get("mb", 20)) * 1024 * 1024))
        return None
    return {"jsonrpc": "2.0", "id": request_id, "error": {"code": -32601, "message": f"Method not found: {method}"}}


# ---------------------------------------------------------------------------------------------------- stdio


class StdioServer:
    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.out = sys.stdout.buffer

    def write(self, message: dict[str, Any]) -> None:
        data = _dumps(message).encode() + b"\n"
        with self.lock:
            try:
                self.out.write(data)
                self.out.flush()
            except (OSError, ValueError):
                pass  # stdout closed on purpose, or the wrapper is gone

    def flood(self, request_id: Any, token: Any, seconds: float, kind: str, at_least: int) -> None:
        end = time.monotonic() + seconds
        step = 0
        while time.monotonic() < end or step < at_least:
            step += 1
            self.write(flood_message(kind, token, step))
        self.write(text(request_id, f"flooded {step}"))

    def handle(self, message: dict[str, Any]) -> None:
        if message.get("id") is None or message.get("method") is None:
            return
        reply = answer(message)
        if reply is not None:
            self.write(reply)
            return
        params = message.get("params") or {}
        args = params.get("arguments") or {}
        name, request_id = params.get("name"), message["id"]
        if name == "flood":
            token = (params.get("_meta") or {}).get("progressToken")
            job = (
                request_id,
                token,
                float(args.get("seconds", 5)),
                str(args.get("kind", "progress")),
                int(args.get("at_least", 0)),
            )
            threading.Thread(target=self.flood, args=job, daemon=True).start()
        elif name == "close_stdout":
            with self.lock:
                self.out.close()
                os.close(1)
        elif name == "grandchild":
            command = ["sh", "-c", "trap '' TERM; exec sleep 3600"] if args.get("ignore_term") else ["sleep", "3600"]
            child = subprocess.Popen(
                command, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
            )
            self.write(text(request_id, str(child.pid)))
        elif name == "exit":
            os._exit(int(args.get("code", 0)))
        else:
            self.write(text(request_id, f"unknown tool {name}"))


def serve_stdio() -> None:
    server = StdioServer()
    for line in sys.stdin.buffer:
        try:
            message = json.loads(line)
        except ValueError:
            continue
        if isinstance(message, dict):
            server.handle(message)
    os._exit(0)  # the host is gone: flood threads stop with us


# ---------------------------------------------------------------------------------------------------- HTTP


async def _read_request(reader: asyncio.StreamReader) -> tuple[str, dict[str, str], bytes] | None:
    try:
        head = await reader.readuntil(b"\r\n\r\n")
    except (asyncio.IncompleteReadError, asyncio.LimitOverrunError, ConnectionError):
        return None
    lines = head.decode("latin-1").split("\r\n")
    method = lines[0].split(" ", 1)[0]
    headers = {}
    for line in lines[1:]:
        name, _, value = line.partition(":")
        if name:
            headers[name.strip().lower()] = value.strip()
    body = await reader.readexactly(int(headers.get("content-length", "0") or 0))
    return method, headers, body


def _head(status: int, content_type: str, extra: str = "", length: int | None = None) -> bytes:
    size = f"Content-Length: {length}\r\n" if length is not None else "Transfer-Encoding: chunked\r\n"
    return f"HTTP/1.1 {status} X\r\nContent-Type: {content_type}\r\n{size}{extra}\r\n".encode()


async def _chunk(writer: asyncio.StreamWriter, data: bytes) -> None:
    writer.write(b"%x\r\n%s\r\n" % (len(data), data))
    await writer.drain()
    await asyncio.sleep(0)  # drain() does not yield while the socket takes it all: let other calls be answered


async def _sse_call(writer: asyncio.StreamWriter, message: dict[str, Any]) -> None:
    params = message.get("params") or {}
    args = params.get("arguments") or {}
    request_id, name = message["id"], params.get("name")
    writer.write(_head(200, "text/event-stream"))
    if name == "endless":  # an answer whose text never ends (or, `bare`, a line without even a JSON start)
        start = {"jsonrpc": "2.0", "id": request_id, "result": {"content": [{"type": "text", "text": ""}]}}
        await _chunk(writer, b"data: " + (b"" if args.get("bare") else _dumps(start).encode()[:-5]))
        block = b"z" * 65536
        while True:
            await _chunk(writer, block)
    token = (params.get("_meta") or {}).get("progressToken")
    end = time.monotonic() + float(args.get("seconds", 5))
    step, at_least = 0, int(args.get("at_least", 0))
    kind = str(args.get("kind", "progress"))
    while time.monotonic() < end or step < at_least:
        batch = []
        for _ in range(64):
            step += 1
            batch.append(b"event: message\ndata: " + _dumps(flood_message(kind, token, step)).encode() + b"\n\n")
        await _chunk(writer, b"".join(batch))
    await _chunk(writer, b"event: message\ndata: " + _dumps(text(request_id, f"flooded {step}")).encode() + b"\n\n")
    writer.write(b"0\r\n\r\n")


async def _connection(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    session = "extra"
    try:
        while (request := await _read_request(reader)) is not None:
            method, _headers, body = request
            if method != "POST":
                writer.write(_head(405 if method == "GET" else 200, "text/plain", length=0))
                continue
            message = json.loads(body)
            if "id" not in message or "method" not in message:
                writer.write(_head(202, "text/plain", length=0))
                continue
            reply = answer(message)
            if reply is None:
                await _sse_call(writer, message)
                continue
            data = _dumps(reply).encode()
            writer.write(_head(200, "application/json", f"Mcp-Session-Id: {session}\r\n", len(data)) + data)
            await writer.drain()
    except (ConnectionError, asyncio.IncompleteReadError):
        pass
    finally:
        writer.close()


async def serve_http(port: int) -> None:
    server = await asyncio.start_server(_connection, "127.0.0.1", port)
    async with server:
        await server.serve_forever()


if __name__ == "__main__":
    try:
        if sys.argv[1:2] == ["http"]:
            asyncio.run(serve_http(int(sys.argv[2])))
        else:
            serve_stdio()
    except KeyboardInterrupt:
        pass
