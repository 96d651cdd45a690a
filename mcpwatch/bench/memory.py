"""`mcpwatch bench memory`: the wrapper's resident memory under a long run of calls.

A raw JSON-RPC host (no SDK: it would be the bottleneck) keeps many calls in flight through `mcpwatch wrap`, with
the event log on, against a raw upstream (`mcpwatch.bench.raw_upstream`). One call in ten sleeps past the deadline
budget, so the wrapper answers it itself, cancels it upstream, tombstones its id and later drops the late answer.
The late calls ask for progress, so progress state is kept and dropped too. The wrapper's RSS is sampled every
10,000 calls. Targets: at most 60 MB, and flat over the second half of the run (everything the wrapper keeps per
call, pending maps, tombstones, progress state and the event ring, is bounded).

The host paces itself at RATE calls per second. Unpaced, host, upstream and wrapper saturate a 2-core machine and
the log writer's thread falls behind: its queue (bounded by `log.queue_max`, 20,000 events by default, about 1 KB
each; overflow is counted and logged) then fills, and that backlog, not per-call state, is what the RSS shows. Each
sample reports the backlog (events emitted but not yet written) so a run can tell the two apart.

Tombstones are bounded by their TTL; with the default terms (budget + 10 + 30 + 5 s) they would still be piling up
when a 15-second run ends, so the run shortens the TTL's fixed terms (TTL ≈ 3.2 s, swept every second) to reach
the steady state the default reaches after a minute.

The flood cases (`mcpwatch.bench.flood`) follow: an upstream sending progress or log notifications as fast as the
wrapper reads them, with a host that reads (echo latency measured, and the direct path's for comparison) and one
that does not (the backpressure must hold the wrapper's memory; the flood call's answer must still arrive).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from mcpwatch.bench import RAW_UPSTREAM
from mcpwatch.bench.operator_tool import operator_tool

HELP = (
    "wrapper RSS over 100,000 calls (a tenth hit the deadline), sampled every 10,000: ≤ 60 MB and flat; then "
    "upstream floods (stdio and HTTP, host reading or not): peak RSS ≤ 150 MB, echo p99 ≤ 100 ms"
)

TARGET_MB = 60.0
FLAT_MB = 3.0  # allowed growth over the second half of the run
SAMPLE_EVERY = 10_000
BUDGET_S = 0.2
IN_FLIGHT = 200
RATE = 4000  # calls per second: high, yet one the log writer sustains on 2 shared cores (see the module docstring)
CONFIG = "[tombstones]\ninit_timeout_s = 1\nbackoff_max_s = 1\nepsilon_s = 1\nsweep_interval_s = 1\n"
INIT = {
    "protocolVersion": "2025-06-18",
    "capabilities": {},
    "clientInfo": {"name": "mcpwatch-bench-memory", "version": "1"},
}


def rss_mb(pid: int) -> dict[str, float]:
    """VmRSS and its anonymous part (the heap; the rest is mapped files), in MB, from /proc."""
    figures: dict[str, float] = {}
    with open(f"/proc/{pid}/status", encoding="ascii") as status:
        for line in status:
            key, _, value = line.partition(":")
            if key in ("VmRSS", "RssAnon", "RssFile", "VmHWM"):
                figures[key] = round(int(value.split()[0]) / 1024, 1)
    return figures


class PipeHost:
    """A host speaking raw JSON-RPC lines over the wrapper's stdin and stdout; answers matched by id."""

    def __init__(self, process: asyncio.subprocess.Process) -> None:
        self.process = process
        self.waiting: dict[int, asyncio.Future[dict[str, Any]]] = {}
        self.next_id = 0
        self.stray = 0
        self.reader = asyncio.ensure_future(self._read())

    async def _read(self) -> None:
        stdout = self.process.stdout
        assert stdout is not None
        while line := await stdout.readline():
            message = json.loads(line)
            future = self.waiting.pop(message.get("id"), None) if "id" in message else None
            if future is None:
                self.stray += "id" in message
                continue
            future.set_result(message)
        for future in self.waiting.values():
            if not future.done():
                future.set_exception(ConnectionError("the wrapper closed its stdout"))

    def send(self, message: dict[str, Any]) -> None:
        stdin = self.process.stdin
        assert stdin is not None
        stdin.write(json.dumps(message, separators=(",", ":")).encode() + b"\n")

    def request(self, method: str, params: dict[str, Any]) -> asyncio.Future[dict[str, Any]]:
        self.next_id += 1
        future: asyncio.Future[dict[str, Any]] = asyncio.get_running_loop().create_future()
        self.waiting[self.next_id] = future
        self.send({"jsonrpc": "2.0", "id": self.next_id, "method": method, "params": params})
        return future

    async def close(self, timeout: float = 30.0) -> int:
        stdin = self.process.stdin
        assert stdin is not None
        stdin.close()
        try:
            return await asyncio.wait_for(self.process.wait(), timeout)
        except TimeoutError:
            self.process.kill()
            return await self.process.wait()


LATEST = 2**53  # an `events(after=…)` past any sequence number (the endpoint's upper bound): only "latest" back


