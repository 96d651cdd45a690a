"""The demo's host: an MCP client (legacy handshake, as Claude Code speaks) that keeps council calls going.

Several workers call `consult_council` across all tiers, with now and then an admin mutation (State Sync
invalidations) and a health check, until told to stop. Run in-process by `mcpwatch demo --headless`, or as a
child process (`python -m mcpwatch.demo.driver …`) beside the console.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import random
import signal
import sys
from collections import Counter
from dataclasses import dataclass, field

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
    first_call_at: float | None = None  # the loop's time when the first consult_council went out


def wrapper_command(config: str, name: str, scenario: str, time_scale: float, seed: int) -> list[str]:
    council = [
        sys.executable,
        "-m",
        "mcpwatch",
        "council",
        "--scenario",
        scenario,
        "--time-scale",
        str(time_scale),
        "--seed",
        str(seed),
    ]
    relay = [sys.executable, "-m", "mcpwatch.demo.deaf_relay", "--"]  # half the cut calls then answer late
    return [sys.executable, "-m", "mcpwatch", "wrap", "--config", config, "--name", name, "--", *relay, *council]


async def drive(
    command: list[str], stop: asyncio.Event, *, workers: int = 3, seed: int = 7, stats: DriverStats | None = None
) -> DriverStats:
    import mcp_types as types
    from mcp import Client, StdioServerParameters

    from mcpwatch import __version__

    stats = DriverStats() if stats is None else stats
    rng = random.Random(seed)
    params = StdioServerParameters(command=command[0], args=command[1:], env=dict(os.environ))
    tiers = [tier for tier, weight in TIERS for _ in range(weight)]
    models: list[str] = []

    async def on_progress(progress: float, total: float | None, message: str | None) -> None:
        stats.calls["progress"] += 1  # asking for progress, as real hosts do, makes the council report it

    client_info = types.Implementation(name="mcpwatch-demo-host", version=__version__)
    async with Client(params, mode="legacy", read_timeout_seconds=None, client_info=client_info) as client:
        listed = await client.call_tool("council.models.list", {})
        payload = listed.structured_content or {}
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
            if stats.first_call_at is None:
                stats.first_call_at = asyncio.get_running_loop().time()
            result = await client.call_tool(
                "consult_council", {"query": rng.choice(QUERIES), "confidence": tier}, progress_callback=on_progress
            )
            stats.calls[f"{tier}:{'error' if result.is_error else 'ok'}"] += 1

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
    return stats


def main() -> int:
    parser = argparse.ArgumentParser(prog="python -m mcpwatch.demo.driver")
    parser.add_argument("--config", required=True)
    parser.add_argument("--name", default="demo")
    parser.add_argument("--scenario", default="default")
    parser.add_argument("--time-scale", type=float, default=0.4)
    parser.add_argument("--seed", type=int, default=7)
    args = parser.parse_args()

    async def run() -> None:
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for signum in (signal.SIGTERM, signal.SIGINT):
            loop.add_signal_handler(signum, stop.set)
        await drive(
            wrapper_command(args.config, args.name, args.scenario, args.time_scale, args.seed), stop, seed=args.seed
        )

    asyncio.run(run())
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
