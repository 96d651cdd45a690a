"""Trends: the per-minute rollups read from a real log (exact counts, percentiles, markers, windows, incremental
reads), the block charts, and the screen live and in replay (keys, palette, snapshots)."""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

import pytest
from console_helpers import RecordingControls, council_replay_app
from trends_helpers import ORIGIN, LoggedFeed, Script, standard_script

from mcpwatch.clock import ManualClock
from mcpwatch.console.app import ConsoleApp
from mcpwatch.console.commands import ConsoleCommands
from mcpwatch.console.headless import charts
from mcpwatch.console.headless.session import WatchSession
from mcpwatch.console.headless.trends import TrendLog, bucket_seconds, percentile
from mcpwatch.console.screens.trends import TrendsScreen
from mcpwatch.console.widgets import Line
from mcpwatch.store.reader import EventReader

from pilot_tools import until

SIZE = (150, 44)


pytestmark = pytest.mark.usefixtures("utc")  # wall-clock times on screen are local


@pytest.fixture
def logged(tmp_path: Path) -> tuple[Path, str]:
    path = tmp_path / "events.db"
    return path, standard_script().write(path)


def _read(path: Path, sid: str) -> TrendLog:
    log = TrendLog(str(path), sid)
    with EventReader(path) as reader:
        log.update(reader)
    return log


# -- the pure part ----------------------------------------------------------------------------------------------


def test_percentile_and_bucket_size() -> None:
    assert percentile([], 0.5) is None
    assert percentile([1.0, 2.0, 3.0, 4.0], 0.5) == 2.0
    assert percentile([float(v) for v in range(1, 101)], 0.95) == 95.0
    assert bucket_seconds(900) == 60.0
    assert bucket_seconds(3600) == 60.0
    assert bucket_seconds(3601) == 120.0  # 61 minutes do not fit 60 one-minute buckets
    assert bucket_seconds(11 * 3600) == 660.0


def test_fifteen_minutes_counts_every_call_in_its_minute(logged: tuple[Path, str]) -> None:
    path, sid = logged
    log = _read(path, sid)
    trends = log.trends("15 min", ORIGIN + 600.0)
    assert trends.bucket_s == 60.0
    assert trends.start_ts == ORIGIN - 300.0  # 15 whole minutes before 10:00
    by_tool = {t.tool: t for t in trends.tools}
    assert [t.tool for t in trends.tools] == ["search", "fetch"]  # busiest first
    search = by_tool["search"]
    # search starts at 1 + 20 i and takes 2 + i % 5 seconds: three calls end in each of the ten minutes.
    assert search.calls[5:] == [3] * 10 and sum(search.calls[:5]) == 0
    assert search.total_calls == 30 and search.total_deadlines == 1 and search.total_errors == 1
    assert search.deadlines[5 + 3] == 1  # call 10 ends at 0:203
    assert search.errors[5 + 6] == 1  # call 20 ends at 0:403
    assert search.p50_all_ms == 4000.0 and search.p95_all_ms == 6000.0
    fetch = by_tool["fetch"]
    assert fetch.calls[10:] == [2, 2, 2, 2, 2] and fetch.p95_ms[10] == 500.0 and fetch.p50_ms[0] is None
    assert trends.per_minute(3) == 3.0


def test_markers_are_config_changes_and_restarts(logged: tuple[Path, str]) -> None:
    path, sid = logged
    trends = _read(path, sid).trends("15 min", ORIGIN + 600.0)
    assert [(m.kind, m.bucket, m.text) for m in trends.markers] == [
        ("config", 9, "margin_s: 10.0 → 15.0"),
        ("restart", 12, "upstream restart (generation 2)"),
    ]


def test_a_window_ending_mid_minute_counts_only_what_ended_before(logged: tuple[Path, str]) -> None:
    path, sid = logged
    log = _read(path, sid)
    trends = log.trends("15 min", ORIGIN + 130.0)  # 2:10: the search calls ending at 2:03 and 2:26 straddle it
    search = next(t for t in trends.tools if t.tool == "search")
    assert search.calls[-1] == 1
    assert search.total_calls == 7  # ends at 3, 24, 45, 67, 88, 106, 123
    assert [m.kind for m in trends.markers] == []  # the margin change comes later
    later = log.trends("15 min", ORIGIN + 131.0)
    assert next(t for t in later.tools if t.tool == "search").total_calls == 7


def test_session_window_and_one_hour_window(logged: tuple[Path, str]) -> None:
    path, sid = logged
    log = _read(path, sid)
    whole = log.trends("session", ORIGIN + 600.0, session_start_ts=ORIGIN)
    assert whole.start_ts == ORIGIN and whole.buckets == 10
    assert sum(t.total_calls for t in whole.tools) == 40
    hour = log.trends("1 h", ORIGIN + 600.0)
    assert hour.buckets == 60 and sum(t.total_calls for t in hour.tools) == 40
    with pytest.raises(ValueError, match="unknown window"):
        log.trends("2 days", ORIGIN)


