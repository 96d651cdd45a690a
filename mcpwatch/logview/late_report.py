"""The report's "finished late" section: per tool (and per council tier) how many cut calls finished later, how late,
and the change that would have saved them. Built on `whatif`'s call timings, so both always agree."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from mcpwatch.logview.whatif import FIXED_SOURCES, CallTiming
from mcpwatch.reliability.deadline import fmt_seconds

MIN_MARGIN_S = 1.0  # the least margin advised: the host must still get the wrapper's answer before it gives up


def _percentile(values: list[float], q: float) -> float | None:
    if not values:
        return None
    ordered = sorted(values)
    return ordered[min(len(ordered), max(1, math.ceil(q * len(ordered)))) - 1]


def finished_late(
    calls: Sequence[CallTiming], deadline: dict[str, Any] | None, tiers: dict[str, Any] | None = None
) -> list[dict[str, Any]]:
    """One row per tool with cut calls, then one per (tool, tier) where the council's tier is known."""
    groups: dict[tuple[str, str | None], list[CallTiming]] = {}
    for call in calls:
        if call.cut:
            groups.setdefault((call.tool, None), []).append(call)
            if call.tier is not None:
                groups.setdefault((call.tool, call.tier), []).append(call)
    rows = [_row(tool, tier, group, deadline or {}, tiers) for (tool, tier), group in groups.items()]
    return sorted(rows, key=lambda r: (r["tool"], r["tier"] is not None, r["tier"] or ""))


def _row(
    tool: str, tier: str | None, cut: list[CallTiming], deadline: dict[str, Any], tiers: dict[str, Any] | None
) -> dict[str, Any]:
    late = [c for c in cut if c.late_delay_s is not None]
    delays = [c.late_delay_s for c in late if c.late_delay_s is not None]
    row: dict[str, Any] = {
        "tool": tool,
        "tier": tier,
        "cut": len(cut),
        "finished_late": len(late),
        "p50_delay_s": _percentile(delays, 0.50),
        "p95_delay_s": _percentile(delays, 0.95),
        "max_delay_s": max(delays) if delays else None,
    }
    row.update(_advice(row, [c.true_s for c in late if c.true_s is not None], deadline, tier, tiers))
    return row


def _advice(
    row: dict[str, Any],
    durations: list[float],
    deadline: dict[str, Any],
    tier: str | None,
    tiers: dict[str, Any] | None,
) -> dict[str, Any]:
    """What change would have saved how many, as figures and as one sentence."""
    name = row["tool"] if row["tier"] is None else f"{row['tool']} ({row['tier']} tier)"
    if not row["finished_late"]:
        text = f"{name}: none of {row['cut']} cut calls answered later, so how long they needed is not known"
        return {
            "advice": text,
            "suggested_margin_s": None,
            "suggested_budget_s": None,
            "would_save": 0,
            "faster_tier": None,
        }
    text = f"{name}: {row['finished_late']} of {row['cut']} cut calls finished within +{_s(row['max_delay_s'])}"
    host, margin = _num(deadline.get("host_timeout_s")), _num(deadline.get("margin_s"))
    budget = _num(deadline.get("budget_s"))
    limit = host - MIN_MARGIN_S if host is not None else None
    savable = sorted(d for d in durations if limit is None or d <= limit)
    suggested_margin = suggested_budget = None
    if not savable:
        text += f"; none could finish within the host timeout ({_s(host)}) less a {_s(MIN_MARGIN_S)} margin"
    elif deadline.get("source") not in FIXED_SOURCES and host is not None and margin is not None:
        suggested_margin = float(max(MIN_MARGIN_S, math.floor(host - savable[-1])))
        text += f"; a margin of {_s(suggested_margin)} instead of {_s(margin)} would have saved {len(savable)}"
    else:
        suggested_budget = float(math.ceil(savable[-1]))
        now = "none" if budget is None else _s(budget)
        text += f"; a budget of {_s(suggested_budget)} instead of {now} would have saved {len(savable)}"
    faster = _fitting_tier(tier, tiers, budget)
    if faster is not None:
        text += f" — or use the {faster} tier"
    return {
        "advice": text,
        "suggested_margin_s": suggested_margin,
        "suggested_budget_s": suggested_budget,
        "would_save": len(savable),
        "faster_tier": faster,
    }


def _fitting_tier(tier: str | None, tiers: dict[str, Any] | None, budget: float | None) -> str | None:
    """The slowest council tier that fits the budget, when the call's own tier does not."""
    if tier is None or not tiers or budget is None:
        return None
    totals = {name: _num(spec.get("total_s")) for name, spec in tiers.items() if isinstance(spec, dict)}
    own = totals.get(tier)
    if own is None or own <= budget:
        return None
    fitting = [(total, name) for name, total in totals.items() if total is not None and total <= budget]
    return max(fitting)[1] if fitting else None


def _num(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        return None
    return float(value)


def _s(seconds: float | None) -> str:
    return "?" if seconds is None else f"{fmt_seconds(round(seconds, 1))} s"
