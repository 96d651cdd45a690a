"""Advice for servers that honour cancel: a cut call that never answered (or a degraded answer) gets an estimate of
what it needed, with its basis and confidence: whole answers of the same tool and tier, the council's own per-tier
estimate, or the progress it reached; else it stays unknown and is never counted as saved. `whatif`, the report and
the console's prompts count alike (one function)."""

from __future__ import annotations

from typing import Any

import pytest

from mcpwatch.events import Event, Kind
from mcpwatch.logview.estimate import budget_needed, council_estimates, estimate_for
from mcpwatch.logview.late_report import finished_late
from mcpwatch.logview.whatif import calls_from_events, effect_line, final_deadline, whatif

DEADLINE = {"host_timeout_s": 20.0, "margin_s": 10.0, "override_s": None, "budget_s": 10.0, "source": "derived"}
HEALTH = {"estimated_duration_seconds_by_tier": {"quick": 8.0, "high": 14.0}, "tiers": {"quick": {"total_s": 30.0}}}


class Log:
    """A council session written event by event, as the wrapper logs it."""

    def __init__(self) -> None:
        self.events: list[Event] = []
        self.n = 0

    def ev(self, kind: str, mono: float, rid: str | None = None, model: str | None = None, **data: Any) -> None:
        tool = "consult_council" if rid else None
        self.events.append(Event(kind, "s", 1000.0 + mono, mono, len(self.events) + 1, rid, tool, model, data))

    def call(self, start: float, took: float, outcome: str, tier: str, *, stage: int = 1, answers=(), **end) -> str:
        self.n += 1
        rid = f"r{self.n}"
        self.ev(Kind.REQUEST_START, start, rid, method="tools/call", up_id=self.n, budget_s=10.0,
                budget_source="derived")  # fmt: skip
        for i, latency in enumerate(answers):  # stage 1 answers that arrived, then the stage reached
            self.ev(Kind.MODEL_STATUS, start + latency, rid, f"m{i}", stage=1, status="ok",
                    latency_ms=latency * 1000, per_model_s=9.0, tier=tier)  # fmt: skip
        self.ev(Kind.MODEL_STATUS, start + took, rid, "m9", stage=stage, status="pending", latency_ms=None,
                per_model_s=9.0, tier=tier)  # fmt: skip
        self.ev(Kind.REQUEST_END, start + took, rid, outcome=outcome, duration_s=took, method="tools/call", **end)
        return rid


def session(health: bool = True) -> Log:
    log = Log()
    log.ev(Kind.SESSION_START, 0.0, deadline=DEADLINE)
    if health:
        log.ev(Kind.HEALTH_CHECK, 0.5, ok=True, ping_ms=1.0, result=HEALTH, error=None, latency_ms=3.0)
    return log


def items(figures: dict[str, Any]) -> dict[str, tuple[str, str | None]]:
    return {i["request_id"]: (i["verdict"], i["change"]) for i in figures["items"]}


def test_a_cut_call_is_estimated_from_whole_answers_of_its_tier_that_ran_as_long() -> None:
    log = session(health=False)
    for took in (6.0, 7.0, 9.0):  # quick, whole, in time
        log.call(took, took, "ok", "quick")
    for took in (12.0, 13.0, 14.0):  # high, whole: they ran long enough to be a basis for a 10 s cut
        log.call(took, took, "ok", "high")
    log.call(30.0, 5.0, "ok", "high")  # too quick to say anything about a call that ran 10 s
    cut = log.call(40.0, 10.0, "deadline", "high")
    calls = calls_from_events(log.events)
    (call,) = [c for c in calls if c.request_id == cut]
    estimate = estimate_for(call, calls, {})
    # their 90th percentile, not their median: a budget from the median left half such calls cut
    assert estimate is not None and estimate.seconds == 14.0 and estimate.confidence == "medium"
    assert estimate.basis == "90th percentile of 3 whole consult_council (high tier) answers that took ≥ 10 s"
    figures = whatif(calls, 16.0)  # 14 s needs 16 s from a council (10 % kept to deliver)
    assert items(figures)[cut] == ("likely_finishes", "likely_saved")
    assert (figures["saved"], figures["likely_saved"], figures["unknown"]) == (0, 1, 0)
    assert items(whatif(calls, 15.0))[cut] == ("likely_cut", "likely_cut")


