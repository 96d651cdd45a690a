"""The report's advice: per tool (and per council tier), the calls the budget cut short, what they needed, and the
change that would have saved them. Built on `whatif`'s call timings and `estimate`, so all three always agree.

"Cut short" is a call cut by its budget, or an answer that came back degraded (a council that fit a fallback
summary into the deadline). What such a call needed is *known* when it answered late, else *likely* (an estimate,
with its basis and confidence), else *unknown*; the advice names a budget covering every known and likely need and
how to get it: a smaller margin, a longer host timeout (the host's own setting), or a faster council tier.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from mcpwatch.logview.calibration import held
from mcpwatch.logview.estimate import Estimate, budget_needed, estimates
from mcpwatch.logview.timing import FIXED_SOURCES, CallTiming
from mcpwatch.reliability.deadline import fmt_seconds

MIN_MARGIN_S = 1.0  # the least margin advised: the host must still get the wrapper's answer before it gives up
CONFIDENCE_ORDER = ("high", "medium", "low")
BASES_SHOWN = 2  # in the sentence; --json lists every basis


def _percentile(values: list[float], q: float) -> float | None:
    if not values:
        return None
    ordered = sorted(values)
    return ordered[min(len(ordered), max(1, math.ceil(q * len(ordered)))) - 1]


def finished_late(
    calls: Sequence[CallTiming],
    deadline: dict[str, Any] | None,
    tiers: dict[str, Any] | None = None,
    by_tier: dict[str, float] | None = None,
) -> list[dict[str, Any]]:
    """One row per tool with calls cut short, then one per (tool, tier) where the council's tier is known."""
    guesses = estimates(calls, by_tier or {})
    groups: dict[tuple[str, str | None], list[tuple[CallTiming, Estimate | None]]] = {}
    for index, call in enumerate(calls):
        if call.cut or call.degraded is not None:
            entry = (call, guesses.get(index))
            groups.setdefault((call.tool, None), []).append(entry)
            if call.tier is not None:
                groups.setdefault((call.tool, call.tier), []).append(entry)
    rows = [
        _row(tool, tier, group, deadline or {}, tiers, by_tier or {}, calls) for (tool, tier), group in groups.items()
    ]
    return sorted(rows, key=lambda r: (r["tool"], r["tier"] is not None, r["tier"] or ""))


def _row(
    tool: str,
    tier: str | None,
    short: list[tuple[CallTiming, Estimate | None]],
    deadline: dict[str, Any],
    tiers: dict[str, Any] | None,
    by_tier: dict[str, float],
    calls: Sequence[CallTiming],
) -> dict[str, Any]:
    cut = [c for c, _ in short if c.cut]
    late = [c for c in cut if c.late_delay_s is not None]
    delays = [c.late_delay_s for c in late if c.late_delay_s is not None]
    known = [c.true_s for c in cut if c.true_s is not None]
    likely = [(c, e) for c, e in short if e is not None and not (c.cut and c.true_s is not None)]
    row: dict[str, Any] = {
        "tool": tool,
        "tier": tier,
        "cut": len(cut),
        "degraded": sum(1 for c, _ in short if c.degraded is not None),
        "finished_late": len(late),
        "p50_delay_s": _percentile(delays, 0.50),
        "p95_delay_s": _percentile(delays, 0.95),
        "max_delay_s": max(delays) if delays else None,
        "known": len(known),
        "likely": len(likely),
        "unknown": len(short) - len(known) - len(likely),
        "bases": _bases([e for _, e in likely if e is not None]),
        "held": None,
    }
    if likely:  # how often such estimates held, on the calls that ran to their end
        check = held([c for c, _ in short], calls, by_tier)
        row["held"] = {"held": check.held, "checked": check.checked, "text": check.text()}
    needs = sorted([*known, *(_capped(e.seconds, c.tier, tiers) for c, e in likely if e is not None)])
    council = any(c.tier is not None for c, _ in short)  # it reads the deadline and keeps some back to deliver
    row.update(_advice(row, needs, len(known), deadline, tier, tiers, by_tier, council))
    return row


