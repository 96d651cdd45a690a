"""Partial results, fallbacks and the failure taxonomy, through a real stdio client.

Scenarios are written per test; latencies are seconds at time scale 1 and the runs use 0.01, so a 50 s
latency takes 0.5 s. The tier env variables shrink `high` further where a test waits for a timeout.
"""

from __future__ import annotations

import time
from pathlib import Path

import pytest
from council_harness import call, consult, council, statuses, write_scenario

pytestmark = pytest.mark.anyio

# high: 20 s total, 10 s per model; at time scale 0.01 → 0.2 s and 0.1 s.
SHORT_HIGH = {"LLM_COUNCIL_TIMEOUT_HIGH": "20", "LLM_COUNCIL_MODEL_TIMEOUT_HIGH": "10"}

PARTIAL = """
    chairman = "lab/alpha"
    [[models]]
    id = "lab/alpha"
    name = "Alpha"
    min_tier = "quick"
    latency_s = 1.0
    [[models]]
    id = "lab/bravo"
    name = "Bravo"
    min_tier = "quick"
    latency_s = 1.5
    [[models]]
    id = "lab/claude"
    name = "Claude"
    min_tier = "high"
    script = ["hang"]
    [[models]]
    id = "lab/llama"
    name = "Llama"
    min_tier = "high"
    latency_s = 500.0
"""


@pytest.mark.slow
async def test_partial_results_with_several_one_and_no_finished_models(tmp_path: Path) -> None:
    scenario = write_scenario(tmp_path / "partial.toml", PARTIAL)
    async with council("--scenario", scenario, "--time-scale", "0.01", env=SHORT_HIGH) as (client, _):
        several, is_error = await consult(client, "What limits battery life?")
        assert not is_error
        assert statuses(several) == {
            "lab/alpha": "ok",
            "lab/bravo": "ok",
            "lab/claude": "timeout",
            "lab/llama": "timeout",
        }
        meta = several["metadata"]
        assert meta["warning"] == "This answer is based on 2 of 4 intended models; Claude and Llama did not respond."
        assert (meta["status"], meta["synthesis_type"], meta["completed_models"], meta["requested_models"]) == (
            "partial",
            "partial",
            2,
            4,
        )
        assert meta["stages"] == {"answers": "partial", "review": "complete", "synthesis": "chairman"}
        assert several["model_responses"]["lab/claude"]["error"] == "timeout after 0.1s"
        assert "response" not in several["model_responses"]["lab/claude"]
        assert several["synthesis"]

        _, is_error = await call(client, "council.models.disable", {"model": "Bravo"})
        assert not is_error
        one, is_error = await consult(client, "What limits battery life?")
        assert not is_error
        meta = one["metadata"]
        assert statuses(one) == {"lab/alpha": "ok", "lab/claude": "timeout", "lab/llama": "timeout"}
        assert meta["warning"] == "This answer is based on 1 of 3 intended models; Claude and Llama did not respond."
        assert meta["synthesis_type"] == "partial" and meta["stages"]["review"] == "skipped"
        assert meta["synthesized_by"] == "chairman" and one["ranking"] == []

        await call(client, "council.models.enable", {"model": "lab/bravo"})
        await call(client, "council.models.disable", {"model": "lab/alpha"})
        await call(client, "council.models.disable", {"model": "lab/bravo"})
        started = time.monotonic()
        none, is_error = await consult(client, "What limits battery life?")
        elapsed = time.monotonic() - started
    assert is_error  # all models failed: a tool error, with diagnostics per model
    meta = none["metadata"]
    assert (meta["status"], meta["synthesis_type"], meta["completed_models"]) == ("failed", "insufficient", 0)
    assert none["synthesis"] == ""
    assert none["error"].startswith("No council member answered (tier high, 0.2s): Claude: timeout (timeout after ")
    assert "Llama: timeout" in none["error"]
    assert elapsed < 10  # the tier's 0.2 s ended the run; a generous bound that it did not hang on the models


STAGE2_STUCK = """
    chairman = "lab/alpha"
    [[models]]
    id = "lab/alpha"
    name = "Alpha"
    min_tier = "quick"
    latency_s = 1.0
    review_script = ["hang"]
    [[models]]
    id = "lab/bravo"
    name = "Bravo"
    min_tier = "quick"
    latency_s = 2.0
    review_script = ["hang"]
    synthesis_script = ["hang"]
    [[models]]
    id = "lab/charlie"
    name = "Charlie"
    min_tier = "quick"
    latency_s = 3.0
    review_script = ["server:503"]
"""


