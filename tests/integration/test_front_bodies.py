"""Request bodies are bodies: any size up to `[front] max_body_mb` reaches the upstream whether its head and body
arrive in one read or many; only the head is held to `max_header_kb`."""

from __future__ import annotations

import asyncio
import json
import socket
import time

import pytest
from front_tools import Host, listening_wrapper, post_bytes, raw_request, rpc, status_of
from mcp import Client

pytestmark = pytest.mark.anyio


def echo_call(request_id: str, size: int) -> bytes:
    return json.dumps(rpc(request_id, "tools/call", {"name": "echo", "arguments": {"blob": "b" * size}})).encode()


def send_in_pieces(port: int, data: bytes, cuts: list[int]) -> bytes:
    """Send `data` cut at the offsets given, pausing between the pieces so each arrives as a read of its own; the
    reply until the server closes (the request says `Connection: close`)."""
    data = data.replace(b"\r\n\r\n", b"\r\nConnection: close\r\n\r\n", 1)
    with socket.create_connection(("127.0.0.1", port), timeout=30) as sock:
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        start = 0
        for cut in [*cuts, len(data)]:
            sock.sendall(data[start:cut])
            start = cut
            time.sleep(0.05)
        chunks = []
        while chunk := sock.recv(1 << 20):
            chunks.append(chunk)
    return b"".join(chunks)


async def test_large_bodies_pass_in_one_read_or_many(tmp_path):
    async with listening_wrapper(tmp_path) as front, Host(front) as host:
        session = f"Mcp-Session-Id: {host.headers['Mcp-Session-Id']}\r\n"
        for size in (70 * 1024, 1024 * 1024, 8 * 1024 * 1024):  # one wrapper, each size in turn
            data = post_bytes("/mcp", front.port, echo_call("whole", size), session)
            head_end = data.index(b"\r\n\r\n") + 4 + len(b"Connection: close\r\n")
            for cuts in ([], [head_end - 3], [head_end + 10], [head_end + 100, head_end + 70_000], [len(data) - 1]):
                raw = await asyncio.to_thread(send_in_pieces, front.port, data, cuts)
                assert status_of(raw) == 200, (size, cuts, raw[:300])
                assert raw.count(b"b" * 1000) >= size // 1000 - 1, (size, cuts)  # the argument came back whole
    assert "Traceback" not in front.stderr


async def test_the_head_alone_is_held_to_max_header_kb(tmp_path):
    async with listening_wrapper(tmp_path, config="[front]\nmax_header_kb = 8\n") as front, Host(front) as host:
        session = f"Mcp-Session-Id: {host.headers['Mcp-Session-Id']}\r\n"
        big_body = post_bytes("/mcp", front.port, echo_call("big", 200 * 1024), session)
        assert status_of(await asyncio.to_thread(raw_request, front.port, big_body, timeout=30)) == 200
        big_head = post_bytes("/mcp", front.port, echo_call("small", 10), session + f"X-Pad: {'p' * 9000}\r\n")
        raw = await asyncio.to_thread(raw_request, front.port, big_head)
        assert status_of(raw) == 431 and b"8 KiB" in raw


async def test_the_python_sdk_passes_a_large_argument(tmp_path):
    async with listening_wrapper(tmp_path) as front, Client(front.url, mode="legacy") as client:
        for size in (1024 * 1024, 8 * 1024 * 1024):
            result = await client.call_tool("echo", {"blob": "s" * size})
            assert not result.is_error, (size, result.content[0].text[:300])
            assert json.loads(result.content[0].text)["args"]["blob"] == "s" * size, size