def _capped(seconds: float, tier: str | None, tiers: dict[str, Any] | None) -> float:
    """An estimate never past the council tier's total (its window: it never runs longer)."""
    spec = (tiers or {}).get(tier or "")
    total = _num(spec.get("total_s")) if isinstance(spec, dict) else None
    return seconds if total is None else min(seconds, total)


def _bases(found: list[Estimate]) -> list[dict[str, Any]]:
    """Each distinct basis once, with how many calls it estimated and its confidence (surest first)."""
    counted: dict[tuple[str, str], int] = {}
    for estimate in found:
        key = (estimate.basis, estimate.confidence)
        counted[key] = counted.get(key, 0) + 1
    ordered = sorted(counted.items(), key=lambda kv: (CONFIDENCE_ORDER.index(kv[0][1]), -kv[1]))
    return [{"basis": basis, "confidence": confidence, "calls": n} for (basis, confidence), n in ordered]


def _advice(
    row: dict[str, Any],
    needs: list[float],
    known: int,
    deadline: dict[str, Any],
    tier: str | None,
    tiers: dict[str, Any] | None,
    by_tier: dict[str, float],
    council: bool,
) -> dict[str, Any]:
    """What change would have saved how many, as figures and as one sentence."""
    name = row["tool"] if row["tier"] is None else f"{row['tool']} ({row['tier']} tier)"
    short = row["cut"] + row["degraded"]
    what = ", ".join(p for p in (_n(row["cut"], "cut"), _n(row["degraded"], "degraded")) if p)
    figures: dict[str, Any] = {
        "need_s": None,
        "suggested_budget_s": None,
        "suggested_margin_s": None,
        "suggested_host_timeout_s": None,
        "would_save": 0,
        "would_likely_save": 0,
        "faster_tier": None,
        "at_most_s": None,
        "sure_budget_s": None,
        "basis_hint": None,
    }
    text = f"{name}: {short} call{'s' if short != 1 else ''} cut short ({what})"
    if row["cut"]:
        text += f"; {row['finished_late']} of {row['cut']} cut answered later"
        if row["finished_late"]:
            text += f" (within +{_s(row['max_delay_s'])})"
    host, margin = _num(deadline.get("host_timeout_s")), _num(deadline.get("margin_s"))
    budget = _num(deadline.get("budget_s"))
    faster = _fitting_tier(tier, tiers, budget, by_tier)
    figures["faster_tier"] = faster
    if not needs:
        text += "; what they needed is not known (no true duration, and the log has no basis for an estimate)"
        figures["basis_hint"] = basis_hint(council=council, checked=bool(by_tier))
        text += " — " + figures["basis_hint"]
        return {"advice": text + _tier_text(faster, budget, by_tier), **figures}
    need = needs[-1]
    target = budget_needed(need, council)
    figures.update(need_s=round(need, 3), suggested_budget_s=target, would_save=known)
    figures["would_likely_save"] = len(needs) - known
    if row["likely"]:
        bases = "; ".join(f"{b['basis']}, {b['confidence']} confidence" for b in row["bases"][:BASES_SHOWN])
        if len(row["bases"]) > BASES_SHOWN:
            bases += f"; {len(row['bases']) - BASES_SHOWN} more in --json"
        text += f"; likely needed up to {_s(need)} ({bases}; {row['held']['text']})"
        spec = (tiers or {}).get(tier or "")
        total = _num(spec.get("total_s")) if isinstance(spec, dict) else None
        if total is not None and total > need:  # the council's window: it never runs longer
            figures["at_most_s"] = total
            text += f", at most {_s(total)} (the tier's total)"
    else:
        text += f"; they needed up to {_s(need)} (known)"
    change = _change(target, host, margin, deadline.get("source"), budget, figures)
    saves = [f"{known} known" if known else "", f"{figures['would_likely_save']} likely" if row["likely"] else ""]
    unknown = f", {row['unknown']} unknown (not counted)" if row["unknown"] else ""
    text += f" — {change}: saves {' + '.join(s for s in saves if s)} of {short}{unknown}"
    if figures["at_most_s"] is not None:  # a budget over the tier's total leaves the council its whole window
        sure: dict[str, Any] = {}
        sure_budget = budget_needed(figures["at_most_s"], council)
        text += f"; to be sure of all {short}, " + _change(
            sure_budget, host, margin, deadline.get("source"), budget, sure
        )
        figures["sure_budget_s"] = sure_budget
    return {"advice": text + _tier_text(faster, budget, by_tier), **figures}


