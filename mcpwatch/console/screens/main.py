"""The main screen: one wrapper at a glance. It takes a `WatchSession`, so replay shows it unchanged."""

from __future__ import annotations

from typing import ClassVar

from textual import events, on
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, Vertical
from textual.widgets import DataTable, Input

from mcpwatch.console.headless import board
from mcpwatch.console.headless.board import Area, Box
from mcpwatch.console.headless.panels import council, header, in_flight, requests
from mcpwatch.console.headless.render_base import fit_tool_width
from mcpwatch.console.headless.session import WatchSession
from mcpwatch.console.headless.views import ViewState
from mcpwatch.console.screens import main_parts as parts
from mcpwatch.console.screens.base import WatchScreen
from mcpwatch.console.screens.requests_view import RequestsView
from mcpwatch.console.widgets import KeyFooter, Line, Panel, ScrollPanel, WindowTable, set_title

VIEW_BINDINGS: list[BindingType] = [
    Binding("slash", "filter", "Filter", id="main.filter"),
    Binding("p", "pause", "Pause", id="main.pause"),
    Binding("e", "events", "Events", id="main.events"),
    Binding("s", "sort", "Sort", id="main.sort", show=False),
    Binding("enter", "open_detail", "Detail", id="main.detail", show=False),
]
OPERATOR_BINDINGS: list[BindingType] = [
    Binding("h", "health_check", "Health", id="main.health_check"),
    # The prompt keys act as they arrive, ahead of keys already on their way to the table, so that whatever is
    # typed after them reaches the prompt (priority bindings run in the order typed; `check_action` steps aside
    # while the filter field takes text).
    Binding("m", "set_margin", "Margin", id="main.set_margin", priority=True),
    Binding("c", "cancel_call", "Cancel", id="main.cancel_call"),
    Binding("t", "set_host_timeout", "Timeout", id="main.set_host_timeout", priority=True),
    Binding("d", "set_deadline", "Deadline", id="main.set_deadline", priority=True),
]
BACK_BINDING = Binding("escape", "back", "Back", id="main.back", show=False)
FOCUS_BINDINGS: list[BindingType] = [
    Binding("tab", "focus_step(1)", "Next", id="main.focus_next", show=False),
    Binding("shift+tab", "focus_step(-1)", "Previous", id="main.focus_previous", show=False),
]


def panel_bindings(panels: list[Box]) -> list[BindingType]:
    """The keys the panels add (`board.Key`), as the main screen's bindings (after its own, so its footer's order
    stays): `[console.keys]` rebinds them by id like any other."""
    return [Binding(k.key, k.action, k.description, id=k.id, show=k.show) for p in panels for k in p.keys]


PANEL_BINDINGS = panel_bindings(board.boxes())  # the list as imported: a panel's keys are bound with its class


def _placed(area: Area) -> ComposeResult:
    """The boxed panels of one area (`board.MAIN`), in the list's order, each with its first title."""
    for panel in board.boxes(area):
        yield (ScrollPanel if panel.scroll else Panel)(panel.title, id=panel.id)


