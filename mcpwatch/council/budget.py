"""How a run's time is split between its stages, and how a caller's deadline shrinks it.

Pure functions over absolute times (seconds on any monotonic clock), so they are exact to test.

* The run ends at `start + tier total`, or earlier when the caller said how long it will wait
  (`_meta["dev.mcpwatch/deadline_ms"]`): then at `start + deadline - margin`, the margin leaving room to
  serialise and deliver our own partial answer before the caller gives up.
* Stage 1 (answers) closes at the per-model cap, but never so late that peer review and synthesis lose their
  reserved shares of the run, unless no model has answered by then: then it stays open for the first answer
  (until the cap or just before the run's end), as a reserve is worth nothing without answers to use it.
* Stage 2 (review) closes early enough to leave the synthesis share; the
  chairman's window closes just before the run's, so its timeout is reported as such.
"""

from __future__ import annotations

from dataclasses import dataclass

REVIEW_SHARE = 0.15  # of the run, kept free for peer review
SYNTHESIS_SHARE = 0.15  # of the run, kept free for the chairman
FINISH_SHARE = 0.01  # of the run, kept after the chairman's window, so its call times out before the run does
CALLER_MARGIN_SHARE = 0.1  # of the caller's deadline
CALLER_MARGIN_MIN_S = 0.05
CALLER_MARGIN_MAX_S = 3.0


def caller_margin_s(deadline_s: float) -> float:
    """Time kept back from a caller's deadline to deliver the answer: 10 %, between 50 ms and 3 s."""
    return min(CALLER_MARGIN_MAX_S, max(CALLER_MARGIN_MIN_S, CALLER_MARGIN_SHARE * deadline_s))


@dataclass(frozen=True)
class RunWindow:
    start: float
    end: float
    source: str  # "tier" or "caller"
    margin_s: float  # kept back from the caller's deadline (0 when the tier decides)

    @property
    def length_s(self) -> float:
        return max(0.0, self.end - self.start)


def run_window(start: float, total_s: float, caller_deadline_s: float | None) -> RunWindow:
    """The tier's budget, cut short by the caller's deadline (less a delivery margin) when that is sooner."""
    tier_end = start + total_s
    if caller_deadline_s is None:
        return RunWindow(start, tier_end, "tier", 0.0)
    margin = caller_margin_s(caller_deadline_s)
    caller_end = start + max(0.0, caller_deadline_s - margin)
    if caller_end < tier_end:
        return RunWindow(start, caller_end, "caller", margin)
    return RunWindow(start, tier_end, "tier", 0.0)


def after_queue(asked_at: float, started: float, total_s: float, caller_deadline_s: float | None) -> RunWindow:
    """The window of a run that waited for a slot: it starts now with the tier's whole total, but a caller's
    deadline keeps its end (the caller's clock ran while the run waited)."""
    tier_end = started + total_s
    if caller_deadline_s is None:
        return RunWindow(started, tier_end, "tier", 0.0)
    margin = caller_margin_s(caller_deadline_s)
    caller_end = max(started, asked_at + caller_deadline_s - margin)
    if caller_end < tier_end:
        return RunWindow(started, caller_end, "caller", margin)
    return RunWindow(started, tier_end, "tier", 0.0)


def guard_grace_s(window: RunWindow) -> float:
    """How long after the window's end the run's safety net fires: the stages' own deadlines come first, so
    every call that runs out of time is reported with its own timeout; small enough to stay inside the margin."""
    return min(0.5, max(0.02, 0.02 * window.length_s))


def stage1_end(window: RunWindow, per_model_s: float) -> float:
    reserve = (REVIEW_SHARE + SYNTHESIS_SHARE) * window.length_s
    return max(window.start, min(window.start + per_model_s, window.end - reserve))


def stage1_last_chance(window: RunWindow, per_model_s: float) -> float:
    """How long stage 1 may stay open when nobody has answered by `stage1_end`: the reserve is worth nothing
    without answers, so the first one to arrive before the run's end (or the per-model cap) is taken."""
    return max(window.start, min(window.start + per_model_s, window.end - FINISH_SHARE * window.length_s))


def stage2_end(window: RunWindow, now: float, per_model_s: float) -> float:
    reserve = SYNTHESIS_SHARE * window.length_s
    return max(now, min(now + per_model_s, window.end - reserve))


def stage3_end(window: RunWindow, now: float, per_model_s: float) -> float:
    return max(now, min(now + per_model_s, window.end - FINISH_SHARE * window.length_s))
