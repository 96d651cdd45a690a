"""The Counters panel: requests by outcome since the wrapper started."""

from __future__ import annotations

from collections.abc import Mapping

from rich.console import RenderableType
from rich.table import Table
from rich.text import Text

from mcpwatch.console.headless.render_base import Palette
from mcpwatch.events import Counters as Counters  # the one declaration; this panel shows a fresh one per view

HELP: tuple[str, str] | None = (
    "Counters",
    "requests by outcome since the wrapper started; late drop = late answers dropped",
)
WIDGET: str | None = "counters"


def counters_panel(c: Counters, p: Palette) -> RenderableType:
    # Labels give way (with an ellipsis) before numbers do: a number is never cut in a narrow panel.
    g = Table.grid(padding=(0, 1), expand=True)
    for _ in range(2):
        g.add_column(no_wrap=True, overflow="ellipsis", min_width=3, ratio=1)
        g.add_column(no_wrap=True, justify="right")

    def n(value: int, colour: str) -> Text:
        return Text(f"{value:,}", style=p(colour, "bold") if value else p.dim)

    g.add_row(
        Text("requests", style=p.dim), n(c.requests, "status-pending"), Text("ok", style=p.dim), n(c.ok, "status-ok")
    )
    g.add_row(
        Text("errors", style=p.dim),
        n(c.errors, "status-error"),
        Text("deadline", style=p.dim),
        n(c.timeouts, "status-timeout"),
    )
    g.add_row(
        Text("cancelled", style=p.dim),
        n(c.cancelled, "status-cancelled"),
        Text("late drop", style=p.dim),
        n(c.late_dropped, "status-late"),
    )
    g.add_row(
        Text("unknown", style=p.dim),
        n(c.unknown_dropped, "status-late"),
        Text("invalidate", style=p.dim),
        n(c.invalidations, "status-pending"),
    )
    if c.degraded:  # ok answers that say they are not whole (fallback summaries): never counted as ok
        g.add_row(Text("degraded", style=p.dim), n(c.degraded, "status-warn"))
    return g


def build(counts: Mapping[str, int]) -> Counters:
    """The counters as the model counts them (one per `mcpwatch.events.COUNTER_NAMES`)."""
    return Counters(**counts)
