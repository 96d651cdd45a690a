"""A 429 with Retry-After in any stage is retried and the run goes on: in stage 1 (answers), stage 2 (reviews)
and stage 3 (the chairman), in every tier, and with models that answer in the same instant. The chairman's
retry used to crash the whole call (`KeyError: 3` in the progress reporter) and lose every answer."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
from council_harness import write_scenario

from mcpwatch.council.backends.simulated import SimulatedBackend
from mcpwatch.council.core import Council
from mcpwatch.council.settings import load_settings
from mcpwatch.council.tiers import MAX_MULTIPLIER, TIERS

from waiting import load_factor

pytestmark = pytest.mark.anyio

SCALE = 0.01  # a 1 s answer is 10 ms, a Retry-After of 1 s too


def _window_multiplier() -> str:
    """The tiers' windows (quick's 30 s: 0.3 s at this scale) ten times as long, and longer as the machine is
    loaded: a run ends as soon as its answers are in, and none of these runs is meant to meet its window's end
    (0.3 s once closed on a run beside eight test workers on two cores)."""
    return str(min(MAX_MULTIPLIER, 10 * load_factor()))


def _scenario(stages: tuple[str, ...], *, together: bool) -> str:
    """Three models that may sit in any tier; each is rate limited once (Retry-After 1 s) in `stages`."""
    scripts = {stage: '["rate_limited:1", "ok"]' if stage in stages else "[]" for stage in ("1", "2", "3")}
    models = []
    for i, name in enumerate(("alpha", "bravo", "charlie")):
        latency = 1.0 if together else 1.0 + 0.7 * i
        models.append(
            f"""
            [[models]]
            id = "lab/{name}"
            name = "{name.title()}"
            min_tier = "quick"
            latency_s = {latency}
            jitter = 0.0
            script = {scripts["1"]}
            review_script = {scripts["2"]}
            synthesis_script = {scripts["3"]}
            """
        )
    return 'chairman = "lab/alpha"\n[tiers.quick]\nrace = false\nmodels = 3\n' + "".join(models)


def _council(path: str) -> Council:
    settings = load_settings({"LLM_COUNCIL_TIMEOUT_MULTIPLIER": _window_multiplier()}, scenario=path, time_scale=SCALE)
    return Council(settings, SimulatedBackend(settings.scenario, seed=settings.seed, time_scale=SCALE))


class Lines:
    def __init__(self) -> None:
        self.messages: list[str] = []

    async def __call__(self, progress: float, total: float, message: str, meta: dict[str, Any]) -> None:
        self.messages.append(message)


@pytest.mark.parametrize("tier", TIERS)
@pytest.mark.parametrize("together", [True, False], ids=["together", "apart"])
@pytest.mark.parametrize("stages", [("1",), ("2",), ("3",), ("1", "2", "3")], ids=["s1", "s2", "s3", "all"])
async def test_a_429_in_any_stage_is_retried_and_the_council_completes(
    tmp_path: Path, tier: str, together: bool, stages: tuple[str, ...]
) -> None:
    council = _council(write_scenario(tmp_path / "retry.toml", _scenario(stages, together=together)))
    sent = Lines()
    result, is_error = await council.consult("Will the chairman be retried?", tier, send=sent)
    meta = result["metadata"]
    assert not is_error, result
    assert (meta["status"], meta["synthesized_by"]) == ("complete", "chairman"), meta
    retried = [m for m in sent.messages if m.startswith("↻ ")]
    expected_retries = {"1": 3, "2": 3, "3": 1}
    assert len(retried) == sum(expected_retries[s] for s in stages), sent.messages
    assert all(re.match(r"↻ \w+ rate limited \(429\); attempt 2 in 0\.01s", m) for m in retried), retried
    stage3 = next(i for i, m in enumerate(sent.messages) if m.startswith("Stage 3: chairman Alpha"))
    chairman_retries = [m for m in sent.messages[stage3:] if m.startswith("↻ ")]
    assert chairman_retries == (["↻ Alpha rate limited (429); attempt 2 in 0.01s"] if "3" in stages else [])
    assert sent.messages[-1] == "Stage 3: ✓ synthesis by Alpha"
