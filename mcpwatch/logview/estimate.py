"""What a call whose true duration is unknown likely needed, from what the log knows, with the basis and confidence.

A server that honours cancellation (the council does) never answers a cut call late, and a council that fits its
answer into the deadline returns a degraded one (a fallback summary) instead: either way the log has no true
duration for a whole answer, only a lower bound (how long the call ran). Advice must still be possible, so each
such call gets an estimate from, in this order:

1. whole answers of the same tool (and council tier) that ran at least as long: their 90th percentile (≥ 3 of them;
   high confidence from 10);
2. the council's own estimate for the tier (`council_health_check`'s `estimated_duration_seconds_by_tier`, as
   logged by a health check), when the call had not already run past it (medium);
3. the progress the call reached before it ended (stage, models answered, their latencies): the stages left at
   the pace of the answers so far (low);
4. any server's own progress (`progress` of `total`, logged for every call: the wrapper gives each a progress
   token): the rest at the pace so far (low).

Otherwise it stays unknown. Pure: no Textual, no transport; `whatif`, the report and the console's prompts share it.
"""

from __future__ import annotations

import bisect
import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from mcpwatch.events import Event, Kind
from mcpwatch.logview.timing import CallTiming
from mcpwatch.reliability.deadline import fmt_seconds

DELIVERY_SHARE = 0.1  # a server reading dev.mcpwatch/deadline_ms (the council) keeps this much back to deliver
DELIVERY_MAX_S = 3.0
PEERS_MIN = 3  # whole answers needed before they are a basis
PEERS_SHARE = 0.9  # their nearest-rank percentile taken: a budget from it leaves at most 1 in 10 such calls cut
PEERS_HIGH = 10
COUNCIL_STAGES = 3  # answers, peer review, synthesis
STRAGGLER_FACTOR = 2.0  # a stage 1 model still running at the cut: taken to need as long again
LATER_STAGE_SHARE = 0.5  # each stage after the first, as a share of stage 1 (measured: about 0.4)


@dataclass(frozen=True, slots=True)
class Estimate:
    """What a call likely needed in all (seconds from its start), why we think so, and how sure that is."""

    seconds: float
    basis: str
    confidence: str  # "high" | "medium" | "low"

    def to_dict(self) -> dict[str, Any]:
        return {"seconds": round(self.seconds, 3), "basis": self.basis, "confidence": self.confidence}


def budget_needed(need_s: float, council: bool) -> float:
    """The budget (whole seconds) a call needing `need_s` should get: a server that reads the deadline (the council)
    keeps back 10 % of it (at most 3 s) to deliver its answer, so the budget must cover that too."""
    if council:
        scaled = need_s / (1 - DELIVERY_SHARE)
        need_s = scaled if scaled * DELIVERY_SHARE <= DELIVERY_MAX_S else need_s + DELIVERY_MAX_S
    return float(math.ceil(need_s - 1e-9))


def fits(estimate: Estimate, call: CallTiming, budget_s: float | None) -> bool:
    """Whether a call that likely needs `estimate` would get it under this budget (None: no budget)."""
    return budget_s is None or budget_needed(estimate.seconds, call.tier is not None) <= budget_s


def council_estimates(events: Iterable[Event]) -> dict[str, float]:
    """The latest health check's per-tier duration estimates (seconds), if the log has one."""
    found: dict[str, float] = {}
    for event in events:
        if event.kind != Kind.HEALTH_CHECK or not isinstance(event.data, dict):
            continue
        result = event.data.get("result")
        by_tier = result.get("estimated_duration_seconds_by_tier") if isinstance(result, dict) else None
        if isinstance(by_tier, dict):
            numbers = {str(t): float(v) for t, v in by_tier.items() if _finite(v) and v > 0}
            if numbers:
                found = numbers
    return found


def needs_estimate(call: CallTiming) -> bool:
    """A call whose whole answer's duration the log does not know: cut and never answered, or answered degraded."""
    return (call.cut and call.true_s is None) or (call.degraded is not None and call.outcome == "ok")


def _whole(call: CallTiming) -> bool:
    if call.true_s is None:
        return False
    if call.late_outcome is not None:
        return call.late_outcome == "ok"
    return call.outcome == "ok" and call.degraded is None


Durations = dict[tuple[str, str | None], list[float]]
"""The whole answers' true durations of each (tool, tier), sorted: read once for all the estimates of a log."""


def whole_durations(calls: Iterable[CallTiming]) -> Durations:
    found: Durations = {}
    for call in calls:
        if call.true_s is not None and _whole(call):
            found.setdefault((call.tool, call.tier), []).append(call.true_s)
    for durations in found.values():
        durations.sort()
    return found