def test_a_live_log_is_read_from_where_it_left_off(tmp_path: Path) -> None:
    path = tmp_path / "events.db"
    script = Script().at(0.0, "session_start", data={})
    script.call(1.0, "search", "ok", 1.0, "1")
    sid = script.write(path, end=False)
    log = _read(path, sid)
    assert log.rows_read == 1
    before = log.trends("15 min", ORIGIN + 120.0)
    assert before.tools[0].total_calls == 1
    conn = sqlite3.connect(path)  # the wrapper goes on writing
    with conn:
        conn.execute(
            "INSERT INTO events (session_id, seq, ts, mono, kind, tool, data) VALUES (?, 9, ?, 70, 'request_end',"
            ' \'search\', \'{"outcome": "error", "duration_s": 3}\')',
            (sid, ORIGIN + 70.0),
        )
        conn.execute(  # damaged by hand: still counted, outcome and duration unknown
            "INSERT INTO events (session_id, seq, ts, mono, kind, tool, data) VALUES (?, 10, ?, 71, 'request_end',"
            " 'search', '{not json')",
            (sid, ORIGIN + 71.0),
        )
    conn.close()
    with EventReader(path) as reader:
        assert log.update(reader) == 2
        assert log.update(reader) == 0
    after = log.trends("15 min", ORIGIN + 120.0)
    search = after.tools[0]
    assert search.total_calls == 3 and search.total_errors == 1
    assert search.calls[-1] == 2 and search.p95_ms[-1] == 3000.0


def test_block_charts() -> None:
    assert charts.blocks([0, 1, 2, 4, 8], 5) == " ▁▂▄█"
    assert charts.blocks([None, 5.0], 4) == "  ██"
    assert charts.blocks([1.0], 3, top=8.0) == "▁▁▁"
    assert charts.marker_line(4, 8, [(1, "config"), (1, "restart"), (3, "config")]) == "  ◆   ▲ "
    assert charts.axis_line(3, 12, "10:00", "10:03") == "10:00  10:03"


# -- the screen -------------------------------------------------------------------------------------------------


def _live_app(path: Path, sid: str, *, now: float = ORIGIN + 600.0) -> ConsoleApp:
    feed = LoggedFeed(path, sid, now - ORIGIN)
    return ConsoleApp(
        session=WatchSession(feed, RecordingControls(), title="trends"),
        clock=ManualClock(monotonic=0.0, wall=now),
    )


def _body(app: ConsoleApp) -> str:
    return app.screen.query_one("#trends-body", Line).plain


async def _drawn(pilot: Any) -> None:
    await until(pilot, lambda: isinstance(pilot.app.screen, TrendsScreen) and pilot.app.screen.drawn_key, what="trends")
    await pilot.pause(0.1)


@pytest.mark.anyio
async def test_t_opens_trends_the_keys_switch_windows_and_the_palette_offers_it(logged: tuple[Path, str]) -> None:
    app = _live_app(*logged)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause(0.2)
        await pilot.press("T")
        await _drawn(pilot)
        text = _body(app)
        assert "search  30 calls · 1 deadline · 1 error · p50 4.0s · p95 6.0s" in text
        assert "fetch  10 calls" in text and "◆ 00:07  upstream restart (generation 2)" in text
        assert "▲ 00:04  margin_s: 10.0 → 15.0" in text
        screen = app.screen
        assert isinstance(screen, TrendsScreen) and screen.window == "15 min"
        await pilot.press("3")
        await until(pilot, lambda: screen.drawn_key and screen.drawn_key[0] == "session", what="session window")
        assert "one bar = 1 min" in _body(app) and "00:00" in _body(app)
        await pilot.press("w")
        assert screen.window == "15 min"
        await pilot.press("escape")
        assert not isinstance(app.screen, TrendsScreen)
        # the palette offers trends too, on the same app
        names = [name for name, _, _ in ConsoleCommands(app.screen)._commands()]
        assert "view: Trends" in names
        callback = next(cb for name, _, cb in ConsoleCommands(app.screen)._commands() if name == "view: Trends")
        callback()
        await _drawn(pilot)
        assert "search" in _body(app)


@pytest.mark.anyio
async def test_a_wrapper_without_a_readable_log_says_so(tmp_path: Path) -> None:
    app = _live_app(tmp_path / "gone.db", "nope")
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause(0.2)
        await pilot.press("T")
        # The reason names the log's path, so where it wraps depends on how long the temporary folder's name is.
        await until(pilot, lambda: "is not readable from here" in " ".join(_body(app).split()), what="the reason")


def test_trends_snapshot_live(snap_compare: Any, logged: tuple[Path, str]) -> None:
    async def open_trends(pilot: Any) -> None:
        await pilot.pause(0.2)
        await pilot.press("T")
        await _drawn(pilot)

    assert snap_compare(_live_app(*logged), terminal_size=SIZE, run_before=open_trends)


@pytest.mark.slow
def test_trends_snapshot_replay(snap_compare: Any, tmp_path: Path) -> None:

    async def open_trends(pilot: Any) -> None:
        await pilot.pause(0.3)
        await pilot.press("T")
        await _drawn(pilot)
        assert "consult_council" in _body(pilot.app)
        await pilot.press("3")
        await until(pilot, lambda: pilot.app.screen.drawn_key[0] == "session", what="session window")
        await pilot.pause(0.1)

    assert snap_compare(council_replay_app(tmp_path), terminal_size=SIZE, run_before=open_trends)
