"""The cost of the Prometheus scrape endpoint: the same no-op tools/call through a wrapper with `--metrics-port`,
scraped all along by a loop, and through one without, against the direct path, interleaved in one run (`bench
wrap`'s method). Also what one scrape costs the wrapper and how big its answer is.

`cpu` is the figure to judge it by: three wrappers onto the raw upstream (without a log: only the endpoint differs),
two alike and one with the endpoint scraped every second, called at a fixed rate by raw hosts in windows whose order
rotates round by round (`bench paced`'s method); each round's CPU per call of the scraped one over the first
plain one, and of the second plain one over the first: what noise alone makes of the same wrapper. The scrape's
cost is within noise when its ratios fall inside the plain pair's spread.
"""

from __future__ import annotations

import asyncio
import os
import statistics
import sys
import tempfile
import threading
import time
import urllib.request
from contextlib import AsyncExitStack
from typing import Any

from mcpwatch.bench import QUICK_CALLS, paced
from mcpwatch.bench.procstat import cpu_s
from mcpwatch.bench.sdk_paths import SERVER, measured, open_client, open_tracked, stdio_path, wrap_argv
from mcpwatch.ports import free_port, wait_for_port

HELP = "Prometheus scrape endpoint on vs off, scraped all along: CPU per call and latency ratios, one scrape's CPU"
SCRAPE_INTERVAL_S = 1.0  # the real-Prometheus tests' interval; Prometheus's default is 15 s
BLOCK = 100


def _block_ratio(measured: list[float], base: list[float], block: int) -> dict[str, float]:
    """The ratio of medians block by block (each pair ran back to back), summarised by its median and quartiles:
    steadier than the ratio of whole-run medians when the machine's load drifts during the run."""
    ratios = sorted(
        statistics.median(measured[i : i + block]) / statistics.median(base[i : i + block])
        for i in range(0, min(len(measured), len(base)) - block + 1, block)
    )
    if not ratios:
        return {}
    quartiles = statistics.quantiles(ratios, n=4) if len(ratios) > 1 else [ratios[0]] * 3
    return {"median": round(quartiles[1], 3), "q1": round(quartiles[0], 3), "q3": round(quartiles[2], 3)}


class ScrapeLoop:
    """Scrapes `url` every `interval` seconds on a thread, noting each scrape's time and size."""

    def __init__(self, url: str, interval: float) -> None:
        self.url, self.interval = url, interval
        self.seconds: list[float] = []
        self.size = 0
        self.refused = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        while not self._stop.wait(self.interval):
            started = time.perf_counter()
            try:
                with urllib.request.urlopen(self.url, timeout=10) as reply:
                    self.size = len(reply.read())
            except OSError:
                self.refused += 1  # not listening yet, or gone
                continue
            self.seconds.append(time.perf_counter() - started)

    def __enter__(self) -> ScrapeLoop:
        self._thread.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self._stop.set()
        self._thread.join(15)


async def _figures(calls: int, warmup: int, env: dict[str, str], interval: float) -> dict[str, Any]:
    pids: dict[str, int | None] = {}
    port = free_port()
    async with AsyncExitStack() as stack:
        clients = {"direct": await open_client(stack, stdio_path(SERVER, env))}
        clients["wrapped"] = await open_tracked(
            stack, stdio_path(wrap_argv("--no-log", "--", *SERVER), env), pids, "wrapped"
        )
        scraped = stdio_path(wrap_argv("--no-log", "--metrics-port", str(port), "--", *SERVER), env)
        clients["wrapped_metrics"] = await open_tracked(stack, scraped, pids, "wrapped_metrics")
        for client in clients.values():
            await client.list_tools()  # so the scraped wrapper labels the calls with the tool's name
        wait_for_port(port)
        with ScrapeLoop(f"http://127.0.0.1:{port}/metrics", interval) as loop:
            figures, samples = await measured(clients, calls, warmup, pids, BLOCK)
        figures["metrics_cost_ratio"] = round(
            figures["wrapped_metrics"]["median_us"] / figures["wrapped"]["median_us"], 3
        )
        figures["metrics_cost_block_ratio"] = _block_ratio(samples["wrapped_metrics"], samples["wrapped"], BLOCK)
        figures["scrapes"] = {
            "interval_s": interval,
            "count": len(loop.seconds),
            "median_ms": round(statistics.median(loop.seconds) * 1000, 2) if loop.seconds else None,
            "bytes": loop.size,
        }
        return figures


async def _cpu(env: dict[str, str], interval: float, window_s: float, rounds: int) -> dict[str, Any]:
    """CPU per call of a scraped wrapper against two alike without the endpoint, round by round (see above)."""
    port = free_port()
    plain = (paced.wrapper_argv("--no-log"), env, None)
    scraped = (paced.wrapper_argv("--no-log", "--metrics-port", str(port)), env, None)
    with ScrapeLoop(f"http://127.0.0.1:{port}/metrics", interval) as loop:  # refused until the wrapper listens
        figures = await paced.feature_cost(plain, scraped, paced.FEATURE_RATE, window_s, rounds)
    return {**figures, "scrape_interval_s": interval, "scrapes": len(loop.seconds)}


