"""Fleet: every running wrapper on this machine in one table; a number key (or enter) watches one.

The same table is the start-up chooser (several wrappers, none chosen yet), the Fleet view (`F`, over a watched
session: esc goes back) and what a console whose wrapper died offers. Rows come from `probe_fleet` every two
seconds, off the UI's way (each wrapper asked with its own timeout).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import replace
from typing import Any, ClassVar

from rich.text import Text
from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.screen import Screen
from textual.widgets import DataTable

from mcpwatch.console.headless import format as fmt
from mcpwatch.console.headless.fleet import FleetRow, fleet_row, probe_fleet
from mcpwatch.console.headless.render_base import Palette
from mcpwatch.console.headless.wire_text import shown_entry
from mcpwatch.console.widgets import KeyFooter, Line, WindowTable
from mcpwatch.registry import WrapperEntry

# What says a wrapper needs a look comes first, so that it shows at 80 columns; the rest scroll sideways (← →).
COLUMNS = [
    ("#", 2),
    ("name", 16),
    ("upstream", 16),  # "● ready 40 s old": a live wrapper slow to answer keeps what its last status said
    ("in flight", 9),
    ("deadlines 5m", 12),
    ("errors 5m", 9),
    ("host sessions", 40),  # an HTTP front's, whole: "16/16 open, 120 reclaimed, 1043 refused" (was `· ses…`)
    ("pid", 8),
    ("host", 20),
    ("gen", 4),
    ("last warning", None),
]
PROBE_EVERY_S = 2.0
NUMBER_KEYS = [Binding(str(n), f"pick({n})", str(n), show=False, id=f"fleet.pick{n}") for n in range(1, 10)]


def fleet_cells(
    index: int, row: FleetRow | None, entry: WrapperEntry, watching: bool, p: Palette, now: float = 0.0
) -> tuple[Text, ...]:
    """One table row: a wrapper not probed yet shows its name and pid and dots; a row whose status is older than
    a few seconds says how old (`now`: wall time)."""
    number = Text(str(index) if index <= 9 else "", style="bold")
    name = Text(("▶ " if watching else "") + entry.name, style="bold")
    if row is None:
        dots = Text("…", style=p.dim)
        blank = Text("")
        return (number, name, dots, blank, blank, blank, blank, Text(str(entry.pid)), dots, blank, blank)
    colour = {"ready": "status-ok", "backoff": "status-warn", "connecting": "status-warn"}.get(row.upstream)
    upstream = Text(f"● {row.upstream}", style=p(colour or "status-error"))
    if age := row.age_text(now):
        upstream.append(f" {age}", style=p("status-warn"))

    def count(value: int | None, bad: str) -> Text:
        if value is None:
            return Text("?", style=p.dim, justify="right")
        return Text(f"{value:,}", style=p(bad) if value else p.dim, justify="right")

    warning = Text(fmt.clip(row.last_warning, 200) or "—", style=p("status-warn") if row.last_warning else p.dim)
    return (
        number,
        name,
        upstream,
        Text("?" if row.in_flight is None else str(row.in_flight), justify="right"),
        count(row.deadlines_5m, "status-timeout"),
        count(row.errors_5m, "status-error"),
        Text(row.sessions or "—", style="" if row.sessions else p.dim),
        Text(str(row.pid)),
        Text(fmt.clip(row.host, 20)),
        Text("" if row.generation is None else str(row.generation), justify="right"),
        warning,
    )


class FleetScreen(Screen[None]):
    """Wrappers in registry order (oldest first), numbered; `1`…`9` or enter watches one."""

    DEFAULT_CSS = """
    FleetScreen #fleet-title { height: 1; background: $panel; }
    FleetScreen #fleet-hint { height: auto; padding: 0 1; color: $text-muted; }
    FleetScreen #fleet-table { height: 1fr; }
    """
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("enter", "watch", "Watch", id="fleet.watch"),
        Binding("escape", "back", "Back", id="fleet.back"),
        Binding("h", "hosts", "Hosts' servers", id="fleet.hosts"),
        *NUMBER_KEYS,
    ]

    def __init__(
        self,
        entries: Callable[[], list[WrapperEntry]],
        on_choose: Callable[[WrapperEntry], None],
        *,
        watching: int | None = None,
        can_go_back: bool = True,
        headline: str | None = None,
        client_factory: Callable[[WrapperEntry], Any] | None = None,
        clock: Callable[[], float] = time.time,
        live_status: Callable[[], tuple[dict[str, Any], float] | None] | None = None,
    ) -> None:
        """`live_status`: the watched wrapper's newest status and its wall time, from the live feed the main
        screen uses: its row comes from that, never from a probe of its own."""
        super().__init__()
        # the registry is anyone's to write
        self._entries_source: Callable[[], list[WrapperEntry]] = lambda: [shown_entry(e) for e in entries()]
        self._on_choose = on_choose
        self.watching = watching
        self.can_go_back = can_go_back
        self.headline = headline
        self._client_factory = client_factory
        self._clock = clock
        self._probing = False  # a round is under way
        self._live_status = live_status
        self.entries: list[WrapperEntry] = []
        self.summaries: dict[int, FleetRow] = {}  # pid → the last probe's row

    def compose(self) -> ComposeResult:
        yield Line(id="fleet-title")
        yield WindowTable(COLUMNS, id="fleet-table", sideways=30, pinned=2)
        yield Line(id="fleet-hint", layout=True)
        yield KeyFooter()

    def on_mount(self) -> None:
        self.query_one("#fleet-table", WindowTable).focus()
        self.reload()
        self.set_interval(1.0, self.reload)
        self.set_interval(PROBE_EVERY_S, self._probe_unless_probing)
        self._probe_unless_probing()

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        return not (action == "back" and not self.can_go_back)

    def reload(self, force: bool = False) -> None:
        """The registry again (wrappers come and go), drawn with the last probe's rows (`force`: new rows now)."""
        self.entries = self._entries_source()
        p = Palette(self.app.theme_variables)
        now = self._clock()
        rows = [
            (str(e.pid), fleet_cells(i, self._row(e), e, e.pid == self.watching, p, now))
            for i, e in enumerate(self.entries, start=1)
        ]
        self.query_one("#fleet-table", WindowTable).show(rows, force=force)
        count = len(self.entries)
        headline = self.headline or (
            f" {count} wrappers are running — choose one to watch (enter or its number)"
            if not self.can_go_back
            else f" Fleet — {count} wrapper{'s' if count != 1 else ''} running on this machine"
        )
        title = Text(headline, style="bold")
        self.query_one("#fleet-title", Line).show(title, title.plain)
        troubled = [r for r in self.summaries.values() if r.trouble and r.pid in {e.pid for e in self.entries}]
        hint = "no wrapper is running any more; start one with `mcpwatch wrap -- …` or `mcpwatch demo`"
        if count:
            hint = "1…9 or enter: watch that wrapper" + ("; esc: back" if self.can_go_back else "")
            if self.query_one("#fleet-table", WindowTable).cut:
                hint += "; ← →: the other columns (pid, host, last warning)"
            if troubled:
                hint += " — needs a look: " + ", ".join(f"{r.name} ({r.trouble})" for r in troubled)
        self.query_one("#fleet-hint", Line).show(Text(hint), hint)

    def _probe_unless_probing(self) -> None:
        """A round still probing is let finish: cancelling it for the next, rounds slower than the period (a loaded
        machine, a slow wrapper) never filled the table."""
        if not self._probing:
            self._probing = True
            self._probe()

    def _known(self) -> dict[int, tuple[dict[str, Any], float]]:
        live = self._live_status() if self._live_status is not None else None
        return {self.watching: live} if live is not None and self.watching is not None else {}

    def _row(self, entry: WrapperEntry) -> FleetRow | None:
        """The last probe's row; the watched wrapper's, before any probe came back, from the live feed's status."""
        row = self.summaries.get(entry.pid)
        known = self._known().get(entry.pid)
        if known is not None and (row is None or (row.status_ts or 0) < known[1]):
            fresh = replace(fleet_row(entry, known[0], None, None), status_ts=known[1])
            if row is None:
                return fresh
            return replace(fresh, deadlines_5m=row.deadlines_5m, errors_5m=row.errors_5m, last_warning=row.last_warning)
        return row

    @work(group="fleet-probe", exit_on_error=False)
    async def _probe(self) -> None:
        try:
            entries = list(self.entries) or self._entries_source()
            rows = await probe_fleet(
                entries,
                self._clock(),
                client_factory=self._client_factory,
                known=self._known(),
                previous=self.summaries,
            )
            self.summaries = {r.pid: r for r in rows}
            self.reload(force=True)
        finally:
            self._probing = False

    # -- choosing --------------------------------------------------------------------------------------------

    def _choose(self, entry: WrapperEntry | None) -> None:
        if entry is not None:
            self._on_choose(entry)

    def action_watch(self) -> None:
        key = self.query_one("#fleet-table", WindowTable).selected_key
        self._choose(next((e for e in self.entries if str(e.pid) == key), None))

    def action_pick(self, number: int) -> None:
        if 1 <= number <= len(self.entries):
            self._choose(self.entries[number - 1])

    def action_hosts(self) -> None:
        """The servers the hosts' config files hold, wrapped or not (esc comes back here)."""
        from mcpwatch.console.screens.hosts import HostsScreen

        self.app.push_screen(HostsScreen())

    def action_back(self) -> None:
        if self.can_go_back:
            self.dismiss(None)

    @on(DataTable.RowSelected)
    def _selected(self, event: DataTable.RowSelected) -> None:
        event.stop()
        self.action_watch()
