"""Several wrappers running: all of them in one list, each with a live summary; enter watches one."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any, ClassVar

from rich.text import Text
from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.screen import Screen
from textual.widgets import DataTable, Footer

from mcpwatch.console import format as fmt
from mcpwatch.console.render import Palette
from mcpwatch.console.widgets import Line, WindowTable
from mcpwatch.operator.client import OperatorClient, OperatorError
from mcpwatch.registry import WrapperEntry

# Numbers right-aligned under right-aligned headers; the upstream's command line takes what is left (it is the
# part that may be cut, at its end).
COLUMNS = [("name", 16), ("state", 12), ("in flight", 9), ("budget", 7), ("requests", 9), ("up", 7), ("pid", 8)]
COLUMNS += [("upstream", None)]
RIGHT_ALIGNED = frozenset({"in flight", "budget", "requests", "up", "pid"})
SUMMARY_EVERY_S = 2.0


class ChooseWrapperScreen(Screen[None]):
    BINDINGS: ClassVar[list[BindingType]] = [Binding("enter", "watch", "Watch", id="choose.watch")]

    def __init__(
        self,
        entries: Callable[[], list[WrapperEntry]],
        on_choose: Callable[[WrapperEntry], None],
        client_factory: Callable[[WrapperEntry], Any] | None = None,
    ) -> None:
        super().__init__()
        self._entries_source = entries
        self._on_choose = on_choose
        self._client_factory = client_factory or OperatorClient.for_entry
        self.entries: list[WrapperEntry] = []
        self.summaries: dict[int, dict[str, Any]] = {}

    def compose(self) -> ComposeResult:
        yield Line(id="choose-title")
        yield WindowTable(COLUMNS, id="wrappers", right_aligned=RIGHT_ALIGNED)
        yield Line(id="choose-hint", classes="hint", layout=True)
        yield Footer()

    def on_mount(self) -> None:
        self.query_one("#wrappers", WindowTable).focus()
        self.reload()
        self.set_interval(1.0, self.reload)
        self.set_interval(SUMMARY_EVERY_S, self._summarise)
        self._summarise()

    def reload(self) -> None:
        self.entries = self._entries_source()
        p = Palette(self.app.theme_variables)
        rows = [(str(e.pid), self._row(e, p)) for e in self.entries]
        self.query_one("#wrappers", WindowTable).show(rows)
        count = len(self.entries)
        title = Text(f" {count} wrappers are running — choose one to watch (enter)", style="bold")
        self.query_one("#choose-title", Line).show(title, title.plain)
        hint = self.query_one("#choose-hint", Line)
        hint.display = count == 0
        hint.show("no wrapper is running any more; start one with `mcpwatch wrap -- …` or `mcpwatch demo`", count)

    def _row(self, e: WrapperEntry, p: Palette) -> tuple[Text, ...]:
        s = self.summaries.get(e.pid)
        started = fmt.duration(time.time() - e.started_at) if e.started_at else "—"
        if s is None:
            state, in_flight, budget, requests = Text("…", style=p.dim), "", "", ""
        elif "error" in s:
            state, in_flight, budget, requests = Text("unreachable", style=p("status-error")), "", "", ""
        else:
            upstream = (s.get("wrapper") or {}).get("upstream") or {}
            value = upstream.get("state") or "?"
            colour = {"ready": "status-ok", "backoff": "status-warn", "closed": "status-error"}.get(value, "text-dim")
            state = Text(f"● {value}", style=p(colour))
            in_flight = str(len(s.get("in_flight") or ()))
            budget = fmt.seconds((s.get("deadline") or {}).get("budget_s"))
            requests = f"{(s.get('counters') or {}).get('requests', 0):,}"
        return (
            Text(fmt.clip(e.name, 16), style="bold"),
            state,
            Text(in_flight, justify="right"),
            Text(budget, justify="right"),
            Text(requests, justify="right"),
            Text(started, justify="right"),
            Text(str(e.pid), justify="right"),
            Text(e.upstream or "?", no_wrap=True, overflow="ellipsis"),
        )

    @work(exclusive=True, group="summaries", exit_on_error=False)
    async def _summarise(self) -> None:
        for entry in list(self.entries):
            try:
                async with self._client_factory(entry) as op:
                    self.summaries[entry.pid] = await op.status()
            except OperatorError as exc:
                self.summaries[entry.pid] = {"error": str(exc)}
        self.reload()

    def action_watch(self) -> None:
        key = self.query_one("#wrappers", WindowTable).selected_key
        entry = next((e for e in self.entries if str(e.pid) == key), None)
        if entry is not None:
            self._on_choose(entry)

    @on(DataTable.RowSelected)
    def _selected(self, event: DataTable.RowSelected) -> None:
        event.stop()
        self.action_watch()