def _peers(call: CallTiming, ran: float, durations: Durations) -> tuple[int, float]:
    """How many whole answers of the same tool and tier ran at least `ran` (the call itself not among them), and
    their 90th percentile (nearest rank; the median held for only half the calls it was applied to): read off the
    sorted durations, none copied."""
    group = durations.get((call.tool, call.tier), [])
    own = call.true_s
    if own is not None and own >= ran and _whole(call):
        group = [*group]
        group.remove(own)
    low = bisect.bisect_left(group, ran)
    count = len(group) - low
    if count == 0:
        return 0, math.nan
    return count, group[low + max(1, math.ceil(PEERS_SHARE * count - 1e-9)) - 1]


def estimate_for(
    call: CallTiming, calls: Sequence[CallTiming], by_tier: dict[str, float], durations: Durations | None = None
) -> Estimate | None:
    """What `call` likely needed for a whole answer (None: nothing in the log to go on). `durations`: the
    `whole_durations` of `calls`, when many calls are estimated."""
    ran = call.at_least_s or 0.0
    where = f"{call.tool}" + (f" ({call.tier} tier)" if call.tier else "")
    count, high = _peers(call, ran, whole_durations(calls) if durations is None else durations)
    if count >= PEERS_MIN:
        return Estimate(
            high,
            f"90th percentile of {count} whole {where} answers that took ≥ {fmt_seconds(round(ran, 1))} s",
            "high" if count >= PEERS_HIGH else "medium",
        )
    own = by_tier.get(call.tier or "")
    if own is not None and own > ran:
        return Estimate(own, f"council_health_check's estimate for the {call.tier} tier", "medium")
    return _from_progress(call, ran) or _from_pace(call, ran)


def _from_pace(call: CallTiming, ran: float) -> Estimate | None:
    """The rest of the work at the pace its last progress showed (progress of total, any server)."""
    share, at = call.progress_share, call.progress_at_s
    if share is None or at is None or not 0 < share < 1 or at <= 0:
        return None
    seconds = at / share
    if seconds <= ran:
        return None  # it was slower than its own pace: no basis
    return Estimate(
        seconds,
        f"its progress: {share:.0%} done after {fmt_seconds(round(at, 1))} s, the rest at that pace",
        "low",
    )


def _from_progress(call: CallTiming, ran: float) -> Estimate | None:
    """The council's stages left, calibrated on its scenarios. Stage 1 ends with its slowest model; a model still
    running at the cut may run to the end of its window (`per_model_s`: the flaky scenario's stragglers hang until
    it), else it is taken to need as long again. Each stage after the first takes about half as long as stage 1's
    answers (the default scenario's high tier: stage 1 20 s, the review and synthesis 16 s in all)."""
    straggling = call.stage == 1 and call.models_total is not None and (call.models_ok or 0) < call.models_total
    window = call.per_model_s if call.per_model_s is not None and call.per_model_s > ran else None
    if not call.stage or not (call.answer_latencies_s or (straggling and window is not None)):
        return None  # (no answer yet: only a model's window says how long stage 1 may take)
    slowest = max(call.answer_latencies_s, default=0.0)
    paced = max(slowest, STRAGGLER_FACTOR * ran) if straggling else slowest  # how long stage 1's answers take
    stage1 = (window if window is not None else paced) if straggling else slowest
    per_stage = LATER_STAGE_SHARE * paced
    if call.stage == 1:
        seconds = max(stage1, ran) + (COUNCIL_STAGES - 1) * per_stage
    else:  # in a later stage, half done
        seconds = max(ran + (COUNCIL_STAGES - call.stage + 0.5) * per_stage, stage1 + (COUNCIL_STAGES - 1) * per_stage)
    if seconds <= ran:
        return None
    answered = f"{call.models_ok} of {call.models_total} models answered" if call.models_total else "answers"
    running = (call.models_total or 0) - (call.models_ok or 0)
    still = f"; {running} still running at {fmt_seconds(round(ran, 1))} s" if straggling else ""
    if straggling and window is not None:
        still += f", up to its {fmt_seconds(round(window, 1))} s window"
    pace = f"slowest {fmt_seconds(round(slowest, 1))} s" if call.answer_latencies_s else "no answer yet"
    return Estimate(
        seconds,
        f"progress at the cut: stage {call.stage}, {answered} ({pace}{still})",
        "low",
    )


def estimates(calls: Sequence[CallTiming], by_tier: dict[str, float]) -> dict[int, Estimate]:
    """An estimate per call that needs one and has a basis, keyed by the call's index in `calls`."""
    out: dict[int, Estimate] = {}
    durations = whole_durations(calls)
    for index, call in enumerate(calls):
        if needs_estimate(call):
            found = estimate_for(call, calls, by_tier, durations)
            if found is not None:
                out[index] = found
    return out


def _finite(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)