def test_the_councils_own_estimate_then_the_progress_at_the_cut() -> None:
    log = session()
    by_health = log.call(1.0, 10.0, "deadline", "high")  # health: high 14 s
    by_progress = log.call(2.0, 10.0, "deadline", "balanced", stage=2, answers=(3.0, 4.0, 5.0))
    nothing = log.call(3.0, 10.0, "deadline", "reasoning")  # no health figure, no progress
    calls = calls_from_events(log.events)
    by_tier = council_estimates(log.events)
    assert by_tier == {"quick": 8.0, "high": 14.0}
    guesses = {c.request_id: estimate_for(c, calls, by_tier) for c in calls}
    guess = guesses[by_health]
    assert guess is not None and guess.to_dict() == {
        "seconds": 14.0,
        "basis": "council_health_check's estimate for the high tier",
        "confidence": "medium",
    }
    progress = guesses[by_progress]
    # stage 2 of 3 at 10 s, stage 1 done in 5 s (its slowest answer): review half done and the synthesis to come,
    # each stage after the first half as long as it
    assert progress is not None and progress.confidence == "low" and progress.seconds == pytest.approx(13.75)
    assert progress.basis == "progress at the cut: stage 2, 3 of 3 models answered (slowest 5 s)"
    assert guesses[nothing] is None
    figures = whatif(calls, 30.0, by_tier=by_tier)
    assert items(figures) == {
        by_health: ("likely_finishes", "likely_saved"),
        by_progress: ("likely_finishes", "likely_saved"),
        nothing: ("unknown", None),  # never shown as saved
    }
    assert (figures["saved"], figures["likely_saved"], figures["unknown"]) == (0, 2, 1)


def test_an_estimate_the_call_already_outran_is_not_used() -> None:
    log = session()
    rid = log.call(1.0, 20.0, "deadline", "quick")  # health says 8 s, but it ran 20 s and was still going
    calls = calls_from_events(log.events)
    assert estimate_for(calls[0], calls, council_estimates(log.events)) is None
    assert items(whatif(calls, 60.0, by_tier=council_estimates(log.events)))[rid] == ("unknown", None)


def test_a_degraded_answer_is_likely_whole_under_a_budget_that_fits_the_tier() -> None:
    log = session()
    rid = log.call(1.0, 9.0, "ok", "high", result_preview='{"metadata": {"synthesized_by": "fallback"}}')
    calls = calls_from_events(log.events)
    assert calls[0].degraded == "fallback summary"
    figures = whatif(calls, 16.0, by_tier=council_estimates(log.events))  # 14 s needs 16 s
    assert items(figures)[rid] == ("finishes", "likely_whole") and figures["degraded"] == 1
    assert items(whatif(calls, 15.0, by_tier=council_estimates(log.events)))[rid] == ("finishes", None)


def test_the_report_names_the_change_with_its_basis_and_the_calls_it_would_likely_save() -> None:
    log = session()
    for _ in range(3):
        log.call(1.0, 10.0, "deadline", "high")
    log.call(2.0, 7.0, "ok", "quick", result_preview='{"synthesized_by": "fallback"}')
    log.call(3.0, 10.0, "deadline", "reasoning")  # unknown
    rows = finished_late(calls_from_events(log.events), final_deadline(log.events), None, council_estimates(log.events))
    by_tier = {r["tier"]: r for r in rows}
    assert by_tier["high"]["advice"] == (
        "consult_council (high tier): 3 calls cut short (3 cut); 0 of 3 cut answered later; likely needed up to 14 s"
        " (council_health_check's estimate for the high tier, medium confidence; not yet checked: no call like these"
        " ran to its end past the budget) — lower the margin to 4 s (budget"
        " 16 s): saves 3 likely of 3 — or ask for the quick tier (estimated 8 s, fits the 10 s budget)"
    )
    assert by_tier["quick"]["advice"] == (
        "consult_council (quick tier): 1 call cut short (1 degraded); likely needed up to 8 s (council_health_check's"
        " estimate for the quick tier, medium confidence; not yet checked: no call like these ran to its end past the"
        " budget) — lower the margin to 11 s (budget 9 s): saves 1 likely of 1"
    )
    assert by_tier["reasoning"]["advice"].endswith("what they needed is not known (no true duration, and the log"
                                                   " has no basis for an estimate) — for a basis, let a few calls run"
                                                   " to their end (a longer budget for a while: mcpwatch wrap"
                                                   " --deadline S, or h in mcpwatch watch when the server has a health"
                                                   " tool), then mcpwatch report again")  # fmt: skip
    tool = by_tier[None]
    assert (tool["known"], tool["likely"], tool["unknown"], tool["suggested_margin_s"]) == (0, 4, 1, 4.0)
    assert tool["advice"].endswith(
        "lower the margin to 4 s (budget 16 s): saves 4 likely of 5, 1 unknown (not counted)"
    )


