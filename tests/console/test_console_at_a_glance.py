"""Pilot tests for the console at 3 a.m.: what is about to fail, what just failed, and why — at a glance.

One test (or more) per defect an on-call engineer met: hidden tombstones, a selection that moved under the cursor,
the warning colour lost on the selected row, a budget disabled by accident, an upstream crash that barely showed,
small terminals, council panels on servers that are not a council, unexplained symbols and names, nothing to copy,
and the small things (pause label, quit without a word, j/k, sorting).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from console_helpers import RecordingControls, footer_descriptions, generic_session, ready, sample_app
from textual.widgets import Footer

from mcpwatch.console.headless.model import ConsoleModel
from mcpwatch.console.headless.panels.counters import counters_panel
from mcpwatch.console.headless.panels.header import top_bar
from mcpwatch.console.headless.panels.requests import request_row, sort_requests
from mcpwatch.console.headless.panels.tombstones import tombstones_panel
from mcpwatch.console.headless.render_base import Palette
from mcpwatch.console.screens.detail import RequestDetailScreen
from mcpwatch.console.screens.events import EventsScreen
from mcpwatch.console.screens.help import HelpScreen
from mcpwatch.console.screens.main import MainScreen
from mcpwatch.console.screens.modals import Confirm, SecondsPrompt
from mcpwatch.console.widgets import Line, Panel, ScrollPanel, WindowTable
from mcpwatch.events import Kind
from mcpwatch.testing.feed import StaticFeed
from mcpwatch.testing.sample import EventFactory, deadline_block, session_start

from pilot_tools import current, screen_text, until

pytestmark = pytest.mark.anyio

WIDE = (120, 40)
SMALL = (80, 24)
P = Palette({})


def _in_flight(f: EventFactory, events: list[Any], rid: str, start: float, budget: float, tool: str = "search") -> None:
    events.append(f.make(Kind.REQUEST_START, start, request_id=rid, tool=tool, method="tools/call", budget_s=budget))


def _feed(app: Any) -> StaticFeed:
    feed = app.session.feed
    assert isinstance(feed, StaticFeed)
    return feed


# --- 1. tombstones -----------------------------------------------------------------------------------------


def _tombstoned(count: int, expired: int) -> tuple[EventFactory, list[Any], float]:
    f = EventFactory()
    events = [session_start(f)]
    for i in range(count):
        rid = str(100 + i)
        _in_flight(f, events, rid, float(i), 5.0)
        events.append(f.make(Kind.REQUEST_END, i + 5.0, request_id=rid, outcome="deadline", duration_s=5.0))
        ttl = 10.0 if i < expired else 500.0  # the first ones are past their TTL at `now`
        events.append(f.make(Kind.TOMBSTONE_ADD, i + 5.0, request_id=rid, up_id=f"u{i}", ttl_s=ttl, reason="deadline"))
    return f, events, count + 60.0


def test_tombstones_live_first_then_expired() -> None:
    _, events, now = _tombstoned(12, 5)
    model = ConsoleModel()
    model.apply_many(events)
    items = model.view(now).tombstones.items
    lefts = [t.expires_in_s for t in items]
    assert all(x is not None and x > 0 for x in lefts[:7]) and all(x is not None and x <= 0 for x in lefts[7:])
    live = [x for x in lefts[:7] if x is not None]  # all seven, as just asserted
    assert live == sorted(live)  # the soonest to expire on top


@pytest.mark.slow
async def test_tombstones_panel_takes_focus_and_scrolls_to_every_row() -> None:
    _, events, now = _tombstoned(30, 5)
    app = sample_app(events=events, now=now, controls=RecordingControls())
    async with app.run_test(size=WIDE) as pilot:
        await ready(pilot)
        panel = app.screen.query_one("#tombstones", ScrollPanel)
        assert panel.can_focus
        assert "left" in panel.plain.splitlines()[3]  # the first row shown is a live one, not "expired"
        assert panel.plain.count("#1") == 30  # every tombstone is in the list
        assert panel.max_scroll_y > 0  # ...which is longer than the panel: it scrolls
        panel.focus()
        await pilot.press("G")
        await until(pilot, lambda: panel.scroll_y == panel.max_scroll_y, what="the end of the list")
        await pilot.press("g")
        await until(pilot, lambda: panel.scroll_y == 0, what="the top of the list")


def test_tombstones_beyond_the_cap_say_how_many_more() -> None:
    _, events, now = _tombstoned(8, 0)
    model = ConsoleModel()
    model.apply_many(events)
    shown = tombstones_panel(model.view(now).tombstones, P, max_rows=3)
    out = _text(shown, 100)
    assert "+5 more" in out


# --- 2. recent requests hold the selection ---------------------------------------------------------------


@pytest.mark.slow
async def test_recent_requests_hold_the_selected_row_and_count_the_new_ones() -> None:
    f, events = generic_session(10)
    app = sample_app(events=events, now=40.0, controls=RecordingControls())
    async with app.run_test(size=WIDE) as pilot:
        await ready(pilot)
        table = app.screen.query_one("#requests", WindowTable)
        box = app.screen.query_one("#requests-box")
        assert table.following and "following newest" in str(box.border_title)
        await pilot.press("j", "j")
        await pilot.pause(0.5)
        held = table.selected_key
        assert held == "8" and not table.following
        feed = _feed(app)
        new = []
        for i, rid in enumerate(("50", "51", "52")):
            new.append(f.make(Kind.REQUEST_START, 30.0 + i, request_id=rid, tool="search", method="tools/call"))
            new.append(f.make(Kind.REQUEST_END, 30.5 + i, request_id=rid, outcome="ok", duration_s=0.5))
        feed.push(new)
        await until(pilot, lambda: table.new_above == 3, what="three new rows counted above the held one")
        assert table.selected_key == held  # the row under the cursor did not change
        await until(pilot, lambda: "↑ 3 new" in str(box.border_title), what="the new-rows badge")
        assert "held" in str(box.border_title)
        await pilot.press("enter")
        await until(pilot, lambda: isinstance(app.screen, RequestDetailScreen), what="the detail screen")
        assert app.screen.request_id == held  # enter opens the row the operator sees
        await pilot.press("escape")
        await pilot.pause(0.5)
        await pilot.press("g")
        await pilot.pause(0.5)
        assert table.following and table.cursor_row == 0 and table.selected_key == "52"
        await until(pilot, lambda: "following newest" in str(box.border_title), what="following again")


# --- 3. time left, next to be cut, the warning colour on the selected row --------------------------------


async def test_in_flight_next_to_be_cut_first_with_time_left_and_its_colour_kept() -> None:
    f, events = generic_session(2)
    _in_flight(f, events, "30", 10.0, 100.0)  # 100 - (60 - 10) = 50s left
    _in_flight(f, events, "31", 20.0, 45.0)  # 5s left: next to be cut
    _in_flight(f, events, "32", 30.0, 300.0)  # 270s left
    app = sample_app(events=events, now=60.0, controls=RecordingControls())
    async with app.run_test(size=WIDE) as pilot:
        await ready(pilot)
        table = app.screen.query_one("#inflight", WindowTable)
        rows = [table.get_row_at(i) for i in range(table.row_count)]
        assert [str(r[0]) for r in rows] == ["31", "30", "32"]
        assert str(rows[0][2]) == "5.0s 11%" and str(rows[1][2]) == "50s 50%"
        # The selected row keeps the cell's own colours (the budget bar's warning colour), not the cursor's.
        assert table.cursor_foreground_priority == "renderable"
        warn = app.theme_variables["status-warn"]
        budget = rows[0][2]
        assert any(warn.lower() in str(span.style).lower() for span in budget.spans) or warn in str(budget.style)
        assert "next to be cut first" in str(app.screen.query_one("#inflight-box").border_title)


# --- 4. the budget is never disabled by accident ----------------------------------------------------------


@pytest.mark.slow
async def test_disabled_budget_reads_disabled_and_an_operator_change_is_named() -> None:
    f, events = generic_session(1)
    block = deadline_block() | {"budget_s": None, "override_s": 0.0, "source": "disabled"}
    events.append(
        f.make(Kind.CONFIG_CHANGE, 5.0, key="override_s", old=None, new=0.0, source="operator", deadline=block)
    )
    app = sample_app(events=events, now=10.0, controls=RecordingControls())
    async with app.run_test(size=WIDE) as pilot:
        await ready(pilot)
        deadline = app.screen.query_one("#deadline", Panel).plain
        assert "DISABLED" in deadline and "operator set override" in deadline and "0s (disables)" in deadline
        assert "budget DISABLED" in str(app.screen.query_one("#inflight-box").border_title)
        await pilot.press("d")
        await until(pilot, lambda: isinstance(app.screen, SecondsPrompt), what="the deadline prompt")
        text = str(app.screen.query_one(".dialog-text").render())
        assert "the budget is DISABLED" in text and "0s" not in text
    margin = deadline_block(margin=20.0) | {"source": "derived"}
    events.append(
        f.make(Kind.CONFIG_CHANGE, 6.0, key="margin_s", old=10.0, new=20.0, source="operator", deadline=margin)
    )
    app = sample_app(events=events, now=10.0, controls=RecordingControls())
    async with app.run_test(size=WIDE) as pilot:
        await ready(pilot)
        deadline = app.screen.query_one("#deadline", Panel).plain
        assert "operator set margin" in deadline and "derived" not in deadline


# --- 5. an upstream crash shows --------------------------------------------------------------------------


async def test_an_upstream_crash_toasts_warns_and_is_an_event() -> None:
    f, events = generic_session(2)
    _in_flight(f, events, "40", 20.0, 110.0)
    app = sample_app(events=events, now=30.0, controls=RecordingControls())
    async with app.run_test(size=WIDE, notifications=True) as pilot:
        await ready(pilot)
        feed = _feed(app)
        feed.push(
            [
                f.make(
                    Kind.UPSTREAM_STATE,
                    29.0,
                    state="backoff",
                    generation=1,
                    exit_code=-9,
                    stderr_tail=["Traceback (most recent call last):", "MemoryError"],
                    retry_in_s=0.5,
                ),
                f.make(Kind.REQUEST_END, 29.1, request_id="40", outcome="upstream_lost", duration_s=9.1),
            ]
        )
        await until(pilot, lambda: any("exit code -9" in n.message for n in app._notifications), what="a toast")
        await pilot.pause(0.3)
        text = screen_text(app)
        assert "⚑ 1 (e)" in text  # 120 columns: the compact top bar
        assert "upstream exited: exit code -9" in app.screen.query_one("#warnings", ScrollPanel).plain
        assert "Warnings 1" in text
        assert "↯ upstream lost" in text and "upstream_lo" not in text.replace("upstream lost", "")
        await pilot.press("e")
        await until(pilot, lambda: isinstance(app.screen, EventsScreen), what="the Events view")
        events_text = app.screen.query_one("#events", ScrollPanel).plain
        assert "exit code -9" in events_text and "MemoryError" in events_text
        assert "1 new" in str(app.screen.query_one("#events").border_title)
        await pilot.press("escape")
        await pilot.pause(0.3)
        assert "⚑" not in screen_text(app)  # read
        feed.push([f.make(Kind.UPSTREAM_STATE, 29.8, state="ready", generation=2)])
        await until(pilot, lambda: "⚑ 1 (e)" in screen_text(app), what="the respawn as a new event")


async def test_an_old_crash_arriving_late_is_listed_not_toasted() -> None:
    """A console attaching long after a crash fetches it with the history: it is in Events, not a fresh alarm."""
    f, events = generic_session(2)
    app = sample_app(events=events, now=200.0, controls=RecordingControls())
    async with app.run_test(size=WIDE, notifications=True) as pilot:
        await ready(pilot)
        _feed(app).push([f.make(Kind.UPSTREAM_STATE, 50.0, state="backoff", generation=1, exit_code=1)])
        await until(pilot, lambda: "⚑ 1 (e)" in screen_text(app), what="the crash as an unread event")
        await pilot.pause(0.3)
        assert not any("exit code 1" in n.message for n in app._notifications)


# --- 6. small terminals ------------------------------------------------------------------------------------


async def test_80x24_shows_the_calls_first_and_tab_brings_a_list_into_view() -> None:
    app = sample_app(controls=RecordingControls())
    async with app.run_test(size=SMALL) as pilot:
        await ready(pilot)
        body = app.screen.query_one("#body")
        assert body.children[0].id == "row-mid" and body.children[-1].id == "row-top"
        inflight = app.screen.query_one("#inflight-box")
        assert inflight.region.y < 6  # the calls in flight are on the first screen
        tombstones = app.screen.query_one("#tombstones", ScrollPanel)
        assert body.scroll_y == 0
        await pilot.press("tab")  # from recent requests to the tombstones, below them
        await pilot.pause(0.3)
        assert app.screen.focused is tombstones
        assert body.scroll_y > 0
        assert tombstones.region.y < 24 and tombstones.region.bottom > 0  # scrolled into view
        keys = [a.binding.key for a in app.screen.active_bindings.values() if a.binding.show]
        assert {"m", "d", "c", "slash", "e", "q", "question_mark"} <= set(keys)


async def test_120_columns_show_every_footer_key_and_the_host() -> None:
    _, events = generic_session(3)
    app = sample_app(events=events, now=30.0, controls=RecordingControls())
    async with app.run_test(size=WIDE) as pilot:
        await ready(pilot)
        keys = [a.binding.key for a in app.screen.active_bindings.values() if a.binding.show]
        assert {"h", "m", "c", "t", "d", "p", "e", "slash", "q", "question_mark"} <= set(keys)
        bar = app.screen.query_one("#topbar", Line).plain
        assert "host claude-code 2.1.3" in bar


# --- 7. any server: per-tool figures; council panels only for a council ----------------------------------


async def test_a_server_that_is_not_a_council_gets_per_tool_figures() -> None:
    _, events = generic_session(12)
    app = sample_app(events=events, now=40.0, controls=RecordingControls())
    async with app.run_test(size=WIDE) as pilot:
        await ready(pilot)
        screen = app.screen
        assert not screen.query_one("#council").display and not screen.query_one("#tiers").display
        tools = screen.query_one("#tools", ScrollPanel)
        assert tools.display
        text = tools.plain
        assert "search" in text and "read_file" in text and "p95" in text
        search = next(line for line in text.splitlines() if "search" in line)
        # search: calls #1, #4, #7 and #10 (see test_tool_figures_percentiles_and_rates)
        assert search.split()[1] == "4"


def test_tool_figures_percentiles_and_rates() -> None:
    _, events = generic_session(12)
    model = ConsoleModel()
    model.apply_many(events)
    by_tool = {t.tool: t for t in model.view(40.0).tools}
    search = by_tool["search"]  # i = 0, 3, 6, 9: ok, ok, tool_error (6 % 7), deadline (9 % 5 == 4)
    assert search.calls == 4 and search.errors == 1 and search.deadlines == 1
    assert search.p50_s == pytest.approx(0.4) and search.p95_s == pytest.approx(1.0)
    assert search.error_rate == pytest.approx(0.25) and search.deadline_rate == pytest.approx(0.25)


# --- 8. symbols and names ------------------------------------------------------------------------------------


async def test_help_explains_every_symbol_and_lists_every_panel() -> None:
    app = sample_app(controls=RecordingControls())
    async with app.run_test(size=(120, 60)) as pilot:
        await ready(pilot)
        await pilot.press("question_mark")
        await until(pilot, lambda: isinstance(app.screen, HelpScreen), what="help")
        text = app.screen.query_one("#help-text", Line).plain
        for symbol in ("◆", "◷", "⊘", "↯", "⋯", "✓!"):
            assert symbol in text, symbol
        for panel in ("Counters", "Recent requests", "Warnings", "Tools", "Events", "Tombstones", "In flight"):
            assert panel in text, panel


def test_names_are_words_and_the_deadline_has_one_name() -> None:
    f, events = generic_session(0)
    _in_flight(f, events, "7", 1.0, 10.0)
    events.append(f.make(Kind.REQUEST_END, 2.0, request_id="7", outcome="tool_error", duration_s=1.0))
    events.append(f.make(Kind.TOMBSTONE_ADD, 2.0, request_id="7", up_id="u7", ttl_s=100.0, reason="operator_cancel"))
    model = ConsoleModel()
    model.apply_many(events)
    view = model.view(3.0)
    row = request_row(view.requests[0], None, P)
    assert str(row[3]) == "✗ tool error"
    assert "operator cancelled" in _text(tombstones_panel(view.tombstones, P), 100)
    counters = _text(counters_panel(view.counters, P), 60)
    assert "deadline" in counters and "timeouts" not in counters


def test_a_degraded_ok_result_is_not_a_plain_ok() -> None:
    f, events = generic_session(0)
    _in_flight(f, events, "8", 1.0, 10.0, tool="consult_council")
    inner = {"answer": "…", "metadata": {"status": "partial", "synthesized_by": "fallback"}}
    preview = json.dumps({"content": [{"type": "text", "text": json.dumps(inner)}]})
    events.append(f.make(Kind.REQUEST_END, 2.0, request_id="8", outcome="ok", duration_s=1.0, result_preview=preview))
    model = ConsoleModel()
    model.apply_many(events)
    row = request_row(model.view(3.0).requests[0], None, P)
    assert str(row[3]) == "✓! ok, degraded" and "fallback summary" in str(row[5])


# --- 9. copy, export, screenshots --------------------------------------------------------------------------


async def test_screenshot_without_a_downloads_folder_saves_elsewhere_and_says_where(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("MCPWATCH_STATE_DIR", str(tmp_path))
    monkeypatch.setenv("HOME", str(tmp_path / "home-without-downloads"))
    monkeypatch.setenv("XDG_DOWNLOAD_DIR", str(tmp_path / "no-such-downloads"))
    app = sample_app()
    async with app.run_test(size=WIDE, notifications=True) as pilot:
        await ready(pilot)
        app.action_screenshot()
        await pilot.pause()
        messages = [n.message for n in app._notifications]
    saved = list(tmp_path.rglob("*.svg"))
    assert len(saved) == 1 and any(str(saved[0]) in m for m in messages)


# --- 10. small things ---------------------------------------------------------------------------------------


@pytest.mark.slow
async def test_a_live_council_console_from_its_panels_to_quitting(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """One live console over the council sample, in order: the council's panels are back; pause reads Resume and
    does not shift the layout; deadline 0 asks again before disabling the budget; a request's detail copies and
    exports (a second export never overwrites the first); q asks before leaving."""
    monkeypatch.setenv("MCPWATCH_STATE_DIR", str(tmp_path))
    controls = RecordingControls()
    app = sample_app(controls=controls)
    copied: list[str] = []
    monkeypatch.setattr(app, "copy_to_clipboard", copied.append)
    async with app.run_test(size=WIDE) as pilot:
        await ready(pilot)
        # A council gets its panels back.
        assert app.screen.query_one("#council").display and not app.screen.query_one("#tools").display

        # Pause reads Resume and does not shift the layout.
        body = app.screen.query_one("#body").region
        await pilot.press("p")
        await until(pilot, lambda: "Resume" in footer_descriptions(app.screen.query_one(Footer)), what="Resume")
        labels = footer_descriptions(app.screen.query_one(Footer))
        assert "Resume" in labels and "Pause" not in labels
        assert app.screen.query_one("#body").region == body
        await pilot.press("p")
        await until(pilot, lambda: "Pause" in footer_descriptions(app.screen.query_one(Footer)), what="Pause")

        # Deadline 0 asks again before disabling the budget.
        await pilot.press("d")
        await until(pilot, lambda: isinstance(app.screen, SecondsPrompt), what="the deadline prompt")
        assert "Now: no override; budget 105s" in str(app.screen.query_one(".dialog-text").render())
        await pilot.press("0", "enter")
        await pilot.pause(0.3)
        assert controls.calls == []  # nothing sent yet
        assert "DISABLES the deadline budget" in str(app.screen.query_one("#problem").render())
        await pilot.press("enter")
        await until(pilot, lambda: controls.calls == [("set_deadline", 0.0)], what="the second enter sends it")
        await until(pilot, lambda: isinstance(app.screen, MainScreen), what="the prompt to close")

        # The detail copies and exports the request.
        current(app, MainScreen).open_request("20")
        await until(pilot, lambda: isinstance(app.screen, RequestDetailScreen), what="the detail screen")
        await pilot.press("y")
        await until(pilot, lambda: len(copied) == 1, what="the copy")
        record = json.loads(copied[0])
        assert record["request_id"] == "20" and record["outcome"] == "deadline"
        assert record["timeline"] and record["replay"].startswith("mcpwatch replay --session ")
        assert " --at " in record["replay"]
        await pilot.press("Y")
        await until(pilot, lambda: len(copied) == 2, what="the Markdown copy")
        assert copied[1].startswith("### #20 ") and "**timeline**" in copied[1]
        await pilot.press("x")
        await until(pilot, lambda: len(list(tmp_path.rglob("request-*"))) == 2, what="the export")
        await pilot.press("x")  # a second export never overwrites the first
        await until(pilot, lambda: len(list(tmp_path.rglob("request-*"))) == 4, what="the second export")
        stem = f"request-{record['session_id']}-20"
        files = sorted(p.name for p in tmp_path.rglob("request-*"))
        assert files == [f"{stem}-2.json", f"{stem}-2.md", f"{stem}.json", f"{stem}.md"]
        assert json.loads(next(tmp_path.rglob(f"{stem}.json")).read_text())["request_id"] == "20"
        assert (next(tmp_path.rglob(f"{stem}.md")).stat().st_mode & 0o077) == 0  # private
        await pilot.press("escape")
        await until(pilot, lambda: isinstance(app.screen, MainScreen), what="back from the detail")

        # q asks before leaving a live console.
        await pilot.press("q")
        await until(pilot, lambda: isinstance(app.screen, Confirm), what="the quit question")
        await pilot.press("n")
        await until(pilot, lambda: isinstance(app.screen, MainScreen), what="back to the console")
        assert app.is_running
        await pilot.press("q")
        await until(pilot, lambda: isinstance(app.screen, Confirm), what="the quit question")
        await pilot.press("y")
        await until(pilot, lambda: not app.is_running, what="y to quit")
    assert not app.is_running


async def test_j_k_move_and_headers_sort() -> None:
    _, events = generic_session(6)
    app = sample_app(events=events, now=30.0, controls=RecordingControls())
    async with app.run_test(size=WIDE) as pilot:
        await ready(pilot)
        table = app.screen.query_one("#requests", WindowTable)
        await pilot.press("j")
        assert table.cursor_row == 1
        await pilot.press("k")
        assert table.cursor_row == 0
        await pilot.press("G")
        assert table.cursor_row == table.row_count - 1
        screen = app.screen
        assert isinstance(screen, MainScreen)
        screen.sort_requests("took")
        await pilot.pause(0.3)
        assert [str(table.get_row_at(i)[1]) for i in range(table.row_count)][:2] == ["6", "5"]  # slowest first
        screen.sort_requests("took")  # again: reversed
        await pilot.pause(0.3)
        assert str(table.get_row_at(0)[1]) == "1"
        assert "by took ↑" in str(screen.query_one("#requests-box").border_title)


def test_sort_orders() -> None:
    _, events = generic_session(12)
    model = ConsoleModel()
    model.apply_many(events)
    rows = model.view(40.0).requests
    assert [r.request_id for r in sort_requests(rows, "id")][:3] == ["1", "2", "3"]
    assert sort_requests(rows, "tool")[0].tool == "read_file"


def _text(renderable: Any, width: int) -> str:
    import io

    from rich.console import Console

    out = io.StringIO()
    Console(file=out, width=width, color_system=None).print(renderable)
    return out.getvalue()


# --- your own keys and themes ------------------------------------------------------------------------------------


@pytest.mark.slow
async def test_console_keys_rebind_an_action() -> None:
    from mcpwatch.console.app import ConsoleApp
    from mcpwatch.console.headless.session import WatchSession
    from mcpwatch.testing.sample import SAMPLE_NOW, sample_session

    feed = StaticFeed(sample_session(), SAMPLE_NOW)
    app = ConsoleApp(session=WatchSession(feed, RecordingControls()), keys={"main.set_margin": "f6", "nope.x": "z"})
    async with app.run_test(size=WIDE, notifications=True) as pilot:
        await ready(pilot)
        assert any("nope.x" in n.message for n in app._notifications)  # an unknown id is named
        await pilot.press("m")
        await pilot.pause(0.2)
        assert isinstance(app.screen, MainScreen)  # m no longer opens the margin prompt
        await pilot.press("f6")
        await until(pilot, lambda: isinstance(app.screen, SecondsPrompt), what="the margin prompt on f6")
        assert "Set the deadline margin" in str(app.screen.query_one(".dialog-title").render())


def test_console_keys_in_mcpwatch_toml(tmp_path: Path) -> None:
    from mcpwatch.config import load_settings
    from mcpwatch.errors import UserError

    good = tmp_path / "good.toml"
    good.write_text('[console.keys]\n"main.set_margin" = "M"\n"table.down" = "j, ctrl+n"\n', encoding="utf-8")
    assert load_settings(good).console.keys == {"main.set_margin": "M", "table.down": "j,ctrl+n"}
    bad = tmp_path / "bad.toml"
    bad.write_text('[console.keys]\n"main.set_margin" = 3\n', encoding="utf-8")
    with pytest.raises(UserError, match=r"main\.set_margin"):
        load_settings(bad)


def test_user_themes_beside_the_shipped_ones(tmp_path: Path) -> None:
    from mcpwatch.console.themes import ThemeError, load_themes

    (tmp_path / "night.toml").write_text('name = "night-shift"\nprimary = "#FF8800"\n', encoding="utf-8")
    (tmp_path / "dark.toml").write_text('name = "mcpwatch-dark"\nprimary = "#00FF00"\n', encoding="utf-8")
    themes = {t.name: t for t in load_themes(user=tmp_path)}
    assert "night-shift" in themes and "mcpwatch-light" in themes
    assert themes["mcpwatch-dark"].primary == "#00FF00"  # yours replaces the shipped one of that name
    (tmp_path / "broken.toml").write_text('name = "x"\nprimary = "not a colour"\n', encoding="utf-8")
    with pytest.raises(ThemeError, match=r"broken\.toml"):
        load_themes(user=tmp_path)


def test_the_host_shown_is_the_latest_to_connect() -> None:
    f, events = generic_session(1)
    events.append(f.make(Kind.HOST_INFO, 5.0, name="cursor", version="1.7", protocol_version="2025-11-25"))
    model = ConsoleModel()
    model.apply_many(events)
    bar = top_bar(model.view(6.0).header, "live", True, False, P).plain
    assert "host cursor 1.7" in bar and "claude-code" not in bar
