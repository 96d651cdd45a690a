"""What if the budget had been different: which tools/calls of a session would have finished, which been cut.

One computation for `mcpwatch whatif`, the report's advice and the console's budget prompts. Pure: events in,
figures out; no Textual, no transport.

A call's true duration is known when the server answered: in time (its request_end) or late (its late_result:
cut + delay). A call cut by its budget that never answered has no known duration, only a lower bound (the time it
ran before the cut): under a budget at or below that bound it would be cut again; above it the answer is *likely*
when `estimate` finds a basis (reported with it), else "unknown", never counted as saved. Calls answered from a
stored late result never went upstream and are left out.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from sys import intern
from typing import Any

from mcpwatch.events import Event, Kind, Outcome
from mcpwatch.logview.estimate import Estimate, council_estimates, estimates, fits
from mcpwatch.logview.timing import CUT, FINISHES, FIXED_SOURCES, UNKNOWN, CallTiming
from mcpwatch.reliability.deadline import CLAMP_S, fmt_seconds
from mcpwatch.reliability.degraded import DEGRADED, end_degraded

ANSWERED = frozenset(o.value for o in (Outcome.OK, Outcome.TOOL_ERROR, Outcome.ERROR))
# Progress (a pace to estimate from, see `estimate`) is left out: most of a long session, and needed only for the few
# calls estimated, whose progress a reader adds afterwards (`CallFold.needing_progress`, `CallFold.add_progress`).
WHATIF_KINDS = frozenset(
    k.value
    for k in (
        Kind.SESSION_START,
        Kind.CONFIG_CHANGE,
        Kind.REQUEST_START,
        Kind.REQUEST_END,
        Kind.MODEL_STATUS,
        Kind.LATE_RESULT,
        Kind.HEALTH_CHECK,  # the council's own per-tier estimates (see `estimate`)
    )
)
# plain strings: a million events compare faster against them than against the enum members
_CONFIG_CHANGE = Kind.CONFIG_CHANGE.value
_HEALTH_CHECK = Kind.HEALTH_CHECK.value
_LATE_RESULT = Kind.LATE_RESULT.value
_MODEL_STATUS = Kind.MODEL_STATUS.value
_PROGRESS = Kind.PROGRESS.value
_REQUEST_END = Kind.REQUEST_END.value
_REQUEST_START = Kind.REQUEST_START.value
_SESSION_START = Kind.SESSION_START.value
LIKELY_FINISHES, LIKELY_CUT = "likely_finishes", "likely_cut"  # no true duration: by the estimate
LIKELY = ("likely_saved", "likely_cut", "likely_whole")
CHANGES = ("saved", "newly_cut", *LIKELY, UNKNOWN)


class _Open:
    """A tools/call being folded: only what its timing needs, so a million-event session stays small."""

    __slots__ = (
        "budget",
        "degraded",
        "elapsed",
        "end_seq",
        "late",
        "margin",
        "models",
        "mono",
        "outcome",
        "per_model",
        "reused",
        "rid",
        "share",
        "share_at",
        "source",
        "stage",
        "tier",
        "tool",
    )

    def __init__(self, rid: str | None, tool: str, mono: float, data: dict[str, Any], margin: float | None) -> None:
        self.rid, self.tool, self.mono, self.margin = rid, intern(tool), mono, margin
        self.budget = _number(data.get("budget_s"))
        source = data.get("budget_source")
        self.source = source if isinstance(source, str) else None
        self.reused = source == "late_reuse"
        self.outcome: str | None = None
        self.degraded: str | None = None
        self.elapsed: float | None = None
        self.end_seq: int | None = None
        self.late: dict[str, Any] | None = None
        self.tier: str | None = None
        self.stage: int | None = None
        self.models: dict[str, tuple[Any, float | None]] | None = None
        self.share: float | None = None  # the last progress's progress/total, while it ran
        self.share_at: float | None = None
        self.per_model: float | None = None  # the council's window per model, as its statuses say


class CallFold:
    """`calls_from_events`, one event at a time: the report reads a session once and folds its calls as it goes,
    never holding the events."""

    def __init__(self) -> None:
        self._starts: dict[str, _Open] = {}
        self._order: list[_Open] = []
        self._margin: float | None = None
        self.deadline: dict[str, Any] | None = None  # the session's last deadline block
        self.by_tier: dict[str, float] = {}  # the latest health check's per-tier estimates

    def add(self, event: Event, degraded: str | None = None) -> None:
        """Fold one event (`degraded`: a request_end's `end_degraded`, when the caller has it already). The kinds
        are tested most frequent first: a long session is mostly model statuses and calls."""
        kind, rid = event.kind, event.request_id
        data = event.data if isinstance(event.data, dict) else {}
        if kind == _REQUEST_START:
            if event.tool and data.get("method") == "tools/call":
                call = _Open(rid, event.tool, event.mono, data, self._margin)
                if rid is not None:
                    self._starts[rid] = call  # a host may reuse an id: the newest call owns it
                self._order.append(call)
        elif kind in (_MODEL_STATUS, _PROGRESS, _REQUEST_END, _LATE_RESULT):
            found = self._starts.get(rid) if rid is not None else None
            if found is None:
                return
            call = found
            if kind == _MODEL_STATUS:
                if isinstance(data.get("tier"), str):
                    call.tier = data["tier"]
                if (per_model := _number(data.get("per_model_s"))) is not None:
                    call.per_model = per_model
                _note_model(call, event.model, data)
            elif kind == _PROGRESS:
                if call.outcome is None:
                    _note_share(call, event.mono, data)
            elif kind == _REQUEST_END:
                if call.outcome is None:
                    call.end_seq = event.seq
                    call.outcome = str(data.get("outcome") or "?")
                    call.degraded = degraded if degraded is not None else end_degraded(data)
                    call.elapsed = _number(data.get("duration_s"))
                    call.reused = call.reused or data.get("late_reuse") is True
            elif data.get("outcome") != "error":
                call.late = data  # (an error answer, in an older log, is no result: left out)
        elif kind in (_SESSION_START, _CONFIG_CHANGE):
            if isinstance(block := data.get("deadline"), dict):
                self.deadline = block
                self._margin = _number(block.get("margin_s"))
        elif kind == _HEALTH_CHECK:
            self.by_tier = council_estimates([event]) or self.by_tier

    def needing_progress(self) -> list[str]:
        """The calls whose duration must be estimated (cut and never answered, or degraded) and whose progress the
        fold has not seen: a reader that left progress out of the stream (a long session is mostly progress) reads
        theirs afterwards (`add_progress`)."""
        return [
            call.rid
            for call in self._order
            if call.rid is not None
            and call.share is None
            and call.late is None
            and (call.outcome == "deadline" or (call.outcome == "ok" and call.degraded is not None))
        ]

    def add_progress(self, event: Event) -> None:
        """A progress event read after the stream (see `needing_progress`): noted as if it had come in order."""
        call = self._starts.get(event.request_id) if event.request_id is not None else None
        if call is not None and call.end_seq is not None and event.seq < call.end_seq and event.kind == _PROGRESS:
            _note_share(call, event.mono, event.data if isinstance(event.data, dict) else {})

    def __len__(self) -> int:
        return len(self._order)

    def calls(self) -> list[CallTiming]:
        """The calls folded so far, in start order (each call's working record is let go as it is read)."""
        order, self._order = self._order, []
        self._starts.clear()
        found: list[CallTiming] = []
        while order:
            call = order.pop()
            if not call.reused:
                found.append(_timing(call))
        found.reverse()
        return found


def calls_from_events(events: Iterable[Event]) -> list[CallTiming]:
    """Every tools/call of a session (in start order) with what its events say about its duration."""
    fold = CallFold()
    for event in events:
        fold.add(event)
    return fold.calls()


def _note_share(call: _Open, mono: float, data: dict[str, Any]) -> None:
    """How far the server said it was (progress of total), and when: a pace to estimate the rest from."""
    done, total = _number(data.get("progress")), _number(data.get("total"))
    if done is not None and total is not None and total > 0 and 0 < done < total:
        call.share, call.share_at = done / total, mono - call.mono


def _note_model(call: _Open, model: str | None, data: dict[str, Any]) -> None:
    """Progress reached: the furthest stage, and each model's latest stage 1 status and latency."""
    stage = data.get("stage")
    if type(stage) is int:
        call.stage = max(call.stage or 0, stage)
    if stage == 1 and model is not None:
        if call.models is None:
            call.models = {}
        call.models[intern(model)] = (data.get("status"), _number(data.get("latency_ms")))


def call_timing(
    request_id: str | None,
    tool: str,
    start_mono: float,
    budget_s: float | None,
    outcome: str | None,
    elapsed_s: float | None,
    late_duration_s: float | None = None,
    late_delay_s: float | None = None,
    tier: str | None = None,
    budget_source: str | None = None,
    margin_s: float | None = None,
    **progress: Any,
) -> CallTiming:
    """A call's timing from what a view of it holds (the console's requests); `progress`: CallTiming's degraded,
    stage, models_ok, models_total and answer_latencies_s."""
    true_s = late_duration_s if late_duration_s is not None else elapsed_s if outcome in ANSWERED else None
    return CallTiming(
        request_id, tool, start_mono, budget_s, outcome, elapsed_s, true_s, late_delay_s, None, tier, budget_source,
        margin_s, **progress,
    )  # fmt: skip


def _timing(call: _Open) -> CallTiming:
    outcome, elapsed, late = call.outcome, call.elapsed, call.late
    true_s = elapsed if outcome in ANSWERED else None
    models = call.models or {}
    latencies = tuple(ms / 1000 for status, ms in models.values() if status == "ok" and ms is not None)
    delay = late_outcome = None
    if late is not None:
        delay = _number(late.get("delay_s"))
        late_outcome = late.get("outcome")
        true_s = _number(late.get("duration_s"))
        if true_s is None and delay is not None and elapsed is not None:
            true_s = elapsed + delay
    return CallTiming(
        call.rid, call.tool, call.mono, call.budget, outcome, elapsed, true_s, delay, late_outcome,
        call.tier, call.source, call.margin, call.degraded, call.stage,
        sum(1 for status, _ in models.values() if status == "ok") if models else None, len(models) or None, latencies,
        call.share, call.share_at, call.per_model,
    )  # fmt: skip


def _number(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return float(value) if math.isfinite(value) else None


# --------------------------------------------------------------------------- the hypothetical budget


def hypothetical_budget(
    deadline: dict[str, Any] | None,
    *,
    budget_s: float | None = None,
    margin_s: float | None = None,
    host_timeout_s: float | None = None,
) -> float | None:
    """The budget to test: given outright (≤ 0: none), or host timeout − margin (each defaulting to the session's
    final deadline block), clamped to 1 s as the wrapper clamps a derived budget."""
    if budget_s is not None:
        return budget_s if budget_s > 0 else None
    deadline = deadline or {}
    host = host_timeout_s if host_timeout_s is not None else _number(deadline.get("host_timeout_s"))
    margin = margin_s if margin_s is not None else _number(deadline.get("margin_s"))
    if host is None or margin is None:
        raise ValueError("the session's log does not say its host timeout and margin; give both")
    return max(CLAMP_S, host - margin)


def budget_after_change(
    key: str,
    value: float | None,
    *,
    host_timeout_s: float | None,
    margin_s: float | None,
    budget_s: float | None,
    source: str | None,
) -> float | None:
    """The budget new calls would get after an operator sets `key` ("margin_s", "host_timeout_s" or "override_s";
    None clears the override) to `value`, as the wrapper computes it (≤ 0 disables; a derived budget is clamped)."""
    if key == "override_s":
        if value is not None:
            return value if value > 0 else None
        if host_timeout_s is None or margin_s is None:
            return budget_s
        return max(CLAMP_S, host_timeout_s - margin_s)
    if source in FIXED_SOURCES:
        return budget_s  # an explicit budget or override decides, whatever the margin and host timeout
    host = value if key == "host_timeout_s" else host_timeout_s
    margin = value if key == "margin_s" else margin_s
    if host is None or margin is None:
        return budget_s
    return max(CLAMP_S, host - margin)


def final_deadline(events: Iterable[Event]) -> dict[str, Any] | None:
    """The session's last deadline block (session_start, then each config_change)."""
    block = None
    for event in events:
        if event.kind in (Kind.SESSION_START, Kind.CONFIG_CHANGE) and isinstance(event.data, dict):
            found = event.data.get("deadline")
            if isinstance(found, dict):
                block = found
    return block


# --------------------------------------------------------------------------- figures


def whatif(
    calls: Sequence[CallTiming],
    budget_s: float | None,
    *,
    keep_fixed: bool = False,
    margin_s: float | None = None,
    by_tier: dict[str, float] | None = None,
) -> dict[str, Any]:
    """The `mcpwatch whatif --json` object for these calls under this budget (`keep_fixed`: a margin or host-timeout
    change, which leaves per-tool and explicit budgets as they were; `margin_s`: a new margin on each call's clock;
    `by_tier`: the council's own per-tier estimates, a basis for calls whose duration is not known).

    Three grades: *known* (true durations: saved, newly_cut), *likely* (estimated, each with its basis:
    likely_saved, likely_cut, and likely_whole for a degraded answer a whole one would fit), *unknown* (no basis)."""
    guesses = estimates(calls, by_tier or {})
    per_tool: dict[str, dict[str, int]] = {}
    rows = []
    totals = dict.fromkeys(CHANGES, 0)
    for index, call in enumerate(calls):
        budget = call.budget_under(budget_s, keep_fixed, margin_s)
        verdict = call.verdict(budget)
        guess = guesses.get(index)
        change = _change(call, verdict, guess, budget)
        if verdict == UNKNOWN and guess is not None:
            verdict = LIKELY_FINISHES if fits(guess, call, budget) else LIKELY_CUT
        tool = per_tool.setdefault(call.tool, {"calls": 0, "cut_now": 0, "degraded": 0, **dict.fromkeys(CHANGES, 0)})
        tool["calls"] += 1
        tool["cut_now"] += call.cut
        tool["degraded"] += call.degraded is not None
        for name in (change, UNKNOWN if verdict == UNKNOWN else None):
            if name is not None:
                tool[name] += 1
                totals[name] += 1
        rows.append(
            {
                "request_id": call.request_id,
                "tool": call.tool,
                "outcome": DEGRADED if call.degraded is not None and call.outcome == "ok" else call.outcome,
                "degraded": call.degraded,
                "tier": call.tier,
                "budget_s": call.budget_s,
                "true_s": call.true_s,
                "at_least_s": None if call.true_s is not None else call.at_least_s,
                "late": call.late_delay_s is not None,
                "verdict": verdict,
                "change": change,
                "estimate": None if guess is None else guess.to_dict(),
            }
        )
    return {
        "budget_s": budget_s,
        "calls": len(calls),
        "cut_now": sum(1 for c in calls if c.cut),
        "degraded": sum(1 for c in calls if c.degraded is not None),
        **totals,
        "kept_own_budget": sum(1 for c in calls if keep_fixed and c.budget_source in FIXED_SOURCES),
        "per_tool": dict(sorted(per_tool.items())),
        "budget_to_save": budget_to_save(calls),
        "likely_budget_to_save": budget_to_save(calls, guesses),
        "items": rows,
    }


def _change(call: CallTiming, verdict: str, guess: Estimate | None, budget: float | None) -> str | None:
    """How this call's fate changes under the budget, and how sure that is."""
    if call.cut and verdict == FINISHES:
        return "saved"
    if call.outcome in ANSWERED and verdict == CUT:
        return "newly_cut"
    if guess is None:
        return None
    if call.cut and verdict == UNKNOWN:
        return "likely_saved" if fits(guess, call, budget) else "likely_cut"
    if call.degraded is not None and fits(guess, call, budget):
        return "likely_whole"
    return None


def budget_to_save(calls: Sequence[CallTiming], guesses: dict[int, Estimate] | None = None) -> dict[str, float | None]:
    """The smallest budget that would have saved 50 %, 90 % and all of the cut calls (None: not known, because too
    many of them never answered). With `guesses`, estimated durations count too (the *likely* figure)."""
    guesses = guesses or {}
    cut = [(i, c) for i, c in enumerate(calls) if c.cut]
    known = sorted(
        c.true_s if c.true_s is not None else guesses[i].seconds for i, c in cut if c.true_s is not None or i in guesses
    )
    figures: dict[str, float | None] = {}
    for name, share in (("p50", 0.5), ("p90", 0.9), ("all", 1.0)):
        needed = math.ceil(share * len(cut) - 1e-9)
        figures[name] = known[needed - 1] if cut and 0 < needed <= len(known) else None
    return figures


def effect_line(
    calls: Sequence[CallTiming],
    budget_s: float | None,
    last: int = 50,
    keep_fixed: bool = False,
    margin_s: float | None = None,
    by_tier: dict[str, float] | None = None,
) -> str:
    """One line for a budget prompt, counted as `whatif` counts (known, likely with basis, unknown), e.g. "budget
    18 s → of the last 50 calls, 43 cut now: known 0 saved; likely 40 saved (90th percentile of 12 whole consult_council
    answers …); 3 unknown (never answered)". An unknown call is never presented as saved."""
    recent = list(calls)[-last:]
    if not recent:
        return "no finished tool call yet to test this budget against"
    label = "no budget" if budget_s is None else f"budget {fmt_seconds(budget_s)} s"
    figures = whatif(recent, budget_s, keep_fixed=keep_fixed, margin_s=margin_s, by_tier=by_tier)
    noun = "call" if len(recent) == 1 else "calls"
    line = f"{label} → of the last {len(recent)} {noun}, {figures['cut_now']} cut now"
    known = [f"{figures[k]} {k.replace('_', ' ')}" for k in ("saved", "newly_cut") if figures[k]]
    line += "; known: " + (", ".join(known) if known else "none change")
    words = {"likely_saved": "saved", "likely_cut": "still cut", "likely_whole": "whole instead of degraded"}
    likely = [f"{figures[k]} {words[k]}" for k in LIKELY if figures[k]]
    if likely:
        bases = sorted({i["estimate"]["basis"] for i in figures["items"] if i["change"] in LIKELY and i["estimate"]})
        more = f"; +{len(bases) - 2} more" if len(bases) > 2 else ""
        line += f"; likely: {', '.join(likely)} (estimated from {'; '.join(bases[:2])}{more})"
    if figures["unknown"]:
        line += f"; {figures['unknown']} unknown (never answered: not counted as saved)"
    return line
