"""The cost of OpenTelemetry export: the same no-op tools/call through a wrapper exporting to a collector and
through one that does not, against the direct path, interleaved in one run (`bench wrap`'s method).

The collector is a local OTLP/HTTP endpoint that accepts every export (2xx), so what is measured is the wrapper's
side: stamping trace context, queueing events, and the export thread's share of the CPU.
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

from mcpwatch.bench import QUICK_CALLS
from mcpwatch.bench.wrap import SERVER, _latency, _open, _open_tracked, _ratios, _stdio, _wrap

HELP = "OpenTelemetry export on vs off: latency ratio of the wrapped no-op call (needs mcpwatch[otel])"


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
        clients = {"direct": await _open(stack, _stdio(SERVER, env))}
        clients["wrapped"] = await _open_tracked(stack, _stdio(_wrap("--no-log", "--", *SERVER), env), pids, "wrapped")
        exported = _stdio(_wrap("--no-log", "--", *SERVER), exporting)
        clients["wrapped_otel"] = await _open_tracked(stack, exported, pids, "wrapped_otel")
        await _latency(clients, warmup, 50)
        samples, cpu_per_call = await _latency(clients, calls, 100, pids)
        figures = _ratios(samples, "direct")
        for name, seconds in cpu_per_call.items():
            figures[name]["cpu_us_per_call"] = round(seconds * 1e6, 1)
        figures["otel_cost_ratio"] = round(figures["wrapped_otel"]["median_us"] / figures["wrapped"]["median_us"], 3)
        return figures


def run(quick: bool = False) -> dict[str, Any]:
    calls, warmup = QUICK_CALLS if quick else (3000, 300)
    collector = ThreadingHTTPServer(("127.0.0.1", 0), _Accepting)
    threading.Thread(target=collector.serve_forever, daemon=True).start()
    try:
        with tempfile.TemporaryDirectory() as tmp:
            env = {**os.environ, "MCPWATCH_STATE_DIR": tmp}
            for name in [n for n in env if n.startswith("OTEL_")]:
                del env[name]
            exporting = {**env, "OTEL_EXPORTER_OTLP_ENDPOINT": f"http://127.0.0.1:{collector.server_address[1]}"}
            figures = asyncio.run(_figures(calls, warmup, env, exporting))
    finally:
        collector.shutdown()
        collector.server_close()
    return {
        "machine": f"{os.cpu_count()} cores, {sys.platform}, Python {sys.version.split()[0]}",
        "stdio": figures,
        "targets": {"otel_cost_ratio": 1.05},
    }
