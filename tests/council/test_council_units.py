"""Pure parts of the council: tiers and their environment, budgets, Borda count, ranking parsing, scenarios,
the model catalogue, settings, warning text and the simulated backend's determinism."""

from __future__ import annotations

import random

import pytest
from hypothesis import given
from hypothesis import strategies as st

from mcpwatch.council import budget, prompts
from mcpwatch.council.backends.base import CallRequest
from mcpwatch.council.backends.simtext import key_terms
from mcpwatch.council.backends.simulated import SimulatedBackend
from mcpwatch.council.catalog import ModelSpec, Roster, UnknownModel, guess_min_tier
from mcpwatch.council.ranking import borda
from mcpwatch.council.result import join_names, missing_warning
from mcpwatch.council.scenarios import Outcome, load_scenario, parse_outcome
from mcpwatch.council.settings import load_settings
from mcpwatch.council.tiers import TierOverride, compatible, infer_tier, load_tier_table, resolve_confidence
from mcpwatch.errors import UserError

# --- tiers --------------------------------------------------------------------------------------------


def test_default_tiers_are_the_seeds() -> None:
    table = load_tier_table({})
    got = {t: (b.total_s, b.per_model_s, b.models, b.race) for t, b in table.tiers.items()}
    assert got == {
        "quick": (30.0, 20.0, 2, False),
        "balanced": (90.0, 45.0, 3, False),
        "high": (180.0, 90.0, None, False),
        "reasoning": (600.0, 300.0, None, False),
    }
    assert table.multiplier == 1.0 and table.warnings == ()


def test_env_overrides_then_multiplier_then_time_scale() -> None:
    env = {
        "LLM_COUNCIL_TIMEOUT_QUICK": "40",
        "LLM_COUNCIL_MODEL_TIMEOUT_QUICK": "25.5",
        "LLM_COUNCIL_TIMEOUT_MULTIPLIER": "1.5",
        "LLM_COUNCIL_RACE_BALANCED": "yes",
        "LLM_COUNCIL_MODELS_HIGH": "3",
        "LLM_COUNCIL_MODELS_QUICK": "all",
    }
    table = load_tier_table(env, time_scale=0.1, overrides={"balanced": TierOverride(models=2)})
    quick = table["quick"]
    assert (quick.base_total_s, quick.base_per_model_s) == (40.0, 25.5)
    assert quick.total_s == pytest.approx(6.0) and quick.per_model_s == pytest.approx(3.825)
    assert quick.models is None
    assert (table["balanced"].models, table["balanced"].race) == (2, True)
    assert table["high"].models == 3
    assert table["reasoning"].total_s == pytest.approx(90.0)


def test_scenario_tier_overrides_lose_to_the_environment() -> None:
    overrides = {"quick": TierOverride(race=True, models=3), "high": TierOverride(all_models=True)}
    table = load_tier_table({"LLM_COUNCIL_RACE_QUICK": "off"}, overrides=overrides)
    assert (table["quick"].race, table["quick"].models, table["high"].models) == (False, 3, None)


def test_per_model_cap_above_the_total_is_clamped_with_a_warning() -> None:
    table = load_tier_table({"LLM_COUNCIL_MODEL_TIMEOUT_QUICK": "50", "LLM_COUNCIL_TIMEOUT_TURBO": "5"})
    assert table["quick"].per_model_s == 30.0
    assert any("exceeds the quick total" in w for w in table.warnings)
    assert any("LLM_COUNCIL_TIMEOUT_TURBO names no tier" in w for w in table.warnings)


@pytest.mark.parametrize(
    ("name", "value"),
    [
        ("LLM_COUNCIL_TIMEOUT_HIGH", "abc"),
        ("LLM_COUNCIL_TIMEOUT_HIGH", "0"),
        ("LLM_COUNCIL_TIMEOUT_HIGH", "nan"),
        ("LLM_COUNCIL_MODEL_TIMEOUT_BALANCED", "-1"),
        ("LLM_COUNCIL_TIMEOUT_QUICK", "1e9"),
        ("LLM_COUNCIL_TIMEOUT_MULTIPLIER", "-2"),
        ("LLM_COUNCIL_TIMEOUT_MULTIPLIER", "1000"),
        ("LLM_COUNCIL_RACE_HIGH", "2"),
        ("LLM_COUNCIL_MODELS_QUICK", "two"),
        ("LLM_COUNCIL_MODELS_QUICK", "²"),  # a digit to str.isdigit, not to int()
    ],
)
def test_invalid_env_values_are_user_errors_naming_the_variable(name: str, value: str) -> None:
    with pytest.raises(UserError) as caught:
        load_tier_table({name: value})
    assert str(caught.value).startswith(f"{name}={value!r}")


