"""The main screen's panels, one module each: the panel's view type, the function building that view from the
model's state, its drawing (Rich renderables), and as data its line in the help screen (`HELP`; None: not listed)
and the main screen's widget that shows it (`WIDGET`; None: a screen of its own). No Textual here: the screens
only place the panels.

`MAIN` lists them in the order the help screen describes them; `help_rows()` is that description.
"""

from __future__ import annotations

from types import ModuleType

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

MAIN: tuple[ModuleType, ...] = (
    header,
    deadline,
    tiers,
    health,
    counters,
    in_flight,
    council,
    tools,
    requests,
    tombstones,
    invalidations,
    warnings,
    events,
)


def help_rows() -> list[tuple[str, str]]:
    """(panel, what it shows) for each panel the help screen lists."""
    return [panel.HELP for panel in MAIN if panel.HELP is not None]