async def _drive(calls: int, state_dir: Path) -> dict[str, Any]:
    env = {**os.environ, "MCPWATCH_STATE_DIR": str(state_dir), "MCPWATCH_TOOL_CALL_DEADLINE_SEC": str(BUDGET_S)}
    env.pop("MCPWATCH_CONFIG", None)
    upstream = list(RAW_UPSTREAM)
    log = state_dir / "bench-memory.db"
    config = state_dir / "mcpwatch.toml"
    config.write_text(CONFIG)
    wrap = ["wrap", "--name", "bench-memory", "--config", str(config), "--log", str(log)]
    process = await asyncio.create_subprocess_exec(
        *[sys.executable, "-m", "mcpwatch", *wrap, "--", *upstream],
        stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.DEVNULL,
        env=env,
        limit=64 * 1024 * 1024,
    )
    host = PipeHost(process)
    outcomes = {"ok": 0, "deadline": 0, "error": 0}
    samples: list[dict[str, Any]] = []
    try:
        await asyncio.wait_for(host.request("initialize", INIT), 30)
        host.send({"jsonrpc": "2.0", "method": "notifications/initialized"})
        samples.append({"calls": 0, **rss_mb(process.pid)})
        started = time.perf_counter()
        done = 0
        issued = 0
        slots = asyncio.Semaphore(IN_FLIGHT)

        def finished(future: asyncio.Future[dict[str, Any]]) -> None:
            nonlocal done
            slots.release()
            done += 1
            if future.exception() is not None:
                outcomes["error"] += 1
                return
            result = future.result().get("result") or {}
            if "error" in future.result():
                outcomes["error"] += 1
            elif result.get("isError"):
                outcomes["deadline"] += 1
            else:
                outcomes["ok"] += 1
            if done % SAMPLE_EVERY == 0:
                samples.append(
                    {"calls": done, "elapsed_s": round(time.perf_counter() - started, 1), **rss_mb(process.pid)}
                )

        async def log_backlog(sample: dict[str, Any]) -> None:
            """Events emitted but not yet written: the writer's queue, which lives in the wrapper's memory."""
            status = await asyncio.to_thread(operator_tool, state_dir, process.pid)
            latest = await asyncio.to_thread(operator_tool, state_dir, process.pid, "events", after=LATEST)
            if status is not None and latest is not None:
                sample["log_backlog"] = latest["latest"] - status["log"]["events_written"]
                sample["tombstones"] = status["tombstones"]["count"]

        sampled = 1
        while issued < calls:
            if len(samples) > sampled:
                sampled = len(samples)
                await log_backlog(samples[-1])
            while issued >= RATE * (time.perf_counter() - started):
                await asyncio.sleep(0.002)
            await slots.acquire()
            issued += 1
            if issued % 10 == 0:  # past the budget: deadline answer, cancel, tombstone, late progress and answer
                params = {"name": "sleep", "arguments": {"ms": BUDGET_S * 2000}, "_meta": {"progressToken": issued}}
            else:
                params = {"name": "noop", "arguments": {}}
            host.request("tools/call", params).add_done_callback(finished)
        for _ in range(IN_FLIGHT):
            await slots.acquire()
        elapsed = time.perf_counter() - started
        await asyncio.sleep(BUDGET_S * 2 + 0.2)  # the last late answers arrive and are dropped
        status = await asyncio.to_thread(operator_tool, state_dir, process.pid)
        final = rss_mb(process.pid)
    finally:
        exit_code = await host.close()
        host.reader.cancel()
    return {
        "samples": samples,
        "final": final,
        "outcomes": outcomes,
        "elapsed_s": round(elapsed, 1),
        "calls_per_s": round(calls / elapsed),
        "stray_responses": host.stray,
        "status": status,
        "exit_code": exit_code,
    }


def run(quick: bool = False) -> dict[str, Any]:
    from mcpwatch.bench import flood

    calls = 10_000 if quick else 100_000
    with tempfile.TemporaryDirectory() as tmp:
        figures = asyncio.run(_drive(calls, Path(tmp)))
    floods = flood.run(quick)
    samples = figures["samples"]
    peak = max(s["VmRSS"] for s in samples)
    half = [s for s in samples if s["calls"] >= calls // 2]
    growth = round(half[-1]["VmRSS"] - half[0]["VmRSS"], 1) if len(half) > 1 else 0.0
    status = figures.pop("status") or {}
    counters = status.get("counters", {})
    return {
        "machine": f"{os.cpu_count()} cores, {sys.platform}, Python {sys.version.split()[0]}",
        "calls": calls,
        "budget_s": BUDGET_S,
        "in_flight": IN_FLIGHT,
        "rate_per_s": RATE,
        "max_log_backlog": max((s.get("log_backlog", 0) for s in samples), default=0),
        **figures,
        "wrapper_view": {
            "counters": counters,
            "in_flight": len(status.get("in_flight", [])),
            "tombstones": (status.get("tombstones") or {}).get("count"),
            "tombstone_ttl_s": (status.get("tombstones") or {}).get("ttl_s"),
            "log": status.get("log"),
        },
        "peak_rss_mb": peak,
        "second_half_growth_mb": growth,
        "targets": {"rss_mb": TARGET_MB, "second_half_growth_mb": FLAT_MB},
        "floods": floods,
        "pass": peak <= TARGET_MB and growth <= FLAT_MB and floods["pass"],
    }


if __name__ == "__main__":
    with contextlib.suppress(KeyboardInterrupt):
        print(json.dumps(run(quick="--quick" in sys.argv), indent=2))
