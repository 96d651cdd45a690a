"""A main-screen panel has one home, `console/headless/panels/<panel>.py`: its view, the function building it, its
drawing, and as data its help line (`HELP`) and the widget showing it (`WIDGET`). These fail when the pieces drift
apart: a panel module the registry forgets, a panel on the screen that no module claims (or the other way round),
a help screen that no longer describes the panels there are, or a screen that says something else than its panel
module (the requests box's title, hint and latency line; the banner; the toasts)."""

from __future__ import annotations

import pkgutil
import types
from typing import Any

import pytest
from console_helpers import SIZE, RecordingControls, generic_session, ready, sample_app
from rich.text import Text
from textual.binding import Binding
from textual.widget import Widget
from textual.widgets import Input

from mcpwatch.console.app import ConsoleApp
from mcpwatch.console.headless import board, panels
from mcpwatch.console.headless.panels import events, header, requests
from mcpwatch.console.headless.panels.events import NotableEvent
from mcpwatch.console.headless.panels.requests import Listing, RequestView
from mcpwatch.console.headless.render_base import TOOL_WIDTH_MAX, TOOL_WIDTH_MIN, Palette, fit_tool_width
from mcpwatch.console.headless.session import WatchSession
from mcpwatch.console.headless.source import FeedStatus
from mcpwatch.console.headless.views import ViewState
from mcpwatch.console.screens import main as main_screen
from mcpwatch.console.screens.help import HelpScreen
from mcpwatch.console.screens.main import MainScreen
from mcpwatch.console.widgets import Line, Panel, ScrollPanel, WindowTable
from mcpwatch.events import Kind
from mcpwatch.testing.feed import StaticFeed
from mcpwatch.testing.sample import SAMPLE_NOW, sample_session

from pilot_tools import current, until


def test_every_panel_module_is_in_the_registry_and_says_its_key_and_widget() -> None:
    modules = {info.name for info in pkgutil.iter_modules(panels.__path__)}
    registered = {panel.module.__name__.rsplit(".", 1)[1] for panel in board.MAIN}
    assert modules == registered
    for panel in board.MAIN:
        assert hasattr(panel.module, "HELP") and hasattr(panel.module, "WIDGET"), panel.module.__name__
    for box in board.boxes():
        assert box.id == box.module.WIDGET and box.help == box.module.HELP
    assert len(board.help_rows()) >= 12  # the README's list of panels, each described


@pytest.mark.slow
@pytest.mark.anyio
async def test_the_main_screen_places_the_registered_panels_and_help_describes_them() -> None:
    app = sample_app(controls=RecordingControls())
    async with app.run_test(size=SIZE) as pilot:
        await ready(pilot)
        screen = app.screen
        claimed = {panel.module.WIDGET for panel in board.MAIN if panel.module.WIDGET is not None}
        for widget in claimed:
            assert screen.query(f"#{widget}"), f"no #{widget} on the main screen"
        placed = {w.id for w in screen.query("*") if isinstance(w, Panel | ScrollPanel | WindowTable)}
        assert placed <= claimed, f"panels on the screen that no panel module claims: {placed - claimed}"
        await pilot.press("question_mark")
        await until(pilot, lambda: isinstance(app.screen, HelpScreen), what="the help screen")
        text = " ".join(app.screen.query_one("#help-text", Line).plain.split())  # as read, whatever the wrapping
        for name, what in board.help_rows():
            assert f"{name} {what}" in text, name


# --- what a panel says is said by its module, and the screen shows it ---------------------------------------


