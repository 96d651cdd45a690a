"""The Tier budgets panel: a council's tiers (from its health check) against the call budget."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from rich.console import RenderableType
from rich.table import Table
from rich.text import Text

from mcpwatch.console.headless import format as fmt
from mcpwatch.console.headless.coerce import as_num, as_strs
from mcpwatch.console.headless.panels.deadline import DeadlineView
from mcpwatch.console.headless.render_base import Fitted, Palette, plain

HELP: tuple[str, str] | None = (
    "Tier budgets",
    "a council's tiers (from its health check): total, ×per model; ⚠ = longer than the budget",
)
WIDGET: str | None = "tiers"


@dataclass(frozen=True, slots=True)
class TierView:
    tier: str
    total_s: float | None
    per_model_s: float | None
    models: tuple[str, ...]
    exceeds_budget: bool  # the tier cannot finish before the host (or the wrapper's budget) gives up


def tiers_panel(tiers: tuple[TierView, ...], d: DeadlineView, p: Palette, live: bool = True) -> RenderableType:
    """`live`: the operator can run a health check (h); a recording can only say none was recorded."""
    if not tiers:
        hint = "press h for a health check" if live else "no health check in the recording so far"
        return Text(f"no tier budgets yet — {hint}", style=p.dim)
    rows = [
        (
            t.tier,
            fmt.seconds(t.total_s),
            f"×{fmt.seconds(t.per_model_s)}",
            Text("⚠", style=p("status-error", "bold")) if t.exceeds_budget else Text("✓", style=p("status-ok")),
        )
        for t in tiers
    ]
    name_w = max(len(r[0]) for r in rows)
    total_w = max(len(r[1]) for r in rows)
    per_w = max(len(r[2]) for r in rows)

    def make(width: int) -> RenderableType:
        # Narrow: the tier's name gives way first, then the per-model cap; the total and the ⚠ never do.
        with_per = width >= 3 + total_w + per_w + 4
        g = Table.grid(padding=(0, 1), expand=True)
        if name_w + total_w + per_w + 4 <= width:
            g.add_column(no_wrap=True)
        else:
            g.add_column(no_wrap=True, overflow="ellipsis", ratio=1, min_width=3)
        g.add_column(justify="right", no_wrap=True)
        if with_per:
            g.add_column(justify="right", no_wrap=True)
        g.add_column(no_wrap=True, ratio=1 if name_w + total_w + per_w + 4 <= width else None, min_width=1)
        for name, total, per, verdict in rows:
            cells: tuple[Text, ...] = (plain(name), plain(total), Text(per, style=p.dim), verdict)
            if not with_per:
                cells = (cells[0], cells[1], verdict)
            g.add_row(*cells)
        return g

    return Fitted(make)


def tiers_title(d: DeadlineView) -> str:
    return "Tier budgets" + (f" vs {fmt.seconds(d.limit_s)}" if d.limit_s is not None else "")


def build(tiers: Mapping[str, Mapping[str, Any]], limit_s: float | None) -> tuple[TierView, ...]:
    """The tiers a council's health check reported, each against the limit a call runs under."""
    return tuple(
        TierView(
            name,
            as_num(body.get("total_s")),
            as_num(body.get("per_model_s")),
            as_strs(body.get("models")),
            exceeds_budget=limit_s is not None and (as_num(body.get("total_s")) or 0.0) > limit_s,
        )
        for name, body in tiers.items()
    )
