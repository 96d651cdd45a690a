"""Hosts: the MCP servers each host's config file holds, wrapped or not, with the host's timeout and the budget
mcpwatch gives each (the data of `mcpwatch hosts scan`). `r` scans again, esc goes back."""

from __future__ import annotations

from collections.abc import Callable
from typing import ClassVar

from rich.text import Text
from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.screen import Screen
from textual.widgets import DataTable

from mcpwatch.console.headless.hosts_view import COLUMNS, HostsView, load
from mcpwatch.console.headless.render_base import Palette
from mcpwatch.console.widgets import KeyFooter, Line, WindowTable


class HostsScreen(Screen[None]):
    DEFAULT_CSS = """
    HostsScreen #hosts-title { height: 1; background: $panel; }
    HostsScreen #hosts-hint { height: auto; padding: 0 1; color: $text-muted; }
    HostsScreen #hosts-table { height: 1fr; }
    """
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape", "back", "Back", id="hosts.back"),
        Binding("r", "rescan", "Rescan", id="hosts.rescan"),
    ]

    def __init__(self, loader: Callable[[], HostsView] = load) -> None:
        super().__init__()
        self._loader = loader
        self.view: HostsView | None = None

    def compose(self) -> ComposeResult:
        yield Line(id="hosts-title")
        yield WindowTable(COLUMNS, id="hosts-table", sideways=30)
        yield Line(id="hosts-hint", layout=True)
        yield KeyFooter()

    def on_mount(self) -> None:
        title = Text(" Hosts — the MCP servers in your hosts' config files", style="bold")
        self.query_one("#hosts-title", Line).show(title, title.plain)
        self.query_one("#hosts-hint", Line).show(Text("reading the hosts' config files…"), "reading")
        self.query_one("#hosts-table", WindowTable).focus()
        self.action_rescan()

    @work(thread=True, exclusive=True, group="hosts-scan", exit_on_error=False)
    def action_rescan(self) -> None:
        view = self._loader()
        self.app.call_from_thread(self.show, view)

    def show(self, view: HostsView) -> None:
        self.view = view
        p = Palette(self.app.theme_variables)
        rows = []
        for row in view.rows:
            style = p("status-warn") if row.trouble else (p("status-ok") if row.wrapped else "")
            cells = tuple(
                Text(c, style=style if i == 2 or (row.trouble and i == 3) else "") for i, c in enumerate(row.cells)
            )
            rows.append((row.key, cells))
        self.query_one("#hosts-table", WindowTable).show(rows, force=True)
        lines = [view.summary]
        lines += [f"budget disagrees — {r.cells[0]} {r.cells[1]}: {r.trouble}" for r in view.rows if r.trouble]
        lines += [f"unreadable — {problem}" for problem in view.problems]
        lines.append("yes*: wrapped without --host-config (the budget does not follow the host).  r: rescan; esc: back")
        hint = "\n".join(lines)
        self.query_one("#hosts-hint", Line).show(Text(hint), hint)

    @on(DataTable.RowSelected)
    def _selected(self, event: DataTable.RowSelected) -> None:
        """The whole row, uncut, and the command that wraps or unwraps that server."""
        event.stop()
        key = self.query_one("#hosts-table", WindowTable).selected_key
        row = next((r for r in self.view.rows if r.key == key), None) if self.view else None
        if row is None:
            return
        host, server, _, budget, timeout, file = row.cells
        verb = "unwrap" if row.wrapped else "wrap"
        text = (
            f"{host} {server}: budget {budget}; host timeout {timeout}; {file}. "
            f"{'Un' if row.wrapped else ''}wrap it with: mcpwatch hosts {verb} {server} --host {row.host}"
        )
        self.notify(text, title=server, timeout=20, markup=False)

    def action_back(self) -> None:
        self.dismiss(None)
