"""Wrapper overhead: a no-op tools/call through `mcpwatch wrap` against the same server called directly.

One SDK client per path, all paths open at once, and calls interleaved in blocks so that machine noise hits
every path alike. Reports medians, p99s and their ratios to the direct path, beside a raw line forwarder (the floor
any stdio wrapper pays for its two pipe hops); then 32 concurrent callers (throughput ratio); then the same over
Streamable HTTP (front and upstream).
"""

from __future__ import annotations

import asyncio
import os
import statistics
import subprocess
import sys
import tempfile
import time
from contextlib import AsyncExitStack
from typing import Any

from mcpwatch.ports import free_port, wait_for_port

HELP = "wrapper overhead vs the direct path: latency ratios, 32-caller throughput, stdio and HTTP"

SERVER = [sys.executable, "-m", "mcpwatch.bench.noop_server"]
FORWARDER = [sys.executable, "-m", "mcpwatch.bench.line_forwarder"]


def _wrap(*args: str) -> list[str]:
    return [sys.executable, "-m", "mcpwatch", "wrap", *args]


def _percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def _summary(latencies: list[float]) -> dict[str, float]:
    return {
        "median_us": round(statistics.median(latencies) * 1e6, 1),
        "p99_us": round(_percentile(latencies, 0.99) * 1e6, 1),
        "calls": len(latencies),
    }


async def _open(stack: AsyncExitStack, target: Any) -> Any:
    from mcp import Client

    client = await stack.enter_async_context(Client(target, mode="legacy"))
    await client.list_tools()
    return client


def _stdio(argv: list[str], env: dict[str, str]) -> Any:
    from mcp import StdioServerParameters

    return StdioServerParameters(command=argv[0], args=argv[1:], env=env)


async def _latency(clients: dict[str, Any], calls: int, block: int) -> dict[str, list[float]]:
    samples: dict[str, list[float]] = {name: [] for name in clients}
    for _ in range(max(1, calls // block)):
        for name, client in clients.items():
            record = samples[name]
            for _ in range(block):
                started = time.perf_counter()
                await client.call_tool("noop", {})
                record.append(time.perf_counter() - started)
    return samples


async def _throughput(client: Any, calls: int, callers: int) -> float:
    remaining = [calls]

    async def caller() -> None:
        while remaining[0] > 0:
            remaining[0] -= 1
            await client.call_tool("noop", {})

    started = time.perf_counter()
    await asyncio.gather(*(caller() for _ in range(callers)))
    return calls / (time.perf_counter() - started)


def _ratios(samples: dict[str, list[float]], base: str) -> dict[str, Any]:
    out: dict[str, Any] = {name: _summary(values) for name, values in samples.items()}
    for name in samples:
        if name != base:
            out[name]["median_ratio"] = round(out[name]["median_us"] / out[base]["median_us"], 3)
            out[name]["p99_ratio"] = round(out[name]["p99_us"] / out[base]["p99_us"], 3)
    return out


async def _stdio_figures(calls: int, warmup: int, env: dict[str, str], log: str) -> dict[str, Any]:
    async with AsyncExitStack() as stack:
        clients = {
            "direct": await _open(stack, _stdio(SERVER, env)),
            "wrapped": await _open(stack, _stdio(_wrap("--log", log, "--", *SERVER), env)),
            "wrapped_no_log": await _open(stack, _stdio(_wrap("--no-log", "--", *SERVER), env)),
            "line_forwarder": await _open(stack, _stdio(FORWARDER + SERVER, env)),  # the floor: two hops, no parsing
        }
        await _latency(clients, warmup, 50)
        samples = await _latency(clients, calls, 100)
        figures = _ratios(samples, "direct")
        figures["log_cost_ratio"] = round(figures["wrapped"]["median_us"] / figures["wrapped_no_log"]["median_us"], 3)
        throughput: dict[str, list[float]] = {"direct": [], "wrapped": []}
        for _ in range(3):
            for name in throughput:
                throughput[name].append(await _throughput(clients[name], calls // 2, 32))
        direct_tp, wrapped_tp = (statistics.median(throughput[n]) for n in ("direct", "wrapped"))
        figures["concurrent_32"] = {
            "direct_calls_per_s": round(direct_tp),
            "wrapped_calls_per_s": round(wrapped_tp),
            "throughput_ratio": round(wrapped_tp / direct_tp, 3),
        }
        return figures


async def _http_figures(calls: int, warmup: int, up_port: int, front_port: int) -> dict[str, Any]:
    async with AsyncExitStack() as stack:
        clients = {
            "direct": await _open(stack, f"http://127.0.0.1:{up_port}/mcp"),
            "wrapped": await _open(stack, f"http://127.0.0.1:{front_port}/mcp"),
        }
        await _latency(clients, warmup, 50)
        return _ratios(await _latency(clients, calls, 100), "direct")


def _http_run(calls: int, warmup: int, env: dict[str, str]) -> dict[str, Any]:
    """The no-op server over Streamable HTTP, and a wrapper with an HTTP front and upstream in front of it."""
    up_port, front_port = free_port(), free_port()
    processes = [subprocess.Popen([*SERVER, "http", str(up_port)], env=env, stderr=subprocess.DEVNULL)]
    try:
        wait_for_port(up_port)
        front = f"http://127.0.0.1:{front_port}/mcp"
        upstream = f"http://127.0.0.1:{up_port}/mcp"
        processes.append(
            subprocess.Popen(
                _wrap("--no-log", "--listen", front, "--url", upstream),
                env=env,
                stdin=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
            )
        )
        wait_for_port(front_port)
        return asyncio.run(_http_figures(calls, warmup, up_port, front_port))
    finally:
        for process in processes:
            process.terminate()
            process.wait(10)


def run(quick: bool = False) -> dict[str, Any]:
    calls, warmup = (200, 50) if quick else (2000, 200)
    env = {**os.environ}
    with tempfile.TemporaryDirectory() as tmp:
        env["MCPWATCH_STATE_DIR"] = tmp
        log = os.path.join(tmp, "bench.db")
        stdio = asyncio.run(_stdio_figures(calls, warmup, env, log))
        http = _http_run(calls // 2, warmup, env)
    return {
        "machine": f"{os.cpu_count()} cores, {sys.platform}, Python {sys.version.split()[0]}",
        "stdio": stdio,
        "http": http,
        "targets": {"median_ratio": 1.10, "p99_ratio": 1.25, "throughput_ratio": 0.90, "log_cost_ratio": 1.03},
    }