def test_confidence_resolution_and_tier_inference() -> None:
    assert resolve_confidence("quick") == ("quick", True)
    assert resolve_confidence(" Balanced ") == ("balanced", True)
    assert resolve_confidence("auto") == ("auto", True)
    assert resolve_confidence("ultra") == ("high", False)
    assert resolve_confidence(None) == ("high", True)
    assert infer_tier(["quick", "balanced"]) == "balanced"
    assert infer_tier(["quick", "reasoning", "high"]) == "reasoning"
    assert infer_tier([]) == "high"
    assert compatible("quick", "reasoning") and not compatible("high", "balanced")


# --- catalogue ----------------------------------------------------------------------------------------


def test_the_seeds_compatibility_matrix() -> None:
    matrix = {
        "openai/gpt-4o-mini": "quick",
        "anthropic/claude-3-haiku": "quick",
        "anthropic/claude-3.5-sonnet": "balanced",
        "openai/gpt-4o": "balanced",
        "anthropic/claude-opus-4.5": "high",
        "google/gemini-3-pro-preview": "high",
        "openai/gpt-5.2-pro": "reasoning",
        "openai/o1": "reasoning",
    }
    assert {m: guess_min_tier(m) for m in matrix} == matrix
    assert guess_min_tier("acme/o3-mini") == "reasoning"
    assert guess_min_tier("acme/tiny-flash") == "quick"
    assert guess_min_tier("acme/big-model") == "high"
    assert guess_min_tier("acme/big-model-pro") == "high"  # "pro" names a size, not a reasoning model
    spec = ModelSpec("anthropic/claude-opus-4.5", "Opus", "high")
    assert spec.tiers() == ["high", "reasoning"]


def test_roster_finds_enables_disables_and_guards_the_last_model() -> None:
    roster = Roster([ModelSpec("a/one", "One", "quick"), ModelSpec("b/two", "Two", "high")], chairman="Two")
    assert roster.chairman.id == "b/two" and roster.find("one").id == "a/one" and roster.find("two").id == "b/two"
    assert roster.for_tier("quick") == [roster.find("a/one")]
    assert roster.inferred_tier() == "high"
    assert roster.disable("Two") == (roster.find("b/two"), True)
    assert roster.chairman.id == "b/two" and roster.acting_chairman.id == "a/one"  # a disabled chairman sits out
    assert roster.enable("Two")[1] is True and roster.acting_chairman.id == "b/two"
    assert roster.disable("a/one") == (roster.find("a/one"), True)
    assert roster.inferred_tier() == "high" and roster.for_tier("quick") == []
    with pytest.raises(ValueError, match="last enabled model"):
        roster.disable("b/two")
    with pytest.raises(UnknownModel, match="unknown model 'zz'; the council has: a/one, b/two"):
        roster.enable("zz")
    assert roster.enable("One")[1] is True and roster.enable("One")[1] is False


# --- budgets ------------------------------------------------------------------------------------------


def test_run_window_from_the_tier_or_the_callers_deadline() -> None:
    assert budget.run_window(100.0, 180.0, None) == budget.RunWindow(100.0, 280.0, "tier", 0.0)
    assert budget.run_window(100.0, 180.0, 500.0) == budget.RunWindow(100.0, 280.0, "tier", 0.0)
    assert budget.run_window(100.0, 180.0, 110.0) == budget.RunWindow(100.0, 207.0, "caller", 3.0)
    assert budget.run_window(100.0, 180.0, 1.0) == budget.RunWindow(100.0, 100.9, "caller", pytest.approx(0.1))  # type: ignore[arg-type]  # approx equals a float near it
    assert budget.run_window(100.0, 180.0, 0.02).end == 100.0  # less than the margin: nothing left
    assert budget.caller_margin_s(0.2) == 0.05 and budget.caller_margin_s(1000) == 3.0


