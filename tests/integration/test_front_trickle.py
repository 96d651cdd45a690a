"""The trickle attack: hundreds of connections that each send part of a request and then a byte now and then.
A request owed to the front or the operator endpoint is bounded in total time (a head within `head_timeout_s`, a
body at `min_body_kib_s`), so the trickles are disconnected with a 408, and a real host or operator is served
beside them all along: at the connection cap a newcomer closes the quietest trickle, never the other way round.
Loopback only; bounded in count (300 connections) and time (a few seconds)."""

from __future__ import annotations

import asyncio
import socket
import time
from urllib.parse import urlsplit

import pytest
from front_tools import Host, closed, listening_wrapper, post_bytes, served_throughout

from wraptools import Operator, registry_entry

pytestmark = pytest.mark.anyio
TRICKLERS = 300
BOUND_S = 2.0  # head_timeout_s in these tests: a body's grace is the same


def open_tricklers(port: int, head: bytes, count: int) -> list[socket.socket]:
    """`count` connections, each having sent `head` (a request's start) and no more; the rest never comes."""
    socks = []
    for _ in range(count):
        sock = socket.create_connection(("127.0.0.1", port), timeout=10)
        sock.sendall(head)
        socks.append(sock)
    return socks


async def trickle(socks: list[socket.socket], every_s: float, for_s: float) -> int:
    """A byte on every connection still open, every `every_s`, for `for_s` at most; how many are still open."""
    alive = list(socks)
    ends = time.monotonic() + for_s
    while alive and time.monotonic() < ends:
        await asyncio.sleep(every_s)
        for sock in list(alive):
            try:
                sock.send(b"x")
            except OSError:
                alive.remove(sock)
    return len(alive)


def partial_post(port: int, extra: str = "", body_start: bytes = b'{"jsonrpc":"2.0","id":1,') -> bytes:
    """A POST head declaring a 1,000-byte body, and the body's first bytes."""
    return post_bytes("/mcp", port, body_start, extra).replace(
        f"Content-Length: {len(body_start)}".encode(), b"Content-Length: 1000"
    )


@pytest.mark.slow
async def test_300_trickling_connections_are_cut_and_a_host_is_served_beside_them(tmp_path):
    config = f"[front]\nhead_timeout_s = {BOUND_S}\n"
    async with listening_wrapper(tmp_path, config=config) as front, Host(front) as host, served_throughout(host):
        in_bodies = await asyncio.to_thread(open_tricklers, front.port, partial_post(front.port), TRICKLERS - 20)
        head = f"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:{front.port}\r\nX-Slow: ".encode()
        in_heads = await asyncio.to_thread(open_tricklers, front.port, head, 20)
        socks = [*in_bodies, *in_heads]
        attack = asyncio.ensure_future(trickle(socks, every_s=0.5, for_s=4 * BOUND_S + 5))
        async with Host(front) as newcomer:  # at the connection cap (256): a trickle makes room for it
            for _ in range(5):
                await newcomer.ping()
        still_trickling = await attack
        assert still_trickling == 0  # every trickle was cut, though it never stopped sending
        assert all(await asyncio.to_thread(lambda: [closed(s) for s in socks]))
        for sock in socks:
            sock.close()
    assert "Traceback" not in front.stderr


@pytest.mark.slow
async def test_trickling_operator_clients_holding_the_token_are_cut(tmp_path, isolated_state):
    config = f"[operator]\nhead_timeout_s = {BOUND_S}\n"
    async with listening_wrapper(tmp_path, config=config) as front:
        entry = await asyncio.to_thread(registry_entry, isolated_state)
        operator = Operator(entry)
        port = urlsplit(entry["operator_url"]).port or 0
        token = f"Authorization: Bearer {entry['token']}\r\n"
        socks = await asyncio.to_thread(open_tricklers, port, partial_post(port, token), 100)  # over the cap (64)
        attack = asyncio.ensure_future(trickle(socks, every_s=0.5, for_s=4 * BOUND_S + 5))
        for _ in range(5):
            assert (await operator.tool("status"))["wrapper"]["pid"] == front.process.pid
        assert await attack == 0
        assert all(await asyncio.to_thread(lambda: [closed(s) for s in socks]))
        for sock in socks:
            sock.close()
    assert "Traceback" not in front.stderr
