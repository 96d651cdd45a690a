"""Helpers for tests that attack a real `mcpwatch wrap --listen …` process while a real host keeps using it."""

from __future__ import annotations

import asyncio
import select
import socket
import subprocess
import sys
import time
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx2

from mcpwatch.ports import free_port

from checkout import REPO, mcpwatch_cmd
from waiting import eventually, patience, stop_process
from wraptools import RAW_SERVER

ACCEPT = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}
INIT = {"protocolVersion": "2025-03-26", "capabilities": {}, "clientInfo": {"name": "probe", "version": "1"}}


def rpc(request_id: Any, method: str, params: dict[str, Any] | None = None) -> dict[str, Any]:
    message: dict[str, Any] = {"jsonrpc": "2.0", "id": request_id, "method": method}
    if params is not None:
        message["params"] = params
    return message


@dataclass
class Front:
    url: str
    host: str
    port: int
    process: subprocess.Popen[bytes]
    log: Path
    stderr_path: Path
    headers: dict[str, str] = field(default_factory=dict)  # e.g. the bearer token

    @property
    def stderr(self) -> str:
        return self.stderr_path.read_text(errors="replace")


@asynccontextmanager
async def listening_wrapper(
    tmp_path: Path,
    *wrap_args: str,
    host: str = "127.0.0.1",
    config: str | None = None,
    upstream: list[str] | None = None,
    preexec: Any = None,
):
    """`mcpwatch wrap --log DB --listen http://HOST:PORT/mcp [wrap_args] -- raw_server`, stopped afterwards."""
    port = free_port()
    shown = f"[{host}]" if ":" in host else host
    url = f"http://{shown}:{port}/mcp"
    log = tmp_path / "events.db"
    args = ["--log", str(log), "--listen", url, *wrap_args]
    if config is not None:
        (tmp_path / "mcpwatch.toml").write_text(config)
        args = ["--config", str(tmp_path / "mcpwatch.toml"), *args]
    stderr_path = tmp_path / "wrapper.stderr"
    with open(stderr_path, "wb") as stderr:
        process = subprocess.Popen(
            mcpwatch_cmd("wrap", *args, "--", *(upstream or [sys.executable, RAW_SERVER])),
            cwd=REPO,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=stderr,
            preexec_fn=preexec,
        )
    try:
        _wait_for(process, "127.0.0.1" if host in ("0.0.0.0", "::") else host, port)
        yield Front(url, host, port, process, log, stderr_path)
    finally:
        stop_process(process, patience(10))  # it writes the end of its log first: a test may read it next


def _wait_for(process: subprocess.Popen[bytes], host: str, port: int, timeout: float = 20) -> None:
    deadline = time.monotonic() + patience(timeout)
    while time.monotonic() < deadline and process.poll() is None:
        try:
            socket.create_connection((host, port), timeout=1).close()
            return
        except OSError:
            time.sleep(0.05)
    raise AssertionError(f"the wrapper did not listen on {host}:{port} (exit code {process.poll()})")


class Host:
    """A 2025-era host on the front, over plain HTTP: one session, pings and tool calls answered as JSON."""

    def __init__(self, front: Front) -> None:
        self.front = front
        self.http = httpx2.AsyncClient(timeout=20)
        self.headers = {**ACCEPT, **front.headers}
        self._next = 0
        self.answered = 0

    async def __aenter__(self) -> Host:
        opened = await self.http.post(self.front.url, json=rpc(0, "initialize", INIT), headers=self.headers)
        assert opened.status_code == 200, (opened.status_code, opened.text)
        self.headers["Mcp-Session-Id"] = opened.headers["mcp-session-id"]
        note = {"jsonrpc": "2.0", "method": "notifications/initialized"}
        assert (await self.http.post(self.front.url, json=note, headers=self.headers)).status_code == 202
        return self

    async def __aexit__(self, *exc: Any) -> None:
        await self.http.aclose()

    async def post(self, payload: Any) -> httpx2.Response:
        return await self.http.post(self.front.url, json=payload, headers=self.headers)

    async def ping(self) -> None:
        self._next += 1
        reply = await self.post(rpc(f"p{self._next}", "ping"))
        assert reply.status_code == 200 and reply.json() == {"jsonrpc": "2.0", "id": f"p{self._next}", "result": {}}
        self.answered += 1

    async def keep_pinging(self, stop: asyncio.Event, every: float = 0.05) -> None:
        """Ping until `stop`: every ping must be answered (the attack must not cut this host off)."""
        while not stop.is_set():
            await asyncio.wait_for(self.ping(), 10)
            await asyncio.sleep(every)


@asynccontextmanager
async def served_throughout(host: Host):
    """The host pings all through the block; afterwards at least a few pings were answered, none failed."""
    stop = asyncio.Event()
    before = host.answered
    task = asyncio.ensure_future(host.keep_pinging(stop))
    try:
        yield
        # a few pings answered, however slowly a loaded machine answers them (a failed one ends the pinging task)
        await eventually(lambda: task.done() or host.answered - before >= 3, 30, "three pings answered")
    finally:
        stop.set()
        await task  # re-raises a failed ping
    assert host.answered - before >= 3


def raw_request(port: int, data: bytes, host: str = "127.0.0.1", timeout: float = 10) -> bytes:
    """Send raw bytes, read until the server closes (or `timeout`)."""
    with socket.create_connection((host, port), timeout=timeout) as sock:
        sock.sendall(data)
        chunks = []
        deadline = time.monotonic() + patience(timeout)
        while time.monotonic() < deadline:
            try:
                chunk = sock.recv(65536)
            except TimeoutError:
                break
            if not chunk:
                break
            chunks.append(chunk)
            if b"\r\n\r\n" in b"".join(chunks) and b"content-length: 0" not in b"".join(chunks).lower():
                head, _, body = b"".join(chunks).partition(b"\r\n\r\n")
                length = [line for line in head.lower().split(b"\r\n") if line.startswith(b"content-length:")]
                if length and len(body) >= int(length[0].split(b":")[1]):
                    break
        return b"".join(chunks)


def status_of(raw: bytes) -> int:
    assert raw.startswith(b"HTTP/1.1 "), raw[:200]
    return int(raw.split(b" ", 2)[1])


def post_bytes(path: str, port: int, body: bytes, extra: str = "", host_header: str | None = None) -> bytes:
    host = host_header if host_header is not None else f"127.0.0.1:{port}"
    head = (
        f"POST {path} HTTP/1.1\r\nHost: {host}\r\nContent-Type: application/json\r\n"
        f"Accept: application/json, text/event-stream\r\nContent-Length: {len(body)}\r\n{extra}\r\n"
    )
    return head.encode() + body


def still_open(socks: list[socket.socket]) -> int:
    """How many of `socks` the server has neither closed nor answered (a 408) yet: a look, no wait."""
    poller = select.poll()
    for sock in socks:
        poller.register(sock, select.POLLIN | select.POLLHUP | select.POLLERR)
    return len(socks) - len(poller.poll(0))


def closed(sock: socket.socket) -> bool:
    """Whether the server has closed the connection (after, at most, a 408 saying the request came too slowly)."""
    sock.settimeout(0.5)
    received = b""
    try:
        while chunk := sock.recv(1024):
            received += chunk
    except ConnectionResetError:
        return True
    except TimeoutError:
        return False
    return received == b"" or received.startswith(b"HTTP/1.1 408 ")
