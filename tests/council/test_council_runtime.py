"""Racing, deadline propagation, the reasoning semaphore, admin tools, health check, shipped scenarios."""

from __future__ import annotations

import time
from pathlib import Path

import anyio
import pytest
from council_harness import COUNCIL_META, DEADLINE_META, call, consult, council, statuses, write_scenario

pytestmark = pytest.mark.anyio


@pytest.mark.slow
async def test_racing_returns_once_enough_models_answered() -> None:
    # flaky: quick races its three compatible models and wants two; Gemini never answers. Time scale 0.1: the
    # two answers take ~0.6 s against a 2 s per-model cap, so a busy machine does not turn the race into a cap.
    async with council("--scenario", "flaky", "--time-scale", "0.1") as (client, wire):
        result, is_error = await consult(client, "Tea or coffee?", confidence="quick")
    meta = result["metadata"]
    assert not is_error
    assert statuses(result) == {
        "openai/gpt-4o-mini": "ok",
        "anthropic/claude-3.5-haiku": "ok",
        "google/gemini-2.0-flash-001": "timeout",
    }
    gemini = result["model_responses"]["google/gemini-2.0-flash-001"]
    assert gemini["raced_out"] is True and gemini["error"] == "not awaited: 2 faster answers won the race"
    assert meta["racing"] == {"enabled": True, "target": 2, "raced_out": ["google/gemini-2.0-flash-001"]}
    assert (meta["status"], meta["requested_models"], meta["queried_models"], meta["warning"]) == (
        "complete",
        2,
        3,
        None,
    )
    # the race closed on the two answers, not on Gemini's per-model cap: Gemini is reported raced out (above),
    # not timed out at its cap; no wall-clock check, which a loaded machine breaks
    assert any(p["message"] == "Stage 1 closed: racing: 2 answers arrived first" for p in wire.progress())


DEADLINE = """
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
    latency_s = 2.0
    [[models]]
    id = "lab/charlie"
    name = "Charlie"
    min_tier = "quick"
    script = ["hang"]
    [[models]]
    id = "lab/delta"
    name = "Delta"
    min_tier = "quick"
    latency_s = 6000.0
"""


@pytest.mark.slow
async def test_the_callers_deadline_in_meta_ends_the_run_before_it(tmp_path: Path) -> None:
    scenario = write_scenario(tmp_path / "deadline.toml", DEADLINE)
    # time scale 0.05: the high tier allows 9 s; the caller allows 1 s.
    async with council("--scenario", scenario, "--time-scale", "0.05") as (client, wire):

        async def on_progress(progress: float, total: float | None, message: str | None) -> None:
            return None

        started = time.monotonic()
        raw = await client.call_tool(
            "consult_council",
            {"query": "Summarise the trade-offs of microservices"},
            progress_callback=on_progress,
            meta={DEADLINE_META: 1000},  # type: ignore[arg-type]  # the SDK's meta type names only the spec's keys
        )
        elapsed = time.monotonic() - started
        ignored, _ = await call(
            client,
            "consult_council",
            {"query": "Summarise the trade-offs", "confidence": "quick"},
            meta={DEADLINE_META: "soon"},
        )
    result = raw.structured_content
    assert result is not None and not raw.is_error
    meta = result["metadata"]
    # Charlie hangs and Delta takes 300 s, so stage 1 stayed open for them until the window's review and synthesis
    # reserve (0.9 s less 30 %: 0.63 s; timers never fire early), and the run did not wait for the tier's 9 s (a
    # generous bound: a busy machine adds seconds, never 8 of them here)
    assert meta["elapsed_ms"] >= 600 and elapsed < 9.0, (meta["elapsed_ms"], elapsed)
    assert meta["budget"]["source"] == "caller" and meta["budget"]["caller_deadline_ms"] == 1000
    assert meta["budget"]["window_s"] == pytest.approx(0.9)  # 1 s less the 10 % delivery margin
    assert statuses(result) == {"lab/alpha": "ok", "lab/bravo": "ok", "lab/charlie": "timeout", "lab/delta": "timeout"}
    assert meta["synthesized_by"] == "chairman" and meta["stages"]["review"] == "complete"
    assert meta["warning"] == (
        "This answer is based on 2 of 4 intended models; Charlie and Delta did not respond. "
        "Finished early to meet the caller's deadline (1000 ms)."
    )
    call_frame = next(m for m in wire.outbound if m.get("method") == "tools/call")
    assert call_frame["params"]["_meta"][DEADLINE_META] == 1000
    progress = wire.progress_for(call_frame["params"]["_meta"]["progressToken"])
    state = progress[0]["_meta"][COUNCIL_META]
    assert state["window_s"] == pytest.approx(0.9) and state["total_s"] == 9.0
    # a malformed deadline is ignored: the tier's own budget applies
    assert ignored["metadata"]["budget"]["source"] == "tier" and ignored["metadata"]["budget"]["window_s"] == 1.5


