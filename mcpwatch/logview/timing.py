"""One tools/call as the log knows it (`CallTiming`), and its verdict under a budget: the shape `whatif` builds from
events and `estimate` reasons about, so both import it from here and neither imports the other's types.

Pure: no Textual, no transport.
"""

from __future__ import annotations

from dataclasses import dataclass

from mcpwatch.events import Outcome
from mcpwatch.reliability.deadline import CLAMP_S

FINISHES, CUT, UNKNOWN = "finishes", "cut", "unknown"
# Budget sources that margin and host timeout do not move (any other, "derived" and "clamped" above all, they do)
FIXED_SOURCES = frozenset({"explicit", "tool", "override", "disabled", "operator"})


@dataclass(frozen=True, slots=True)
class CallTiming:
    """One tools/call as the log knows it."""

    request_id: str | None
    tool: str
    start_mono: float
    budget_s: float | None  # the budget it ran under (None: no budget)
    outcome: str | None  # its request_end outcome; None while unfinished
    elapsed_s: float | None  # when it ended for the host
    true_s: float | None  # how long the server really took, when known
    late_delay_s: float | None = None  # after the cut, when a late result came
    late_outcome: str | None = None
    tier: str | None = None
    budget_source: str | None = None  # how its budget was reached ("derived", "tool", "explicit", …)
    margin_s: float | None = None  # the margin in force when it started
    degraded: str | None = None  # an ok answer that says it is not whole (why), e.g. "fallback summary"
    stage: int | None = None  # a council call's furthest stage reached
    models_ok: int | None = None  # stage 1 answers that arrived
    models_total: int | None = None  # models asked in stage 1
    answer_latencies_s: tuple[float, ...] = ()  # the stage 1 answers' latencies
    progress_share: float | None = None  # the share of the work its last progress reported done (progress/total)
    progress_at_s: float | None = None  # when that progress came, seconds after the call started
    per_model_s: float | None = None  # a council's window per model: a model still running stops by then

    def budget_under(
        self, budget_s: float | None, keep_fixed: bool = False, margin_s: float | None = None
    ) -> float | None:
        """The budget this call would get: `budget_s`, unless a margin or host-timeout change is tested
        (`keep_fixed`) and its own budget did not come from them (a per-tool or explicit budget stays); a new
        `margin_s` applies to the host clock its own budget came from (each host its own, with host profiles)."""
        if keep_fixed and self.budget_source in FIXED_SOURCES:
            return self.budget_s
        if margin_s is not None and self.budget_source == "derived" and None not in (self.budget_s, self.margin_s):
            return max(CLAMP_S, self.budget_s + self.margin_s - margin_s)  # type: ignore[operator]  # None was ruled out just above
        return budget_s

    @property
    def cut(self) -> bool:
        """Cut by its deadline budget (not cancelled by a host or an operator)."""
        return self.outcome == Outcome.DEADLINE

    @property
    def at_least_s(self) -> float | None:
        """A lower bound on the true duration when it is unknown (it ran this long before it ended for the host)."""
        return self.true_s if self.true_s is not None else self.elapsed_s

    def verdict(self, budget_s: float | None) -> str:
        """Under this budget (None: no budget): "finishes", "cut" or "unknown"."""
        if self.true_s is not None:
            return FINISHES if budget_s is None or self.true_s <= budget_s else CUT
        bound = self.at_least_s
        if budget_s is not None and bound is not None and self.outcome is not None and budget_s <= bound:
            return CUT
        return UNKNOWN
