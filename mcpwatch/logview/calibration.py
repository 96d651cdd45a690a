"""How often the estimates held: each call of a group that ran to its end (a whole answer, or a late result) and
would have been cut by the group's budget is cut again on paper, at that budget, with only what the log knew at
that moment (the stage 1 answers that had come, the other whole answers); the estimate is then checked against the
true duration. The report states the share that held beside its "likely" figure, so a reader knows how far to
trust it; "not checked" when no call of the group ran to its end past the budget.

Pure: no Textual, no transport.
"""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from dataclasses import dataclass, replace

from mcpwatch.logview.estimate import estimate_for, whole_durations
from mcpwatch.logview.timing import CallTiming

CHECKS_MAX = 200  # the most recent calls checked, so a long session stays quick


@dataclass(frozen=True, slots=True)
class Held:
    """Of `checked` calls that ran to their end past the budget, the estimate made at the cut covered `held`."""

    held: int
    checked: int

    def text(self) -> str:
        if not self.checked:
            return "not yet checked: no call like these ran to its end past the budget"
        return f"past estimates held for {self.held} of {self.checked} calls that ran to their end"


def _as_cut(call: CallTiming, cut_s: float) -> CallTiming:
    """The call as the log would have known it, cut at `cut_s`: only the stage 1 answers that had come by then."""
    answered = tuple(latency for latency in call.answer_latencies_s if latency <= cut_s)
    total = call.models_total
    stage = None if call.stage is None else 1 if total is not None and len(answered) < total else 2
    return replace(
        call,
        outcome="deadline",
        elapsed_s=cut_s,
        true_s=None,
        late_delay_s=None,
        late_outcome=None,
        degraded=None,
        stage=stage,
        models_ok=len(answered) if total is not None else call.models_ok,
        answer_latencies_s=answered,
        progress_share=None,  # how far its progress was at the cut is not kept
        progress_at_s=None,
    )


def held(group: Sequence[CallTiming], calls: Sequence[CallTiming], by_tier: dict[str, float]) -> Held:
    """Check the estimates for `group`'s tool (and tier) at the budget its cut calls ran under."""
    budgets = [c.budget_s for c in group if c.budget_s is not None]  # the budget they were cut (or degraded) at
    if not budgets:
        return Held(0, 0)
    cut_s = statistics.median(budgets)
    tool, tiers = group[0].tool, {c.tier for c in group}
    ended = [
        c
        for c in calls
        if c.tool == tool
        and (c.tier in tiers or None in tiers)
        and c.true_s is not None
        and c.true_s > cut_s
        and (c.late_outcome == "ok" or (c.late_outcome is None and c.outcome == "ok" and c.degraded is None))
    ][-CHECKS_MAX:]
    durations = whole_durations(calls)
    covered = checked = 0
    for call in ended:
        assert call.true_s is not None
        others = dict(durations)
        key = (call.tool, call.tier)
        if key in others:
            rest = list(others[key])
            if call.true_s in rest:
                rest.remove(call.true_s)  # never its own answer as its peer
            others[key] = rest
        guess = estimate_for(_as_cut(call, cut_s), calls, by_tier, others)
        if guess is not None:  # no basis is no estimate: neither held nor failed
            checked += 1
            covered += guess.seconds >= call.true_s
    return Held(covered, checked)