@pytest.mark.slow
async def test_review_timeout_falls_back_to_stage1_and_a_missing_chairman_to_a_summary(tmp_path: Path) -> None:
    scenario = write_scenario(tmp_path / "stuck.toml", STAGE2_STUCK)
    async with council("--scenario", scenario, "--time-scale", "0.01", env=SHORT_HIGH) as (client, _):
        stage1_only, is_error = await consult(client, "Why is the sky blue?", include_details=True)
        assert not is_error
        meta = stage1_only["metadata"]
        assert set(statuses(stage1_only).values()) == {"ok"}
        assert (meta["status"], meta["synthesis_type"], meta["synthesized_by"]) == (
            "partial",
            "stage1_only",
            "chairman",
        )
        assert meta["stages"]["review"] == "failed"
        assert meta["warning"] == (
            "No peer review (no reviewer returned a ranking); the chairman worked from the answers only."
        )
        reviews = stage1_only["details"]["reviews"]
        assert reviews["lab/alpha"]["status"] == "timeout" and reviews["lab/bravo"]["status"] == "timeout"
        assert reviews["lab/charlie"]["status"] == "error" and reviews["lab/charlie"]["http_status"] == 503
        assert reviews["lab/charlie"]["attempts"] == 2  # a 5xx is retried once

        chair, _ = await call(client, "council.chairman.set", {"model": "Bravo"})
        assert chair == {"chairman": "lab/bravo", "name": "Bravo", "previous": "lab/alpha", "changed": True}
        fallback, is_error = await consult(client, "Why is the sky blue?")
    assert not is_error
    meta = fallback["metadata"]
    assert (meta["status"], meta["synthesis_type"], meta["synthesized_by"]) == ("partial", "partial", "fallback")
    assert meta["chairman"] == "lab/bravo"
    assert fallback["synthesis"].startswith("Summary of 3 council answers (the chairman Bravo did not answer: timeout")
    assert "No chairman synthesis" in meta["warning"]


RATE_LIMITS = """
    chairman = "lab/delta"
    [[models]]
    id = "lab/alpha"
    name = "Alpha"
    min_tier = "quick"
    latency_s = 1.0
    script = ["rate_limited:5", "ok"]
    [[models]]
    id = "lab/bravo"
    name = "Bravo"
    min_tier = "quick"
    latency_s = 1.0
    script = ["rate_limited:900"]
    [[models]]
    id = "lab/charlie"
    name = "Charlie"
    min_tier = "quick"
    latency_s = 1.0
    script = ["rate_limited"]
    [[models]]
    id = "lab/delta"
    name = "Delta"
    min_tier = "quick"
    latency_s = 1.0
    script = ["network", "ok"]
"""


@pytest.mark.slow
async def test_429_is_retried_honouring_retry_after_and_network_errors_are_retried(tmp_path: Path) -> None:
    scenario = write_scenario(tmp_path / "limits.toml", RATE_LIMITS)
    async with council("--scenario", scenario, "--time-scale", "0.01") as (client, wire):
        result, is_error = await consult(client, "How do tides work?")
    assert not is_error
    responses = result["model_responses"]
    alpha = responses["lab/alpha"]
    assert alpha["status"] == "ok" and alpha["attempts"] == 2
    assert alpha["latency_ms"] >= 50  # waited Retry-After 5 s × time scale 0.01
    bravo = responses["lab/bravo"]  # Retry-After 900 s does not fit the window: give up at once
    assert (bravo["status"], bravo["attempts"], bravo["retry_after"], bravo["http_status"]) == (
        "rate_limited",
        1,
        900,
        429,
    )
    assert "does not fit the time left" in bravo["error"]
    charlie = responses["lab/charlie"]  # no Retry-After: exponential backoff, three attempts in all
    assert (charlie["status"], charlie["attempts"], charlie.get("retry_after")) == ("rate_limited", 3, None)
    delta = responses["lab/delta"]  # network error: a different strategy from timeouts, one quick retry
    assert delta["status"] == "ok" and delta["attempts"] == 2
    assert result["metadata"]["warning"] == (
        "This answer is based on 2 of 4 intended models; Bravo and Charlie did not respond."
    )
    messages = [p["message"] for p in wire.progress()]
    assert any(m.startswith("↻ Alpha rate limited (429); attempt 2 in 0.05s") for m in messages)
    assert any(m.startswith("✗ Bravo rate_limited (") for m in messages)


