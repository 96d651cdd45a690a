"""The Recent requests table: finished requests, newest first, their rows, notes and sort orders."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Reversible
from dataclasses import dataclass
from typing import Any

from rich.text import Text

from mcpwatch.console.headless import format as fmt
from mcpwatch.console.headless import words
from mcpwatch.console.headless.records import CallRecord
from mcpwatch.console.headless.render_base import Palette, status_text, wall_clock

HELP: tuple[str, str] | None = (
    "Recent requests",
    "finished requests, newest first, with outcome and time; latency sparkline below",
)
WIDGET: str | None = "requests"
COLUMNS = [("ended", 8), ("id", 5), ("tool", 20), ("outcome", 15), ("took", 6), ("note", None)]
# What `s` steps through, and a click on a column's header sorts by (the second click reverses); "ended" (newest
# first) is the default order.
SORT_ORDER = ["ended", "id", "tool", "outcome", "took"]


@dataclass(frozen=True, slots=True)
class RequestView:
    request_id: str
    method: str
    tool: str | None
    started_mono: float
    ended_mono: float | None
    outcome: str | None  # None while in flight
    duration_s: float | None
    partial: bool
    error: str | None
    degraded: str | None = None  # an ok result that says it is not the full answer (a fallback, a partial run)

    @property
    def label(self) -> str:
        return self.tool or self.method


def request_note(r: RequestView) -> str:
    """What the note column says about a finished request (empty when there is nothing to add)."""
    note = r.error or ""
    if r.partial:
        note = "partial result" + (f" · {note}" if note else "")
    if r.degraded and r.outcome == "ok":
        note = f"degraded: {r.degraded}" + (f" · {note}" if note else "")
    return note


def request_row(
    r: RequestView, origin_ts: float | None, p: Palette, note_width: int = 80, tool_width: int = 20
) -> tuple[Text, ...]:
    note = request_note(r)
    return (
        Text(wall_clock(origin_ts, r.ended_mono if r.ended_mono is not None else r.started_mono), style=p.dim),
        Text(r.request_id),
        Text(fmt.clip(r.label, tool_width)),
        status_text("degraded" if r.degraded and r.outcome == "ok" else r.outcome, p),
        Text(fmt.duration(r.duration_s), justify="right"),
        Text(fmt.clip(note, note_width), style=p.dim),
    )


_SORT_KEYS: dict[str, Callable[[RequestView], Any]] = {
    "id": lambda r: (len(r.request_id), r.request_id),  # numeric ids in numeric order
    "tool": lambda r: r.label.lower(),
    "outcome": lambda r: words.outcome(r.outcome),
    "took": lambda r: r.duration_s if r.duration_s is not None else -1.0,
}


def sort_requests(rows: tuple[RequestView, ...], column: str, reverse: bool = False) -> tuple[RequestView, ...]:
    """Requests (newest first) sorted by a column: "ended" keeps newest first; "took" puts the slowest first."""
    if column == "ended":
        return tuple(reversed(rows)) if reverse else rows
    key = _SORT_KEYS.get(column)
    if key is None:
        return rows
    descending = column == "took"
    return tuple(sorted(rows, key=key, reverse=descending != reverse))


def build(r: CallRecord) -> RequestView:
    return RequestView(
        r.request_id,
        r.method,
        r.tool,
        r.start_mono,
        r.end_mono,
        r.outcome,
        r.duration_s,
        r.partial,
        r.error,
        r.degraded,
    )


def newest_first(calls: Mapping[str, CallRecord], finished: Reversible[str]) -> tuple[RequestView, ...]:
    """The finished requests still retained (`finished`: their ids, oldest first), newest first."""
    return tuple(build(calls[r]) for r in reversed(finished) if r in calls)
