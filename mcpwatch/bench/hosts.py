"""`mcpwatch bench hosts`: the HTTP front's throughput and latency with 1, 4, 16 and 64 hosts.

One `mcpwatch wrap --listen` (event log on, `[front] max_sessions = 64`) over the raw upstream
(`mcpwatch.bench.raw_upstream`); each host is a session of its own (its own upstream process, as on a real front)
on one kept-alive HTTP/1.1 connection, calling `noop` in a closed loop: its next call as soon as the last is
answered. Each stage runs all its hosts for the same time after a warm-up; the figures are calls per second over
all hosts, and the median and p99 latency of a call as a host sees it. In a closed loop the median is the hosts
over the throughput (Little's law), so a last stage paces the most hosts to PACED_CALLS_PER_S in all: the latency
of a front that is not saturated. The hosts are raw asyncio clients (a few
microseconds a call) in this process, so the client is not what is measured.

With `MCPWATCH_BENCH_FRONT_ROOT=DIR` the wrapper runs from another checkout (DIR holding its `mcpwatch` package):
the same hosts against the code before a change, in the same run.
"""

from __future__ import annotations

import asyncio
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from mcpwatch.bench.wrap import _cpu_s
from mcpwatch.ports import free_port, wait_for_port

HELP = "HTTP front: calls/s and latency with 1, 4, 16 and 64 hosts, each its own session (closed loop)"

HOSTS = (1, 4, 16, 64)
STDERR = subprocess.DEVNULL
ROOT_ENV = "MCPWATCH_BENCH_FRONT_ROOT"
PACED_CALLS_PER_S = 400.0  # the last stage again, its hosts paced to this rate in all: a front below saturation
INIT = {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "bench", "version": "1"}}


