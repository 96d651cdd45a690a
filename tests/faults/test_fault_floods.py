"""Upstreams that send as fast as they can, over stdio and HTTP, against a host that reads and one that does not:
the wrapper's memory stays bounded (the upstream is not read while the host is behind), progress for one token is
coalesced to the latest while it waits, nothing else is dropped, and a never-ending event-stream line is answered."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
import time
from pathlib import Path

import pytest
from faultkit import raw_host, registry_of, text_of

from mcpwatch.bench.flood import FLOOD_SERVER, TARGET_RSS_MB, run_case
from mcpwatch.ports import free_port

from waiting import sooner_than, wait_for_port
from wraptools import Operator

SECONDS = 3.0
# a flood the host does not read must fill its share (4 MB) however slowly a loaded machine sends it: ~10 MB
FILLS_THE_SHARE = 40_000
SHORT_S = 1.0  # where no share must be filled: progress coalesces from its first note, echoes answer at once


def flooded(figures: dict) -> int:
    """How many notifications the server sent (its answer says)."""
    assert figures["flood_answered"], figures
    return int(figures["flood_answer"].split()[1])


@pytest.mark.slow
def test_a_host_that_does_not_read_a_log_flood_pauses_the_upstream_and_loses_nothing() -> None:
    figures = run_case("stdio", "message", reading=False, seconds=SECONDS, at_least=FILLS_THE_SHARE)
    assert figures["peak_rss_mb"] <= TARGET_RSS_MB, figures
    held = figures["wrapper_at_flood_end"]
    assert held["upstream_reading_paused"] is True and held["backpressure"]["paused"] is True, held
    assert 4 * 2**20 <= held["backpressure"]["unsent_bytes"] <= 8 * 2**20, held  # the mark, and a read's worth
    assert figures["notifications_read"] == flooded(figures) > 0  # every message, once the host reads again
    assert figures["upstream_pauses"] >= 1 and figures["progress_coalesced"] == 0


@pytest.mark.slow
def test_a_host_that_does_not_read_a_progress_flood_gets_the_latest_progress_and_the_answer() -> None:
    figures = run_case("stdio", "progress", reading=False, seconds=SHORT_S)
    assert figures["peak_rss_mb"] <= TARGET_RSS_MB, figures
    sent = flooded(figures)
    assert 0 < figures["notifications_read"] < sent / 10, figures  # coalesced while the host did not read
    assert figures["notifications_read"] + figures["progress_coalesced"] == sent  # each one delivered or counted


@pytest.mark.slow
def test_an_http_upstream_flooding_a_host_that_does_not_read_is_paused_too() -> None:
    figures = run_case("http", "message", reading=False, seconds=SECONDS, at_least=FILLS_THE_SHARE)
    assert figures["peak_rss_mb"] <= TARGET_RSS_MB, figures
    assert figures["wrapper_at_flood_end"]["upstream_reading_paused"] is True, figures
    assert figures["notifications_read"] == flooded(figures) > 0


@pytest.mark.slow
def test_calls_go_on_under_a_flood_while_the_host_reads() -> None:
    for transport in ("stdio", "http"):
        figures = run_case(transport, "progress", reading=True, seconds=SHORT_S)
        assert figures["echo_calls"] > 10 and figures["echo_answered"] == figures["echo_calls"], figures
        assert figures["peak_rss_mb"] <= TARGET_RSS_MB and flooded(figures) > 0, figures


@pytest.mark.slow
@pytest.mark.anyio
async def test_an_endless_event_stream_line_is_answered_at_once_with_the_cap(tmp_path: Path) -> None:
    port = free_port()
    server = subprocess.Popen([*FLOOD_SERVER, "http", str(port)], stderr=subprocess.DEVNULL)
    try:
        await asyncio.to_thread(wait_for_port, port)
        wrap_args = ["--url", f"http://127.0.0.1:{port}/mcp"]
        async with raw_host([], tmp_path, wrap_args=wrap_args) as host:
            await host.initialize()
            for arguments in ({}, {"bare": True}):  # its id at its start; none (the POST's request is the one)
                started = time.monotonic()
                reply = await host.tool("endless", arguments, timeout=20)
                took = time.monotonic() - started
                error = reply["error"]
                assert error["code"] == -32603 and "over the frame limit of 16 MB" in error["message"], reply
                # refused when the frame passes the limit, not at the host's 20 s timeout (a generous bound)
                assert "[limits] max_frame_mb" in error["message"] and took < sooner_than(20, 15), (took, reply)
            echo = await host.tool("echo", {"after": "endless"})
            assert text_of(echo) == '{"after":"endless"}'
            with open(f"/proc/{host.pid}/status") as status:
                peak = next(int(line.split()[1]) for line in status if line.startswith("VmHWM")) / 1024
            assert peak <= TARGET_RSS_MB, peak
            assert await host.close() == 0
        host.assert_clean_stderr()
    finally:
        server.terminate()
        server.wait()


@pytest.mark.slow
@pytest.mark.anyio
async def test_an_http_host_that_does_not_read_its_stream_holds_the_wrapper_bounded(
    tmp_path: Path, isolated_state: Path
) -> None:
    """The HTTP front: a host opens a progress-flooding call's event stream and reads nothing for the whole flood.
    What waits for it stays bounded (its progress coalesced to the latest), and once it reads, the latest progress
    and the answer arrive; every progress notification was either delivered or counted as coalesced."""
    port = free_port()
    listen = f"http://127.0.0.1:{port}/mcp"
    argv = [sys.executable, "-m", "mcpwatch", "wrap", "--no-log", "--listen", listen, "--", *FLOOD_SERVER, "stdio"]
    wrapper = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        await asyncio.to_thread(wait_for_port, port)
        session = await _http_initialize(port)
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        arguments = {"seconds": SHORT_S, "kind": "progress"}
        call = {"jsonrpc": "2.0", "id": 9, "method": "tools/call"}
        call["params"] = {"name": "flood", "arguments": arguments, "_meta": {"progressToken": "slow"}}
        writer.write(_post(port, json.dumps(call).encode(), session))
        await writer.drain()
        await asyncio.sleep(SHORT_S + 0.5)  # the whole flood, not a byte read
        with open(f"/proc/{wrapper.pid}/status") as proc:
            peak = next(int(line.split()[1]) for line in proc if line.startswith("VmHWM")) / 1024
        assert peak <= TARGET_RSS_MB, peak
        body = bytearray()
        while b'"id":9' not in body[-400:]:
            chunk = await asyncio.wait_for(reader.read(1 << 20), 30)
            assert chunk, "the stream ended before the answer"
            body += chunk
        answer = json.loads(bytes(body).rsplit(b"data: ", 1)[1].split(b"\n", 1)[0])
        sent = int(answer["result"]["content"][0]["text"].split()[1])
        delivered = bytes(body).count(b'"notifications/progress"')
        operator = Operator(await registry_of(isolated_state, wrapper.pid))
        counters = (await operator.tool("status"))["counters"]
        assert 0 < delivered < sent / 10 and delivered + counters["progress_coalesced"] == sent, (delivered, sent)
        writer.close()
    finally:
        wrapper.terminate()
        wrapper.wait(15)


def _post(port: int, body: bytes, session: str | None) -> bytes:
    head = [
        "POST /mcp HTTP/1.1",
        f"Host: 127.0.0.1:{port}",
        "Content-Type: application/json",
        "Accept: application/json, text/event-stream",
        f"Content-Length: {len(body)}",
    ]
    if session:
        head.append(f"Mcp-Session-Id: {session}")
    return ("\r\n".join(head) + "\r\n\r\n").encode() + body


async def _http_initialize(port: int) -> str:
    """initialize and initialized over the front; returns the session id."""
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    init = {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "slow-host", "version": "1"}}
    request = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": init}
    writer.write(_post(port, json.dumps(request).encode(), None))
    await writer.drain()
    head = (await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), 30)).decode("latin-1").lower()
    session = head.split("mcp-session-id:", 1)[1].split("\r\n", 1)[0].strip()
    length = int(head.split("content-length:", 1)[1].split("\r\n", 1)[0])
    await reader.readexactly(length)
    writer.write(_post(port, json.dumps({"jsonrpc": "2.0", "method": "notifications/initialized"}).encode(), session))
    await writer.drain()
    await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), 30)
    writer.close()
    return session
