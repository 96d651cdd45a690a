"""Rich renderables for the per-tool figures and the Events view, and the recent requests' sort orders.

Rich only, no Textual (like `render`): the same figures serve the live console, replay and tests.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from rich.console import Group, RenderableType
from rich.table import Table
from rich.text import Text

from mcpwatch.console.headless import format as fmt
from mcpwatch.console.headless import words
from mcpwatch.console.headless.notable import NotableEvent
from mcpwatch.console.headless.render_base import Palette, wall_clock
from mcpwatch.console.headless.tool_stats import ToolStatView
from mcpwatch.console.headless.views import RequestView

TOOLS_TITLE = "Tools"
SEVERITY_STYLE = {"error": ("✗", "status-error"), "warn": ("⚠", "status-warn"), "info": ("•", "status-pending")}


def _rate(value: float | None, p: Palette, colour: str) -> Text:
    if value is None:
        return Text("—", style=p.dim)
    return Text(f"{value:.0%}", style=p(colour, "bold") if value > 0 else p.dim)


def tools_panel(tools: tuple[ToolStatView, ...], p: Palette) -> RenderableType:
    """One row per tool, busiest first: finished calls (and how many run now), p50/p95, error and deadline rates."""
    if not tools:
        return Text("no tool calls yet: each tool's calls, latency and error rates appear here", style=p.dim)
    g = Table(box=None, padding=(0, 1), pad_edge=False, expand=True, show_edge=False, header_style=p.dim)
    g.add_column("tool", no_wrap=True, overflow="ellipsis", ratio=1, min_width=8)
    g.add_column("calls", justify="right", no_wrap=True)
    g.add_column("p50", justify="right", no_wrap=True)
    g.add_column("p95", justify="right", no_wrap=True)
    g.add_column("err", justify="right", no_wrap=True)
    g.add_column("deadl", justify="right", no_wrap=True)
    for t in tools:
        calls = Text(f"{t.calls:,}")
        if t.in_flight:
            calls.append(f"+{t.in_flight}", style=p("status-pending"))
        g.add_row(
            t.tool,
            calls,
            fmt.duration(t.p50_s),
            fmt.duration(t.p95_s),
            _rate(t.error_rate, p, "status-error"),
            _rate(t.deadline_rate, p, "status-timeout"),
        )
    return g


def events_panel(items: Iterable[NotableEvent], origin_ts: float | None, p: Palette, unread: int = 0) -> RenderableType:
    """The Events view: newest first, the unread ones marked, an upstream exit with its last stderr lines."""
    rows: list[RenderableType] = []
    for i, item in enumerate(items):
        icon, colour = SEVERITY_STYLE.get(item.severity, ("•", "text-dim"))
        line = Text.assemble(
            ("● " if i < unread else "  ", p("status-warn")),
            (wall_clock(origin_ts, item.mono), p.dim),
            " ",
            (icon, p(colour, "bold")),
            " ",
            (item.text, p(colour) if item.severity != "info" else ""),
        )
        rows.append(line)
        for detail in item.detail:
            rows.append(Text(f"             │ {detail}", style=p.dim, no_wrap=True, overflow="ellipsis"))
    if not rows:
        return Text(
            "nothing yet: upstream exits and respawns, budget changes, tiers that do not fit, spikes of late answers "
            "and the wrapper's warnings are listed here",
            style=p.dim,
        )
    return Group(*rows)


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