async def _scrape_cpu(env: dict[str, str], scrapes: int) -> dict[str, Any]:
    """The CPU one scrape costs a wrapper (all its threads, from the kernel's counters), scraped back to back with
    no calls running, after some calls gave its series values; and what that is per call at 1 s and 250 calls/s."""
    port = free_port()
    hosts = await paced.open_hosts(
        {"scraped": (paced.wrapper_argv("--no-log", "--metrics-port", str(port)), env, None)}
    )
    try:
        host = hosts["scraped"]
        await host.paced(1000, 0.2)
        await asyncio.to_thread(wait_for_port, port)
        url = f"http://127.0.0.1:{port}/metrics"

        def scrape() -> int:
            with urllib.request.urlopen(url, timeout=10) as reply:
                return len(reply.read())

        await asyncio.to_thread(scrape)  # the first builds every family
        costs = []
        for _ in range(scrapes):
            before = cpu_s(host.process.pid)
            size = await asyncio.to_thread(scrape)
            await asyncio.sleep(0.02)  # the connection's close, handled after the answer left
            costs.append((cpu_s(host.process.pid) - before) * 1e6)  # µs
    finally:
        await paced.close_hosts(hosts)
    per_scrape_us = statistics.median(costs)
    return {
        "scrapes": scrapes,
        "cpu_us_per_scrape": round(per_scrape_us, 1),
        "cpu_us_per_scrape_min": round(min(costs), 1),
        "bytes": size,
        "us_per_call_at_1s_250_calls_per_s": round(per_scrape_us / 250, 2),
    }


def _in_process(calls: int) -> dict[str, float]:
    """CPU time (steadier than wall time when the machine is loaded) of what the endpoint adds: queueing and
    folding one call's end event, one exposition of those calls over 20 tools built whole (a first scrape), and
    one scrape after each twentieth of the calls (only the families that moved are rendered again)."""
    from prometheus_client.exposition import choose_encoder, generate_latest

    from mcpwatch.events import Event, Kind
    from mcpwatch.prometheus.endpoint import metrics_registry
    from mcpwatch.prometheus.fold import MetricFold

    fold = MetricFold()
    fold.tools.add_listed({"tools": [{"name": f"tool{n}"} for n in range(20)]})
    data = [{"method": "tools/call", "outcome": "ok", "duration_s": 0.001 * (n % 50)} for n in range(calls)]
    events = [Event(Kind.REQUEST_END, "s", 0.0, 0.0, n, str(n), f"tool{n % 20}", None, data[n]) for n in range(calls)]
    started = time.process_time()
    for event in events:
        fold.emit(event)
    fold.counts()
    per_call = (time.process_time() - started) / calls
    registry = metrics_registry("bench", fold, lambda: {"in_flight": [], "tombstones": {"count": 0}, "log": {}})
    started = time.process_time()
    for _ in range(20):
        size = len(generate_latest(registry))
    whole = (time.process_time() - started) / 20
    encoder, content_type = choose_encoder("")
    fold = MetricFold()
    fold.tools.add_listed({"tools": [{"name": f"tool{n}"} for n in range(20)]})
    registry = metrics_registry("bench", fold, lambda: {"in_flight": [], "tombstones": {"count": 0}, "log": {}})
    scrapes: list[float] = []
    for start in range(0, calls, calls // 20):
        for event in events[start : start + calls // 20]:
            fold.emit(event)
        fold.counts()  # folded as above: the figure is the rendering
        began = time.process_time()
        registry.render(encoder, content_type)
        scrapes.append(time.process_time() - began)
    return {
        "fold_us_per_call": round(per_call * 1e6, 2),
        "exposition_ms": round(whole * 1000, 2),
        "scrape_after_calls_ms": round(statistics.median(scrapes) * 1000, 2),
        "exposition_bytes": size,
    }


def run(quick: bool = False) -> dict[str, Any]:
    calls, warmup = QUICK_CALLS if quick else (4000, 400)
    interval = float(os.environ.get("MCPWATCH_BENCH_SCRAPE_INTERVAL_S", SCRAPE_INTERVAL_S))
    window_s, rounds = paced.FEATURE_QUICK if quick else (paced.FEATURE_WINDOW_S, paced.FEATURE_ROUNDS)
    with tempfile.TemporaryDirectory() as tmp:
        env = {**os.environ, "MCPWATCH_STATE_DIR": tmp}
        cpu = asyncio.run(_cpu(env, interval, window_s, rounds))
        cpu["one_scrape"] = asyncio.run(_scrape_cpu(env, 5 if quick else 50))
        figures = asyncio.run(_figures(calls, warmup, env, interval))
    return {
        "machine": f"{os.cpu_count()} cores, {sys.platform}, Python {sys.version.split()[0]}",
        "load_average": [round(x, 2) for x in os.getloadavg()],
        "cpu": cpu,
        "stdio": figures,
        "in_process": _in_process(10_000 if quick else 200_000),
        "targets": {"metrics_cost_ratio": 1.01, "metrics_cost_block_ratio": 1.01},
    }