AUTH = """
    chairman = "lab/slow"
    [[models]]
    id = "lab/locked"
    name = "Locked"
    min_tier = "quick"
    latency_s = 1.0
    script = ["auth:401"]
    [[models]]
    id = "lab/slow"
    name = "Slow"
    min_tier = "quick"
    latency_s = 50.0
    [[models]]
    id = "lab/stuck"
    name = "Stuck"
    min_tier = "quick"
    script = ["hang"]
    [[models]]
    id = "lab/forbidden"
    name = "Forbidden"
    min_tier = "quick"
    latency_s = 1.0
    script = ["auth:403"]
"""


@pytest.mark.slow
async def test_a_401_fails_fast_and_a_403_only_stops_its_model(tmp_path: Path) -> None:
    scenario = write_scenario(tmp_path / "auth.toml", AUTH)
    async with council("--scenario", scenario, "--time-scale", "0.01") as (client, _):
        stopped, is_error = await consult(client, "Is this key valid?")
        await call(client, "council.models.disable", {"model": "Locked"})
        forbidden, forbidden_error = await consult(client, "Is this key valid?")
    # 401: the key is bad for every model, so nobody waits for the slow (0.5 s) or stuck models: they are
    # reported stopped by the 401, not answered or timed out.
    assert is_error
    assert statuses(stopped) == {
        "lab/locked": "auth_error",
        "lab/slow": "auth_error",
        "lab/stuck": "auth_error",
        "lab/forbidden": "auth_error",
    }
    locked = stopped["model_responses"]["lab/locked"]
    assert locked["http_status"] == 401 and locked["attempts"] == 1
    assert stopped["model_responses"]["lab/slow"]["error"].startswith(
        "not completed: the API key was rejected (HTTP 401 on lab/locked)"
    )
    assert "The council stopped early: the API key was rejected" in stopped["metadata"]["warning"]
    # 403: this key may not use that model; no retry, the others carry on.
    assert not forbidden_error
    assert statuses(forbidden)["lab/forbidden"] == "auth_error"
    assert forbidden["model_responses"]["lab/forbidden"]["attempts"] == 1
    assert statuses(forbidden) == {"lab/slow": "ok", "lab/stuck": "timeout", "lab/forbidden": "auth_error"}


LATE_ONLY = """
    chairman = "lab/alpha"
    [[models]]
    id = "lab/alpha"
    name = "Alpha"
    min_tier = "quick"
    latency_s = 80.0
    jitter = 0.0
    [[models]]
    id = "lab/bravo"
    name = "Bravo"
    min_tier = "quick"
    latency_s = 95.0
    jitter = 0.0
"""


@pytest.mark.slow
async def test_stage1_waits_past_its_share_for_a_first_answer_rather_than_fail(tmp_path: Path) -> None:
    # quick: 100 s total and per model (1 s at this scale); stage 1's share ends at 70 % (0.7 s). Nobody has
    # answered by then, but Alpha will at 0.8 s: the run waits for it instead of failing with time left.
    scenario = write_scenario(tmp_path / "late.toml", LATE_ONLY)
    env = {"LLM_COUNCIL_TIMEOUT_QUICK": "100", "LLM_COUNCIL_MODEL_TIMEOUT_QUICK": "100"}
    async with council("--scenario", scenario, "--time-scale", "0.01", env=env) as (client, wire):
        result, is_error = await consult(client, "Why is the sky blue?", confidence="quick")
    assert not is_error  # Alpha's answer after stage 1's share was taken: the run did not fail with time left
    assert statuses(result) == {"lab/alpha": "ok", "lab/bravo": "timeout"}
    assert result["model_responses"]["lab/bravo"]["error"] == "timeout after 0.7s"
    warning = result["metadata"]["warning"]
    assert warning.startswith("This answer is based on 1 of 2 intended models; Bravo did not respond.")
    messages = [p.get("message", "") for p in wire.progress()]
    assert any(m.startswith("Stage 1 closed: no answer yet; waiting up to") for m in messages)
    assert "Stage 1 closed: Alpha answered after the others' time was up; going on with it" in messages
