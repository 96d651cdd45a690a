"""Wrapper overhead: a no-op tools/call through `mcpwatch wrap` against the same server called directly.

One SDK client per path, all paths open at once, and calls interleaved in blocks so that machine noise hits
every path alike. Reports medians, p99s and their ratios to the direct path, beside a raw line forwarder (the floor
any stdio wrapper pays for its two pipe hops), and the CPU time each process in the middle spends per call; then
32 concurrent callers (throughput ratios), again with every path's server kept on one CPU (where there are two or
more); then a raw client over the raw upstream (`raw_hops`: the wrapper's own work over the floor); then the same
over Streamable HTTP (front and upstream), with the wrapper's own HTTP/1.1 upstream client and with httpx2 in its
place.

`MCPWATCH_BENCH_BASELINE=DIR` adds a stdio path through the mcpwatch package found in DIR (an older checkout, say),
so a change is measured against what it replaces in the same run.
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

from mcpwatch.bench import LINE_FORWARDER, QUICK_CALLS, raw_hops
from mcpwatch.bench.baseline import baseline_root
from mcpwatch.bench.procstat import children, keep_on_one_cpu
from mcpwatch.bench.sdk_paths import SERVER, measured, open_client, open_tracked, stdio_path, wrap_argv
from mcpwatch.ports import free_port, wait_for_port

HELP = "wrapper overhead vs the direct path: latency ratios, 32-caller throughput, stdio and HTTP"
BASELINE_INSIDE = True  # the baseline's wrapper is one more path beside the others, call by call

HTTPX2_WRAP = [sys.executable, "-m", "mcpwatch.bench.httpx2_upstream"]


async def _throughput(client: Any, calls: int, callers: int) -> float:
    remaining = [calls]

    async def caller() -> None:
        while remaining[0] > 0:
            remaining[0] -= 1
            await client.call_tool("noop", {})

    started = time.perf_counter()
    await asyncio.gather(*(caller() for _ in range(callers)))
    return calls / (time.perf_counter() - started)


async def _stdio_figures(
    calls: int, warmup: int, env: dict[str, str], log: str, baseline: str | None
) -> dict[str, Any]:
    pids: dict[str, int | None] = {}
    async with AsyncExitStack() as stack:
        clients = {"direct": await open_tracked(stack, stdio_path(SERVER, env), pids, "direct")}
        paths = {
            "wrapped": stdio_path(wrap_argv("--log", log, "--", *SERVER), env),
            "wrapped_no_log": stdio_path(wrap_argv("--no-log", "--", *SERVER), env),
            "line_forwarder": stdio_path([*LINE_FORWARDER, *SERVER], env),  # the floor: two hops, no parsing
        }
        if baseline:
            # run from that directory too: `python -m` looks in the working directory before PYTHONPATH
            baseline_env = {**env, "PYTHONPATH": baseline}
            argv = wrap_argv("--log", log + ".baseline", "--", *SERVER)
            paths["wrapped_baseline"] = stdio_path(argv, baseline_env, cwd=baseline)
        for name, target in paths.items():
            clients[name] = await open_tracked(stack, target, pids, name)
        middle = {name: pid for name, pid in pids.items() if name != "direct"}  # CPU per call of the middle only
        figures, _ = await measured(clients, calls, warmup, middle)
        figures["log_cost_ratio"] = round(figures["wrapped"]["median_us"] / figures["wrapped_no_log"]["median_us"], 3)
        concurrent = {name: clients[name] for name in ("direct", "wrapped", "line_forwarder")}
        figures["concurrent_32"] = await _concurrent(concurrent, calls // 2)
        # the same with each path's server kept on one CPU: the SDK server hands every message between two threads,
        # and where the scheduler puts them (beside a third process, on a 2-core machine) moves the figure more than
        # what the process in the middle does (docs/benchmarks.md, "32 callers")
        cpus = os.sched_getaffinity(0) if hasattr(os, "sched_getaffinity") else set()
        servers = [pids["direct"], *_children_of(pids["wrapped"]), *_children_of(pids["line_forwarder"])]
        if len(cpus) > 1 and len(servers) == 3 and all(pid and keep_on_one_cpu(pid, max(cpus)) for pid in servers):
            figures["concurrent_32_servers_on_one_cpu"] = await _concurrent(concurrent, calls // 2)
        return figures


def _children_of(pid: int | None) -> list[int]:
    return [] if pid is None else children(pid)


async def _concurrent(clients: dict[str, Any], calls: int) -> dict[str, Any]:
    """Calls per second with 32 concurrent callers on each path, the median of three interleaved rounds, and each
    path's ratio to the direct one."""
    throughput: dict[str, list[float]] = {name: [] for name in clients}
    for _ in range(3):
        for name, client in clients.items():
            throughput[name].append(await _throughput(client, calls, 32))
    medians = {name: statistics.median(values) for name, values in throughput.items()}
    out: dict[str, Any] = {f"{name}_calls_per_s": round(value) for name, value in medians.items()}
    out["throughput_ratio"] = round(medians["wrapped"] / medians["direct"], 3)
    out["line_forwarder_ratio"] = round(medians["line_forwarder"] / medians["direct"], 3)
    return out