def basis_hint(*, council: bool, checked: bool) -> str:
    """What would give the advice a basis when the log has none, in one clause (`checked`: the log has a health
    check's estimates already, none for these calls)."""
    if council and not checked:
        return (
            "for a basis, run the health check (h in mcpwatch watch): the council's own estimate per tier, "
            "then mcpwatch report again"
        )
    return (
        "for a basis, let a few calls run to their end (a longer budget for a while: mcpwatch wrap --deadline S, "
        "or h in mcpwatch watch when the server has a health tool), then mcpwatch report again"
    )


def _change(
    target: float,
    host: float | None,
    margin: float | None,
    source: Any,
    budget: float | None,
    figures: dict[str, Any],
) -> str:
    """The one change that gives calls a budget of `target`: a smaller margin when the host timeout allows it, else
    a longer host timeout; an explicit budget is advised as a budget."""
    if source in FIXED_SOURCES or host is None or margin is None:
        now = "none" if budget is None else _s(budget)
        return f"give a budget of {_s(target)} instead of {now}"
    if host - target >= MIN_MARGIN_S:
        lower = figures["suggested_margin_s"] = float(math.floor(host - target))
        return f"lower the margin to {_s(lower)} (budget {_s(host - lower)})"
    figures["suggested_host_timeout_s"] = target + margin
    return (
        f"raise the host's timeout to {_s(target + margin)} (budget {_s(target)} with the {_s(margin)} margin; "
        f"it is the host's own setting, then --host-timeout {fmt_seconds(target + margin)})"
    )


def _tier_text(faster: str | None, budget: float | None, by_tier: dict[str, float]) -> str:
    if faster is None:
        return ""
    estimate = by_tier.get(faster)
    about = f"estimated {_s(estimate)}, " if estimate is not None else ""
    return f" — or ask for the {faster} tier ({about}fits the {_s(budget)} budget)"


def tier_fits(size_s: float, budget_s: float) -> bool:
    """Whether a council tier of this size (its total window, else its estimate) fits a budget: the council keeps
    a tenth of its deadline back to deliver. One rule for the report's tier table and its advice, so they agree."""
    return budget_needed(size_s, True) <= budget_s


def _fitting_tier(
    tier: str | None, tiers: dict[str, Any] | None, budget: float | None, by_tier: dict[str, float]
) -> str | None:
    """The slowest council tier that fits the budget (by its total, as the tier table judges it, else by the
    council's own estimate), when the call's own tier does not."""
    if tier is None or budget is None:
        return None
    sizes = dict(by_tier)
    for name, spec in (tiers or {}).items():
        total = _num(spec.get("total_s")) if isinstance(spec, dict) else None
        if total is not None:
            sizes[name] = total  # the window the table shows: a tier it says does not fit is never advised
    own = sizes.get(tier)
    if own is None or tier_fits(own, budget):
        return None
    fitting = [(size, name) for name, size in sizes.items() if tier_fits(size, budget)]
    return max(fitting)[1] if fitting else None


def _n(count: int, word: str) -> str:
    return f"{count} {word}" if count else ""


def _num(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        return None
    return float(value)


def _s(seconds: float | None) -> str:
    return "?" if seconds is None else f"{fmt_seconds(round(seconds, 1))} s"
