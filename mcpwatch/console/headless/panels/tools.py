"""The Tools panel (any server that is not a council): calls per tool, p50/p95, error and deadline rates."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from rich.console import RenderableType
from rich.table import Table
from rich.text import Text

from mcpwatch.console.headless import format as fmt
from mcpwatch.console.headless.render_base import Palette

HELP: tuple[str, str] | None = ("Tools", "any other server: calls per tool, p50/p95 latency, error and deadline rates")
WIDGET: str | None = "tools"


@dataclass(frozen=True, slots=True)
class ToolStatView:
    tool: str
    calls: int
    in_flight: int
    errors: int
    deadlines: int
    p50_s: float | None
    p95_s: float | None

    @property
    def error_rate(self) -> float | None:
        return None if not self.calls else self.errors / self.calls

    @property
    def deadline_rate(self) -> float | None:
        return None if not self.calls else self.deadlines / self.calls


TOOLS_TITLE = "Tools"


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
    g.add_column("cut", justify="right", no_wrap=True)  # cut at its deadline (`deadl` read as a cut word)
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


def running(tools: Iterable[str | None]) -> dict[str, int]:
    """Calls running now per tool (the panel's `+N`); the figures themselves come from `tool_stats.ToolStats`."""
    counts: dict[str, int] = {}
    for tool in tools:
        if tool:
            counts[tool] = counts.get(tool, 0) + 1
    return counts
