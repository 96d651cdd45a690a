"""The Events view (`e`, or "Events" in the palette): what happened that an operator must not miss, newest first.

Upstream exits with their exit code and last stderr lines, respawns, budget changes and who made them, disabled
budgets, tiers that do not fit, spikes of late answers, and the wrapper's warnings (discarded frames, log losses).
Opening it marks them read: the header's unread count goes back to zero.
"""

from __future__ import annotations

from typing import ClassVar

from textual.app import ComposeResult
from textual.binding import Binding, BindingType

from mcpwatch.console.headless.panels.events import events_panel
from mcpwatch.console.headless.panels.header import top_bar
from mcpwatch.console.headless.session import WatchSession
from mcpwatch.console.screens.base import WatchScreen
from mcpwatch.console.widgets import KeyFooter, Line, ScrollPanel


class EventsScreen(WatchScreen):
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape,e", "app.pop_screen", "Back", id="events.back"),
    ]

    def __init__(self, session: WatchSession) -> None:
        super().__init__(session)
        total = session.model.view(session.now()).notable_total
        self.unread = max(0, total - session.events_seen)  # marked as new while this view is open
        session.events_seen = total

    def compose(self) -> ComposeResult:
        yield Line(id="topbar")
        yield ScrollPanel("Events", id="events")
        yield KeyFooter()

    def on_mount(self) -> None:
        self.query_one("#events", ScrollPanel).focus()
        self.refresh_view()

    def refresh_view(self) -> None:
        session = self.session
        if session.paused and self.query_one("#events", ScrollPanel).shown:
            return
        view = session.view()
        p = self.palette
        feed = session.status()
        theme = self.app.theme
        compact = self.compact_bar
        self.unread += max(0, view.notable_total - session.events_seen)
        session.events_seen = view.notable_total
        unread = self.unread
        self.query_one("#topbar", Line).show(
            lambda: top_bar(view.header, feed.label, feed.connected, session.paused, p, compact=compact),
            (theme, view.header, feed, session.paused, compact),
        )
        title = f"Events {len(view.notable)}" + (f" · {unread} new" if unread else "") + " · esc back"
        origin = session.model.origin_ts
        self.query_one("#events", ScrollPanel).show(
            lambda: events_panel(view.notable, origin, p, unread), (theme, view.notable, unread), title
        )
