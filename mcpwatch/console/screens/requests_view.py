"""The Recent requests box of the main screen: filter, sort order, the follow/held state and the latency line.

Kept apart from `MainScreen` so the screen stays a layout; it renders into the screen's own widgets.
"""

from __future__ import annotations

from rich.text import Text

from mcpwatch.console.headless import format as fmt
from mcpwatch.console.headless import render_base, request_filter
from mcpwatch.console.headless.panels.requests import SORT_ORDER, request_note, request_row, sort_requests
from mcpwatch.console.headless.views import ViewState
from mcpwatch.console.screens import main_parts as parts
from mcpwatch.console.screens.base import WatchScreen
from mcpwatch.console.widgets import Line, WindowTable

REQUEST_ROWS = 200  # rows in the requests table (the model keeps more; the filter reaches all of them)
TOOL_WIDTH_MIN = 12
TOOL_WIDTH_MAX = 34


def fit_tool_width(table: WindowTable, names: list[str], *, note: bool) -> int:
    """The tool column: as wide as the longest name (within bounds), and at most a quarter of the table when the
    last column has something to say."""
    longest = max((len(n) for n in names), default=TOOL_WIDTH_MIN)
    cap = TOOL_WIDTH_MAX if not note else max(TOOL_WIDTH_MIN, min(TOOL_WIDTH_MAX, (table.size.width or 100) // 4))
    return max(TOOL_WIDTH_MIN, min(cap, longest + 2))


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
        self.sort_by = SORT_ORDER[(SORT_ORDER.index(self.sort_by) + 1) % len(SORT_ORDER)]
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
        rows = sort_requests(rows, self.sort_by, self.sort_reverse)
        table = screen.query_one("#requests", WindowTable)
        # A window a few screens deep, growing as the selection moves down (up to REQUEST_ROWS).
        height = max(10, table.size.height)
        shown = rows[: min(REQUEST_ROWS, max(3 * height, table.cursor_row + 2 * height))]
        # The tool column takes the room the note column does not need: names are cut (with …) only when
        # some request has a note to show.
        has_notes = any(request_note(r) for r in shown)
        tool_width = fit_tool_width(table, [r.label for r in shown], note=has_notes)
        if table.set_width("tool", tool_width):
            now = True
        width = table.free_width
        table.show([(r.request_id, request_row(r, origin, p, width, tool_width)) for r in shown], force=now)
        title = "Recent requests"
        if problem:  # never "0 of N" for a filter that was not understood: say so where the count would be
            title += f" · filter {self.filter_text!r} not understood (? for the syntax)"
        elif self.filter_text:
            title += f" matching {self.filter_text!r}: {len(rows):,} of {len(view.requests):,}"
        elif len(rows) > REQUEST_ROWS:
            title += f" · newest {REQUEST_ROWS} of {len(rows):,} (/ to filter)"
        if self.sort_by != "ended" or self.sort_reverse:
            title += f" · by {self.sort_by}{' ↑' if self.sort_reverse else ''}"
        if table.following:
            title += " · ● following newest"
        else:
            title += " · ⏸ held"
            if table.new_above:
                title += f" · ↑ {table.new_above:,} new (g)"
        parts.title(screen, "#requests-box", title)
        if problem:
            text = f"filter: {problem}"
        elif not rows:
            text = f"nothing matches {self.filter_text!r}" if self.filter_text else "no finished requests yet"
        else:
            text = ""
        parts.hint(screen, "#requests-empty", not rows, text)
        latency = screen.query_one("#latency", Line)
        width = max(10, latency.size.width - 34)
        if self.filter_text:  # the sparkline shows what the table shows
            durations = [r.duration_s for r in rows if r.method == "tools/call" and r.duration_s is not None]
            recent = tuple(reversed(durations[:width]))
        else:
            recent = view.latencies[-width:]
        what = "matching calls" if self.filter_text else "calls"

        def make() -> Text:
            if not recent:
                return Text(f"latency: no finished tool {what} yet", style=p.dim)
            return Text.assemble(
                ("latency ", p.dim),
                (render_base.sparkline(recent, width), p("gauge-fill")),
                (f"  last {len(recent)} {what}, max {fmt.duration(max(recent))}", p.dim),
            )

        latency.show(make, (screen.app.theme, recent, width, what))
