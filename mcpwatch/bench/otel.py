"""The cost of OpenTelemetry export: the same no-op tools/call through a wrapper exporting to a collector and
through one that does not, against the direct path, interleaved in one run (`bench wrap`'s method).

The collector is a local OTLP/HTTP endpoint that accepts every export (2xx), so what is measured is the wrapper's
side: stamping trace context, queueing events, and the export thread's share of the CPU.

`cpu` is the figure the target is for: CPU per call (the kernel's counters, all threads) of an exporting wrapper
against two alike that do not, onto the raw upstream without a log, called at a fixed rate by raw hosts in windows
whose order rotates round by round (`bench paced`'s method); each window also waits out the export thread's batch
(`EXPORT_INTERVAL_S`) so its work for the window's calls is counted. The plain pair's own ratio is the noise.
"""

from __future__ import annotations

import asyncio
import os
import sys
import tempfile
import threading
from contextlib import AsyncExitStack
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from mcpwatch.bench import QUICK_CALLS, paced
from mcpwatch.bench.baseline import BASELINE_ENV, baseline_root
from mcpwatch.bench.sdk_paths import SERVER, measured, open_client, open_tracked, stdio_path, wrap_argv

HELP = "OpenTelemetry export on vs off: CPU per call and latency ratios of the wrapped no-op call (mcpwatch[otel])"
BASELINE_INSIDE = True  # the baseline's exporting wrapper joins the CPU rotation (the latency paths are this one's)
SETTLE_S = 1.3  # the export thread sends its batch at least once a second (exporter.EXPORT_INTERVAL_S)


class _Accepting(BaseHTTPRequestHandler):
    def do_POST(self) -> None:
        self.rfile.read(int(self.headers.get("Content-Length") or 0))
        self.send_response(200)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def log_message(self, *args: Any) -> None:
        pass


async def _figures(calls: int, warmup: int, env: dict[str, str], exporting: dict[str, str]) -> dict[str, Any]:
    pids: dict[str, int | None] = {}
    async with AsyncExitStack() as stack:
        clients = {"direct": await open_client(stack, stdio_path(SERVER, env))}
        clients["wrapped"] = await open_tracked(
            stack, stdio_path(wrap_argv("--no-log", "--", *SERVER), env), pids, "wrapped"
        )
        exported = stdio_path(wrap_argv("--no-log", "--", *SERVER), exporting)
        clients["wrapped_otel"] = await open_tracked(stack, exported, pids, "wrapped_otel")
        figures, _ = await measured(clients, calls, warmup, pids)
        figures["otel_cost_ratio"] = round(figures["wrapped_otel"]["median_us"] / figures["wrapped"]["median_us"], 3)
        return figures


async def _cpu(
    env: dict[str, str],
    exporting: dict[str, str],
    window_s: float,
    rounds: int,
    settle_s: float = SETTLE_S,
    rate: float = paced.FEATURE_RATE,
) -> dict[str, Any]:
    """CPU per call, exporting against not (see above); with `MCPWATCH_BENCH_BASELINE=DIR` an exporting wrapper run
    from DIR joins the rotation (`baseline`)."""
    plain = (paced.wrapper_argv("--no-log"), env, None)
    exported = (paced.wrapper_argv("--no-log"), exporting, None)
    others: dict[str, paced.WrapperCommand] = {}
    baseline = baseline_root()
    if baseline:  # run from that directory: `python -m` looks in the working directory before PYTHONPATH
        others["baseline"] = (paced.wrapper_argv("--no-log"), {**exporting, "PYTHONPATH": baseline}, baseline)
    return await paced.feature_cost(plain, exported, rate, window_s, rounds, settle_s, others)


def run(quick: bool = False) -> dict[str, Any]:
    calls, warmup = QUICK_CALLS if quick else (3000, 300)
    window_s, rounds, settle_s = (
        (*paced.FEATURE_QUICK, paced.SETTLE_S) if quick else (paced.FEATURE_WINDOW_S, paced.FEATURE_ROUNDS, SETTLE_S)
    )
    collector = ThreadingHTTPServer(("127.0.0.1", 0), _Accepting)
    threading.Thread(target=collector.serve_forever, daemon=True).start()
    try:
        with tempfile.TemporaryDirectory() as tmp:
            env = {**os.environ, "MCPWATCH_STATE_DIR": tmp}
            env.pop(BASELINE_ENV, None)
            for name in [n for n in env if n.startswith("OTEL_")]:
                del env[name]
            exporting = {**env, "OTEL_EXPORTER_OTLP_ENDPOINT": f"http://127.0.0.1:{collector.server_address[1]}"}
            cpu = {  # MCPWATCH_BENCH_RATES sets the rates, as for `bench paced`
                f"{rate:g}_calls_per_s": asyncio.run(_cpu(env, exporting, window_s, rounds, settle_s, rate))
                for rate in paced.rates_asked(os.environ, (paced.FEATURE_RATE,))
            }
            figures = asyncio.run(_figures(calls, warmup, env, exporting))
    finally:
        collector.shutdown()
        collector.server_close()
    return {
        "machine": f"{os.cpu_count()} cores, {sys.platform}, Python {sys.version.split()[0]}",
        "load_average": [round(x, 2) for x in os.getloadavg()],
        "cpu": cpu,
        "stdio": figures,
        "targets": {"cpu.1000_calls_per_s.feature_to_plain.median": 1.10, "otel_cost_ratio": 1.05},
    }
