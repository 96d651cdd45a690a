"""Helpers for tests that run real `mcpwatch wrap` processes between a real MCP client and a real server."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from contextlib import asynccontextmanager, contextmanager
from pathlib import Path
from typing import Any

import httpx2
from mcp import Client, StdioServerParameters, types

from mcpwatch.events import Event
from mcpwatch.ports import free_port
from mcpwatch.store import EventReader
from mcpwatch.store.db import LogError

from checkout import REPO, mcpwatch_cmd
from waiting import wait_for_port, wait_until

FIXTURES = REPO / "tests" / "fixtures"
RAW_SERVER = str(FIXTURES / "raw_server.py")
SDK_SERVER = str(FIXTURES / "sdk_server.py")
TASK_SERVER = [sys.executable, str(FIXTURES / "task_server.py")]  # the no-op server's noop and slow, without the SDK


def wrap_params(upstream: list[str], *, env: dict[str, str] | None = None, wrap_args: list[str] | None = None):
    """Stdio parameters that start `mcpwatch wrap [wrap_args] -- upstream…` with this test's environment."""
    full_env = {**os.environ, **(env or {})}
    args = ["-m", "mcpwatch", "wrap", *(wrap_args or []), "--", *upstream]
    return StdioServerParameters(command=sys.executable, args=args, env=full_env, cwd=str(REPO))


@asynccontextmanager
async def wrapped_client(upstream: list[str], *, env=None, wrap_args=None, **client_kwargs):
    params = wrap_params(upstream, env=env, wrap_args=wrap_args)
    async with Client(params, mode=client_kwargs.pop("mode", "legacy"), **client_kwargs) as client:
        yield client


def logged_events(log: Path) -> list[Event]:
    """Every event of every session in a live wrapper's log; none while the wrapper has not yet made the file or its
    schema (its writer's thread does that after start, later on a loaded machine)."""
    try:
        with EventReader(log) as reader:
            return [event for session in reader.sessions() for event in reader.events(session.id)]
    except LogError as exc:
        if "no such event log" in str(exc) or "empty" in str(exc):
            return []
        raise


def first_text(result: types.CallToolResult) -> str:
    """The text of a tool result's first content block, which the test expects to be text."""
    block = result.content[0]
    assert isinstance(block, types.TextContent), f"the first block is {block.type}, not text"
    return block.text


def registry_entry(state_dir: Path, timeout: float = 10.0) -> dict[str, Any]:
    """The single running wrapper's registry file (each test has its own state dir), once it is written."""

    def entry() -> dict[str, Any] | None:
        for path in (state_dir / "wrappers").glob("*.json"):
            try:
                return json.loads(path.read_text())
            except ValueError:  # being written
                return None
        return None

    return wait_until(entry, timeout, what="a wrapper to register")


class Operator:
    """A minimal client of the operator endpoint: one JSON-RPC POST per call (stateless server)."""

    def __init__(self, entry: dict[str, Any], token: str | None = None) -> None:
        self.url = entry["operator_url"]
        self.token = entry["token"] if token is None else token
        self._next = 0

    async def post(self, payload: dict[str, Any], headers: dict[str, str] | None = None) -> httpx2.Response:
        base = {
            "Accept": "application/json, text/event-stream",
            "Content-Type": "application/json",
            "MCP-Protocol-Version": "2025-06-18",
        }
        if self.token:
            base["Authorization"] = f"Bearer {self.token}"
        async with httpx2.AsyncClient(timeout=30) as http:
            return await http.post(self.url, json=payload, headers={**base, **(headers or {})})

    async def call(self, tool: str, **arguments: Any) -> dict[str, Any]:
        self._next += 1
        reply = await self.post(
            {
                "jsonrpc": "2.0",
                "id": self._next,
                "method": "tools/call",
                "params": {"name": tool, "arguments": arguments},
            }
        )
        assert reply.status_code == 200, reply.text
        return reply.json()["result"]

    async def tool(self, tool: str, **arguments: Any) -> dict[str, Any]:
        result = await self.call(tool, **arguments)
        assert not result.get("isError"), result
        return result["structuredContent"]


@contextmanager
def sdk_server_behind_http_front() -> Iterator[tuple[str, str, subprocess.Popen[bytes]]]:
    """The SDK fixture server over Streamable HTTP and `mcpwatch wrap --listen … --url …` in front of it:
    (the front's URL, the server's own URL, the wrapper process, whose stderr is piped)."""
    up_port, front_port = free_port(), free_port()
    direct, front = f"http://127.0.0.1:{up_port}/mcp", f"http://127.0.0.1:{front_port}/mcp"
    upstream = subprocess.Popen([sys.executable, SDK_SERVER, "http", str(up_port)], stderr=subprocess.DEVNULL)
    wrapper = None
    try:
        wait_for_port(up_port)
        wrapper = subprocess.Popen(
            mcpwatch_cmd("wrap", "--no-log", "--listen", front, "--url", direct),
            cwd=REPO,
            stdin=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
        )
        wait_for_port(front_port)
        yield front, direct, wrapper
    finally:
        for process in (wrapper, upstream):
            if process is not None:
                process.terminate()
                process.wait(10)


class StdioTaskHost:
    """A host with tasks speaking JSON-RPC lines to `mcpwatch wrap --config CONFIG [extra…]` over the task server
    (`tests/fixtures/task_server.py`, the no-op server's tools):
    2025-11-25 with `initialize` (clientInfo `name`), or the 2026 era (`modern`: no initialize, each request names
    its host and declares the tasks extension itself)."""

    def __init__(self, config: Path, *extra: str, name: str = "task-host", modern: bool = False) -> None:
        command = mcpwatch_cmd("wrap", "--config", str(config), *extra, "--", *TASK_SERVER)
        self.proc = subprocess.Popen(
            command, cwd=REPO, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE
        )
        self.next_id = 0
        if modern:
            return
        tasks: dict[str, Any] = {"tasks": {"list": {}, "cancel": {}, "requests": {}}}
        init = {"protocolVersion": "2025-11-25", "capabilities": tasks, "clientInfo": {"name": name}}
        self.call("initialize", init)
        self.send({"jsonrpc": "2.0", "method": "notifications/initialized"})

    def send(self, message: dict[str, Any]) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(json.dumps(message).encode() + b"\n")
        self.proc.stdin.flush()

    def call(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        self.next_id += 1
        self.send({"jsonrpc": "2.0", "id": self.next_id, "method": method, "params": params})
        assert self.proc.stdout is not None
        while True:
            line = self.proc.stdout.readline()
            assert line, "the wrapper closed its stdout"
            message = json.loads(line)
            if message.get("id") == self.next_id and "method" not in message:
                return message

    def close(self) -> str:
        """Stop the wrapper (its host closes stdin); its stderr."""
        assert self.proc.stdin is not None and self.proc.stderr is not None
        self.proc.stdin.close()
        self.proc.wait(timeout=30)
        return self.proc.stderr.read().decode(errors="replace")