def test_cut_calls_without_a_basis_say_in_one_line_what_would_give_one() -> None:
    """48 of 48 council calls cut, no health check in the log: the advice said nothing of how to get a basis."""
    log = session(health=False)
    for _ in range(3):
        log.call(1.0, 10.0, "deadline", "high")
    rows = finished_late(calls_from_events(log.events), final_deadline(log.events), None, {})
    (high,) = [r for r in rows if r["tier"] == "high"]
    assert high["basis_hint"] == (
        "for a basis, run the health check (h in mcpwatch watch): the council's own estimate per tier, then"
        " mcpwatch report again"
    )
    assert high["advice"].endswith(high["basis_hint"])


def test_a_cut_in_stage_one_counts_its_straggler_and_the_stages_after_it() -> None:
    """The incident: a plain host, high tier cut at 10 s with 3 of 4 models answered (2.4, 2.4, 8.5 s). The old
    estimate (the stages left at the median answer's pace) said 15 s; the call took 36.3 s (stage 1 ended at 20 s
    with its slowest model). Calibrated, the estimate covers it, so the advised budget leaves it whole."""
    log = session(health=False)
    rid = log.call(1.0, 10.0, "deadline", "high", answers=(2.4, 2.4, 8.5))  # the fourth (m9) still pending
    (call,) = calls_from_events(log.events)
    assert (call.models_ok, call.models_total) == (3, 4)
    guess = estimate_for(call, [call], {})
    assert guess is not None and guess.seconds == pytest.approx(40.0) and guess.seconds >= 36.3
    assert (
        guess.basis == "progress at the cut: stage 1, 3 of 4 models answered (slowest 8.5 s; 1 still running at 10 s)"
    )
    assert budget_needed(guess.seconds, True) >= budget_needed(36.3, True)
    assert items(whatif([call], budget_needed(guess.seconds, True)))[rid] == ("likely_finishes", "likely_saved")


def test_a_likely_need_never_passes_the_tiers_total() -> None:
    """On a 1,000,000-event session the advice said "likely needed up to 460 s" for a tier whose total is 180 s."""
    log = session()  # the health check: high estimated 14 s
    for _ in range(2):
        log.call(1.0, 10.0, "deadline", "high")
    rows = finished_late(calls_from_events(log.events), final_deadline(log.events), {"high": {"total_s": 12.0}},
                         council_estimates(log.events))  # fmt: skip
    (high,) = [r for r in rows if r["tier"] == "high"]
    assert high["need_s"] == 12.0 and "likely needed up to 12 s" in high["advice"]


def test_a_model_still_running_at_the_cut_may_run_to_the_end_of_its_window() -> None:
    """The flaky scenario: 2 of 4 models never answer until their 45 s window closes. Taking a straggler to need
    only as long again said 40 s; applied (a 44 s budget), 12 of 12 calls were still cut at 44 s."""
    log = session(health=False)
    log.ev(Kind.REQUEST_START, 1.0, "r1", method="tools/call", up_id=1, budget_s=10.0, budget_source="derived")
    for model, latency in (("a", 3.3), ("b", 4.1), ("c", None), ("d", None)):
        log.ev(Kind.MODEL_STATUS, 1.0 + (latency or 0.0), "r1", model, stage=1, status="ok" if latency else "pending",
               latency_ms=latency and latency * 1000, per_model_s=45.0, tier="high")  # fmt: skip
    log.ev(Kind.REQUEST_END, 11.0, "r1", outcome="deadline", duration_s=10.0, method="tools/call")
    (call,) = calls_from_events(log.events)
    assert call.per_model_s == 45.0
    guess = estimate_for(call, [call], {})
    # stage 1 up to the 45 s window, then review and synthesis at half the answers' pace (20 s) each
    assert guess is not None and guess.seconds == pytest.approx(65.0)
    assert guess.basis.endswith("2 still running at 10 s, up to its 45 s window)")


