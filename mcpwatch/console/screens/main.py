"""The main screen: one wrapper at a glance. It takes a `WatchSession`, so replay shows it unchanged."""

from __future__ import annotations

from typing import ClassVar

from textual import on
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, Vertical
from textual.widgets import DataTable, Footer, Input

from mcpwatch.console import format as fmt
from mcpwatch.console import render
from mcpwatch.console.model import ViewState, filter_requests
from mcpwatch.console.screens.base import WatchScreen
from mcpwatch.console.session import WatchSession
from mcpwatch.console.widgets import Line, Panel, WindowTable, set_title

REQUEST_ROWS = 200  # rows in the requests table (the model keeps more; the filter reaches all of them)
NARROW_LIST_ROWS = 6  # rows of tombstones, invalidations and warnings when the panels are stacked (they scroll)
TOOL_WIDTH = 20  # the tool column, which grows (up to TOOL_WIDTH_MAX) while no request has a note to show
TOOL_WIDTH_MAX = 34

IN_FLIGHT_COLUMNS = [("id", 5), ("tool", 20), ("budget used", 20), ("progress", 8), ("message", None)]
REQUEST_COLUMNS = [("ended", 8), ("id", 5), ("tool", 20), ("outcome", 13), ("took", 6), ("note", None)]


VIEW_BINDINGS: list[BindingType] = [
    Binding("slash", "filter", "Filter", id="main.filter"),
    Binding("p", "pause", "Pause", id="main.pause"),
    Binding("enter", "open_detail", "Detail", id="main.detail"),
]
OPERATOR_BINDINGS: list[BindingType] = [
    Binding("h", "health_check", "Health check", id="main.health_check"),
    Binding("m", "set_margin", "Margin", id="main.set_margin"),
    Binding("c", "cancel_call", "Cancel call", id="main.cancel_call"),
    Binding("t", "set_host_timeout", "Host timeout", id="main.set_host_timeout"),
    Binding("d", "set_deadline", "Deadline", id="main.set_deadline"),
]
BACK_BINDING = Binding("escape", "back", "Back", id="main.back", show=False)


