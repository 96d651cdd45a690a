"""Models: per council model, latency and how its answers ended; live, `x` disables or re-enables one through the
council's own admin tools (after a confirmation), via the wrapper's operator endpoint, which logs it.

Thin: the numbers come from `ModelLog` (read off the UI thread), which models are enabled from the council.
"""

from __future__ import annotations

import threading
import time
from typing import Any, ClassVar

from rich.text import Text
from textual import work
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.widgets import Footer

from mcpwatch.console.headless import format as fmt
from mcpwatch.console.headless.council_models import (
    DISABLE_TOOL,
    ENABLE_TOOL,
    LIST_TOOL,
    SORTS,
    STATUSES,
    ModelLog,
    ModelStats,
    enabled_from_list,
    model_log,
    sort_stats,
)
from mcpwatch.console.headless.log_scope import LogScope, NoLog, scope_of
from mcpwatch.console.headless.render_base import Palette
from mcpwatch.console.headless.session import WatchSession
from mcpwatch.console.screens.base import WatchScreen
from mcpwatch.console.screens.modals import Confirm
from mcpwatch.console.widgets import KeyFooter, Line, WindowTable
from mcpwatch.operator import OperatorError
from mcpwatch.store.db import LogError
from mcpwatch.store.reader import EventReader

# p50 and p95 come before the counts by status: at 80 columns they still show; the rest scroll sideways (← →).
COLUMNS = [
    ("model", 28),
    ("enabled", 8),
    ("answers", 7),
    ("p50", 8),
    ("p95", 8),
    ("ok", 6),
    ("timeout", 7),
    ("rate_limited", 12),
    ("auth_error", 10),
    ("error", 6),
    ("last failure", None),
]
READ_EVERY_S = 2.0
MODEL_ACTIONS = frozenset({"toggle_model", "reload_models"})


def model_row(stats: ModelStats, p: Palette, clock_of: Any) -> tuple[Text, ...]:
    enabled: dict[bool | None, Text] = {
        True: Text("yes", style=p("status-ok")),
        False: Text("DISABLED", style=p("status-error", "bold")),
    }
    colours = {"ok": "status-ok", "timeout": "status-timeout", "rate_limited": "status-warn"}
    cells = [Text(stats.model), enabled.get(stats.enabled, Text("?", style=p.dim)), Text(f"{stats.answers:,}")]
    cells += [Text(fmt.millis(stats.p50_ms)), Text(fmt.millis(stats.p95_ms))]
    for status in STATUSES:
        count = stats.counts.get(status, 0)
        cells.append(Text(f"{count:,}", style=p(colours.get(status, "status-error")) if count else p.dim))
    failure = stats.last_failure
    if failure is None:
        cells.append(Text("none", style=p.dim))
    else:
        where = f" #{failure.request_id}" if failure.request_id else ""
        cells.append(Text(f"{failure.status} {clock_of(failure.ts)}{where}", style=p("status-error")))
    return tuple(cells)


