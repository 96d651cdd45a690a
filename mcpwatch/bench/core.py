"""`mcpwatch bench core`: the reliability core's hot paths against their targets.

Each figure is the best of several repeats (the least disturbed by other work on the machine), per operation.
"""

from __future__ import annotations

import time
import timeit
from collections.abc import Callable
from typing import Any

from mcpwatch.bench.callcount import bench_call_counts
from mcpwatch.clock import SYSTEM_CLOCK, ManualClock
from mcpwatch.reliability.statesync import PolicyEngine, StateSync
from mcpwatch.reliability.tombstones import TombstoneTable

HELP = (
    "reliability core: policy resolution, tool decoration, tombstone lookup and sweep, interpreter calls per plain"
    " call vs targets"
)

TOMBSTONES = 100_000
TOOLS = 1_000

POLICIES: list[dict[str, Any]] = [
    {"match": "countries.*", "cache_control": "immutable"},
    {"match": "currencies.*", "cache_control": "immutable"},
    {"match": "timezones.**", "cache_control": "immutable"},
    {"match": "sprints.create", "invalidates": ["sprints.*"]},
    {"match": "sprints.update", "invalidates": ["sprints.*"]},
    {"match": "sprints.delete", "invalidates": ["sprints.*"]},
    {"match": "tasks.update", "invalidates": ["tasks.*", "sprints.*"]},
    {"match": "tasks.create", "invalidates": ["tasks.*", "sprints.*"]},
    {"match": "reports.**.get", "cache_control": "no-store"},
    {"match": "*.list", "cache_control": "no-store"},
]


def _best_per_op(stmt: Callable[[], object], number: int, repeat: int) -> float:
    """Seconds per call of `stmt`: the best of `repeat` runs of `number` calls."""
    return min(timeit.repeat(stmt, number=number, repeat=repeat)) / number


def _figure(name: str, value: float, unit: str, target: float, **extra: Any) -> dict[str, Any]:
    return {"name": name, "value": round(value, 4), "unit": unit, "target": target, "pass": value <= target, **extra}


def bench_resolution(quick: bool) -> dict[str, Any]:
    engine = PolicyEngine(POLICIES, "no-store")
    names = ["sprints.update", "countries.list", "tasks.get", "reports.a.b.get", "unknown.tool"]
    for name in names:
        engine.resolve(name)
    resolve = engine.resolve
    name = "reports.a.b.get"
    per_op = _best_per_op(lambda: resolve(name), number=20_000 if quick else 200_000, repeat=3 if quick else 7)
    return _figure("cached policy resolution", per_op * 1e6, "µs", 1.0, policies=len(POLICIES))


def _tools_result() -> dict[str, Any]:
    domains = ["countries", "sprints", "tasks", "reports", "users", "billing", "timezones", "misc"]
    verbs = ["get", "list", "update", "create", "delete"]
    tools = []
    for i in range(TOOLS):
        domain = domains[i % len(domains)]
        verb = verbs[(i // len(domains)) % len(verbs)]
        tools.append(
            {
                "name": f"{domain}.{verb}{i}" if i >= 40 else f"{domain}.{verb}",
                "description": f"Tool number {i}: {verb} {domain}.",
                "inputSchema": {"type": "object", "properties": {"id": {"type": "string"}}},
            }
        )
    return {"tools": tools, "nextCursor": None}


def bench_decoration(quick: bool) -> dict[str, Any]:
    sync = StateSync(POLICIES, "no-store")
    result = _tools_result()
    sync.decorate_tools(result)  # warm: the steady state is every tools/list after the first
    per_op = _best_per_op(lambda: sync.decorate_tools(result), number=20 if quick else 100, repeat=3 if quick else 7)
    cold = StateSync(POLICIES, "no-store")
    started = time.perf_counter()
    cold.decorate_tools(result)
    cold_s = time.perf_counter() - started
    return _figure(f"decorate {TOOLS} tools", per_op * 1e3, "ms", 5.0, first_call_ms=round(cold_s * 1e3, 3))


def _filled_table(clock: Any) -> TombstoneTable:
    table = TombstoneTable(clock=clock, cap=TOMBSTONES)
    for key in range(1, TOMBSTONES + 1):
        table.add(key, ttl_s=165.0, reason="deadline", request_id=str(key), tool="consult_council")
    return table


def bench_lookup(quick: bool) -> dict[str, Any]:
    table = _filled_table(SYSTEM_CLOCK)
    lookup = table.lookup
    key = TOMBSTONES // 2
    number = 20_000 if quick else 200_000
    repeat = 3 if quick else 7
    present = _best_per_op(lambda: lookup(key), number=number, repeat=repeat)
    absent = _best_per_op(lambda: lookup(-1), number=number, repeat=repeat)
    return _figure(
        f"tombstone lookup, {TOMBSTONES:,} entries",
        max(present, absent) * 1e6,
        "µs",
        1.0,
        present_us=round(present * 1e6, 4),
        absent_us=round(absent * 1e6, 4),
    )


def bench_sweep(quick: bool) -> dict[str, Any]:
    """A full sweep of the table: all entries expired, half of them (scattered), and none."""
    best = float("inf")
    scan_only = float("inf")
    for _ in range(1 if quick else 3):
        clock = ManualClock()
        table = _filled_table(clock)
        started = time.perf_counter()
        table.sweep()  # nothing expired yet: a scan that removes nothing
        scan_only = min(scan_only, time.perf_counter() - started)
        clock.advance(165.0)
        started = time.perf_counter()
        removed = table.sweep()
        best = min(best, time.perf_counter() - started)
        assert len(removed) == TOMBSTONES and not table
    half = float("inf")
    for _ in range(1 if quick else 3):
        clock = ManualClock()
        table = TombstoneTable(clock=clock, cap=TOMBSTONES)
        for key in range(1, TOMBSTONES + 1):  # interleaved TTLs: half expire, scattered through the table
            table.add(key, ttl_s=60.0 if key % 2 else 165.0, reason="deadline", request_id=str(key))
        clock.advance(100.0)
        started = time.perf_counter()
        removed = table.sweep()
        half = min(half, time.perf_counter() - started)
        assert len(removed) == TOMBSTONES // 2
    return _figure(
        f"tombstone full sweep, {TOMBSTONES:,} entries",
        max(best, half) * 1e3,
        "ms",
        50.0,
        all_expired_ms=round(best * 1e3, 3),
        half_expired_ms=round(half * 1e3, 3),
        none_expired_ms=round(scan_only * 1e3, 3),
    )


def run(quick: bool = False) -> dict[str, Any]:
    figures = [
        bench_resolution(quick),
        bench_decoration(quick),
        bench_lookup(quick),
        bench_sweep(quick),
        bench_call_counts(quick),
    ]
    return {"quick": quick, "pass": all(f["pass"] for f in figures), "figures": figures}
