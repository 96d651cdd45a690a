"""The main screen's panels as one list (`MAIN`), in the order the help screen describes them. The main screen
places the boxed ones (`Box`) in their area and draws them in one loop; the rest (`Fixed`: the top bar, the two
tables, the Events view) have widgets of their own the screen builds around them.

A panel is one object: its module (`panels/<name>.py`: the view type, the drawing, `HELP`, `WIDGET`) and its
entry here, which says where it goes and what it draws from the model's view (`ViewState`). Adding a panel is
writing its module and adding its `Box` here; the screen, the help screen and the tests find it in this list.
No Textual here: the screens turn these into widgets and bindings.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable
from dataclasses import dataclass
from types import ModuleType
from typing import Literal

from rich.console import RenderableType

from mcpwatch.console.headless.panels import (
    council,
    counters,
    deadline,
    events,
    header,
    health,
    in_flight,
    invalidations,
    requests,
    tiers,
    tombstones,
    tools,
    warnings,
)
from mcpwatch.console.headless.render_base import Palette
from mcpwatch.console.headless.views import ViewState

Area = Literal["top", "mid", "side"]  # the row of summaries, beside the in-flight table, beside the recent requests
LIST_ROWS = 200  # rows of tombstones, invalidations and warnings (their panels scroll)


@dataclass(frozen=True, slots=True)
class Context:
    """What a panel draws with besides the view: the theme's palette, whether operator keys work (a panel may
    say "press h"), and the wall time of the session's start (for times of day)."""

    palette: Palette
    live: bool
    origin: float | None


@dataclass(frozen=True, slots=True)
class Key:
    """A key a panel adds to the main screen: a Textual key name, the screen's action it runs, the footer's word,
    and the binding id the user's `[console.keys]` may rebind."""

    key: str
    action: str
    description: str
    id: str
    show: bool = True


def _always(view: ViewState) -> bool:
    return True


def _unchanged(view: ViewState) -> str | None:
    return None


@dataclass(frozen=True, slots=True)
class Box:
    """A boxed panel: its module, where it goes, and four small functions of the view — what it draws (`draw`),
    what the drawing depends on (`key`: unchanged, one comparison and no drawing), its title for the view
    (`heading`: None keeps the one it has) and whether it is on the screen (`shows`: the council's panels only for
    a council)."""

    module: ModuleType  # its home in `panels/`: `WIDGET` is its id, `HELP` its line in the help screen
    title: str  # the box's title until `heading` says another
    area: Area
    draw: Callable[[ViewState, Context], RenderableType]
    key: Callable[[ViewState], Hashable]
    heading: Callable[[ViewState], str | None] = _unchanged
    shows: Callable[[ViewState], bool] = _always
    scroll: bool = True  # a scrolling list; False: a summary as tall as the box
    keys: tuple[Key, ...] = ()

    @property
    def id(self) -> str:
        widget = self.module.WIDGET
        assert isinstance(widget, str), f"{self.module.__name__} has no WIDGET to draw into"
        return widget

    @property
    def help(self) -> tuple[str, str] | None:
        row: tuple[str, str] | None = self.module.HELP
        return row


@dataclass(frozen=True, slots=True)
class Fixed:
    """A panel with a widget of its own the screen builds (the top bar, a table, a screen): listed for the help
    screen and the tests, drawn by the screen."""

    module: ModuleType

    @property
    def help(self) -> tuple[str, str] | None:
        row: tuple[str, str] | None = self.module.HELP
        return row


def _council(view: ViewState) -> bool:
    return view.council_seen


def _not_council(view: ViewState) -> bool:
    return not view.council_seen


def _tomb_key(view: ViewState) -> Hashable:
    # Keyed to the second: the countdowns change every tick, the text once a second.
    tomb = view.tombstones
    shown = tuple((t.up_id, t.hits, round(t.expires_in_s or 0)) for t in tomb.items[:LIST_ROWS])
    return (tomb.count, tomb.awaiting_sweep, tomb.terms, tomb.late_dropped, shown)


# The lists are capped (LIST_ROWS): under a flood, every row costs a frame time. Their panels scroll.
MAIN: tuple[Box | Fixed, ...] = (
    Fixed(header),
    Box(
        deadline,
        "Deadline",
        "top",
        lambda v, c: deadline.deadline_panel(v.deadline, c.palette, deadline.last_change(v.config_changes)),
        lambda v: (v.deadline, deadline.last_change(v.config_changes)),
        scroll=False,
    ),
    Box(
        tiers,
        "Tier budgets",
        "top",
        lambda v, c: tiers.tiers_panel(v.tiers, v.deadline, c.palette, c.live),
        lambda v: (v.tiers, v.deadline.limit_s),
        lambda v: tiers.tiers_title(v.deadline),
        shows=_council,
        scroll=False,
    ),
    Box(
        health,
        "Health",
        "top",
        lambda v, c: health.health_panel(v.health, c.palette, c.live),
        lambda v: (v.health, round(v.health.ago_s or 0)),
        scroll=False,
    ),
    Box(
        counters,
        "Counters",
        "top",
        lambda v, c: counters.counters_panel(v.counters, c.palette),
        lambda v: v.counters,
        scroll=False,
    ),
    Fixed(in_flight),
    Box(
        council,
        "Council run",
        "mid",
        lambda v, c: council.council_panel(v.council, c.palette),
        lambda v: v.council,
        lambda v: council.council_title(v.council),
        shows=_council,
    ),
    Box(
        tools,
        "Tools",
        "mid",
        lambda v, c: tools.tools_panel(v.tools, c.palette),
        lambda v: v.tools,
        lambda v: tools.TOOLS_TITLE,
        shows=_not_council,
    ),
    Fixed(requests),
    Box(
        tombstones,
        "Tombstones",
        "side",
        lambda v, c: tombstones.tombstones_panel(v.tombstones, c.palette, LIST_ROWS),
        _tomb_key,
        lambda v: tombstones.tombstones_title(v.tombstones),
    ),
    Box(
        invalidations,
        "Invalidations",
        "side",
        lambda v, c: invalidations.invalidations_panel(v.invalidations[:LIST_ROWS], c.origin, c.palette),
        lambda v: v.invalidations[:LIST_ROWS],
        lambda v: invalidations.title(v.counters.invalidations),
    ),
    Box(
        warnings,
        "Warnings",
        "side",
        lambda v, c: warnings.warnings_panel(v.warnings[:LIST_ROWS], c.origin, c.palette),
        lambda v: v.warnings[:LIST_ROWS],
        lambda v: warnings.title(len(v.warnings)),
    ),
    Fixed(events),
)


def boxes(area: Area | None = None) -> list[Box]:
    """The boxed panels (in one area, or all), in the list's order: what the main screen places and draws."""
    return [p for p in MAIN if isinstance(p, Box) and (area is None or p.area == area)]


def help_rows() -> list[tuple[str, str]]:
    """(panel, what it shows) for each panel the help screen lists."""
    return [row for row in (p.help for p in MAIN) if row is not None]
