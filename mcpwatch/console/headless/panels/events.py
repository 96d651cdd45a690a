"""The Events feed (`e`): everything notable, newest first; the top bar counts the unread ones.

Its view is built by the model's `notable.NotableLog` (the part that decides what is notable), which makes
`NotableEvent`s as it folds; the Events screen shows them with `events_panel`."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from rich.console import Group, RenderableType
from rich.text import Text

from mcpwatch.console.headless.render_base import Palette, wall_clock

HELP: tuple[str, str] | None = ("Events (e)", "everything notable, newest first; the header counts the unread ones")
WIDGET: str | None = None


@dataclass(frozen=True, slots=True)
class NotableEvent:
    mono: float
    # upstream_exit · respawn · budget · budget_disabled · tier · late_spike · late_result · late_reuse · warning
    kind: str
    severity: str  # "error" · "warn" · "info"
    text: str
    detail: tuple[str, ...] = ()  # e.g. the upstream's last stderr lines


SEVERITY_STYLE = {"error": ("✗", "status-error"), "warn": ("⚠", "status-warn"), "info": ("•", "status-pending")}


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