REASONING = """
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


@pytest.mark.slow
async def test_at_most_two_reasoning_runs_at_once(tmp_path: Path) -> None:
    scenario = write_scenario(tmp_path / "reasoning.toml", REASONING)
    results: dict[int, dict] = {}
    # time scale 0.005: reasoning allows 3 s; one run holds its slot ~0.5 + 0.3 + 0.4 s, long enough for the
    # third call to arrive while both slots are held even on a loaded machine
    async with council("--scenario", scenario, "--time-scale", "0.005") as (client, wire):

        async def run(i: int) -> None:
            results[i], _ = await consult(client, f"Prove theorem {i}", confidence="auto")

        async with anyio.create_task_group() as tg:
            tg.start_soon(run, 0)
            tg.start_soon(run, 1)
            with anyio.fail_after(30):  # the first two have started (reported progress) before the third asks
                while len({p["progressToken"] for p in wire.progress()}) < 2:
                    await anyio.sleep(0.01)
            tg.start_soon(run, 2)
    metas = [results[i]["metadata"] for i in range(3)]
    assert {m["tier"] for m in metas} == {"reasoning"}  # inferred from the slowest model
    assert all(m["status"] == "complete" for m in metas)
    tokens = [m["params"]["_meta"]["progressToken"] for m in wire.outbound if m.get("method") == "tools/call"]
    queued = "Queued: waiting for a reasoning slot (2 of 2 in use)"
    assert [any(p["message"] == queued for p in wire.progress_for(t)) for t in tokens] == [False, False, True]
    assert metas[2]["queued_ms"] > max(metas[0]["queued_ms"], metas[1]["queued_ms"])  # the third waited


@pytest.mark.slow
async def test_admin_tools_read_and_change_the_council() -> None:
    async with council("--scenario", "fast") as (client, _):
        listing, _ = await call(client, "council.models.list")
        disabled, _ = await call(client, "council.models.disable", {"model": "Llama"})
        again, _ = await call(client, "council.models.disable", {"model": "meta-llama/llama-3.1-70b-instruct"})
        high, _ = await consult(client, "Is the council smaller now?")
        unknown, unknown_error = await call(client, "council.models.disable", {"model": "nobody"})
        for name in ("GPT-4o mini", "Claude", "Gemini"):
            await call(client, "council.models.disable", {"model": name})
        last, last_error = await call(client, "council.models.disable", {"model": "Gemini"})
        enabled, _ = await call(client, "council.models.enable", {"model": "llama-3.1-70b-instruct"})
        chairman, _ = await call(client, "council.chairman.get")
        moved, _ = await call(client, "council.chairman.set", {"model": "Gemini"})
        now, _ = await call(client, "council.chairman.get")
        bad_chair, bad_chair_error = await call(client, "council.chairman.set", {"model": "nobody"})
    assert [m["id"] for m in listing["models"]] == listing["enabled"]
    llama = next(m for m in listing["models"] if m["name"] == "Llama")
    assert llama == {
        "id": "meta-llama/llama-3.1-70b-instruct",
        "name": "Llama",
        "enabled": True,
        "min_tier": "balanced",
        "tiers": ["balanced", "high", "reasoning"],
    }
    assert disabled["changed"] is True and "meta-llama/llama-3.1-70b-instruct" not in disabled["enabled"]
    assert again["changed"] is False
    assert "meta-llama/llama-3.1-70b-instruct" not in high["model_responses"]
    assert high["metadata"]["requested_models"] == 3
    assert unknown_error and unknown["_text"].startswith(
        "Error executing tool council.models.disable: unknown model 'nobody'; the council has: openai/gpt-4o-mini"
    )
    assert last_error and "last enabled model" in last["_text"]
    assert enabled["enabled"] == ["google/gemini-2.0-flash-001", "meta-llama/llama-3.1-70b-instruct"]
    # Claude is disabled, so it is not asked at all: the first enabled model chairs until it returns
    assert chairman == {
        "chairman": "anthropic/claude-3.5-sonnet",
        "name": "Claude",
        "acting_chairman": "google/gemini-2.0-flash-001",
    }
    assert moved["previous"] == "anthropic/claude-3.5-sonnet" and now["chairman"] == "google/gemini-2.0-flash-001"
    assert bad_chair_error and "unknown model" in bad_chair["_text"]


@pytest.mark.slow
async def test_health_check_reports_budgets_after_multiplier_and_time_scale() -> None:
    env = {"LLM_COUNCIL_TIMEOUT_MULTIPLIER": "2", "LLM_COUNCIL_TIMEOUT_QUICK": "40"}
    async with council("--scenario", "fast", "--time-scale", "0.5", env=env) as (client, _):
        health, is_error = await call(client, "council_health_check")
    assert not is_error
    assert health["backend"] == "simulated" and health["scenario"] == "fast"
    assert (health["api_key_configured"], health["api_key_required"]) == (False, False)
    assert health["models_configured"] == 4 and health["chairman_model"] == "anthropic/claude-3.5-sonnet"
    assert (health["timeout_multiplier"], health["time_scale"]) == (2.0, 0.5)
    assert health["tiers"]["quick"] == {
        "total_s": 40.0,
        "per_model_s": 20.0,
        "models": ["openai/gpt-4o-mini", "google/gemini-2.0-flash-001"],
        "answers_wanted": 2,
        "race": False,
    }
    assert health["tiers"]["reasoning"]["total_s"] == 600.0 and health["tiers"]["reasoning"]["per_model_s"] == 300.0
    estimates = health["estimated_duration_seconds_by_tier"]
    assert set(estimates) == {"quick", "balanced", "high", "reasoning"} and 0 < estimates["quick"] < 1
    # the seed's field is a number: the default tier's estimate
    assert health["default_tier"] == "high" and health["estimated_duration_seconds"] == estimates["high"]
    assert isinstance(health["estimated_duration_seconds"], float) and estimates["high"] >= estimates["quick"]
    assert health["api_reachable"] is True and isinstance(health["latency_ms"], int)
    assert health["ready"] is True and health["message"].startswith("ready: 4 model(s) enabled")


@pytest.mark.parametrize(
    ("scenario", "scale", "confidence", "expected"),
    [
        ("default", "0.005", "high", {"ok"}),
        ("flaky", "0.005", "high", {"ok", "timeout", "auth_error"}),
        ("reasoning", "0.002", "auto", {"ok"}),
        ("fast", "1", "high", {"ok"}),
    ],
)
@pytest.mark.slow
async def test_shipped_scenarios_are_reproducible(
    scenario: str, scale: str, confidence: str, expected: set[str]
) -> None:
    query = "What should a city do about traffic?"
    runs: dict[int, dict] = {}

    async def run(i: int, *extra: str) -> None:
        async with council("--scenario", scenario, "--time-scale", scale, *extra) as (client, _):
            runs[i], _ = await consult(client, query, confidence=confidence)

    async with anyio.create_task_group() as tg:  # two separate server processes, side by side
        tg.start_soon(run, 0)
        tg.start_soon(run, 1)
        if scenario == "fast":
            tg.start_soon(run, 2, "--seed", "99")
    first, second = runs[0], runs[1]
    assert set(statuses(first).values()) == expected
    assert statuses(first) == statuses(second)
    assert first["synthesis"] == second["synthesis"]
    assert [e.get("response") for e in first["model_responses"].values()] == [
        e.get("response") for e in second["model_responses"].values()
    ]
    assert first["ranking"] == second["ranking"]
    if scenario == "fast":  # another seed, other answers
        reseeded = [e["response"] for e in runs[2]["model_responses"].values()]
        assert reseeded != [e["response"] for e in first["model_responses"].values()]


@pytest.mark.slow
async def test_health_probes_the_least_patient_model_and_names_tiers_that_cannot_run() -> None:
    # The reasoning scenario lists o1 first; the probe must not pick the priciest model, and quick/balanced
    # have no model at all there.
    async with council("--scenario", "reasoning", "--time-scale", "0.01") as (client, _):
        health, is_error = await call(client, "council_health_check")
        failed, failed_error = await consult(client, "Anyone quick?", confidence="quick")
        fallback, _ = await consult(client, "Default please", confidence=None)
    assert not is_error and health["probe_model"] == "anthropic/claude-opus-4.5"
    assert health["estimated_duration_seconds_by_tier"]["quick"] is None
    assert "no enabled model fits the quick and balanced tier(s); such calls fail" in health["warnings"]
    assert health["ready"] is True and health["message"].endswith("; not runnable: quick, balanced")
    assert failed_error and "no enabled model fits the quick tier" in failed["_text"]
    assert fallback["metadata"]["tier"] == "high"  # a null confidence is the default, as an absent one


@pytest.mark.slow
async def test_a_failed_run_ends_its_progress_with_why(tmp_path) -> None:
    scenario = tmp_path / "dead.toml"
    scenario.write_text(
        'chairman = "lab/a"\n[[models]]\nid = "lab/a"\nname = "A"\nmin_tier = "quick"\nscript = ["hang"]\n'
    )
    env = {"LLM_COUNCIL_TIMEOUT_HIGH": "20", "LLM_COUNCIL_MODEL_TIMEOUT_HIGH": "10"}
    async with council("--scenario", str(scenario), "--time-scale", "0.01", env=env) as (client, wire):
        _, is_error = await consult(client, "Hello?")
    assert is_error
    last = wire.progress()[-1]
    assert last["message"].startswith("Failed: No council member answered")
    assert last["progress"] >= last["total"]
