"""Frames over the cap (`[limits] max_frame_mb`, 16 by default) both ways, as real processes: a 20 MB answer from a
stdio or HTTP upstream, and a 20 MB request from the host, are each answered at once with a JSON-RPC error that names
the size and the cap (the id read from the frame's start), where before the call waited for its whole budget (or,
without one, for ever). Raising the cap lets the same answer through."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from faultkit import raw_host, registry_of, text_of

from mcpwatch.ports import free_port

from waiting import sooner_than, wait_for_port
from wraptools import Operator

pytestmark = [pytest.mark.anyio, pytest.mark.slow]
FLOOD_SERVER = [sys.executable, "-m", "mcpwatch.bench.flood_upstream"]
LONG_BUDGET = {"MCPWATCH_TOOL_CALL_DEADLINE_SEC": "60"}


def assert_over_the_cap(reply: dict, request_id: object, cap_mb: int = 16) -> None:
    error = reply["error"]
    assert reply["id"] == request_id and error["code"] == -32603, reply
    message = error["message"]
    assert f"over the frame limit of {cap_mb} MB ([limits] max_frame_mb)" in message, message
    size = int(message.split("at least ", 1)[1].split(" bytes", 1)[0])
    assert size > cap_mb * 2**20, message


async def test_a_20_mb_answer_from_a_stdio_upstream_is_an_error_at_once_and_a_larger_cap_lets_it_through(
    tmp_path: Path, isolated_state: Path
) -> None:
    async with raw_host([*FLOOD_SERVER, "stdio"], tmp_path, env=LONG_BUDGET) as host:
        await host.initialize()
        started = time.monotonic()
        reply = await host.tool("big", {"mb": 20}, timeout=20)
        assert time.monotonic() - started < sooner_than(60, 10)  # not the 60 s budget
        assert_over_the_cap(reply, host._next_id)
        assert text_of(await host.tool("echo", {"still": "here"})) == '{"still":"here"}'
        operator = Operator(await registry_of(isolated_state, host.pid))
        status = await operator.tool("status")
        assert status["counters"]["upstream_garbage"] == 1 and status["in_flight"] == []
        assert await host.close() == 0
    host.assert_clean_stderr()

    config = tmp_path / "mcpwatch.toml"
    config.write_text("[limits]\nmax_frame_mb = 64\n")
    async with raw_host(
        [*FLOOD_SERVER, "stdio"], tmp_path, env=LONG_BUDGET, wrap_args=["--config", str(config)]
    ) as host:
        await host.initialize()
        reply = await host.tool("big", {"mb": 20}, timeout=60)
        assert len(text_of(reply)) == 20 * 2**20
        assert await host.close() == 0


async def test_a_20_mb_answer_from_an_http_upstream_is_an_error_at_once(tmp_path: Path) -> None:
    port = free_port()
    server = subprocess.Popen([*FLOOD_SERVER, "http", str(port)], stderr=subprocess.DEVNULL)
    try:
        await asyncio.to_thread(wait_for_port, port)
        wrap_args = ["--url", f"http://127.0.0.1:{port}/mcp"]
        async with raw_host([], tmp_path, env=LONG_BUDGET, wrap_args=wrap_args) as host:
            await host.initialize()
            started = time.monotonic()
            reply = await host.tool("big", {"mb": 20}, timeout=20)
            assert time.monotonic() - started < sooner_than(60, 10)
            assert_over_the_cap(reply, host._next_id)
            assert text_of(await host.tool("echo", {"n": 1})) == '{"n":1}'
            assert (await host.call("ping", {}))["result"] == {}
            assert await host.close() == 0
        host.assert_clean_stderr()
    finally:
        server.terminate()
        server.wait()


async def test_a_20_mb_host_frame_is_answered_with_its_own_id_and_never_reaches_the_upstream(tmp_path: Path) -> None:
    async with raw_host([*FLOOD_SERVER, "stdio"], tmp_path) as host:
        await host.initialize()
        blob = "q" * (20 * 2**20)
        frame: dict[str, Any] = {
            "jsonrpc": "2.0",
            "id": "huge-1",
            "method": "tools/call",
            "params": {"name": "echo", "arguments": {}},
        }
        frame["params"]["arguments"]["blob"] = blob
        started = time.monotonic()
        host.send(frame)
        reply = await host.next_response("huge-1", timeout=20)
        assert time.monotonic() - started < sooner_than(60, 10)
        assert reply["error"]["code"] == -32600 and "over the frame limit of 16 MB" in reply["error"]["message"]
        assert json.loads(text_of(await host.tool("echo", {"n": 2}))) == {"n": 2}
        # the upstream never saw it: had it, its echo would have come before this later call's (one pipe, in order)
        assert len(host.responses_to("huge-1")) == 1
        assert await host.close() == 0
    host.assert_clean_stderr()