def test_the_requests_title_says_the_count_the_order_and_whether_it_follows() -> None:
    title = requests.requests_title
    assert title(Listing(total=10, matched=10)) == "Recent requests · ● following newest"
    assert (
        title(Listing(total=10, matched=1, filter_text="tool_err"))
        == "Recent requests matching 'tool_err': 1 of 10 · ● following newest"
    )
    # A filter not understood is said where the count would be: never "0 of 10".
    bad = title(Listing(total=10, matched=0, filter_text="took>", problem="took> needs a duration"))
    assert bad == "Recent requests · filter 'took>' not understood (? for the syntax) · ● following newest"
    many = requests.REQUEST_ROWS + 1300
    assert f"· newest {requests.REQUEST_ROWS} of {many:,} (/ to filter)" in title(Listing(total=many, matched=many))
    held = title(Listing(total=3, matched=3, sort_by="took", sort_reverse=True, following=False, new_above=1200))
    assert held == "Recent requests · by took ↑ · ⏸ held · ↑ 1,200 new (g)"


def test_the_requests_hint_shows_only_when_the_table_is_empty() -> None:
    hint = requests.requests_hint
    assert hint(Listing(total=10, matched=10)) == ""
    assert hint(Listing(total=0, matched=0)) == "no finished requests yet"
    assert hint(Listing(total=10, matched=0, filter_text="nope")) == "nothing matches 'nope'"
    assert hint(Listing(total=10, matched=0, filter_text="took>", problem="why")) == "filter: why"


def _call(request_id: str, duration: float | None, method: str = "tools/call") -> RequestView:
    return RequestView(request_id, method, "t", 0.0, 1.0, "ok", duration, False, None)


def test_the_latency_line_shows_the_calls_the_table_shows() -> None:
    latencies = tuple(float(i) for i in range(1, 31))
    assert requests.latency_points((), latencies, False, 10) == latencies[-10:]
    # Under a filter: the matching tool calls (newest first in the table), oldest first, never another method.
    rows = (_call("3", 3.0), _call("2", None), _call("x", 9.0, "tools/list"), _call("1", 1.0))
    assert requests.latency_points(rows, latencies, True, 10) == (1.0, 3.0)
    assert requests.latency_points(rows, latencies, True, 1) == (3.0,)
    p = Palette({})
    assert requests.latency_line((), 10, True, p).plain == "latency: no finished tool matching calls yet"
    line = requests.latency_line((1.0, 3.0), 10, False, p).plain
    assert line.startswith("latency ▃█") and line.endswith("  last 2 calls, max 3.0s")
    assert requests.latency_width(20) == 10 and requests.latency_width(100) == 100 - requests.LATENCY_TEXT_WIDTH


def test_the_tool_column_fits_the_longest_name_within_bounds() -> None:
    assert fit_tool_width(["ab"], 0, note=False) == TOOL_WIDTH_MIN
    assert fit_tool_width(["a" * 20], 200, note=False) == 22
    assert fit_tool_width(["a" * 80], 200, note=False) == TOOL_WIDTH_MAX
    assert fit_tool_width(["a" * 80], 80, note=True) == 20  # a quarter of the table leaves room for the note
    assert fit_tool_width(["a" * 80], 0, note=True) == 25  # not laid out yet: a quarter of 100 columns


def test_the_banner_says_what_must_not_be_missed() -> None:
    live, ended = header.HeaderView(name="w"), header.HeaderView(name="w", ended="received SIGTERM")
    assert header.banner(live, True, "live")[0] == ""
    assert header.banner(live, False, "disconnected — retrying") == (
        "⚠ disconnected — retrying  ·  showing the last state received",
        "status-error",
    )
    assert header.banner(ended, True, "live") == ("the wrapper's session ended: received SIGTERM", "status-warn")
    assert header.banner(ended, True, "live", "prod: 3 deadlines (F)") == (
        "⚑ prod: 3 deadlines (F)  ·  the wrapper's session ended: received SIGTERM",
        "status-error",
    )
    assert header.banner_line("x", "status-error", Palette({"status-error": "red"})).style == "bold red"