def test_stage_ends_keep_the_review_and_synthesis_shares() -> None:
    high = budget.RunWindow(0.0, 180.0, "tier", 0.0)
    assert budget.stage1_end(high, 90.0) == 90.0  # the per-model cap decides
    short = budget.RunWindow(0.0, 10.0, "caller", 1.0)
    assert budget.stage1_end(short, 90.0) == pytest.approx(7.0)  # 30 % kept for review + synthesis
    assert budget.stage2_end(short, 7.0, 90.0) == pytest.approx(8.5)
    assert budget.stage2_end(high, 20.0, 90.0) == 110.0
    assert budget.stage3_end(short, 8.5, 90.0) == pytest.approx(9.9)
    assert budget.stage3_end(short, 9.95, 90.0) == 9.95  # never before now
    assert budget.guard_grace_s(short) == pytest.approx(0.2) and budget.guard_grace_s(high) == 0.5


@given(total=st.floats(0.01, 1000), per_model=st.floats(0.001, 1000), deadline=st.one_of(st.none(), st.floats(0, 2000)))
def test_stages_fit_inside_the_window_and_the_window_inside_the_deadline(
    total: float, per_model: float, deadline: float | None
) -> None:
    window = budget.run_window(0.0, total, deadline)
    end1 = budget.stage1_end(window, per_model)
    end2 = budget.stage2_end(window, end1, per_model)
    end3 = budget.stage3_end(window, end2, per_model)
    assert 0.0 <= end1 <= end2 <= end3 <= max(window.end, end2)
    assert window.end <= total + 1e-9
    if deadline is not None:
        assert window.end + budget.guard_grace_s(window) <= deadline or window.end == 0.0


# --- ranking ------------------------------------------------------------------------------------------


def test_borda_count_with_ties_and_partial_rankings() -> None:
    rankings = {"r1": ["A", "B", "C"], "r2": ["B", "A", "C"], "r3": ["B", "C"]}
    entries = borda(rankings, ["A", "B", "C"])
    assert [(e.label, e.points, e.votes) for e in entries] == [("B", 5, 3), ("A", 3, 2), ("C", 1, 3)]
    assert entries[0].average_position == pytest.approx(4 / 3)
    tie = borda({"r1": ["A", "B"], "r2": ["B", "A"]}, ["A", "B"])
    assert [e.label for e in tie] == ["A", "B"] and tie[0].points == tie[1].points == 1
    junk = borda({"r1": ["Z", "B", "B", "A"]}, ["A", "B"])
    assert [(e.label, e.points) for e in junk] == [("B", 1), ("A", 0)]


def test_parse_ranking_prefers_the_final_ranking_section() -> None:
    text = "Response A is weak, Response C is fine.\n\nFINAL RANKING:\n1. Response C\n2. Response B\n3. Response A"
    assert prompts.parse_ranking(text, ["A", "B", "C"]) == ["C", "B", "A"]
    assert prompts.parse_ranking("I prefer Response B over Response A", ["A", "B"]) == ["B", "A"]
    assert prompts.parse_ranking("final ranking:\n1. Response Q\n2. Response A", ["A"]) == ["A"]
    assert prompts.parse_ranking("no labels at all", ["A"]) == []
    assert [prompts.label_for(i) for i in (0, 25, 26, 27)] == ["A", "Z", "AA", "AB"]


def test_review_and_synthesis_prompts_round_trip_their_blocks() -> None:
    review = prompts.review_messages("Q?", [("A", "first answer"), ("B", "second\n\nwith a gap")])[0]["content"]
    assert prompts.review_blocks(review) == {"A": "first answer", "B": "second\n\nwith a gap"}
    synth = prompts.synthesis_messages("Q?", [("Claude", "one."), ("Llama", "two.")], [("Claude", 1), ("Llama", 0)])
    assert prompts.synthesis_blocks(synth[0]["content"]) == [("Claude", "one."), ("Llama", "two.")]
    summary = prompts.fallback_synthesis("Q?", [("Llama", "Two. More."), ("Claude", "One.")], [("Claude", 1)], "why")
    assert summary.splitlines()[:4] == [
        "Summary of 2 council answers (why).",
        "",
        "Best-ranked answer (Claude):",
        "One.",
    ]
    assert summary.splitlines()[-1] == "- Llama: Two."


# --- result text --------------------------------------------------------------------------------------


def test_warning_text_is_the_seeds() -> None:
    assert missing_warning(2, 4, ["Claude", "Llama"]) == (
        "This answer is based on 2 of 4 intended models; Claude and Llama did not respond."
    )
    assert join_names(["A"]) == "A" and join_names(["A", "B", "C"]) == "A, B and C" and join_names([]) == ""


# --- scenarios and settings ---------------------------------------------------------------------------


