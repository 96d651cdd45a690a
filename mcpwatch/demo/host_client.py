"""The demo host's MCP client: newline-delimited JSON-RPC over two pipe ends, the legacy handshake, tool calls
with progress tokens. Nothing else: the MCP SDK's client costs half a second of CPU to import, which a loaded
machine turned into four seconds before the demo's first call."""

from __future__ import annotations

import asyncio
import json
import os
from collections.abc import Awaitable, Callable
from typing import Any

PROTOCOL_VERSION = "2025-11-25"  # the newest handshake-era version, as the SDK's legacy mode sends

LINE_LIMIT = 1 << 26  # a longer frame is dropped, as one that is not JSON
ProgressCallback = Callable[[dict[str, Any]], Awaitable[None]]


class CallFailed(Exception):
    """A JSON-RPC error answer, or the connection closed before the answer."""


class PipeClient:
    """One MCP session over `(read_fd, write_fd)`; `close()` closes the write end (the server's EOF)."""

    def __init__(self, read_fd: int, write_fd: int, *, line_limit: int = LINE_LIMIT) -> None:
        self._line_limit = line_limit
        self._read_fd = read_fd
        self._write_fd = write_fd
        self._next_id = 0
        self._pending: dict[int, asyncio.Future[dict[str, Any]]] = {}
        self._progress: dict[int, ProgressCallback] = {}
        self._reader: asyncio.Task[None] | None = None
        self._transport: asyncio.ReadTransport | None = None

    async def start(self, client_info: dict[str, str]) -> dict[str, Any]:
        """Open the pipes and shake hands; returns the server's `initialize` result."""
        loop = asyncio.get_running_loop()
        lines = asyncio.StreamReader(limit=self._line_limit)
        pipe = os.fdopen(self._read_fd, "rb", 0)  # owned by the transport from here: closed with it
        self._transport, _ = await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(lines), pipe)
        self._reader = asyncio.ensure_future(self._read(lines))
        params = {"protocolVersion": PROTOCOL_VERSION, "capabilities": {}, "clientInfo": client_info}
        result = await self.request("initialize", params)
        self._send({"jsonrpc": "2.0", "method": "notifications/initialized"})
        return result if isinstance(result, dict) else {}

    async def request(self, method: str, params: dict[str, Any], on_progress: ProgressCallback | None = None) -> Any:
        self._next_id += 1
        request_id = self._next_id
        if on_progress is not None:
            params = {**params, "_meta": {"progressToken": request_id}}
            self._progress[request_id] = on_progress
        answer = self._pending[request_id] = asyncio.get_running_loop().create_future()
        try:
            self._send({"jsonrpc": "2.0", "id": request_id, "method": method, "params": params})
            message = await answer
        finally:
            self._pending.pop(request_id, None)
            self._progress.pop(request_id, None)
        if "error" in message:
            error = message["error"] if isinstance(message["error"], dict) else {}
            raise CallFailed(f"{error.get('code')}: {error.get('message')}")
        return message.get("result")

    async def call_tool(
        self, name: str, arguments: dict[str, Any], on_progress: ProgressCallback | None = None
    ) -> dict[str, Any]:
        result = await self.request("tools/call", {"name": name, "arguments": arguments}, on_progress)
        return result if isinstance(result, dict) else {}

    def close(self) -> None:
        try:
            os.close(self._write_fd)
        except OSError:
            pass
        if self._reader is not None:
            self._reader.cancel()
        if self._transport is not None:
            self._transport.close()
        for answer in self._pending.values():
            if not answer.done():
                answer.set_exception(CallFailed("the connection closed"))

    def _send(self, message: dict[str, Any]) -> None:
        frame = json.dumps(message, separators=(",", ":")).encode() + b"\n"
        while frame:  # small frames to a reader that always reads: a blocking write returns at once
            frame = frame[os.write(self._write_fd, frame) :]

    async def _read(self, lines: asyncio.StreamReader) -> None:
        """Frames that are not JSON-RPC we can take are skipped; whatever ends the reading fails the open calls
        (a reader that died quietly left the host waiting forever)."""
        try:
            while line := await _next_line(lines):
                try:
                    message = json.loads(line)
                except (ValueError, RecursionError):
                    continue
                if isinstance(message, dict):
                    await self._take(message)
        finally:
            for answer in self._pending.values():
                if not answer.done():
                    answer.set_exception(CallFailed("the connection closed"))

    async def _take(self, message: dict[str, Any]) -> None:
        method = message.get("method")
        if method is None:  # an answer
            answer = self._pending.get(message["id"]) if isinstance(message.get("id"), int) else None
            if answer is not None and not answer.done():
                answer.set_result(message)
        elif method == "notifications/progress":
            params = message.get("params")
            token = params.get("progressToken") if isinstance(params, dict) else None
            callback = self._progress.get(token) if isinstance(token, int) else None
            if callback is not None and isinstance(params, dict):
                await callback(params)
        elif "id" in message:  # a request from the server: a ping is answered, anything else is not offered
            reply: dict[str, Any] = {"jsonrpc": "2.0", "id": message["id"]}
            if method == "ping":
                reply["result"] = {}
            else:
                reply["error"] = {"code": -32601, "message": f"the demo host does not offer {method}"}
            self._send(reply)


async def _next_line(lines: asyncio.StreamReader) -> bytes:
    """The next line; one over the limit is given as an empty frame (skipped), b"" only at the end."""
    try:
        return await lines.readline()
    except ValueError:
        return b"\n"