def test_only_new_and_recent_errors_are_toasted() -> None:
    now = 100.0
    crash = NotableEvent(now - 1, "upstream_exit", "error", "upstream exited: exit code 1", ("a", "MemoryError"))
    old = NotableEvent(now - events.TOAST_WITHIN_S - 1, "upstream_exit", "error", "upstream exited: old")
    respawn = NotableEvent(now, "respawn", "info", "upstream running again")
    notable = (respawn, crash, old)  # newest first
    assert events.toasts(notable, 3, -1, now) == ([], 3)  # nothing drawn yet: what came before is not news
    assert events.toasts(notable, 3, 0, now) == (["upstream exited: exit code 1\nMemoryError\n(e: Events)"], 3)
    assert events.toasts(notable, 3, 2, now) == ([], 3)  # only the respawn is new
    assert events.toasts(notable, 3, 5, now) == ([], 3)  # a new session counts from zero again


def _title(widget: Widget) -> str:
    """A border title as the text it shows (`border_title` gives it back as markup)."""
    shown: Any = getattr(widget, "_border_title", None)
    return shown.plain if shown is not None else ""


def _shown(line: Line) -> Any:
    """What a line was given to show (its `plain` is that text wrapped to the line's width)."""
    return line._renderable


def _styled(text: Text) -> tuple[str, str, list[Any]]:
    """A Rich text with its styles (`Text.__eq__` leaves out the style of the whole text)."""
    return text.plain, str(text.style), text.spans


@pytest.mark.slow
@pytest.mark.anyio
async def test_the_requests_box_and_the_banner_show_what_their_panel_modules_say() -> None:
    feed = StaticFeed(sample_session(), SAMPLE_NOW)
    app = ConsoleApp(session=WatchSession(feed, RecordingControls()))
    async with app.run_test(size=SIZE) as pilot:
        await ready(pilot)
        screen = current(app, MainScreen)
        p = screen.palette

        def shown_view() -> ViewState:
            assert screen.last_view is not None  # drawn once at least (ready)
            return screen.last_view

        box, table = screen.query_one("#requests-box"), screen.query_one("#requests", WindowTable)
        latency, hint = screen.query_one("#latency", Line), screen.query_one("#requests-empty", Line)

        def said(filter_text: str, matched: int, problem: str = "") -> Listing:
            total = len(shown_view().requests)
            return Listing(total, matched, filter_text, problem, following=table.following, new_above=table.new_above)

        def latency_says(filtered: bool, rows: tuple[RequestView, ...]) -> Text:
            width = requests.latency_width(latency.size.width)
            points = requests.latency_points(rows, shown_view().latencies, filtered, width)
            return requests.latency_line(points, width, filtered, p)

        assert _title(box) == requests.requests_title(said("", 10)) == "Recent requests · ● following newest"
        assert not hint.display
        assert _styled(_shown(latency)) == _styled(latency_says(False, ())) and "last 9 calls" in latency.plain
        await pilot.press("slash", *"tool_err")
        await until(pilot, lambda: "tool_err" in _title(box), what="the filtered title")
        assert _title(box) == requests.requests_title(said("tool_err", 1))
        matching = tuple(r for r in shown_view().requests if r.request_id == "4")
        assert _styled(_shown(latency)) == _styled(latency_says(True, matching))
        screen.query_one("#filter", Input).value = "took>>5"
        await until(pilot, lambda: hint.display, what="the hint for a filter not understood")
        problem = _shown(hint).removeprefix("filter: ")
        assert problem and _shown(hint) == requests.requests_hint(said("took>>5", 0, problem))
        assert _title(box) == requests.requests_title(said("took>>5", 0, problem))
        assert _styled(_shown(latency)) == _styled(latency_says(True, ()))

        banner = screen.query_one("#banner", Line)
        assert not banner.display
        lost = FeedStatus("disconnected", "disconnected — retrying in 1s: connection refused")
        feed.set_status(lost)
        await until(pilot, lambda: banner.display, what="the banner")
        message, style = header.banner(shown_view().header, False, lost.text)
        assert _styled(_shown(banner)) == _styled(header.banner_line(message, style, p))
        assert "connection refused  ·  showing the last state received" in _shown(banner).plain


