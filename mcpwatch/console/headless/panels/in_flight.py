"""The In flight table: running calls, next to be cut first, with time left, budget used and progress."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from rich.text import Text

from mcpwatch.console.headless import format as fmt
from mcpwatch.console.headless.coerce import as_num
from mcpwatch.console.headless.panels.deadline import DeadlineView
from mcpwatch.console.headless.records import CallRecord
from mcpwatch.console.headless.render_base import Palette, gauge

HELP: tuple[str, str] | None = (
    "In flight",
    "running calls, next to be cut first: time left, budget used, progress and stage, message",
)
WIDGET: str | None = "inflight"
# Narrow enough that at 80 columns the message column keeps its header and a few words whole (it read `mess`).
COLUMNS = [("id", 4), ("tool", 20), ("left", 10), ("budget used", 19), ("progress", 8), ("message", None)]


@dataclass(frozen=True, slots=True)
class InFlightView:
    request_id: str
    method: str
    tool: str | None
    elapsed_s: float
    budget_s: float | None
    remaining_s: float | None
    fraction: float | None  # elapsed / budget, 0..1+ (None without a budget)
    progress: float | None
    total: float | None
    message: str | None
    has_council: bool
    unfinished: bool = False  # the session ended while it ran: it will never finish (its clock is stopped)
    stage: int | None = None  # a council call's stage
    tier: str | None = None
    tier_total_s: float | None = None  # the tier's total budget (from the health check), to compare with the budget
    task: bool = False  # a call run as a task: no tools/call budget cuts it; its bound (`budget_s`) is its TTL


def time_left(r: InFlightView, p: Palette) -> Text:
    """Time left before the budget cuts the call (for a task: before its TTL passes), and the share of it that is
    left; coloured as the gauge is (the colour is kept on the selected row)."""
    if r.unfinished or r.remaining_s is None or not r.budget_s:
        return Text("—", style=p.dim)
    if r.remaining_s <= 0:
        gone = "TTL passed" if r.task else "cut"
        return Text(f"{gone} {fmt.duration(-r.remaining_s)} ago", style=p("gauge-over", "bold"))
    share = r.remaining_s / r.budget_s
    colour = "status-warn" if share <= 0.2 else ""
    label = "TTL " if r.task else ""
    return Text(f"{label}{fmt.duration(r.remaining_s)} {share:.0%}", style=p(colour, "bold") if colour else "")


def in_flight_stage(r: InFlightView, p: Palette) -> Text:
    """Progress, and for a council call its stage and whether its tier fits the call's budget."""
    text = Text(fmt.progress(r.progress, r.total))
    if r.stage is not None:
        text.append(f"{' ' if text else ''}s{r.stage}", style=p("status-pending"))
    if r.tier_total_s is not None and r.budget_s is not None and r.tier_total_s > r.budget_s:
        text.append(" ⚠", style=p("status-error", "bold"))
    return text


def in_flight_row(r: InFlightView, p: Palette, message_width: int = 80, tool_width: int = 20) -> tuple[Text, ...]:
    """id, tool, time left, budget used, progress (stage), message."""
    budget = fmt.seconds(r.budget_s) if r.budget_s is not None else "no budget"
    if r.unfinished:
        # The session ended while it ran: no gauge creeping on, the time it had when everything stopped.
        spent = Text("⊘ ended ", style=p("status-warn", "bold"))
        spent.append(f" {fmt.duration(r.elapsed_s)}/{budget}", style=p.dim)
    else:
        spent = gauge(r.fraction, 8, p)
        over = (r.fraction or 0) >= 1
        spent.append(f" {fmt.duration(r.elapsed_s)}/{budget}", style=p("gauge-over") if over else "")
    mark = " ◆" if r.has_council else ""
    tool = Text(fmt.clip(r.tool or r.method, tool_width - len(mark)))
    if mark:
        tool.append(mark, style=p("status-pending"))
    message = Text(fmt.clip(r.message, message_width), style=p.dim)
    return (Text(r.request_id), tool, time_left(r, p), spent, in_flight_stage(r, p), message)


def build(
    calls: Iterable[CallRecord], tiers: Mapping[str, Mapping[str, Any]], ended: bool, now: float
) -> tuple[InFlightView, ...]:
    """The running calls, next to be cut first: the least time left; calls without a budget last, oldest first.
    `ended`: the session ended while they ran (they will never finish)."""
    rows = []
    for r in calls:
        elapsed = max(0.0, now - r.start_mono)
        bound = r.budget_s if r.ttl_end_mono is None else r.ttl_end_mono - r.start_mono  # a task's is its TTL
        remaining = None if bound is None else bound - elapsed
        fraction = None if not bound else elapsed / bound
        rows.append(
            InFlightView(
                r.request_id,
                r.method,
                r.tool,
                elapsed,
                bound,
                remaining,
                fraction,
                r.progress,
                r.total,
                task_message(r),
                bool(r.models),
                unfinished=ended,
                stage=r.stage,
                tier=r.tier,
                tier_total_s=as_num(tiers.get(r.tier, {}).get("total_s")) if r.tier else None,
                task=r.ttl_end_mono is not None,
            )
        )
    rows.sort(key=lambda v: (v.remaining_s is None, v.remaining_s if v.remaining_s is not None else 0.0))
    return tuple(rows)


def task_message(r: CallRecord) -> str | None:
    """A task's row says it is one (offered, bridged or watched), its status, polls and why it was offered, then
    the receiver's own words; any other call's, its last progress message."""
    if r.task is None:
        return r.message
    words = r.message or ""
    prefix = f"{r.task.status}: "
    words = words[len(prefix) :] if words.startswith(prefix) else "" if words == r.task.status else words
    return r.task.line() + (f" — {words}" if words else "")


def title(rows: tuple[InFlightView, ...], deadline: DeadlineView) -> str:
    text = f"In flight {len(rows)}"
    if rows and rows[0].unfinished:
        text += " · unfinished: the session ended"
    elif len(rows) > 1:
        text += " · next to be cut first"
    if deadline.known:
        text += " · budget " + (fmt.seconds(deadline.budget_s) if deadline.budget_s is not None else "DISABLED")
    return text
