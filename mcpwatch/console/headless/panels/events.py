"""The Events feed (`e`): everything notable, newest first; the top bar counts the unread ones.

Its view is built by the model's `notable.NotableLog` (the part that decides what is notable), which makes
`NotableEvent`s as it folds; the Events screen shows them with `events_panel`, and the main screen toasts the new
errors (`toasts`)."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
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


TOAST_WITHIN_S = 30.0  # an error event older than this (in session time) is listed in Events, not toasted
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


def toasts(notable: Sequence[NotableEvent], total: int, toasted: int, now_mono: float) -> tuple[list[str], int]:
    """The toasts for the error-level events added since `toasted` of them were (an upstream crash…), and the new
    count; `toasted` < 0 (nothing drawn yet) toasts nothing, as what happened before the console looked is in the
    Events view. `notable`: newest first; `total`: events ever added."""
    if toasted < 0 or total < toasted:
        return [], total
    fresh = total - toasted
    texts = []
    for item in notable[:fresh]:
        # Only what just happened: history fetched after the first draw (a console attaching late) is not news.
        if item.severity == "error" and item.mono >= now_mono - TOAST_WITHIN_S:
            last = f"\n{item.detail[-1]}" if item.detail else ""
            texts.append(f"{item.text}{last}\n(e: Events)")
    return texts, total
