"""`mcpwatch watch --serve` under attack from this machine: connections that trickle a request are cut (408) and
the page is served beside them; a page opened over and over runs at most `[console] serve_max_consoles` console
processes (503 beyond, saying so). Loopback only, bounded in count and time."""

from __future__ import annotations

import asyncio
import contextlib
import importlib.util
import socket
import subprocess
import sys
import time
from collections.abc import AsyncIterator
from pathlib import Path

import httpx2
import pytest

from mcpwatch.ports import free_port

from waiting import patience, stop_process

pytestmark = [
    pytest.mark.anyio,
    pytest.mark.skipif(importlib.util.find_spec("textual_serve") is None, reason="textual-serve is not installed"),
]


@contextlib.asynccontextmanager
async def served(tmp_path: Path, config: str) -> AsyncIterator[tuple[subprocess.Popen[str], str, int]]:
    """`mcpwatch watch --serve` on a free port: the process, its URL with the token, the port."""
    (tmp_path / "mcpwatch.toml").write_text(config)
    port = free_port()
    argv = [sys.executable, "-m", "mcpwatch", "watch", "--serve", "--port", str(port)]
    server = subprocess.Popen([*argv, "--config", str(tmp_path / "mcpwatch.toml")], stdout=subprocess.PIPE,
                              stderr=subprocess.STDOUT, text=True, stdin=subprocess.DEVNULL)  # fmt: skip
    try:
        assert server.stdout is not None
        first = await asyncio.to_thread(server.stdout.readline)
        assert first.startswith(f"mcpwatch console on http://127.0.0.1:{port}/?token="), first
        yield server, first.split(" on ", 1)[1].strip(), port
    finally:
        stop_process(server, 15)


def consoles(pid: int) -> int:
    """The serving process's console processes (its children)."""
    found = 0
    for task in Path(f"/proc/{pid}/task").iterdir():
        found += len((task / "children").read_text().split())
    return found


@pytest.mark.slow
async def test_trickling_connections_are_cut_and_the_page_is_served_beside_them(tmp_path):
    async with served(tmp_path, "") as (_server, url, port):

        def trickle() -> tuple[int, float]:
            """200 connections sending a head a byte a second; how many the server left open, and for how long."""
            socks = []
            for _ in range(200):
                sock = socket.create_connection(("127.0.0.1", port), timeout=10)
                sock.sendall(f"GET / HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nX-Slow: ".encode())
                socks.append(sock)
            started = time.monotonic()
            alive = list(socks)
            while alive and time.monotonic() - started < 20:
                time.sleep(1)
                for sock in list(alive):
                    try:
                        sock.send(b"x")
                    except OSError:
                        alive.remove(sock)
            for sock in socks:
                sock.close()
            return len(alive), time.monotonic() - started

        attack = asyncio.ensure_future(asyncio.to_thread(trickle))
        async with httpx2.AsyncClient(timeout=10) as client:
            for _ in range(5):
                assert (await client.get(url)).status_code == 200
                await asyncio.sleep(0.2)
        left, lasted = await attack
        assert left == 0 and lasted < 20  # every trickle cut, none lasting the attack out


@pytest.mark.slow
async def test_a_page_opened_many_times_runs_at_most_the_configured_consoles(tmp_path):
    import aiohttp

    async with served(tmp_path, "[console]\nserve_max_consoles = 2\n") as (server, url, port):
        token = url.split("token=", 1)[1]
        ws_url = f"http://127.0.0.1:{port}/ws?token={token}&width=80&height=24"
        async with aiohttp.ClientSession() as session:
            first = await session.ws_connect(ws_url)
            second = await session.ws_connect(ws_url)
            with pytest.raises(aiohttp.WSServerHandshakeError) as refused:
                await session.ws_connect(ws_url)
            assert refused.value.status == 503
            page = await session.get(url)  # the page itself is still served
            assert page.status == 200
            deadline = time.monotonic() + patience(20)
            while consoles(server.pid) < 2 and time.monotonic() < deadline:
                await asyncio.sleep(0.2)
            assert consoles(server.pid) == 2
            await first.close()
            deadline = time.monotonic() + patience(20)
            while consoles(server.pid) > 1 and time.monotonic() < deadline:
                await asyncio.sleep(0.2)
            third = await session.ws_connect(ws_url)  # room again
            await third.close()
            await second.close()
