"""The console's budget prompts count exactly as `whatif` does: the same call timings (degraded answers, council
progress, any server's progress of total) and the same pure function (`effect_line`), so a prompt never promises
what `whatif` would not. The prompt once said "49 whole instead of degraded"; then 19 of 20 were still degraded."""

from __future__ import annotations

from test_estimate import Log, session

from mcpwatch.console.headless.model import ConsoleModel
from mcpwatch.events import Event, Kind
from mcpwatch.logview.estimate import council_estimates
from mcpwatch.logview.whatif import calls_from_events, effect_line


def _generic_cut(log: Log, rid: str, start: float) -> None:
    """A server nobody here wrote: progress of total, then cut at its 10 s budget."""
    seq = len(log.events)
    began = {"method": "tools/call", "up_id": 90 + seq, "budget_s": 10.0, "budget_source": "derived"}
    log.events.append(Event(Kind.REQUEST_START, "s", start, start, seq + 1, rid, "slow", None, began))
    for n, at in ((1, 5.0), (2, 10.0)):
        log.events.append(Event(Kind.PROGRESS, "s", start + at, start + at, seq + 1 + n, rid, "slow", None,
                                {"progress": n, "total": 5, "message": None}))  # fmt: skip
    log.events.append(Event(Kind.REQUEST_END, "s", start + 10, start + 10, seq + 4, rid, "slow", None,
                            {"outcome": "deadline", "duration_s": 10.0, "method": "tools/call"}))  # fmt: skip


def test_the_prompt_and_whatif_see_the_same_calls_and_say_the_same() -> None:
    log = session()
    for _ in range(3):
        log.call(1.0, 10.0, "deadline", "high", answers=(2.0, 3.0))
    log.call(2.0, 9.0, "ok", "quick", result_preview='{"synthesized_by": "fallback"}', answers=(2.0, 3.0))
    log.call(3.0, 9.5, "ok", "high", degraded="fallback summary", answers=(2.0, 8.0))
    _generic_cut(log, "g1", 20.0)
    model = ConsoleModel()
    for event in log.events:
        model.apply(event)
    from_log = calls_from_events(log.events)
    assert model.recent_calls() == from_log
    for budget in (12.0, 16.0, 30.0):
        assert effect_line(model.recent_calls(), budget, keep_fixed=True, by_tier=model.tier_estimates()) == (
            effect_line(from_log, budget, keep_fixed=True, by_tier=council_estimates(log.events))
        )
    assert "likely: 4 saved, 1 whole instead of degraded" in effect_line(
        from_log, 30.0, by_tier=council_estimates(log.events)
    )
