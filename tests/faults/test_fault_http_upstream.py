"""A Streamable HTTP upstream that loses its session, then is killed: the host gets clear errors at once, the
wrapper reconnects with a new generation, and answers that still arrive on the old generation's streams are dropped
and counted (as tombstone hits while the tombstone lives, as stale_generation after it expired)."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from faultkit import FIXTURES, raw_host, read_jsonl, registry_of, session_events, text_of

from mcpwatch.ports import free_port

from waiting import eventually, patience, wait_for_port
from wraptools import Operator

pytestmark = pytest.mark.anyio

HTTP_SERVER = str(FIXTURES / "fault_http_server.py")


@contextlib.contextmanager
def http_server(port: int, log: Path) -> Iterator[subprocess.Popen[bytes]]:
    env = {**os.environ, "FAULT_HTTP_LOG": str(log)}
    process = subprocess.Popen([sys.executable, HTTP_SERVER, str(port)], env=env, stderr=subprocess.DEVNULL)
    try:
        wait_for_port(port)
        yield process
    finally:
        if process.poll() is None:
            process.kill()
        process.wait(10)


def noted(log: Path, what: str) -> list[dict[str, Any]]:
    """What the server noted of its `slow` calls: each one it began ("started") or answered ("answered")."""
    return [record for record in read_jsonl(log) if what in record]


@pytest.mark.slow
async def test_http_upstream_loss_drops_late_answers_from_the_old_generation(
    tmp_path: Path, isolated_state: Path
) -> None:
    port = free_port()
    server_log = tmp_path / "http.jsonl"
    log = tmp_path / "events.db"
    config = tmp_path / "mcpwatch.toml"
    # tombstone TTL = budget 1 s + init 0.5 s + backoff max 0.5 s + epsilon 0 = 2 s
    config.write_text("[tombstones]\ninit_timeout_s = 0.5\nbackoff_max_s = 0.5\nepsilon_s = 0\n")
    env = {"MCPWATCH_TOOL_CALL_DEADLINE_SEC": "1"}
    url = f"http://127.0.0.1:{port}/mcp"
    with http_server(port, server_log) as server:
        wrap_args = ["--config", str(config), "--url", url]
        async with raw_host([], tmp_path, log=log, env=env, wrap_args=wrap_args) as host:
            await host.initialize()
            operator = Operator(await registry_of(isolated_state, host.pid))
            within_ttl = host.request("tools/call", {"name": "slow", "arguments": {"seconds": 1.0}})
            after_ttl = host.request("tools/call", {"name": "slow", "arguments": {"seconds": 2.8}})
            await host.wait_until(lambda: len(noted(server_log, "started")) == 2, 10, "both calls at the server")
            assert text_of(await host.tool("expire")) == "every session has ended"
            # Its POST gets 404: the session, and the generation, is gone. The server never saw it, so it goes
            # again on the new session; the calls the old session held are lost with it.
            resent = await host.tool("echo", {"n": 1}, timeout=10)
            assert json.loads(text_of(resent)) == {"n": 1}
            errors = [await asyncio.wait_for(within_ttl, patience(2)), await asyncio.wait_for(after_ttl, patience(2))]
            for reply in errors:  # told of the loss, not cut at the 1 s deadline (whose words differ)
                assert reply["result"]["isError"] is True and "ended its session (HTTP 404)" in text_of(reply)
            echo = await host.tool("echo", {"n": 2}, timeout=10)  # after the reconnect, with a new session
            assert json.loads(text_of(echo)) == {"n": 2}
            assert (await operator.tool("status"))["wrapper"]["upstream"]["generation"] == 2

            await host.wait_until(lambda: len(noted(server_log, "answered")) >= 2, 10, "both late answers written")

            async def both_dropped() -> dict | None:  # written by the server, then read (and dropped) by the wrapper
                status = await operator.tool("status")
                counters = status["counters"]
                return status if counters["late_dropped"] + counters["unknown_dropped"] >= 2 else None

            status = await eventually(both_dropped, 10, "both late answers dropped")
            assert status["counters"]["late_dropped"] == 1  # the 1 s answer: its tombstone still lived
            assert status["counters"]["unknown_dropped"] == 1  # the 2.8 s answer: recognised by its generation

            # now kill the server outright, mid-call, and bring it back on the same port
            in_flight = host.request("tools/call", {"name": "slow", "arguments": {"seconds": 30}})
            await host.wait_until(lambda: len(noted(server_log, "started")) == 3, 10, "the call at the server")
            server.send_signal(signal.SIGKILL)
            reply = await asyncio.wait_for(in_flight, patience(2))
            assert reply["result"]["isError"] is True and "unreachable" in text_of(reply)  # not the deadline's words
            server.wait(5)
            with http_server(port, server_log):
                echo = await host.tool("echo", {"n": 3}, timeout=15)
                assert json.loads(text_of(echo)) == {"n": 3}
                status = await operator.tool("status")
                assert status["wrapper"]["upstream"]["state"] == "ready"
                assert status["wrapper"]["upstream"]["generation"] >= 3
                assert await host.close() == 0
    host.assert_clean_stderr()
    host.assert_clean_stdout()
    assert all(len(replies) == 1 for replies in host.responses.values()), "a request was answered twice"
    events = session_events(log, status["log"]["session_id"])
    hits = [e for e in events if e.kind == "tombstone_hit"]
    assert len(hits) == 1 and hits[0].data["what"] == "response"
    unknown = [e for e in events if e.kind == "unknown_response"]
    assert [e.data["reason"] for e in unknown] == ["stale_generation"]
    starts = {e.data["up_id"]: e.request_id for e in events if e.kind == "request_start"}
    assert starts[hits[0].data["up_id"]] == json.dumps(within_ttl.result()["id"])
    assert starts[unknown[0].data["up_id"]] == json.dumps(after_ttl.result()["id"])
