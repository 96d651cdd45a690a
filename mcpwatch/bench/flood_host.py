"""A host that floods a real `mcpwatch wrap` with calls, for the console benchmark.

Run as `python -m mcpwatch.bench.flood_host EVENTS_PER_S SECONDS`, with MCPWATCH_STATE_DIR set: it starts the wrapper
(event log on) in front of `mcpwatch.bench.raw_upstream`, prints the wrapper's pid on a line of its own, then keeps
calls going at the pace that makes the wrapper emit EVENTS_PER_S events: each call is a `sleep` of 20 ms with a
progress token, so the wrapper records three events for it (request_start, progress, request_end). It stops after
SECONDS or when its stdin closes, and prints one JSON line of figures (calls, outcomes, events the wrapper emitted).
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
import time
from pathlib import Path
from typing import Any

from mcpwatch.bench import RAW_UPSTREAM
from mcpwatch.bench.memory import INIT, LATEST, PipeHost
from mcpwatch.bench.operator_tool import operator_tool

EVENTS_PER_CALL = 3
IN_FLIGHT = 200
SLEEP_MS = 20


async def _stdin_closed() -> None:
    """Resolves when the benchmark that started this host closes its end of our stdin."""
    await asyncio.to_thread(sys.stdin.read)


async def _drive(rate: float, seconds: float) -> dict[str, Any]:
    state_dir = Path(os.environ["MCPWATCH_STATE_DIR"])
    wrap = ["wrap", "--name", "bench-flood", "--log", str(state_dir / "bench-flood.db")]
    upstream = list(RAW_UPSTREAM)
    process = await asyncio.create_subprocess_exec(
        *[sys.executable, "-m", "mcpwatch", *wrap, "--", *upstream],
        stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.DEVNULL,
        limit=64 * 1024 * 1024,
    )
    host = PipeHost(process)
    outcomes = {"ok": 0, "error": 0}
    try:
        await asyncio.wait_for(host.request("initialize", INIT), 30)
        host.send({"jsonrpc": "2.0", "method": "notifications/initialized"})
        while not (state_dir / "wrappers" / f"{process.pid}.json").exists():
            await asyncio.sleep(0.02)
        print(process.pid, flush=True)
        calls_per_s = rate / EVENTS_PER_CALL
        slots = asyncio.Semaphore(IN_FLIGHT)
        stop = asyncio.ensure_future(_stdin_closed())

        def finished(future: asyncio.Future[dict[str, Any]]) -> None:
            slots.release()
            ok = future.exception() is None and "result" in future.result()
            outcomes["ok" if ok else "error"] += 1

        started = time.perf_counter()
        issued = 0
        while not stop.done() and time.perf_counter() - started < seconds:
            while issued >= calls_per_s * (time.perf_counter() - started):
                await asyncio.sleep(0.002)
            await slots.acquire()
            issued += 1
            params = {"name": "sleep", "arguments": {"ms": SLEEP_MS}, "_meta": {"progressToken": issued}}
            host.request("tools/call", params).add_done_callback(finished)
        elapsed = time.perf_counter() - started
        stop.cancel()
        latest = await asyncio.to_thread(operator_tool, state_dir, process.pid, "events", after=LATEST)
    finally:
        await host.close()
        host.reader.cancel()
    emitted = (latest or {}).get("latest", 0)
    return {
        "calls": issued,
        "outcomes": outcomes,
        "elapsed_s": round(elapsed, 1),
        "wrapper_events": emitted,
        "wrapper_events_per_s": round(emitted / max(elapsed, 1e-9)),
    }


if __name__ == "__main__":
    print(json.dumps(asyncio.run(_drive(float(sys.argv[1]), float(sys.argv[2])))), flush=True)
