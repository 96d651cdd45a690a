"""Trends: per tool, calls, deadlines and errors per minute and p50/p95 latency, with config and restart markers.

Thin: the log is read into a `TrendLog` off the UI thread (all of it once, then only what is new), and each frame
is `TrendLog.trends()` + `trends_text()`. In replay the window ends at the replay position.
"""

from __future__ import annotations

import threading
import time
from typing import Any, ClassVar

from rich.text import Text
from textual import work
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import VerticalScroll
from textual.widgets import Footer

from mcpwatch.console.headless.log_scope import LogScope, NoLog, scope_of
from mcpwatch.console.headless.session import WatchSession
from mcpwatch.console.headless.trends import WINDOW_ORDER, TrendLog, trend_log
from mcpwatch.console.headless.trends_view import trends_text
from mcpwatch.console.screens.base import WatchScreen
from mcpwatch.console.widgets import KeyFooter, Line
from mcpwatch.store.db import LogError
from mcpwatch.store.reader import EventReader

LIVE_READ_EVERY_S = 2.0  # how often a live session's log is read for what is new


class TrendsScreen(WatchScreen):
    """`1` 15 min, `2` 1 h, `3` the whole session (`w` cycles); esc goes back."""

    DEFAULT_CSS = """
    TrendsScreen #trends-scroll { height: 1fr; padding: 0 1; }
    TrendsScreen #trends-bar { height: 1; background: $panel; }
    """
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape", "app.pop_screen", "Back", id="trends.back"),
        Binding("1", "window('15 min')", "15 min", id="trends.15m"),
        Binding("2", "window('1 h')", "1 h", id="trends.1h"),
        Binding("3", "window('session')", "Session", id="trends.session"),
        Binding("w", "cycle_window", "Next window", id="trends.cycle", show=False),
    ]

    def __init__(self, session: WatchSession, *, window: str = "15 min") -> None:
        super().__init__(session)
        self.window = window
        self.scope: LogScope | None = None
        self.trend_log: TrendLog | None = None
        self.problem: str | None = None
        self.reading: int | None = 0  # rows read so far while the first read runs; None once done
        self.drawn_key: tuple[Any, ...] | None = None
        self.draw_ms: float | None = None  # how long the last frame's fold and text took
        self._read_lock = threading.Lock()
        self._last_read = 0.0

    def compose(self) -> ComposeResult:
        yield Line(id="trends-bar")
        with VerticalScroll(id="trends-scroll"):
            yield Line(id="trends-body", layout=True)
        yield KeyFooter()

    def on_mount(self) -> None:
        self._read_log()
        self.refresh_view()

    # -- reading -----------------------------------------------------------------------------------------

    @work(thread=True, exclusive=True, group="trends-read", exit_on_error=False)
    def _read_log(self) -> None:
        """Resolve the log and read what is new (everything, the first time) into the shared `TrendLog`."""
        if not self._read_lock.acquire(blocking=False):
            return
        try:
            scope = self._scope()
            if scope is None:
                return
            log = trend_log(str(scope.path), scope.session_id)
            self.trend_log = log
            first = log.rows_read == 0

            def progress(rows: int) -> None:
                if first:
                    self.reading = rows

            with EventReader(scope.path) as reader:
                log.update(reader, progress=progress)
            self.reading = None
            self.problem = None
        except (LogError, OSError) as exc:
            self.problem = f"cannot read the log: {exc}"
        finally:
            self._last_read = time.monotonic()
            self._read_lock.release()

    def _scope(self) -> LogScope | None:
        try:
            scope = scope_of(self.session.feed, clock=getattr(self.app, "clock", None))
        except NoLog as exc:
            self.problem = str(exc)
            return None
        self.scope = scope
        return scope

    # -- drawing -----------------------------------------------------------------------------------------

    def refresh_view(self) -> None:
        live = self.session.controls is not None
        if live and self.reading is None and time.monotonic() - self._last_read >= LIVE_READ_EVERY_S:
            self._read_log()
        if not live or self.scope is None:
            self._scope_quietly()
        self._draw()

    def _scope_quietly(self) -> None:
        try:
            self.scope = scope_of(self.session.feed, clock=getattr(self.app, "clock", None))
        except NoLog:
            pass

    def _bar(self, text: str) -> Text:
        p = self.palette
        bar = Text(" Trends ", style="bold")
        bar.append(f" {self.session.heading} ", style=p.dim)
        for index, name in enumerate(WINDOW_ORDER, start=1):
            style = "reverse bold" if name == self.window else p.dim
            bar.append(f" {index} {name} ", style=style)
        bar.append(f"  {text}", style=p.dim)
        return bar

    def _draw(self) -> None:
        if not self.is_mounted or not self.query(Footer):
            return  # not composed yet, or being torn down
        bar = self.query_one("#trends-bar", Line)
        body = self.query_one("#trends-body", Line)
        log, scope = self.trend_log, self.scope
        if self.problem and (log is None or scope is None):
            bar.show(self._bar(""), key=("problem", self.window))
            body.show(Text(f"Trends are read from the log: {self.problem}"), key=("problem", self.problem))
            return
        if log is None or scope is None or self.reading is not None:
            rows = self.reading or 0
            bar.show(self._bar("reading the log…"), key=("reading", self.window))
            body.show(Text(f"reading the log… {rows:,} rows"), key=("reading", rows))
            return
        end_ts = scope.end_ts
        width = self.size.width or self.app.size.width or 120
        key = (self.window, int(end_ts), log.rows_read, width, self.app.theme)
        if key == self.drawn_key:
            return
        started = time.perf_counter()
        trends = log.trends(self.window, end_ts, session_start_ts=scope.start_ts)
        text = trends_text(trends, width - 2, self.palette)
        self.draw_ms = (time.perf_counter() - started) * 1000
        self.drawn_key = key
        bar.show(self._bar(f"{log.rows_read:,} calls, changes and restarts read"), key=(self.window, log.rows_read))
        body.show(text, key=key)

    # -- keys --------------------------------------------------------------------------------------------

    def action_window(self, name: str) -> None:
        if name in WINDOW_ORDER:
            self.window = name
            self.refresh_view()

    def action_cycle_window(self) -> None:
        index = WINDOW_ORDER.index(self.window)
        self.action_window(WINDOW_ORDER[(index + 1) % len(WINDOW_ORDER)])