def test_a_health_check_the_host_made_says_so_uncut_in_a_quarter_of_120_columns() -> None:
    """`took 259 ms (the host's …`: at 120 columns the Health panel is a quarter of the width."""
    from rich.console import Console

    from mcpwatch.console.headless.panels.health import HealthView, health_panel
    from mcpwatch.console.headless.render_base import Palette

    view = HealthView(
        ok=True,
        ping_ms=None,
        tool="health",
        error=None,
        at_mono=0.0,
        ago_s=4.0,
        history=(),
        timeout_multiplier=None,
        latency_ms=259.0,
        source="host",
    )
    console = Console(width=26, record=True, color_system=None)
    console.print(health_panel(view, Palette({})))
    text = console.export_text()
    assert "259ms (host)" in text.replace(" ms", "ms") and "…" not in text


# --- a panel is one object: its module and its entry in the list ----------------------------------------------


def _feed(app: Any) -> StaticFeed:
    feed = app.session.feed
    assert isinstance(feed, StaticFeed)
    return feed


def _probe_module() -> types.ModuleType:
    """A panel's module as `panels/<name>.py` would be: its help line and its widget id (a test-only panel)."""
    module = types.ModuleType("probe")
    module.HELP = ("Probe", "a test-only panel: the calls counted so far")  # type: ignore[attr-defined]  # a module's data
    module.WIDGET = "probe"  # type: ignore[attr-defined]  # a module's data
    return module


@pytest.mark.anyio
async def test_a_panel_added_to_the_list_is_placed_drawn_refreshed_and_described(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Adding a panel is its module and its entry in `board.MAIN`: nothing else changes, yet the main screen places
    it in its area, draws it from the view, redraws it when what it shows changes, and the help screen lists it."""
    draws: list[int] = []

    def draw(view: ViewState, ctx: board.Context) -> Text:
        draws.append(view.counters.requests)
        return Text(f"calls so far {view.counters.requests}")

    probe = board.Box(_probe_module(), "Probe", "side", draw, lambda view: view.counters.requests)
    monkeypatch.setattr(board, "MAIN", (*board.MAIN, probe))
    f, events = generic_session(calls=3)
    app = sample_app(events=events, controls=RecordingControls())
    async with app.run_test(size=SIZE) as pilot:
        await ready(pilot)
        screen = app.screen
        assert isinstance(screen, MainScreen) and screen.last_view is not None
        box = screen.query_one("#probe", ScrollPanel)
        assert box.parent is screen.query_one("#side") and box.border_title == "Probe"
        first = screen.last_view.counters.requests
        assert first >= 3 and draws[-1] == first and "calls so far" in box.plain
        drawn = len(draws)
        screen.refresh_view()
        assert len(draws) == drawn  # nothing it shows changed: not drawn again
        feed = _feed(app)
        feed.push(
            [
                f.make(Kind.REQUEST_START, 40.0, request_id="p1", tool="probe", method="tools/call", budget_s=110.0),
                f.make(Kind.REQUEST_END, 40.5, request_id="p1", outcome="ok", duration_s=0.5),
            ]
        )
        feed.set_now(41.0)
        await until(pilot, lambda: draws[-1] == first + 1, what="the probe panel redrawn")
        assert f"calls so far {first + 1}" in box.plain
        await pilot.press("question_mark")
        await until(pilot, lambda: isinstance(app.screen, HelpScreen), what="the help screen")
        text = " ".join(app.screen.query_one("#help-text", Line).plain.split())
        assert "Probe a test-only panel: the calls counted so far" in text


def test_the_keys_a_panel_declares_become_main_screen_bindings() -> None:
    key = board.Key("x", "events", "Probe", "probe.events")
    probe = board.Box(_probe_module(), "Probe", "side", lambda v, c: Text(""), lambda v: 0, keys=(key,))
    (binding,) = main_screen.panel_bindings([probe])
    assert isinstance(binding, Binding)
    assert (binding.key, binding.action, binding.description, binding.id) == ("x", "events", "Probe", "probe.events")
    # the registered panels' keys are on the screen, after its own (the footer's order is unchanged)
    own = len(MainScreen.BINDINGS) - len(main_screen.PANEL_BINDINGS)
    assert MainScreen.BINDINGS[own:] == main_screen.panel_bindings(board.boxes())
