"""The council service in-process: the shared-results pattern when the run's safety net fires, and edge cases
of planning that the stdio tests do not reach."""

from __future__ import annotations

from typing import Any

import anyio
import pytest

from mcpwatch.council.backends.simulated import SimulatedBackend
from mcpwatch.council.core import Council, CouncilError
from mcpwatch.council.settings import load_settings

from waiting import sooner_than

pytestmark = pytest.mark.anyio


def make_council(scenario: str = "fast", time_scale: float = 0.002, **env: str) -> Council:
    settings = load_settings(env, scenario=scenario, time_scale=time_scale)
    return Council(settings, SimulatedBackend(settings.scenario, seed=settings.seed, time_scale=time_scale))


async def test_results_survive_when_the_safety_net_cuts_the_run() -> None:
    # A client that stops taking progress notifications stalls every stage; the run's safety net (window end
    # plus a grace) cancels them, and the answers that had already arrived are still in the shared state.
    council = make_council()  # high: 0.36 s at this scale
    sent: list[str] = []

    async def stalled(progress: float, total: float, message: str, meta: dict[str, Any]) -> None:
        sent.append(message)
        if len(sent) >= 3:
            await anyio.sleep(30)

    started = anyio.current_time()
    result, is_error = await council.consult("Will it rain tomorrow?", send=stalled)
    elapsed = anyio.current_time() - started
    assert not is_error and elapsed < sooner_than(30, 10)  # the run's safety net, not the stalled sender's 30 s
    meta = result["metadata"]
    assert set(s["status"] for s in result["model_responses"].values()) == {"ok"}  # kept from the shared state
    assert (meta["status"], meta["synthesis_type"], meta["synthesized_by"]) == ("partial", "partial", "fallback")
    # every answer's own progress line is sent before stage 1 closes, so the stalled line holds stage 1 open
    # until the safety net: the review never started
    assert meta["stages"]["review"] == "skipped"
    assert result["synthesis"].startswith("Summary of 4 council answers (the time window closed before the chairman")
    assert sent[-1].startswith("Time is up: 4 of 4 answered")


async def test_a_deadline_already_spent_gives_a_prompt_diagnostic_error() -> None:
    council = make_council(time_scale=1.0)
    started = anyio.current_time()
    result, is_error = await council.consult("Anything?", caller_deadline_ms=30)
    assert is_error and anyio.current_time() - started < 0.2
    assert result["metadata"]["budget"] == {
        "total_s": 180.0,
        "per_model_s": 90.0,
        "window_s": 0.0,
        "source": "caller",
        "caller_deadline_ms": 30,
    }
    assert result["error"].startswith("No council member answered (tier high, 0s): GPT-4o mini: timeout")


async def test_unrunnable_requests_raise_a_clear_council_error() -> None:
    council = make_council("reasoning")
    with pytest.raises(CouncilError, match="query must not be empty"):
        await council.consult("   ")
    with pytest.raises(
        CouncilError, match="no enabled model fits the quick tier; enabled: openai/o1 \\(from reasoning\\)"
    ):
        await council.consult("Quick one?", "quick")
    assert council.tier_for("auto") == "reasoning" and council.tier_for("nonsense") == "high"


async def test_reasoning_slot_wait_spends_the_runs_own_budget() -> None:
    council = make_council("reasoning", time_scale=0.0005, LLM_COUNCIL_TIMEOUT_REASONING="100")  # 0.05 s window
    semaphore = council._semaphore()
    for _ in range(2):
        await semaphore.acquire()  # both slots taken by runs that do not end in time
    council.reasoning_in_use = 2
    sent: list[str] = []

    async def record(progress: float, total: float, message: str, meta: dict[str, Any]) -> None:
        sent.append(message)

    result, is_error = await council.consult("Deep question?", "reasoning", send=record)
    assert is_error and result["metadata"]["queued_ms"] >= 45
    waited = result["metadata"]["queued_ms"] / 1000
    # the failure says the run waited for a slot (it read as the models' own timeout before)
    assert result["error"].startswith(f"No council member answered (tier reasoning, 0.05s, after waiting {waited:.3g}s")
    assert sent[0] == "Queued: waiting for a reasoning slot (2 of 2 in use)"
    assert all(
        e["error"].startswith("never started: no reasoning slot freed") for e in result["model_responses"].values()
    )
    assert semaphore.value == 0  # nothing was released that was not taken
