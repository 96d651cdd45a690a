"""The Warnings panel: what the wrapper warned about, and upstream exits."""

from __future__ import annotations

from collections.abc import Reversible
from dataclasses import dataclass

from rich.console import RenderableType
from rich.table import Table
from rich.text import Text

from mcpwatch.console.headless.render_base import Palette, wall_clock

HELP: tuple[str, str] | None = ("Warnings", "what the wrapper warned about, and upstream exits")
WIDGET: str | None = "warnings"


@dataclass(frozen=True, slots=True)
class WarningView:
    mono: float
    message: str


def warnings_panel(
    items: tuple[WarningView, ...], origin_ts: float | None, p: Palette, rows: int = 50
) -> RenderableType:
    if not items:
        return Text("no warnings", style=p.dim)
    g = Table.grid(padding=(0, 1), expand=True)
    g.add_column(no_wrap=True)
    g.add_column(overflow="fold", ratio=1)
    for item in items[:rows]:
        g.add_row(
            Text(wall_clock(origin_ts, item.mono), style=p.dim), Text("⚠ " + item.message, style=p("status-warn"))
        )
    return g


def build(items: Reversible[WarningView]) -> tuple[WarningView, ...]:
    """Newest first (`items`: oldest first, as folded)."""
    return tuple(reversed(items))


def title(total: int) -> str:
    return f"Warnings {total}"
