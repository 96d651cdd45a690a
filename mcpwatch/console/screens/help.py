"""`?`: every key, and what each panel means. Operator keys are listed only where they work (live mode)."""

from __future__ import annotations

from collections.abc import Collection
from typing import ClassVar

from rich.table import Table
from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import VerticalScroll
from textual.screen import ModalScreen

from mcpwatch.console.headless import board, request_filter, words
from mcpwatch.console.widgets import Line

VIEW_KEYS = [
    ("tab / shift+tab", "move between the tables and the lists (each list scrolls when focused)"),
    ("↑ ↓ / j k · pgup pgdn", "move the selection (the recent requests then hold still: ⏸ held, ↑ N new)"),
    ("g / home · G / end", "first row — recent requests follow the newest again · last row"),
    ("enter", "open the selected request: timeline, arguments, result, tombstone"),
    ("esc", "back (closes the filter, the detail screen or a dialog)"),
    ("/", "filter recent requests by tool, outcome or id"),
    ("s · click a header", "sort recent requests: ended, id, tool, outcome, took (again: reverse)"),
    ("e", "Events: upstream exits, respawns, budget changes, late-answer spikes, warnings"),
    ("T · M · F", "Trends per tool over time · council Models (live: disable one) · the Fleet of wrappers"),
    ("p", "pause the view (events are still recorded); p again resumes"),
    ("y · Y · x", "in a request's detail: copy as JSON · as Markdown (OSC 52) · export both to files"),
    ("ctrl+p", "command palette: every action, the themes, and Screenshot"),
    ("?", "this help"),
    ("q", "quit (asks first while watching a live wrapper)"),
]
OPERATOR_KEYS = [
    ("h", "health check now (pings the upstream, calls its health tool)"),
    ("m", "set the deadline margin (budget = host timeout − margin)"),
    ("t", "set the host's tools/call timeout"),
    ("d", "override the deadline budget (empty clears; 0 disables it, after asking again)"),
    ("c", "cancel the selected in-flight call (asks first)"),
]


class HelpScreen(ModalScreen[None]):
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape,question_mark,q", "dismiss(None)", "Close", id="help.close")
    ]

    def __init__(
        self,
        live: bool,
        *,
        mode_keys: tuple[str, list[tuple[str, str]]] | None = None,
        omit: Collection[str] = (),
        recording: bool = False,
    ) -> None:
        """`mode_keys`: (title, rows) of keys only this mode has (replay's); `omit`: view keys it does not have;
        `recording`: a replay (no operator actions, ever) rather than a console not yet watching a wrapper."""
        super().__init__(classes="dialog-screen")
        self.live = live
        self.recording = recording
        self.mode_keys = mode_keys
        self.omit = frozenset(omit)

    def compose(self) -> ComposeResult:
        with VerticalScroll(classes="dialog help"):
            yield Line(id="help-text", layout=True)

    def on_mount(self) -> None:
        self.query_one("#help-text", Line).show(self._content())

    def _content(self) -> Table:
        outer = Table.grid(padding=(0, 0))
        outer.add_column()
        outer.add_row(Text("mcpwatch console — keys", style="bold"))
        outer.add_row(self._keys([row for row in VIEW_KEYS if row[0] not in self.omit]))
        outer.add_row(Text(""))
        if "/" not in self.omit:
            outer.add_row(Text("Filter (/)", style="bold"))
            outer.add_row(self._keys(list(request_filter.SYNTAX)))
            outer.add_row(Text(""))
        if self.mode_keys is not None:
            title, rows = self.mode_keys
            outer.add_row(Text(title, style="bold"))
            outer.add_row(self._keys(rows))
            outer.add_row(Text(""))
        if self.live:
            outer.add_row(Text("Operator actions (change the running wrapper)", style="bold"))
            outer.add_row(self._keys(OPERATOR_KEYS))
        elif self.recording:
            outer.add_row(Text("Operator actions are not available here: this is a recording.", style="dim"))
        else:
            outer.add_row(Text("Operator actions (change the running wrapper)", style="bold"))
            outer.add_row(Text("available once a wrapper is being watched:", style="dim"))
            outer.add_row(self._keys(OPERATOR_KEYS))
        outer.add_row(Text(""))
        outer.add_row(Text("Panels", style="bold"))
        outer.add_row(self._keys(board.help_rows()))
        outer.add_row(Text(""))
        outer.add_row(Text("Symbols", style="bold"))
        outer.add_row(self._keys(words.LEGEND))
        outer.add_row(Text("\nesc closes", style="dim"))
        return outer

    @staticmethod
    def _keys(rows: list[tuple[str, str]]) -> Table:
        table = Table.grid(padding=(0, 2))
        table.add_column(style="bold", no_wrap=True)
        table.add_column()
        for key, what in rows:
            table.add_row(key, what)
        return table