class MainScreen(WatchScreen):
    """Panels side by side on a wide terminal; below `NARROW` columns they stack, and whatever does not fit
    the height scrolls (the body scrolls, the tables within it too), so no number is ever cut to nothing."""

    BINDINGS: ClassVar[list[BindingType]] = [*VIEW_BINDINGS, *OPERATOR_BINDINGS, BACK_BINDING]

    def __init__(self, session: WatchSession, *, can_go_back: bool = False) -> None:
        super().__init__(session)
        self.can_go_back = can_go_back
        self.filter_text = ""
        self.last_view: ViewState | None = None
        self._council_for: str | None = None  # the selection the council panel was drawn for

    def compose(self) -> ComposeResult:
        yield Line(id="topbar")
        yield Line(id="banner", layout=True)
        with Vertical(id="body"):
            with Horizontal(id="row-top"):
                yield Panel("Deadline", id="deadline")
                yield Panel("Tier budgets", id="tiers")
                yield Panel("Health", id="health")
                yield Panel("Counters", id="counters")
            with Horizontal(id="row-mid"):
                with Vertical(id="inflight-box", classes="box"):
                    yield WindowTable(IN_FLIGHT_COLUMNS, id="inflight")
                    yield Line(id="inflight-empty", classes="hint", layout=True)
                yield Panel("Council run", id="council")
            with Horizontal(id="row-bottom"):
                with Vertical(id="requests-box", classes="box"):
                    yield Input(placeholder="filter by tool, outcome or id — enter keeps it, esc clears", id="filter")
                    yield WindowTable(REQUEST_COLUMNS, id="requests")
                    yield Line(id="requests-empty", classes="hint", layout=True)
                    yield Line(id="latency")
                with Vertical(id="side"):
                    yield Panel("Tombstones", id="tombstones")
                    yield Panel("Invalidations", id="invalidations")
                    yield Panel("Warnings", id="warnings")
        yield from self.compose_extra()
        yield Footer()

    def compose_extra(self) -> ComposeResult:
        """Widgets between the panels and the footer: none live; replay puts its timeline bar here."""
        yield from ()

    def on_mount(self) -> None:
        self._title("#inflight-box", "In flight")
        self._title("#requests-box", "Recent requests")
        self.query_one("#requests", WindowTable).focus()
        self.session.pump()  # show what has arrived already, not an empty first frame
        self.refresh_view()

    # -- rendering -------------------------------------------------------------------------------------------
    # Each area is keyed by the view data it shows (plus the theme): unchanged areas cost one comparison.

    def refresh_view(self) -> None:
        session = self.session
        if session.paused and self.last_view is not None:
            self._render_bar(self.last_view)
            return
        inflight = self.query_one("#inflight", WindowTable)
        self._council_for = inflight.selected_key
        view = session.view(selected=self._council_for)
        self.last_view = view
        p = self.palette
        theme = self.app.theme
        origin = session.model.origin_ts
        q = self.query_one
        with self.app.batch_update():
            self._render_bar(view)
            q("#deadline", Panel).show(lambda: render.deadline_panel(view.deadline, p), (theme, view.deadline))
            q("#tiers", Panel).show(
                lambda: render.tiers_panel(view.tiers, view.deadline, p),
                (theme, view.tiers, view.deadline.limit_s),
                title=render.tiers_title(view.deadline),
            )
            health_key = (theme, view.health, round(view.health.ago_s or 0))
            q("#health", Panel).show(lambda: render.health_panel(view.health, p), health_key)
            q("#counters", Panel).show(lambda: render.counters_panel(view.counters, p), (theme, view.counters))
            width = inflight.free_width
            inflight.show([(r.request_id, render.in_flight_row(r, p, width)) for r in view.in_flight])
            title = f"In flight {len(view.in_flight)}"
            if view.in_flight and view.in_flight[0].unfinished:
                title += " · unfinished: the session ended"
            self._title("#inflight-box", title)
            self._hint("#inflight-empty", not view.in_flight, "no calls in flight")
            self._render_council(view)
            self._render_requests(view, origin)
            # Lists render only the rows their panel can show: under a flood, every row costs a frame time.
            tomb = view.tombstones
            tomb_rows = self._rows_of("#tombstones", 2)
            q("#tombstones", Panel).show(
                lambda: render.tombstones_panel(tomb, p, tomb_rows),
                (theme, tomb.count, tomb.awaiting_sweep, tomb.terms, tomb.late_dropped, tomb.items[:tomb_rows]),
                title=render.tombstones_title(tomb),
            )
            shown = view.invalidations[: self._rows_of("#invalidations")]
            q("#invalidations", Panel).show(
                lambda: render.invalidations_panel(shown, origin, p),
                (theme, shown),
                title=f"Invalidations {view.counters.invalidations:,}",
            )
            warnings = view.warnings[: self._rows_of("#warnings")]
            q("#warnings", Panel).show(
                lambda: render.warnings_panel(warnings, origin, p),
                (theme, warnings),
                title=f"Warnings {len(view.warnings)}",
            )

    def _render_council(self, view: ViewState) -> None:
        p = self.palette
        self.query_one("#council", Panel).show(
            lambda: render.council_panel(view.council, p),
            (self.app.theme, view.council),
            title=render.council_title(view.council),
        )

    @property
    def narrow(self) -> bool:
        """The panels are stacked (see `WatchScreen.HORIZONTAL_BREAKPOINTS`)."""
        return self.has_class("-narrow")

    def _rows_of(self, selector: str, header_lines: int = 0) -> int:
        """How many list rows fit in a panel (at least a few before the first layout). Stacked panels take the
        height of what they show, so there a fixed number of rows is shown and the body scrolls."""
        if self.narrow:
            return NARROW_LIST_ROWS
        height = self.query_one(selector, Panel).content_region.height
        return max(3, height - header_lines) if height else 20

    def _title(self, selector: str, title: str) -> None:
        set_title(self.query_one(selector), title)  # plain text (a filter or an id may look like markup)

    def _hint(self, selector: str, visible: bool, text: str) -> None:
        hint = self.query_one(selector, Line)
        if hint.display != visible:
            hint.display = visible
        if visible:
            hint.show(text, text)

    def _render_bar(self, view: ViewState) -> None:
        p = self.palette
        session = self.session
        feed = session.status()
        theme = self.app.theme
        compact = self.narrow
        bar_key = (theme, view.header, feed, session.paused, compact)
        self.query_one("#topbar", Line).show(
            lambda: render.top_bar(view.header, feed.label, feed.connected, session.paused, p, compact=compact),
            bar_key,
        )
        message = ""
        style = "status-warn"
        if not feed.connected:
            message = f"⚠ {feed.text}  ·  showing the last state received"
            style = "status-error"
        elif session.paused:
            message = f"⏸ view paused — {session.applied_while_paused:,} events recorded since; press p to resume"
        elif view.header.ended:
            message = f"the wrapper's session ended: {view.header.ended}"
        banner = self.query_one("#banner", Line)
        if banner.display != bool(message):
            banner.display = bool(message)
        if message:
            banner.show(lambda: render.Text(f" {message}", style=p(style, "bold")), (theme, message))

    def _render_requests(self, view: ViewState, origin: float | None, *, now: bool = False) -> None:
        p = self.palette
        rows = filter_requests(view.requests, self.filter_text) if self.filter_text else view.requests
        table = self.query_one("#requests", WindowTable)
        # A window a few screens deep, growing as the selection moves down (up to REQUEST_ROWS).
        height = max(10, table.size.height)
        shown = rows[: min(REQUEST_ROWS, max(3 * height, table.cursor_row + 2 * height))]
        # The tool column takes the room the note column does not need: names are cut (with …) only when
        # some request has a note to show.
        has_notes = any(render.request_note(r) for r in shown)
        longest = max((len(r.label) for r in shown), default=0)
        tool_width = TOOL_WIDTH if has_notes else max(TOOL_WIDTH, min(TOOL_WIDTH_MAX, longest))
        if table.set_width("tool", tool_width):
            now = True
        width = table.free_width
        table.show([(r.request_id, render.request_row(r, origin, p, width, tool_width)) for r in shown], force=now)
        title = "Recent requests"
        if self.filter_text:
            title += f" matching {self.filter_text!r}: {len(rows):,} of {len(view.requests):,}"
        elif len(rows) > REQUEST_ROWS:
            title += f" · newest {REQUEST_ROWS} of {len(rows):,} (/ to filter)"
        self._title("#requests-box", title)
        if not rows:
            text = f"nothing matches {self.filter_text!r}" if self.filter_text else "no finished requests yet"
        else:
            text = ""
        self._hint("#requests-empty", not rows, text)
        latency = self.query_one("#latency", Line)
        width = max(10, latency.size.width - 34)
        if self.filter_text:  # the sparkline shows what the table shows
            durations = [r.duration_s for r in rows if r.method == "tools/call" and r.duration_s is not None]
            recent = tuple(reversed(durations[:width]))
        else:
            recent = view.latencies[-width:]
        what = "matching calls" if self.filter_text else "calls"

        def make() -> render.Text:
            if not recent:
                return render.Text(f"latency: no finished tool {what} yet", style=p.dim)
            return render.Text.assemble(
                ("latency ", p.dim),
                (render.sparkline(recent, width), p("gauge-fill")),
                (f"  last {len(recent)} {what}, max {fmt.duration(max(recent))}", p.dim),
            )

        latency.show(make, (self.app.theme, recent, width, what))

    # -- selection and actions --------------------------------------------------------------------------------

    def selected_request(self) -> str | None:
        return self.query_one("#inflight", WindowTable).selected_key

    def action_open_detail(self) -> None:
        focused = self.focused
        table = focused if isinstance(focused, WindowTable) else self.query_one("#inflight", WindowTable)
        key = table.selected_key
        if key is None:
            self.notify("no request selected", severity="warning", timeout=3)
            return
        self.open_request(key)

    def open_request(self, request_id: str) -> None:
        """Show one request's detail screen (also for replay, to jump to a request from elsewhere)."""
        self.app.push_screen(self.detail_screen(request_id))

    def detail_screen(self, request_id: str) -> WatchScreen:
        """The detail screen for a request (replay's has no operator keys)."""
        from mcpwatch.console.screens.detail import RequestDetailScreen

        return RequestDetailScreen(self.session, request_id)

    @on(DataTable.RowSelected)
    def _row_selected(self, event: DataTable.RowSelected) -> None:
        table = event.data_table
        if isinstance(table, WindowTable) and table.selected_key is not None:
            event.stop()
            self.open_request(table.selected_key)

    @on(DataTable.RowHighlighted, "#inflight")
    def _inflight_highlighted(self) -> None:
        if not self.session.paused:
            self.refresh_view_soon()

    def refresh_view_soon(self) -> None:
        """The council panel follows the in-flight selection: redraw it without waiting for the next tick."""
        inflight = self.query_one("#inflight", WindowTable)
        if self.last_view is None or inflight.selected_key == self._council_for:
            return
        self._council_for = inflight.selected_key
        view = self.session.view(selected=self._council_for)
        self._render_council(view)

    def action_pause(self) -> None:
        paused = self.session.toggle_pause()
        self.notify("view paused — events are still recorded" if paused else "view resumed", timeout=3)
        self.refresh_view()

    def action_filter(self) -> None:
        box = self.query_one("#filter", Input)
        box.display = True
        box.focus()

    @on(Input.Changed, "#filter")
    def _filter_changed(self, event: Input.Changed) -> None:
        self.filter_text = event.value.strip()
        if self.last_view is not None:
            self._render_requests(self.last_view, self.session.model.origin_ts, now=True)

    @on(Input.Submitted, "#filter")
    def _filter_submitted(self) -> None:
        if not self.filter_text:
            self.query_one("#filter", Input).display = False
        self.query_one("#requests", WindowTable).focus()

    def action_back(self) -> None:
        box = self.query_one("#filter", Input)
        if box.display:
            box.value = ""
            box.display = False
            self.query_one("#requests", WindowTable).focus()
            return
        if self.can_go_back:
            self.dismiss()

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action == "back" and not self.can_go_back and not self.query_one("#filter", Input).display:
            return False
        return super().check_action(action, parameters)