def test_outcomes_parse() -> None:
    assert parse_outcome("ok") == Outcome("ok")
    assert parse_outcome("ok:1.5") == Outcome("ok", latency_s=1.5)
    assert parse_outcome("rate_limited:2") == Outcome("rate_limited", retry_after_s=2.0)
    assert parse_outcome("auth:403") == Outcome("auth", status=403)
    assert parse_outcome("server") == Outcome("server", status=500)
    for bad in ("", "boom", "ok:x", "hang:3", "client:503", "rate_limited:-1"):
        with pytest.raises(Exception):  # noqa: B017 - the module's private error type
            parse_outcome(bad)


def test_shipped_scenarios_load_and_match_their_descriptions() -> None:
    default = load_scenario("default")
    assert len(default.models) == 4 and default.chairman == "anthropic/claude-3.5-sonnet"
    assert [p.spec.name for p in default.models] == ["GPT-4o mini", "Claude", "Gemini", "Llama"]
    flaky = load_scenario("flaky")
    kinds = {p.spec.name: [o.kind for o in p.script] for p in flaky.models}
    assert kinds["GPT-4o mini"] == ["rate_limited", "ok"] and kinds["Gemini"] == ["hang"] and kinds["Llama"] == ["auth"]
    assert flaky.tiers["quick"].race is True
    reasoning = load_scenario("reasoning")
    assert infer_tier(p.spec.min_tier for p in reasoning.models) == "reasoning"
    assert max(p.latency_s for p in load_scenario("fast").models) < 0.1


def test_openai_settings_take_models_and_chairman_from_the_environment() -> None:
    env = {"LLM_COUNCIL_MODELS": "openai/o1, acme/x ,anthropic/claude-3.5-sonnet", "LLM_COUNCIL_CHAIRMAN": "acme/y"}
    settings = load_settings(env, backend="openai", time_scale="0.5")
    assert [m.id for m in settings.models] == ["openai/o1", "acme/x", "anthropic/claude-3.5-sonnet", "acme/y"]
    assert settings.models[0].min_tier == "reasoning" and settings.models[2].name == "Claude"  # scenario's name
    assert settings.chairman == "acme/y" and settings.base_url == "https://openrouter.ai/api/v1"
    assert settings.api_key is None and settings.time_scale == 0.5
    with pytest.raises(UserError, match="distinct model ids"):
        load_settings({"LLM_COUNCIL_MODELS": "a/b,a/b"}, backend="openai")
    over = load_settings({"LLM_COUNCIL_BASE_URL": "http://127.0.0.1:9/v1/"}, base_url=None)
    assert over.base_url == "http://127.0.0.1:9/v1"


# --- the simulated backend ----------------------------------------------------------------------------


@pytest.mark.anyio
@pytest.mark.parametrize("anyio_backend", ["asyncio"])
async def test_simulated_answers_are_deterministic_and_distinct(anyio_backend: str) -> None:
    scenario = load_scenario("fast")
    backend = SimulatedBackend(scenario, seed=5, time_scale=0.001)

    async def answer(model: str, query: str, seed_backend: SimulatedBackend = backend) -> str:
        messages = prompts.answer_messages(query)
        request = CallRequest(model=model, messages=messages, purpose="answer", query=query, timeout_s=1)
        return await seed_backend.complete(request)

    ids = [p.spec.id for p in scenario.models]
    first = [await answer(m, "Is Python fast enough for games?") for m in ids]
    assert len(set(first)) == len(first)
    assert first == [await answer(m, "Is Python fast enough for games?") for m in ids]
    assert first[0] != await answer(ids[0], "What is the capital of Peru?")
    other_seed = SimulatedBackend(scenario, seed=6, time_scale=0.001)
    assert first[0] != await answer(ids[0], "Is Python fast enough for games?", other_seed)


def test_simulated_latency_draws_are_seeded_and_clamped() -> None:
    profile = load_scenario("default").models[3]  # Llama: 24 s median
    backend = SimulatedBackend(load_scenario("default"), seed=1, time_scale=1.0)
    draws = [backend.latency_s(profile, "answer", random.Random(i)) for i in range(200)]
    assert all(6.0 <= d <= 96.0 for d in draws)
    assert 15 < sorted(draws)[100] < 35
    assert backend.latency_s(profile, "answer", random.Random(3)) == backend.latency_s(
        profile, "answer", random.Random(3)
    )


def test_key_terms_prefer_names_and_long_words() -> None:
    assert key_terms("How should a small team choose between SQLite and Postgres?")[:2] == ["SQLite", "Postgres"]
    assert len(key_terms("Why?")) == 3
