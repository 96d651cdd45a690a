"""Paths an SDK client calls side by side (the server directly, through `mcpwatch wrap`, through a variant), each
measured in interleaved blocks with the CPU per call of the process in the middle: shared by the `wrap`, `otel` and
`metrics` benchmarks, so that their figures are taken the same way."""

from __future__ import annotations

import os
import statistics
import sys
import time
from contextlib import AsyncExitStack
from typing import Any

from mcpwatch.bench.procstat import children, cpu_s

SERVER = [sys.executable, "-m", "mcpwatch.bench.noop_server"]


def wrap_argv(*args: str) -> list[str]:
    return [sys.executable, "-m", "mcpwatch", "wrap", *args]


def _percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def summary(latencies: list[float]) -> dict[str, float]:
    return {
        "median_us": round(statistics.median(latencies) * 1e6, 1),
        "p99_us": round(_percentile(latencies, 0.99) * 1e6, 1),
        "calls": len(latencies),
    }


async def open_client(stack: AsyncExitStack, target: Any) -> Any:
    from mcp import Client

    client = await stack.enter_async_context(Client(target, mode="legacy"))
    await client.list_tools()
    return client


def stdio_path(argv: list[str], env: dict[str, str], cwd: str | None = None) -> Any:
    from mcp import StdioServerParameters

    return StdioServerParameters(command=argv[0], args=argv[1:], env=env, cwd=cwd)


async def _latency(
    clients: dict[str, Any], calls: int, block: int, pids: dict[str, int | None] | None = None
) -> tuple[dict[str, list[float]], dict[str, float]]:
    """Latency samples per path and, for the paths whose middle process is known, its CPU seconds per call."""
    block = min(block, calls)  # a smoke run's few calls are one block, not a whole one
    samples: dict[str, list[float]] = {name: [] for name in clients}
    cpu = dict.fromkeys(clients, 0.0)
    pids = pids or {}
    for _ in range(max(1, calls // block)):
        for name, client in clients.items():
            record = samples[name]
            before = cpu_s(pids.get(name))
            for _ in range(block):
                started = time.perf_counter()
                await client.call_tool("noop", {})
                record.append(time.perf_counter() - started)
            cpu[name] += cpu_s(pids.get(name)) - before
    per_call = {name: cpu[name] / len(samples[name]) for name in clients if pids.get(name) and samples[name]}
    return samples, per_call


async def measured(
    clients: dict[str, Any], calls: int, warmup: int, pids: dict[str, int | None], block: int = 100
) -> tuple[dict[str, Any], dict[str, list[float]]]:
    """Each path's latency against the direct one's after `warmup` calls, with the CPU per call of the paths whose
    process `pids` knows; and the samples themselves."""
    await _latency(clients, warmup, 50)
    samples, cpu_per_call = await _latency(clients, calls, block, pids)
    figures = _ratios(samples, "direct")
    for name, seconds in cpu_per_call.items():
        figures[name]["cpu_us_per_call"] = round(seconds * 1e6, 1)
    return figures, samples


def _ratios(samples: dict[str, list[float]], base: str) -> dict[str, Any]:
    out: dict[str, Any] = {name: summary(values) for name, values in samples.items()}
    for name in samples:
        if name != base:
            out[name]["median_ratio"] = round(out[name]["median_us"] / out[base]["median_us"], 3)
            out[name]["p99_ratio"] = round(out[name]["p99_us"] / out[base]["p99_us"], 3)
    return out


async def open_tracked(stack: AsyncExitStack, target: Any, pids: dict[str, int | None], name: str) -> Any:
    """Open a stdio path and note the pid of the process it started (the process in the middle)."""
    known = set(children(os.getpid()))
    client = await open_client(stack, target)
    started = [pid for pid in children(os.getpid()) if pid not in known]
    pids[name] = started[0] if len(started) == 1 else None
    return client