def test_a_cut_before_any_answer_still_has_the_models_window_as_a_basis() -> None:
    """The reasoning scenario: no model had answered at the 10 s cut; the log had no basis at all."""
    log = session(health=False)
    log.ev(Kind.REQUEST_START, 1.0, "r1", method="tools/call", up_id=1, budget_s=10.0, budget_source="derived")
    for model in ("a", "b"):
        log.ev(Kind.MODEL_STATUS, 1.0, "r1", model, stage=1, status="pending", latency_ms=None, per_model_s=45.0,
               tier="high")  # fmt: skip
    log.ev(Kind.REQUEST_END, 11.0, "r1", outcome="deadline", duration_s=10.0, method="tools/call")
    (call,) = calls_from_events(log.events)
    guess = estimate_for(call, [call], {})
    assert guess is not None and guess.seconds == pytest.approx(65.0) and guess.confidence == "low"
    assert guess.basis == (
        "progress at the cut: stage 1, 0 of 2 models answered (no answer yet; 2 still running at 10 s, up to its 45 s"
        " window)"
    )


def test_the_report_says_how_often_its_estimates_held_on_calls_that_ran_to_their_end() -> None:
    """Its "likely" came with no word on how far to trust it. Calls that ran to their end past the budget are cut
    again on paper, with what the log knew at the cut, and the estimate checked against their true duration."""
    log = session(health=False)
    for took in (36.0, 30.0, 50.0):  # whole, each with a model still running at the 10 s cut: 2.4, 2.4, 20 s
        log.call(1.0, took, "ok", "high", answers=(2.4, 2.4, 20.0))
    for _ in range(2):
        log.call(2.0, 10.0, "deadline", "high", answers=(2.4, 2.4))
    rows = finished_late(calls_from_events(log.events), final_deadline(log.events), None, {})
    (high,) = [r for r in rows if r["tier"] == "high"]
    # cut at 10 s, each would have been estimated from its progress then (2 of 4 models answered): 40 s
    assert high["held"]["checked"] == 3 and high["held"]["held"] == 2  # the 50 s one outran its estimate
    assert "past estimates held for 2 of 3 calls that ran to their end" in high["advice"]


def test_any_servers_progress_of_total_is_a_basis_at_its_pace() -> None:
    """A server nobody here wrote (server-everything's slow tool) reports progress of total; with the wrapper's own
    token it is logged for every call, and the rest of the work at that pace is a (low) basis."""
    log = Log()
    log.ev(Kind.SESSION_START, 0.0, deadline=DEADLINE)
    log.events.append(Event(Kind.REQUEST_START, "s", 1.0, 1.0, 2, "r1", "slow", None,
                            {"method": "tools/call", "budget_s": 10.0, "budget_source": "derived"}))  # fmt: skip
    for n, at in ((1, 3.0), (3, 7.0)):  # 3 of 10 steps done 6 s in
        log.events.append(Event(Kind.PROGRESS, "s", at, at, 3 + n, "r1", "slow", None,
                                {"progress": n, "total": 10, "message": None}))  # fmt: skip
    log.events.append(Event(Kind.REQUEST_END, "s", 11.0, 11.0, 9, "r1", "slow", None,
                            {"outcome": "deadline", "duration_s": 10.0, "method": "tools/call"}))  # fmt: skip
    (call,) = calls_from_events(log.events)
    guess = estimate_for(call, [call], {})
    assert guess is not None and guess.confidence == "low" and guess.seconds == pytest.approx(20.0)
    assert guess.basis == "its progress: 30% done after 6 s, the rest at that pace"
    assert items(whatif([call], 21.0))["r1"] == ("likely_finishes", "likely_saved")
    assert items(whatif([call], 15.0))["r1"] == ("likely_cut", "likely_cut")


