"""One request in full: its timeline, arguments, result or partial result, tombstone and council models."""

from __future__ import annotations

from typing import ClassVar

from rich.console import Group, RenderableType
from rich.text import Text
from textual import events
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, VerticalScroll

from mcpwatch.console.headless import render_detail
from mcpwatch.console.headless.late_text import late_part
from mcpwatch.console.headless.panels.council import council_panel, council_title
from mcpwatch.console.headless.panels.header import top_bar
from mcpwatch.console.headless.session import WatchSession
from mcpwatch.console.screens.base import NARROW, SHORT, WatchScreen
from mcpwatch.console.widgets import KeyFooter, Line, Panel

# Outcomes where mcpwatch itself answered the host (the call was cut): what it sent is the call's result.
ANSWERED_BY_MCPWATCH = frozenset({"deadline", "cancelled", "upstream_lost"})


def result_title(outcome: str | None, partial: bool) -> str:
    """The result panel's title: says whose answer it is when mcpwatch cut the call."""
    if outcome in ANSWERED_BY_MCPWATCH:
        return "Partial result sent to the host" if partial else "Result sent to the host"
    if outcome == "tool_error":
        return "Result (tool error)"
    return "Partial result" if partial else "Result"


class RequestDetailScreen(WatchScreen):
    """Wide: the request and its council side by side, arguments and result, then the timeline. On a narrow or
    short terminal everything is one column, in the order it is read: the request, its timeline, the council,
    the result, the arguments (the body scrolls)."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape", "app.pop_screen", "Back", id="detail.back"),
        Binding("c", "cancel_call", "Cancel call", id="detail.cancel_call"),
        Binding("h", "health_check", "Health check", id="detail.health_check", show=False),
        Binding("y", "copy('json')", "Copy JSON", id="detail.copy"),
        Binding("Y", "copy('markdown')", "Copy Markdown", id="detail.copy_markdown", show=False),
        Binding("x", "export", "Export", id="detail.export"),
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
                yield Panel("Council models", id="detail-council", classes="council", layout=True)
            with Horizontal(id="detail-io"):
                yield Panel("Arguments", id="arguments", layout=True)
                yield Panel("Result", id="result", layout=True)
            yield Panel("Timeline", id="timeline", layout=True)
            # The council again, for the one-column layout (where it comes after the timeline); CSS shows one.
            yield Panel("Council models", id="detail-council-below", classes="council", layout=True)
        yield KeyFooter()

    def on_mount(self) -> None:
        self._arrange(self.size.width, self.size.height)
        self.refresh_view()

    def on_resize(self, event: events.Resize) -> None:
        super().on_resize(event)
        self._arrange(event.size.width, event.size.height)

    def _arrange(self, width: int, height: int) -> None:
        """One column on a narrow or short terminal: the timeline right after the request (not under the
        arguments and result, off screen), and the result before the arguments."""
        ios = self.query("#detail-io")
        if not width or not ios:
            return  # a resize before the panels are composed: on_mount arranges them
        one_column = width < NARROW or height < SHORT
        body = self.query_one("#detail-body")
        io = ios.first()
        timeline = self.query_one("#timeline", Panel)
        below = self.query_one("#detail-council-below", Panel)
        if one_column and body.children.index(timeline) > body.children.index(io):
            body.move_child(timeline, before=io)
            body.move_child(below, before=io)
            io.move_child(self.query_one("#result"), before=self.query_one("#arguments"))
        elif not one_column and body.children.index(timeline) < body.children.index(io):
            body.move_child(timeline, after=io)
            body.move_child(below, after=timeline)
            io.move_child(self.query_one("#arguments"), before=self.query_one("#result"))

    def selected_request(self) -> str | None:
        return self.request_id

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action == "cancel_call" and not self.session.model.is_in_flight(self.request_id):
            return False
        return super().check_action(action, parameters)

    def _record(self) -> dict[str, object] | None:
        from mcpwatch.console.headless import export

        detail = self.session.model.request_detail(self.request_id, self.session.now())
        if detail is None:
            self.notify(f"request #{self.request_id} is no longer in memory", severity="warning")
            return None
        return export.request_record(detail, self.session.model.session_id)

    def action_copy(self, form: str = "json") -> None:
        """The request (id, arguments, result or partial result, timeline, replay command) to the clipboard."""
        from mcpwatch.console.headless import export

        record = self._record()
        if record is None:
            return
        text = export.as_json(record) if form == "json" else export.as_markdown(record)
        if len(text.encode("utf-8")) > export.OSC52_MAX:
            self.notify("too large for the clipboard: x exports it to a file instead", severity="warning")
            return
        self.app.copy_to_clipboard(text)
        self.notify(
            f"#{self.request_id} copied as {form.upper() if form == 'json' else 'Markdown'} "
            "(terminals without OSC 52 clipboard support ignore this; x writes files)",
            timeout=5,
        )

    def action_export(self) -> None:
        """The request as JSON and as Markdown files (private, in mcpwatch's exports folder)."""
        from mcpwatch.console.headless import export

        record = self._record()
        if record is None:
            return
        try:
            session_id = str(record.get("session_id") or "")
            json_path = export.write_export(export.as_json(record), self.request_id, ".json", session_id=session_id)
            md_path = export.write_export(export.as_markdown(record), self.request_id, ".md", session_id=session_id)
        except OSError as exc:
            self.notify(f"export failed: {exc.strerror or exc}", severity="error")
            return
        self.notify(f"exported #{self.request_id}:\n{json_path}\n{md_path}", timeout=10)

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
        compact = self.compact_bar
        self.query_one("#topbar", Line).show(
            lambda: top_bar(header, feed.label, feed.connected, session.paused, p, compact=compact),
            (theme, header, feed, compact),
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
            render_detail.detail_summary(detail, origin, p), title=f"Request #{r.request_id} · {r.label}"
        )
        for council in self.query(".council").results(Panel):
            council.set_class(detail.council is None, "-empty")
            if detail.council is not None:
                council.show(council_panel(detail.council, p), title=council_title(detail.council))
        args = render_detail.pretty_json(detail.arguments) or "(no arguments recorded)"
        self.query_one("#arguments", Panel).show(Text(args, style="" if detail.arguments else p.dim))
        result: RenderableType
        if detail.result_preview:
            result = render_detail.result_panel(detail.result_preview, p)
            title = result_title(r.outcome, r.partial)
        elif detail.unfinished:
            result, title = Text("no answer: the session ended while it ran", style=p("status-warn")), "Result"
        elif r.outcome is None:
            result, title = Text("still running…", style=p.dim), "Result"
        else:
            result, title = (
                Text(r.error or "(no result recorded)", style=p("status-error") if r.error else p.dim),
                "Result",
            )
        if detail.late is not None:  # what the cut call said after all, or where a reused answer came from
            result = Group(result, late_part(detail.late, p))
            title += " · finished late" if detail.late.from_request_id is None else " · reused late result"
        self.query_one("#result", Panel).show(result, title=title)
        timeline = render_detail.timeline_panel(detail.timeline, detail.timeline_dropped, origin, r.started_mono, p)
        self.query_one("#timeline", Panel).show(timeline, title=f"Timeline ({len(detail.timeline)} entries)")
        self._last_key = (theme, detail)
