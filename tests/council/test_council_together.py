"""Council progress and the reasoning slot under contention (seed ADR-012): answers that arrive in the same instant
each get their progress line; a reasoning run waiting for a slot has that wait reported as `queued_ms` and charged
to no model (the slot is held around the whole run); the health check's `estimated_duration_seconds` is a number."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import anyio
import pytest
from council_harness import write_scenario

from mcpwatch.council.backends.simulated import SimulatedBackend
from mcpwatch.council.core import Council
from mcpwatch.council.health import health_check
from mcpwatch.council.settings import load_settings

pytestmark = pytest.mark.anyio

TOGETHER = """
    chairman = "lab/alpha"
    [[models]]
    id = "lab/alpha"
    min_tier = "quick"
    latency_s = 0.5
    jitter = 0.0
    [[models]]
    id = "lab/bravo"
    min_tier = "quick"
    latency_s = 0.5
    jitter = 0.0
    [[models]]
    id = "lab/charlie"
    min_tier = "quick"
    latency_s = 0.5
    jitter = 0.0
"""

DEEP = """
    chairman = "lab/deep-1"
    [[models]]
    id = "lab/deep-1"
    min_tier = "reasoning"
    latency_s = 100.0
    jitter = 0.0
    [[models]]
    id = "lab/deep-2"
    min_tier = "reasoning"
    latency_s = 100.0
    jitter = 0.0
"""


def make_council(scenario: str, time_scale: float, slots: int = 2) -> Council:
    settings = load_settings({}, scenario=scenario, time_scale=time_scale)
    backend = SimulatedBackend(settings.scenario, seed=settings.seed, time_scale=time_scale)
    return Council(settings, backend, reasoning_slots=slots)


class Recorder:
    """A client taking progress as a transport does: each notification takes a moment to write, longer while
    others are still being written (they queue on the same pipe)."""

    def __init__(self) -> None:
        self.messages: list[str] = []
        self.metas: list[dict[str, Any]] = []
        self._writing = 0

    async def __call__(self, progress: float, total: float, message: str, meta: dict[str, Any]) -> None:
        self._writing += 1
        try:
            await anyio.sleep(0.002 + 0.01 * (self._writing - 1))
        finally:
            self._writing -= 1
        self.messages.append(message)
        self.metas.append(meta["dev.mcpwatch/council"])


async def test_answers_arriving_together_each_get_their_own_line(tmp_path: Path) -> None:
    council = make_council(write_scenario(tmp_path / "together.toml", TOGETHER), time_scale=1.0)
    sent = Recorder()
    result, is_error = await council.consult("Same instant?", "high", send=sent)
    assert not is_error and result["metadata"]["completed_models"] == 3
    lines = [m for m in sent.messages if re.match(r"^[✓✗] ", m)]
    # was: only "(1/3)"; the others were cancelled with the task group
    assert [re.findall(r"\((\d)/3\)", m)[0] for m in lines] == ["1", "2", "3"], sent.messages
    assert len({m.split(" (")[0] for m in lines}) == 3  # one line per model
    waiting = [m.split("waiting: ")[1].count(",") + 1 if "waiting: " in m else 0 for m in lines]
    assert waiting == [2, 1, 0]


async def test_a_queued_reasoning_run_reports_its_wait_apart_and_keeps_its_whole_window(tmp_path: Path) -> None:
    council = make_council(write_scenario(tmp_path / "deep.toml", DEEP), time_scale=0.002, slots=1)
    tier_total = council.tiers["reasoning"].total_s  # 1.2 s at this scale
    semaphore = council._semaphore()
    await semaphore.acquire()  # another run holds the only slot for 0.3 s
    council.reasoning_in_use = 1
    sent = Recorder()
    outcome: dict[str, Any] = {}

    async def consult() -> None:
        started = anyio.current_time()
        outcome["result"], outcome["is_error"] = await council.consult("Deep?", "reasoning", send=sent)
        outcome["wall_ms"] = (anyio.current_time() - started) * 1000

    async with anyio.create_task_group() as tg:
        tg.start_soon(consult)
        await anyio.sleep(0.3)
        council.reasoning_in_use = 0
        semaphore.release()
    meta = outcome["result"]["metadata"]
    assert not outcome["is_error"] and meta["status"] == "complete"
    assert meta["queued_ms"] >= 250  # the slot was freed 0.3 s after the run was asked for
    assert meta["budget"]["window_s"] == pytest.approx(tier_total)  # the wait was not taken from the run
    assert meta["elapsed_ms"] <= outcome["wall_ms"] - meta["queued_ms"] + 5  # the run's time leaves the wait out
    latencies = [r["latency_ms"] for r in outcome["result"]["model_responses"].values()]
    assert all(ms < 300 for ms in latencies), latencies  # 200 ms each: no queue time in them
    assert sent.messages[0] == "Queued: waiting for a reasoning slot (1 of 1 in use)"
    assert all(m["queued_ms"] == meta["queued_ms"] for m in sent.metas[1:])
    assert semaphore.value == 1  # released after the run


async def test_a_queued_reasoning_run_still_meets_its_callers_deadline(tmp_path: Path) -> None:
    council = make_council(write_scenario(tmp_path / "deep.toml", DEEP), time_scale=0.002, slots=1)
    semaphore = council._semaphore()
    await semaphore.acquire()
    outcome: dict[str, Any] = {}

    async def consult() -> None:
        outcome["result"], _ = await council.consult("Deep?", "reasoning", caller_deadline_ms=1000)

    async with anyio.create_task_group() as tg:
        tg.start_soon(consult)
        await anyio.sleep(0.3)
        semaphore.release()
    meta = outcome["result"]["metadata"]
    queued_s = meta["queued_ms"] / 1000
    # the caller's clock ran while queued: what is left of its second, less the 10 % delivery margin
    assert meta["budget"]["source"] == "caller"
    assert meta["budget"]["window_s"] == pytest.approx(1.0 - queued_s - 0.1, abs=0.01)


async def test_health_estimated_duration_is_a_number_for_the_default_tier(tmp_path: Path) -> None:
    council = make_council(write_scenario(tmp_path / "together.toml", TOGETHER), time_scale=1.0)
    health = await health_check(council)
    by_tier = health["estimated_duration_seconds_by_tier"]
    assert set(by_tier) == {"quick", "balanced", "high", "reasoning"}
    assert isinstance(health["estimated_duration_seconds"], float)
    assert health["estimated_duration_seconds"] == by_tier[health["default_tier"]] == by_tier["high"]
