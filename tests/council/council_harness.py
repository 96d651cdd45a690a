"""Drive `mcpwatch council` through the MCP SDK client (legacy mode, like Claude Code), with a tap that records every
raw frame the server sends: in this process over the SDK's memory streams (`council`, JSON-RPC frames as on stdio,
without starting an interpreter that imports the SDK for every test), or as a real subprocess over stdio
(`council_process`, for what only the process shows; tests/council/test_council_cli.py starts its own too)."""

from __future__ import annotations

import argparse
import json
import textwrap
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
from mcp import Client, StdioServerParameters
from mcp.client.stdio import stdio_client
from mcp.shared.memory import create_client_server_memory_streams
from mcp.shared.message import SessionMessage

from mcpwatch.commands import council as council_command
from mcpwatch.council.server import build_server
from mcpwatch.council.settings import load_settings

from checkout import REPO, mcpwatch_cmd

COUNCIL_META = "dev.mcpwatch/council"
DEADLINE_META = "dev.mcpwatch/deadline_ms"


class Wire:
    """Raw JSON-RPC frames, as dicts, in the order they crossed the pipe."""

    def __init__(self) -> None:
        self.inbound: list[dict[str, Any]] = []
        self.outbound: list[dict[str, Any]] = []

    def progress(self) -> list[dict[str, Any]]:
        return [m["params"] for m in self.inbound if m.get("method") == "notifications/progress"]

    def progress_for(self, token: Any) -> list[dict[str, Any]]:
        return [p for p in self.progress() if p.get("progressToken") == token]


def _frame(item: SessionMessage) -> dict[str, Any]:
    return item.message.model_dump(by_alias=True, exclude_unset=True, mode="json")


@asynccontextmanager
async def tapped(inner: Any, wire: Wire) -> AsyncIterator[tuple[Any, Any]]:
    async with inner as (inner_read, inner_write):
        up_send, up_recv = anyio.create_memory_object_stream[Any](100)
        down_send, down_recv = anyio.create_memory_object_stream[Any](100)

        async def pump_in() -> None:
            async with up_send:
                async for item in inner_read:
                    if isinstance(item, SessionMessage):
                        wire.inbound.append(_frame(item))
                    await up_send.send(item)

        async def pump_out() -> None:
            async with down_recv:
                async for item in down_recv:
                    wire.outbound.append(_frame(item))
                    await inner_write.send(item)

        async with anyio.create_task_group() as tg:
            tg.start_soon(pump_in)
            tg.start_soon(pump_out)
            try:
                yield up_recv, down_send
            finally:
                tg.cancel_scope.cancel()


def server_params(*args: str, env: dict[str, str] | None = None) -> StdioServerParameters:
    cmd = mcpwatch_cmd("council", *args)
    return StdioServerParameters(command=cmd[0], args=cmd[1:], cwd=str(REPO), env=env or {})


@asynccontextmanager
async def served_in_memory(*args: str, env: dict[str, str] | None = None) -> AsyncIterator[tuple[Any, Any]]:
    """`mcpwatch council ARGS` with the environment `env` alone (as the subprocess gets it), served in this process:
    the client's (read, write) streams."""
    parser = argparse.ArgumentParser(prog="mcpwatch council")
    council_command.configure(parser)
    parsed = parser.parse_args(list(args))
    settings = load_settings(
        dict(env or {}),
        scenario=parsed.scenario,
        backend=parsed.backend,
        time_scale=parsed.time_scale,
        seed=parsed.seed,
        http=None,
        base_url=parsed.base_url,
    )
    server, _ = build_server(settings)
    lowlevel = server._lowlevel_server
    async with (
        create_client_server_memory_streams() as (client_streams, server_streams),
        anyio.create_task_group() as group,
    ):
        group.start_soon(lambda: lowlevel.run(*server_streams, lowlevel.create_initialization_options()))
        try:
            yield client_streams
        finally:
            group.cancel_scope.cancel()


@asynccontextmanager
async def council(*args: str, env: dict[str, str] | None = None) -> AsyncIterator[tuple[Client, Wire]]:
    """A legacy-mode client connected to `mcpwatch council ARGS` in this process, plus the wire tap."""
    wire = Wire()
    async with Client(tapped(served_in_memory(*args, env=env), wire), mode="legacy", read_timeout_seconds=30) as client:
        yield client, wire


@asynccontextmanager
async def council_process(
    *args: str, env: dict[str, str] | None = None, errlog: Path | None = None
) -> AsyncIterator[tuple[Client, Wire]]:
    """A legacy-mode client connected to `mcpwatch council ARGS` over stdio, plus the wire tap."""
    wire = Wire()
    log_file = open(errlog, "w") if errlog else open("/dev/null", "w")  # noqa: SIM115
    try:
        transport = tapped(stdio_client(server_params(*args, env=env), errlog=log_file), wire)
        async with Client(transport, mode="legacy", read_timeout_seconds=30) as client:
            yield client, wire
    finally:
        log_file.close()


async def call(
    client: Client, tool: str, arguments: dict[str, Any] | None = None, **kwargs: Any
) -> tuple[dict[str, Any], bool]:
    """Call a tool; return (structuredContent, isError) after checking the text content is the same JSON."""
    result = await client.call_tool(tool, arguments or {}, **kwargs)
    text = result.content[0].text  # type: ignore[union-attr]
    if result.structured_content is None:
        return {"_text": text}, bool(result.is_error)
    assert json.loads(text) == result.structured_content, "text content and structuredContent differ"
    return result.structured_content, bool(result.is_error)


async def consult(client: Client, query: str, **arguments: Any) -> tuple[dict[str, Any], bool]:
    async def on_progress(progress: float, total: float | None, message: str | None) -> None:
        return None

    return await call(client, "consult_council", {"query": query, **arguments}, progress_callback=on_progress)


def write_scenario(path: Path, body: str) -> str:
    path.write_text(textwrap.dedent(body), encoding="utf-8")
    return str(path)


def statuses(result: dict[str, Any]) -> dict[str, str]:
    return {model: entry["status"] for model, entry in result["model_responses"].items()}


__all__ = [
    "COUNCIL_META",
    "DEADLINE_META",
    "Wire",
    "call",
    "consult",
    "council",
    "council_process",
    "server_params",
    "statuses",
    "write_scenario",
]