def test_the_prompt_line_counts_as_whatif_and_never_shows_an_unknown_call_as_saved() -> None:
    log = session()
    log.call(1.0, 10.0, "deadline", "high")
    log.call(2.0, 10.0, "deadline", "reasoning")
    calls = calls_from_events(log.events)
    by_tier = council_estimates(log.events)
    # margin 10 → 2 under a 20 s host timeout: an 18 s budget
    assert effect_line(calls, 18.0, keep_fixed=True, by_tier=by_tier) == (
        "budget 18 s → of the last 2 calls, 2 cut now; known: none change; likely: 1 saved (estimated from"
        " council_health_check's estimate for the high tier); 1 unknown (never answered: not counted as saved)"
    )
    assert "saved" not in effect_line(calls[1:], 18.0, by_tier=by_tier).split(";")[1]


@pytest.mark.parametrize(
    ("need", "council", "budget"), [(14.0, True, 16.0), (27.0, True, 30.0), (40.0, True, 43.0), (14.0, False, 14.0)]
)
def test_a_council_keeps_a_tenth_of_its_deadline_to_deliver(need: float, council: bool, budget: float) -> None:
    assert budget_needed(need, council) == budget


def test_the_tiers_total_is_the_bound_that_makes_sure() -> None:
    # The council never runs past its tier's total: a budget covering it (plus the delivery share) saves every call.
    log = session()
    for _ in range(2):
        log.call(1.0, 10.0, "deadline", "high")
    events = log.events
    tiers = {"high": {"total_s": 30.0}}
    rows = finished_late(calls_from_events(events), final_deadline(events), tiers, council_estimates(events))
    (high,) = [r for r in rows if r["tier"] == "high"]
    assert (high["at_most_s"], high["sure_budget_s"], high["suggested_budget_s"]) == (30.0, 33.0, 16.0)
    assert (
        "at most 30 s (the tier's total) — lower the margin to 4 s (budget 16 s): saves 2 likely of 2; to be sure of"
        " all 2, raise the host's timeout to 43 s (budget 33 s with the 10 s margin; it is the host's own setting,"
        " then --host-timeout 43) — or ask for the quick tier" in high["advice"]
    )


def test_the_report_never_advises_a_tier_its_tier_table_says_does_not_fit() -> None:
    """The table said quick does NOT fit the 10 s budget (its total is 30 s) and, two lines later, the advice said
    "ask for the quick tier (estimated 8 s, fits the 10 s budget)": one rule now judges both."""
    from mcpwatch.logview.report import build_report

    log = session()  # the health check: quick estimated 8 s, its total 30 s
    for _ in range(3):
        log.call(1.0, 10.0, "deadline", "high")
    report = build_report(log.events)
    assert report["tiers"]["not_fitting"] == ["quick"]
    advised = [r for r in report["finished_late"] if r["faster_tier"] is not None]
    assert advised == [] and all("ask for the" not in r["advice"] for r in report["finished_late"])
    log = session()
    log.ev(Kind.HEALTH_CHECK, 0.6, ok=True, ping_ms=1.0, error=None, latency_ms=3.0,
           result={**HEALTH, "tiers": {"quick": {"total_s": 9.0}}})  # fmt: skip
    for _ in range(3):
        log.call(1.0, 10.0, "deadline", "high")
    report = build_report(log.events)
    assert report["tiers"]["not_fitting"] == []
    assert {r["faster_tier"] for r in report["finished_late"] if r["tier"]} == {"quick"}


def test_estimating_every_cut_call_reads_each_call_a_bounded_number_of_times(monkeypatch) -> None:
    """A log of many cut calls beside many whole ones (a flood): each estimate must not rescan every call, or
    `whatif` and the report take minutes (quadratic) on one session."""
    from mcpwatch.logview import estimate
    from mcpwatch.logview.timing import CallTiming

    cut = [CallTiming(f"c{i}", "t", float(i), 2.0, "deadline", 2.0, None) for i in range(300)]
    whole = [CallTiming(f"w{i}", "t", float(i), None, "ok", 3.0 + i % 7, 3.0 + i % 7) for i in range(300)]
    calls = cut + whole
    expected = {i: estimate.estimate_for(c, calls, {}) for i, c in enumerate(calls) if estimate.needs_estimate(c)}
    looked = [0]
    counted = estimate._whole

    def counting(call: Any) -> bool:
        looked[0] += 1
        return counted(call)

    monkeypatch.setattr(estimate, "_whole", counting)
    assert estimate.estimates(calls, {}) == expected and len(expected) == 300
    assert looked[0] <= 3 * len(calls)