class RawHost:
    """One host session over one kept-alive connection; `call` returns the latency of one `noop`."""

    def __init__(self, port: int) -> None:
        self.port = port
        self.session = ""
        self.next_id = 0
        self.reader: asyncio.StreamReader | None = None
        self.writer: asyncio.StreamWriter | None = None

    async def open(self) -> None:
        self.reader, self.writer = await asyncio.open_connection("127.0.0.1", self.port)
        await self._post({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": INIT})
        await self._post({"jsonrpc": "2.0", "method": "notifications/initialized"})

    async def _post(self, message: dict[str, Any]) -> bytes:
        assert self.reader is not None and self.writer is not None
        body = json.dumps(message).encode()
        session = f"Mcp-Session-Id: {self.session}\r\n" if self.session else ""
        head = (
            f"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:{self.port}\r\nContent-Type: application/json\r\n"
            f"Accept: application/json, text/event-stream\r\n{session}Content-Length: {len(body)}\r\n\r\n"
        )
        self.writer.write(head.encode() + body)
        try:
            status_and_headers = await self.reader.readuntil(b"\r\n\r\n")
        except asyncio.IncompleteReadError as closed:
            if closed.partial:
                raise
            # the server closed the kept-alive connection before this request (uvicorn: 5 s idle): a new one, as
            # HTTP clients do
            self.writer.close()
            self.reader, self.writer = await asyncio.open_connection("127.0.0.1", self.port)
            self.writer.write(head.encode() + body)
            status_and_headers = await self.reader.readuntil(b"\r\n\r\n")
        length = 0
        for line in status_and_headers.split(b"\r\n"):
            name, _, value = line.partition(b":")
            key = name.strip().lower()
            if key == b"content-length":
                length = int(value)
            elif key == b"mcp-session-id" and not self.session:
                self.session = value.strip().decode()
        if not status_and_headers.startswith(b"HTTP/1.1 2"):
            raise RuntimeError(f"the front answered {status_and_headers[:60]!r}")
        return await self.reader.readexactly(length) if length else b""

    async def call(self) -> float:
        self.next_id += 1
        message = {"jsonrpc": "2.0", "id": self.next_id, "method": "tools/call", "params": {"name": "noop"}}
        started = time.perf_counter()
        await self._post(message)
        return time.perf_counter() - started

    def close(self) -> None:
        if self.writer is not None:
            self.writer.close()


async def _stage(
    hosts: list[RawHost], seconds: float, warmup_s: float, pid: int, paced: float | None = None
) -> dict[str, Any]:
    """All hosts calling for `seconds` after `warmup_s`: closed loop, or with `paced` calls/s over all hosts
    (each host its share, evenly spaced), which is how the latency of a front that is not saturated shows."""
    latencies: list[float] = []
    counting = False
    stop = False
    gap = len(hosts) / paced if paced else 0.0

    async def loop(host: RawHost, offset: float) -> None:
        await asyncio.sleep(offset)
        due = time.perf_counter()
        while not stop:
            took = await host.call()
            if counting:
                latencies.append(took)
            if gap:
                due += gap
                await asyncio.sleep(max(0.0, due - time.perf_counter()))

    tasks = [asyncio.ensure_future(loop(host, gap * n / len(hosts))) for n, host in enumerate(hosts)]
    await asyncio.sleep(warmup_s)
    counting = True
    started, cpu_before = time.perf_counter(), _cpu_s(pid)
    await asyncio.sleep(seconds)
    counting = False
    elapsed, cpu = time.perf_counter() - started, _cpu_s(pid) - cpu_before
    stop = True
    await asyncio.gather(*tasks)
    latencies.sort()
    return {
        "hosts": len(hosts),
        **({"paced_calls_per_s": paced} if paced else {}),
        "calls_per_s": round(len(latencies) / elapsed),
        "median_ms": round(statistics.median(latencies) * 1000, 2),
        "p99_ms": round(latencies[int(len(latencies) * 0.99)] * 1000, 2),
        # the wrapper's own CPU (all its threads) per call: flat while the curve bends means the time goes
        # elsewhere (the upstream processes, the scheduler), not to the front's work per call
        "wrapper_cpu_us_per_call": round(cpu / max(1, len(latencies)) * 1e6, 1),
    }


async def _drive(port: int, pid: int, counts: tuple[int, ...], seconds: float, warmup_s: float) -> list[dict[str, Any]]:
    hosts: list[RawHost] = []
    stages = []
    try:
        for count in counts:
            while len(hosts) < count:
                host = RawHost(port)
                await host.open()
                hosts.append(host)
            await host.call()  # the newest upstream has started
            stages.append(await _stage(hosts, seconds, warmup_s, pid))
        stages.append(await _stage(hosts, seconds, warmup_s, pid, paced=PACED_CALLS_PER_S))
    finally:
        for host in hosts:
            host.close()
    return stages


def curve(root: str | None = None, counts: tuple[int, ...] = HOSTS, seconds: float = 5.0) -> list[dict[str, Any]]:
    """The stages against a fresh wrapper (from `root`'s checkout when given)."""
    port = free_port()
    with tempfile.TemporaryDirectory() as tmp:
        config = Path(tmp) / "mcpwatch.toml"
        config.write_text(f"[front]\nmax_sessions = {max(counts)}\n")
        env = {**os.environ, "MCPWATCH_STATE_DIR": tmp}
        if root:
            env["PYTHONPATH"] = root
        wrap = ["wrap", "--config", str(config), "--log", str(Path(tmp) / "bench.db")]
        wrap += ["--listen", f"http://127.0.0.1:{port}/mcp", "--", sys.executable, "-m", "mcpwatch.bench.raw_upstream"]
        process = subprocess.Popen([sys.executable, "-m", "mcpwatch", *wrap], env=env, cwd=root or None, stderr=STDERR)
        try:
            wait_for_port(port, 30)
            return asyncio.run(_drive(port, process.pid, counts, seconds, min(1.0, seconds / 5)))
        finally:
            process.terminate()
            process.wait(15)


def run(quick: bool = False) -> dict[str, Any]:
    counts = (1, 4) if quick else HOSTS
    seconds = 0.5 if quick else 5.0
    stages = curve(os.environ.get(ROOT_ENV), counts, seconds)
    by_hosts = {stage["hosts"]: stage for stage in stages}
    return {
        "machine": f"{os.cpu_count()} cores, {sys.platform}, Python {sys.version.split()[0]}",
        "seconds_per_stage": seconds,
        "stages": stages,
        "targets": {"calls_per_s_at_64_vs_4": ">= 1.0", "median_ms_at_64": "< 5 on a quiet 2-core machine"},
        "ratio_64_to_4": round(by_hosts[64]["calls_per_s"] / by_hosts[4]["calls_per_s"], 2) if 64 in by_hosts else None,
    }
