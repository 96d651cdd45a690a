"""The Recent requests table: finished requests, newest first, their rows, notes and sort orders; the box's title,
its empty-table hint and the latency line below it."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Reversible
from dataclasses import dataclass
from typing import Any

from rich.text import Text

from mcpwatch.console.headless import format as fmt
from mcpwatch.console.headless import words
from mcpwatch.console.headless.records import CallRecord
from mcpwatch.console.headless.render_base import Palette, sparkline, status_text, wall_clock

HELP: tuple[str, str] | None = (
    "Recent requests",
    "finished requests, newest first, with outcome and time; latency sparkline below",
)
WIDGET: str | None = "requests"
COLUMNS = [("ended", 8), ("id", 5), ("tool", 20), ("outcome", 15), ("took", 6), ("note", None)]
# What `s` steps through, and a click on a column's header sorts by (the second click reverses); "ended" (newest
# first) is the default order.
SORT_ORDER = ["ended", "id", "tool", "outcome", "took"]
REQUEST_ROWS = 200  # rows in the requests table (the model keeps more; the filter reaches all of them)
LATENCY_TEXT_WIDTH = 34  # the latency line's words around its sparkline ("latency", "last 60 calls, max 1.2 s")


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
    task: str | None = None  # a call run as a task: `TaskMark.line()` (kind, status, polls, why offered)

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
    if r.task:
        note = r.task + (f" · {note}" if note else "")
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
        None if r.task is None else r.task.line(),
    )


def newest_first(calls: Mapping[str, CallRecord], finished: Reversible[str]) -> tuple[RequestView, ...]:
    """The finished requests still retained (`finished`: their ids, oldest first), newest first."""
    return tuple(build(calls[r]) for r in reversed(finished) if r in calls)


@dataclass(frozen=True, slots=True)
class Listing:
    """What the table lists, as its title and hint speak of it: the filter and sort order, how many requests the
    filter lets through, and whether the table follows the newest."""

    total: int  # finished requests retained
    matched: int  # of them, those the filter lets through (all without a filter; none when it was not understood)
    filter_text: str = ""
    problem: str = ""  # why the filter was not understood ("" when it was)
    sort_by: str = "ended"
    sort_reverse: bool = False
    following: bool = True
    new_above: int = 0  # rows arrived above a held selection


def requests_title(s: Listing) -> str:
    """The box's title: the count (or why the filter was not understood), the sort order, following or held."""
    title = "Recent requests"
    if s.problem:  # never "0 of N" for a filter that was not understood: say so where the count would be
        title += f" · filter {s.filter_text!r} not understood (? for the syntax)"
    elif s.filter_text:
        title += f" matching {s.filter_text!r}: {s.matched:,} of {s.total:,}"
    elif s.matched > REQUEST_ROWS:
        title += f" · newest {REQUEST_ROWS} of {s.matched:,} (/ to filter)"
    if s.sort_by != "ended" or s.sort_reverse:
        title += f" · by {s.sort_by}{' ↑' if s.sort_reverse else ''}"
    if s.following:
        title += " · ● following newest"
    else:
        title += " · ⏸ held"
        if s.new_above:
            title += f" · ↑ {s.new_above:,} new (g)"
    return title


def requests_hint(s: Listing) -> str:
    """What an empty table says instead ("" when it lists something: the hint is hidden)."""
    if s.problem:
        return f"filter: {s.problem}"
    if not s.matched:
        return f"nothing matches {s.filter_text!r}" if s.filter_text else "no finished requests yet"
    return ""


def latency_width(line_width: int) -> int:
    """Points in the sparkline of a latency line `line_width` cells wide."""
    return max(10, line_width - LATENCY_TEXT_WIDTH)


def latency_points(
    rows: tuple[RequestView, ...], latencies: tuple[float, ...], filtered: bool, width: int
) -> tuple[float, ...]:
    """The sparkline's durations, oldest first: the last tool calls, or under a filter the matching ones (`rows`,
    newest first), so that the sparkline shows what the table shows."""
    if not filtered:
        return latencies[-width:]
    durations = [r.duration_s for r in rows if r.method == "tools/call" and r.duration_s is not None]
    return tuple(reversed(durations[:width]))


def latency_line(points: tuple[float, ...], width: int, filtered: bool, p: Palette) -> Text:
    """The line below the table: a sparkline of the last calls' durations and the slowest of them."""
    what = "matching calls" if filtered else "calls"
    if not points:
        return Text(f"latency: no finished tool {what} yet", style=p.dim)
    return Text.assemble(
        ("latency ", p.dim),
        (sparkline(points, width), p("gauge-fill")),
        (f"  last {len(points)} {what}, max {fmt.duration(max(points))}", p.dim),
    )
