"""One request in full: its timeline, arguments, result or partial result, tombstone and council models."""

from __future__ import annotations

from typing import ClassVar

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, VerticalScroll
from textual.widgets import Footer

from mcpwatch.console import render
from mcpwatch.console.screens.base import WatchScreen
from mcpwatch.console.session import WatchSession
from mcpwatch.console.widgets import Line, Panel


class RequestDetailScreen(WatchScreen):
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape", "app.pop_screen", "Back", id="detail.back"),
        Binding("c", "cancel_call", "Cancel call", id="detail.cancel_call"),
        Binding("h", "health_check", "Health check", id="detail.health_check", show=False),
    ]

    def __init__(self, session: WatchSession, request_id: str) -> None:
        super().__init__(session)
        self.request_id = request_id
        self._last_key: object = None
        self._was_in_flight: bool | None = None

    def compose(self) -> ComposeResult:
        yield Line(id="topbar")
        with VerticalScroll(id="detail-body"):
            with Horizontal(id="detail-top"):
                yield Panel("Request", id="summary", layout=True)
                yield Panel("Council models", id="detail-council", layout=True)
            with Horizontal(id="detail-io"):
                yield Panel("Arguments", id="arguments", layout=True)
                yield Panel("Result", id="result", layout=True)
            yield Panel("Timeline", id="timeline", layout=True)
        yield Footer()

    def on_mount(self) -> None:
        self.refresh_view()

    def selected_request(self) -> str | None:
        return self.request_id

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action == "cancel_call" and not self.session.model.is_in_flight(self.request_id):
            return False
        return super().check_action(action, parameters)

    def refresh_view(self) -> None:
        session = self.session
        if session.paused and self.query_one("#summary", Panel).shown:
            return
        p = self.palette
        now = session.now()
        origin = session.model.origin_ts
        detail = session.model.request_detail(self.request_id, now)
        header = session.model.view(now).header
        feed = session.status()
        theme = self.app.theme
        self.query_one("#topbar", Line).show(
            lambda: render.top_bar(header, feed.label, feed.connected, session.paused, p), (theme, header, feed)
        )
        in_flight = session.model.is_in_flight(self.request_id)
        if in_flight != self._was_in_flight:
            self._was_in_flight = in_flight
            self.refresh_bindings()  # "cancel" only while it runs
        if (theme, detail) == self._last_key:
            return
        self._last_key = None  # remembered once every panel shows it: a draw cut short is done again next tick
        if detail is None:
            gone = Text(
                f"request #{self.request_id} is no longer in the console's memory "
                f"(it keeps the latest {session.model.limits.requests} finished requests)",
                style=p.dim,
            )
            self.query_one("#summary", Panel).show(gone, title=f"Request #{self.request_id}")
            self._last_key = (theme, detail)
            return
        r = detail.request
        self.query_one("#summary", Panel).show(
            render.detail_summary(detail, origin, p), title=f"Request #{r.request_id} · {r.label}"
        )
        council = self.query_one("#detail-council", Panel)
        council.display = detail.council is not None
        if detail.council is not None:
            council.show(render.council_panel(detail.council, p), title=render.council_title(detail.council))
        args = render.pretty_json(detail.arguments) or "(no arguments recorded)"
        self.query_one("#arguments", Panel).show(Text(args, style="" if detail.arguments else p.dim))
        if detail.result_preview:
            result = Text(render.pretty_json(detail.result_preview))
            title = "Partial result" if r.partial else "Result"
        elif r.outcome is None:
            result, title = Text("still running…", style=p.dim), "Result"
        else:
            result, title = (
                Text(r.error or "(no result recorded)", style=p("status-error") if r.error else p.dim),
                "Result",
            )
        self.query_one("#result", Panel).show(result, title=title)
        timeline = render.timeline_panel(detail.timeline, detail.timeline_dropped, origin, r.started_mono, p)
        self.query_one("#timeline", Panel).show(timeline, title=f"Timeline ({len(detail.timeline)} entries)")
        self._last_key = (theme, detail)
