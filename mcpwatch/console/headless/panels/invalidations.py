"""The Invalidations panel: which call made which cached data stale (state-sync policies)."""

from __future__ import annotations

from collections.abc import Reversible
from dataclasses import dataclass, replace

from rich.console import Group, RenderableType
from rich.text import Text

from mcpwatch.console.headless.render_base import Palette, wall_clock

HELP: tuple[str, str] | None = ("Invalidations", "state-sync invalidations: which call made which cached data stale")
WIDGET: str | None = "invalidations"


@dataclass(frozen=True, slots=True)
class InvalidationView:
    mono: float
    ago_s: float
    caused_by: str | None
    patterns: tuple[str, ...]


def invalidations_panel(
    items: tuple[InvalidationView, ...], origin_ts: float | None, p: Palette, rows: int = 50
) -> RenderableType:
    if not items:
        return Text("no invalidations yet (state-sync policies announce them here)", style=p.dim)
    # One paragraph per invalidation, wrapped between words: every pattern matters, so none is cut or split.
    return Group(
        *(
            Text.assemble(
                (wall_clock(origin_ts, item.mono), p.dim),
                " ",
                item.caused_by or "?",
                " ",
                ("→ " + ", ".join(item.patterns), p("status-pending")),
            )
            for item in items[:rows]
        )
    )


def build(items: Reversible[InvalidationView], now: float) -> tuple[InvalidationView, ...]:
    """Newest first, each with how long ago it was (`items`: oldest first, as folded)."""
    return tuple(replace(i, ago_s=max(0.0, now - i.mono)) for i in reversed(items))


def title(total: int) -> str:
    return f"Invalidations {total:,}"