class ModelsScreen(WatchScreen):
    """`s` next sort column, `r` reverse; live: `x` disable/enable the selected model, `l` ask the council again."""

    DEFAULT_CSS = """
    ModelsScreen #models-bar { height: 1; background: $panel; }
    ModelsScreen #models-note { height: auto; padding: 0 1; color: $text-muted; }
    ModelsScreen #models-table { height: 1fr; }
    """
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape", "app.pop_screen", "Back", id="models.back"),
        Binding("s", "next_sort", "Sort", id="models.sort"),
        Binding("r", "reverse_sort", "Reverse", id="models.reverse"),
        Binding("x", "toggle_model", "Disable/enable", id="models.toggle"),
        Binding("l", "reload_models", "Ask the council", id="models.reload", show=False),
    ]

    def __init__(self, session: WatchSession) -> None:
        super().__init__(session)
        self.sort = "model"
        self.reverse = False
        self.scope: LogScope | None = None
        self.model_log: ModelLog | None = None
        self.enabled: dict[str, bool] | None = None  # from the council (live)
        self.note = ""
        self.problem: str | None = None
        self.ready = False
        self.shown: list[ModelStats] = []
        self._read_lock = threading.Lock()
        self._last_read = 0.0

    def compose(self) -> ComposeResult:
        yield Line(id="models-bar")
        yield WindowTable(COLUMNS, id="models-table", sideways=24, pinned=1)
        yield Line(id="models-note", layout=True)
        yield KeyFooter()

    def on_mount(self) -> None:
        self._read_log()
        if self.session.controls is not None:
            self.action_reload_models()
        self.refresh_view()

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action in MODEL_ACTIONS and self.session.controls is None:
            return False
        return super().check_action(action, parameters)

    # -- reading -----------------------------------------------------------------------------------------

    def _scope(self) -> LogScope | None:
        try:
            self.scope = scope_of(self.session.feed, clock=getattr(self.app, "clock", None))
        except NoLog as exc:
            self.problem = str(exc)
            return None
        return self.scope

    @work(thread=True, exclusive=True, group="models-read", exit_on_error=False)
    def _read_log(self) -> None:
        if not self._read_lock.acquire(blocking=False):
            return
        try:
            scope = self._scope()
            if scope is None:
                return
            log = model_log(str(scope.path), scope.session_id)
            with EventReader(scope.path) as reader:
                log.update(reader)
            self.model_log = log
            self.problem = None
            self.ready = True
        except (LogError, OSError) as exc:
            self.problem = f"cannot read the log: {exc}"
        finally:
            self._last_read = time.monotonic()
            self._read_lock.release()

    @work(group="models-council", exclusive=True, exit_on_error=False)
    async def action_reload_models(self) -> None:
        """Ask the council which models it has and which are enabled."""
        controls = self.session.controls
        call = getattr(controls, "call_upstream", None)
        if call is None:
            return
        try:
            answer = await call(LIST_TOOL, {})
        except OperatorError as exc:
            self.note = f"could not ask the council which models are enabled: {exc}"
            return
        if not answer.get("ok"):
            self.note = f"the upstream did not list its models ({answer.get('error') or 'no council here?'})"
            return
        self.enabled = enabled_from_list(answer.get("result"))
        self.note = ""
        self.refresh_view()

    # -- drawing -----------------------------------------------------------------------------------------

    def refresh_view(self) -> None:
        live = self.session.controls is not None
        if live and self.ready and time.monotonic() - self._last_read >= READ_EVERY_S:
            self._read_log()
        if not live:
            self._scope_quietly()
        self._draw()

    def _scope_quietly(self) -> None:
        try:
            self.scope = scope_of(self.session.feed, clock=getattr(self.app, "clock", None))
        except NoLog:
            pass

    def _draw(self) -> None:
        if not self.is_mounted or not self.query(Footer):
            return  # not composed yet, or being torn down
        p = self.palette
        bar = Text(" Models ", style="bold")
        bar.append(f" {self.session.heading} ", style=p.dim)
        arrow = "↑" if self.reverse else "↓"
        bar.append(f" sorted by {self.sort} {arrow}", style=p.dim)
        self.query_one("#models-bar", Line).show(bar, key=(self.session.heading, self.sort, self.reverse))
        note = self.query_one("#models-note", Line)
        table = self.query_one("#models-table", WindowTable)
        log, scope = self.model_log, self.scope
        if log is None or scope is None:
            text = f"Models are read from the log: {self.problem}" if self.problem else "reading the log…"
            note.show(Text(text), key=("waiting", text))
            return
        stats = sort_stats(log.stats(scope.end_ts, enabled=self.enabled), self.sort, reverse=self.reverse)
        self.shown = stats
        table.show([(s.model, model_row(s, p, _clock)) for s in stats])
        lines = []
        if not stats:
            lines.append("no council model has answered in this session yet")
        if self.note:
            lines.append(self.note)
        if table.cut:
            lines.append("← → scroll to the other columns (counts by status, last failure)")
        if self.session.controls is not None:
            lines.append("x disables or re-enables the selected model (the council's own admin tools; asks first)")
        note.show(Text("\n".join(lines), style=p.dim), key=tuple(lines))

    # -- keys --------------------------------------------------------------------------------------------

    def action_next_sort(self) -> None:
        self.sort = SORTS[(SORTS.index(self.sort) + 1) % len(SORTS)]
        self._draw()

    def action_reverse_sort(self) -> None:
        self.reverse = not self.reverse
        self._draw()

    def selected_model(self) -> ModelStats | None:
        key = self.query_one("#models-table", WindowTable).selected_key
        return next((s for s in self.shown if s.model == key), None)

    def action_toggle_model(self) -> None:
        if self.session.controls is None:
            return
        chosen = self.selected_model()
        if chosen is None:
            self.notify("select a model first", severity="warning", timeout=3)
            return
        disable = chosen.enabled is not False
        verb = "Disable" if disable else "Enable"
        consequence = (
            "consult_council stops asking it from the next run (runs in flight keep it). The council keeps at "
            "least one model enabled."
            if disable
            else "consult_council asks it again from the next run."
        )

        def answered(yes: bool | None) -> None:
            if yes:
                self._switch(chosen.model, disable)

        self.app.push_screen(
            Confirm(
                f"{verb} {chosen.model}?",
                f"{verb} {chosen.model} in the council behind this wrapper.\n{consequence}\n"
                "The change is logged as an operator action.",
                yes=verb,
            ),
            answered,
        )

    @work(group="operator", exit_on_error=False)
    async def _switch(self, model: str, disable: bool) -> None:
        controls = self.session.controls
        call = getattr(controls, "call_upstream", None)
        if call is None:
            return
        tool = DISABLE_TOOL if disable else ENABLE_TOOL
        try:
            answer = await call(tool, {"model": model})
        except OperatorError as exc:
            self._report(exc, f"{tool} {model}")
            return
        if not answer.get("ok"):
            self.notify(f"{tool} {model} failed: {answer.get('error')}", severity="error", timeout=8)
            return
        listed = enabled_from_list(answer.get("result"))
        if listed:
            self.enabled = listed
        self.notify(f"{model} {'disabled' if disable else 'enabled'}", timeout=4)
        self._read_log()
        self._draw()


def _clock(ts: float) -> str:
    return time.strftime("%H:%M:%S", time.localtime(ts))
