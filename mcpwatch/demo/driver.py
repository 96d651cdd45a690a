"""The demo's host: an MCP client (legacy handshake, as Claude Code speaks) that keeps council calls going.

Several workers call `consult_council` across all tiers, with now and then an admin mutation (State Sync
invalidations) and a health check, until told to stop. Run in-process by `mcpwatch demo --headless`, or as a
child process (`python -m mcpwatch.demo.driver --read-fd R --write-fd W`) beside the console.

The demo starts the wrapper itself and hands its pipes to the host, so the wrapper (and the council behind it)
start at once, beside the host; the host speaks JSON-RPC itself (`host_client`) rather than import the MCP SDK:
on a loaded machine the two cost seconds before the first call.
"""

from __future__ import annotations

import argparse
import asyncio
import random
import signal
import subprocess
import sys
from collections import Counter
from dataclasses import dataclass, field
from typing import IO, Any

from mcpwatch.demo.host_client import PipeClient

TIERS = (("quick", 3), ("balanced", 3), ("high", 2), ("reasoning", 2))
QUERIES = (
    "Should we shard the orders table by customer or by region?",
    "Is it worth moving the build from Make to Bazel for a 40-engineer team?",
    "What is the safest way to rotate a leaked API key used by twelve services?",
    "How should an on-call engineer triage intermittent 502s behind a load balancer?",
    "Rust or Go for a new low-latency market-data gateway?",
    "When does event sourcing pay for itself?",
)


@dataclass
class DriverStats:
    calls: Counter[str] = field(default_factory=Counter)
    errors: list[str] = field(default_factory=list)


def wrapper_command(config: str, name: str, scenario: str, time_scale: float, seed: int) -> list[str]:
    """The wrapper in front of the council; the council ignores every second cancellation (`deaf_council`), so half
    the cut calls answer late."""
    council = [
        sys.executable,
        "-m",
        "mcpwatch.demo.deaf_council",
        "--scenario",
        scenario,
        "--time-scale",
        str(time_scale),
        "--seed",
        str(seed),
    ]
    return [sys.executable, "-m", "mcpwatch", "wrap", "--config", config, "--name", name, "--", *council]


def start_wrapper(command: list[str], stderr: int | IO[bytes] | None = None) -> subprocess.Popen[bytes]:
    """The wrapper as the host's child, its stdin and stdout the host's pipes (see `drive`)."""
    return subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=stderr)


def stop_wrapper(wrapper: subprocess.Popen[bytes], timeout: float = 20.0) -> None:
    """After the host closed its end: the wrapper closes its upstream and its log, then exits; killed only if not."""
    try:
        wrapper.wait(timeout)
    except subprocess.TimeoutExpired:
        wrapper.kill()
        wrapper.wait(5)


async def drive(
    pipes: tuple[int, int],
    stop: asyncio.Event,
    *,
    workers: int = 3,
    seed: int = 7,
    stats: DriverStats | None = None,
) -> DriverStats:
    """Keep calls going over the wrapper's pipes (`(read_fd, write_fd)`, both closed on return) until `stop`."""
    from mcpwatch import __version__

    stats = DriverStats() if stats is None else stats
    rng = random.Random(seed)
    tiers = [tier for tier, weight in TIERS for _ in range(weight)]

    async def on_progress(params: dict[str, Any]) -> None:
        stats.calls["progress"] += 1  # asking for progress, as real hosts do, makes the council report it

    client = PipeClient(*pipes)
    try:
        await client.start({"name": "mcpwatch-demo-host", "version": __version__})
        listed = await client.call_tool("council.models.list", {})
        payload = listed.get("structuredContent") or {}
        models = [m["id"] if isinstance(m, dict) else str(m) for m in payload.get("models", [])]
        await client.call_tool("council_health_check", {})  # what a careful host does before expensive calls
        disabled: list[str] = []

        async def one(step: int) -> None:
            if step % 7 == 0 and models:  # the first step too: a model is disabled (and its caches invalidated) at once
                if disabled:
                    await client.call_tool("council.models.enable", {"model": disabled.pop()})
                else:
                    disabled.append(rng.choice(models))
                    await client.call_tool("council.models.disable", {"model": disabled[-1]})
                stats.calls["admin"] += 1
                return
            if step % 11 == 5:
                await client.call_tool("council_health_check", {})
                stats.calls["health"] += 1
                return
            tier = rng.choice(tiers)
            result = await client.call_tool(
                "consult_council", {"query": rng.choice(QUERIES), "confidence": tier}, on_progress
            )
            stats.calls[f"{tier}:{'error' if result.get('isError') else 'ok'}"] += 1

        async def worker(index: int) -> None:
            step = index
            while not stop.is_set():
                try:
                    await one(step)
                except Exception as exc:  # a demo host keeps going, as a real one would retry
                    stats.errors.append(f"{type(exc).__name__}: {exc}")
                    await asyncio.sleep(0.5)
                step += workers

        tasks = [asyncio.ensure_future(worker(i)) for i in range(workers)]
        await stop.wait()
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
    finally:
        client.close()
    return stats


def main() -> int:
    parser = argparse.ArgumentParser(prog="python -m mcpwatch.demo.driver")
    parser.add_argument("--read-fd", type=int, required=True, help="the wrapper's stdout")
    parser.add_argument("--write-fd", type=int, required=True, help="the wrapper's stdin")
    parser.add_argument("--seed", type=int, default=7)
    args = parser.parse_args()

    async def run() -> None:
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for signum in (signal.SIGTERM, signal.SIGINT):
            loop.add_signal_handler(signum, stop.set)
        await drive((args.read_fd, args.write_fd), stop, seed=args.seed)

    asyncio.run(run())
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
