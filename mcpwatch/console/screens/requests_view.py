"""The Recent requests box of the main screen: filter, sort order, the follow/held state and the latency line.

Kept apart from `MainScreen` so the screen stays a layout; it places into the screen's own widgets what the
requests panel (`console/headless/panels/requests.py`) says and draws.
"""

from __future__ import annotations

from mcpwatch.console.headless import request_filter
from mcpwatch.console.headless.panels import requests
from mcpwatch.console.headless.render_base import fit_tool_width
from mcpwatch.console.headless.views import ViewState
from mcpwatch.console.screens import main_parts as parts
from mcpwatch.console.screens.base import WatchScreen
from mcpwatch.console.widgets import Line, WindowTable


class RequestsView:
    def __init__(self, screen: WatchScreen) -> None:
        self.screen = screen
        self.filter_text = ""
        self.sort_by = "ended"
        self.sort_reverse = False

    def sort(self, column: str) -> None:
        """Sort by a column; the same column again reverses the order."""
        self.sort_reverse = not self.sort_reverse if column == self.sort_by else False
        self.sort_by = column

    def next_sort(self) -> str:
        self.sort_reverse = False
        order = requests.SORT_ORDER
        self.sort_by = order[(order.index(self.sort_by) + 1) % len(order)]
        return self.sort_by

    def render(self, view: ViewState, origin: float | None, *, now: bool = False) -> None:
        """The table (filtered, sorted, a window a few screens deep), its title, hint and latency line."""
        screen = self.screen
        p = screen.palette
        problem = ""
        try:
            rows = request_filter.filter_requests(view.requests, self.filter_text)
        except request_filter.FilterError as exc:
            rows, problem = (), str(exc)
        rows = requests.sort_requests(rows, self.sort_by, self.sort_reverse)
        table = screen.query_one("#requests", WindowTable)
        # A window a few screens deep, growing as the selection moves down (up to REQUEST_ROWS).
        height = max(10, table.size.height)
        shown = rows[: min(requests.REQUEST_ROWS, max(3 * height, table.cursor_row + 2 * height))]
        # The tool column takes the room the note column does not need: names are cut (with …) only when
        # some request has a note to show.
        has_notes = any(requests.request_note(r) for r in shown)
        tool_width = fit_tool_width([r.label for r in shown], table.size.width, note=has_notes)
        if table.set_width("tool", tool_width):
            now = True
        width = table.free_width
        table.show_built(
            (tuple(shown), origin, screen.app.theme, width, tool_width),
            lambda: [(r.request_id, requests.request_row(r, origin, p, width, tool_width)) for r in shown],
            force=now,
        )
        listing = requests.Listing(
            total=len(view.requests),
            matched=len(rows),
            filter_text=self.filter_text,
            problem=problem,
            sort_by=self.sort_by,
            sort_reverse=self.sort_reverse,
            following=table.following,
            new_above=table.new_above,
        )
        parts.title(screen, "#requests-box", requests.requests_title(listing))
        hint = requests.requests_hint(listing)
        parts.hint(screen, "#requests-empty", bool(hint), hint)
        latency = screen.query_one("#latency", Line)
        points_width = requests.latency_width(latency.size.width)
        filtered = bool(self.filter_text)
        points = requests.latency_points(rows, view.latencies, filtered, points_width)
        latency.show(
            lambda: requests.latency_line(points, points_width, filtered, p),
            (screen.app.theme, points, points_width, filtered),
        )