async def _http_figures(calls: int, warmup: int, ports: dict[str, int], pids: dict[str, int]) -> dict[str, Any]:
    async with AsyncExitStack() as stack:
        clients = {name: await open_client(stack, f"http://127.0.0.1:{port}/mcp") for name, port in ports.items()}
        figures, _ = await measured(clients, calls, warmup, dict(pids))
        return figures


def _http_run(calls: int, warmup: int, env: dict[str, str]) -> dict[str, Any]:
    """The no-op server over Streamable HTTP, and wrappers with an HTTP front and upstream in front of it: one with
    mcpwatch's own HTTP/1.1 upstream client, one with httpx2's."""
    up_port = free_port()
    ports = {"direct": up_port, "wrapped": free_port(), "wrapped_httpx2": free_port()}
    processes = [subprocess.Popen([*SERVER, "http", str(up_port)], env=env, stderr=subprocess.DEVNULL)]
    pids: dict[str, int] = {}
    try:
        wait_for_port(up_port)
        upstream = f"http://127.0.0.1:{up_port}/mcp"
        for name, launcher in (("wrapped", wrap_argv()), ("wrapped_httpx2", HTTPX2_WRAP)):
            front = f"http://127.0.0.1:{ports[name]}/mcp"
            argv = [*launcher, "--no-log", "--listen", front, "--url", upstream]
            process = subprocess.Popen(argv, env=env, stdin=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            processes.append(process)
            pids[name] = process.pid
        for name in ("wrapped", "wrapped_httpx2"):
            wait_for_port(ports[name])
        figures = asyncio.run(_http_figures(calls, warmup, ports, pids))
        own, other = figures["wrapped"]["median_us"], figures["wrapped_httpx2"]["median_us"]
        figures["own_client_vs_httpx2_median"] = round(own / other, 3)
        return figures
    finally:
        for process in processes:
            process.terminate()
            process.wait(10)


def run(quick: bool = False) -> dict[str, Any]:
    calls, warmup = QUICK_CALLS if quick else (2000, 200)
    baseline = baseline_root()  # checked before anything runs, as every bench's baseline is
    env = {**os.environ}
    with tempfile.TemporaryDirectory() as tmp:
        env["MCPWATCH_STATE_DIR"] = tmp
        log = os.path.join(tmp, "bench.db")
        stdio = asyncio.run(_stdio_figures(calls, warmup, env, log, baseline))
        stdio["raw_client"] = raw_hops.figures(calls, warmup, env, log + ".raw")
        http = _http_run(calls // 2, warmup, env)
    return {
        "machine": f"{os.cpu_count()} cores, {sys.platform}, Python {sys.version.split()[0]}",
        "stdio": stdio,
        "http": http,
        "targets": {
            "median_ratio": 1.05,
            "p99_ratio": 1.25,
            "throughput_ratio": 0.90,
            "log_cost_ratio": 1.03,
            "wrapper_cpu_us_per_call": 100,
        },
    }