class MainScreen(WatchScreen):
    """Panels side by side on a wide terminal; below `NARROW` columns they stack — the calls first, the settings
    after them — and whatever does not fit the height scrolls (the body, the tables and the lists within it).

    The council panels (per-model progress, tier budgets) appear once a council call or its tiers are seen; for
    any other server the per-tool figures take their place."""

    BINDINGS: ClassVar[list[BindingType]] = [
        *VIEW_BINDINGS,
        *OPERATOR_BINDINGS,
        BACK_BINDING,
        *FOCUS_BINDINGS,
        *PANEL_BINDINGS,
    ]

    def __init__(self, session: WatchSession, *, can_go_back: bool = False) -> None:
        super().__init__(session)
        self.can_go_back = can_go_back
        self.last_view: ViewState | None = None
        self._council_for: str | None = None  # the selection the council panel was drawn for
        self.requests_view = RequestsView(self)
        self._toasted = -1  # notable events already announced (-1: none drawn yet; the first draw sets it)

    def compose(self) -> ComposeResult:
        yield Line(id=header.WIDGET)
        yield Line(id="banner", layout=True)
        with Vertical(id="body"):
            with Horizontal(id="row-top"):
                yield from _placed("top")
            with Horizontal(id="row-mid"):
                with Vertical(id="inflight-box", classes="box"):
                    yield WindowTable(in_flight.COLUMNS, id=in_flight.WIDGET)
                    yield Line(id="inflight-empty", classes="hint", layout=True)
                yield from _placed("mid")
            with Horizontal(id="row-bottom"):
                with Vertical(id="requests-box", classes="box"):
                    yield Input(
                        placeholder="words, or outcome:deadline tool:search* took>15s — enter keeps it, esc clears",
                        id="filter",
                    )
                    yield WindowTable(requests.COLUMNS, id=requests.WIDGET)
                    yield Line(id="requests-empty", classes="hint", layout=True)
                    yield Line(id="latency")
                with Vertical(id="side"):
                    yield from _placed("side")
        yield from self.compose_extra()
        yield KeyFooter()

    def compose_extra(self) -> ComposeResult:
        """Widgets between the panels and the footer: none live; replay puts its timeline bar here."""
        yield from ()

    def on_mount(self) -> None:
        set_title(self.query_one("#inflight-box"), "In flight")
        set_title(self.query_one("#requests-box"), "Recent requests")
        table = self.query_one("#requests", WindowTable)
        table.can_follow = table.following = True
        table.focus(scroll_visible=False)  # the screen opens at its top
        self._arrange(self.size.width)
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
        ctx = board.Context(p, live=session.controls is not None, origin=session.model.origin_ts)  # live: "press h"
        with self.app.batch_update():
            self._render_bar(view)
            self._announce(view)
            for panel in board.boxes():
                self._render_panel(panel, view, ctx)
            tool_width = fit_tool_width([r.tool or r.method for r in view.in_flight], inflight.size.width, note=True)
            resized = inflight.set_width("tool", tool_width)  # a new width is applied now, never throttled away
            width = inflight.free_width
            inflight.show_built(
                (view.in_flight, self.app.theme, width, tool_width),
                lambda: [(r.request_id, in_flight.in_flight_row(r, p, width, tool_width)) for r in view.in_flight],
                force=resized,
            )
            parts.title(self, "#inflight-box", in_flight.title(view.in_flight, view.deadline))
            parts.hint(self, "#inflight-empty", not view.in_flight, "no calls in flight")
            self._render_requests(view, ctx.origin)

    def _render_panel(self, panel: Box, view: ViewState, ctx: board.Context) -> None:
        """One boxed panel: shown or hidden for this view, and drawn when what it depends on changed."""
        widget = self.query_one(f"#{panel.id}")
        assert isinstance(widget, Panel | ScrollPanel), panel.id
        visible = panel.shows(view)
        if widget.display != visible:
            widget.display = visible
        if visible:
            widget.show(lambda: panel.draw(view, ctx), (self.app.theme, panel.key(view)), title=panel.heading(view))

    def _render_council(self, view: ViewState) -> None:
        council_box = next(p for p in board.boxes() if p.module is council)
        p = self.palette
        ctx = board.Context(p, live=self.session.controls is not None, origin=self.session.model.origin_ts)
        self._render_panel(council_box, view, ctx)

    def _announce(self, view: ViewState) -> None:
        self._toasted = parts.announce(self, view, self._toasted)

    @property
    def narrow(self) -> bool:
        """The panels are stacked (see `WatchScreen.HORIZONTAL_BREAKPOINTS`)."""
        return self.has_class("-narrow")

    def on_resize(self, event: events.Resize) -> None:
        super().on_resize(event)
        self._arrange(event.size.width)

    def _arrange(self, width: int) -> None:
        parts.arrange(self, width)

    def action_focus_step(self, step: int) -> None:
        """Tab / shift+tab: the next table or list, its top brought into view when the body is scrolled past it."""
        parts.focus_step(self, step)

    def _render_bar(self, view: ViewState) -> None:
        parts.render_bar(self, view)

    def _render_requests(self, view: ViewState, origin: float | None, *, now: bool = False) -> None:
        self.requests_view.render(view, origin, now=now)

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

    @on(DataTable.HeaderSelected, "#requests")
    def _header_selected(self, event: DataTable.HeaderSelected) -> None:
        label = str(event.column_key.value)
        if label in requests.SORT_ORDER:
            self.sort_requests(label)

    @property
    def filter_text(self) -> str:
        return self.requests_view.filter_text

    def sort_requests(self, column: str) -> None:
        """Sort the recent requests by a column; the same column again reverses the order."""
        self.requests_view.sort(column)
        if self.last_view is not None:
            self._render_requests(self.last_view, self.session.model.origin_ts, now=True)

    def action_sort(self) -> None:
        """s: the next sort column (ended → id → tool → outcome → took)."""
        column = self.requests_view.next_sort()
        self.notify(f"recent requests sorted by {column}", timeout=2)
        if self.last_view is not None:
            self._render_requests(self.last_view, self.session.model.origin_ts, now=True)

    def action_events(self) -> None:
        from mcpwatch.console.screens.events import EventsScreen

        self.app.push_screen(EventsScreen(self.session))

    def action_pause(self) -> None:
        paused = self.session.toggle_pause()
        self.refresh_bindings()  # the footer's p reads "Resume" while paused
        self.notify("view paused — events are still recorded" if paused else "view resumed", timeout=3)
        self.refresh_view()

    def action_filter(self) -> None:
        box = self.query_one("#filter", Input)
        box.display = True
        self.set_focus(box)  # now, not on a later turn of the loop: the next key typed is the filter's

    @on(Input.Changed, "#filter")
    def _filter_changed(self, event: Input.Changed) -> None:
        self.requests_view.filter_text = event.value.strip()
        if self.last_view is not None:
            self._render_requests(self.last_view, self.session.model.origin_ts, now=True)

    @on(Input.Submitted, "#filter")
    def _filter_submitted(self) -> None:
        if not self.filter_text:
            self.query_one("#filter", Input).display = False
        self.set_focus(self.query_one("#requests", WindowTable))

    def action_back(self) -> None:
        box = self.query_one("#filter", Input)
        if box.display:
            box.value = ""
            box.display = False
            self.set_focus(self.query_one("#requests", WindowTable))
            return
        if self.can_go_back:
            self.dismiss()

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action == "back" and not self.can_go_back and not self.query_one("#filter", Input).display:
            return False
        return super().check_action(action, parameters)
