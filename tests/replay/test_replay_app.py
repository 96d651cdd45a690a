"""The replay console driven by its keys (Pilot), over a real log, with the replay clock on a hand-moved wall."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from replay_helpers import HandClock, fold_until, make_feed, ready, timeline_text, write_log
from textual.widgets import Input

from mcpwatch.console.commands import ConsoleCommands
from mcpwatch.console.screens.base import OPERATOR_ACTIONS
from mcpwatch.console.screens.detail import RequestDetailScreen
from mcpwatch.console.screens.help import HelpScreen
from mcpwatch.console.widgets import Line, ScrollPanel
from mcpwatch.replay.app import GotoPrompt, ReplayApp, ReplayMainScreen
from mcpwatch.replay.engine import ThreadIndexer
from mcpwatch.replay.feed import ReplayFeed

from pilot_tools import current, screen_text, until

pytestmark = pytest.mark.anyio

SIZE = (160, 48)


def _app(feed: ReplayFeed) -> ReplayApp:
    return ReplayApp(feed, refresh_s=0.1)


@pytest.mark.slow
async def test_step_jump_and_speed_keys(shared_log: tuple[Path, str]) -> None:
    feed = make_feed(shared_log[0], start=60.0)
    events = list(feed.engine.recording.events())
    app = _app(feed)
    async with app.run_test(size=SIZE) as pilot:
        await ready(pilot)
        at = feed.engine.ordinal
        assert at == sum(1 for e in events if e.mono <= 60.0) and feed.shown == 60.0
        await pilot.press("right")
        assert feed.engine.ordinal == at + 1 and feed.shown == events[at].mono
        assert f"event {at + 1:,} of 3,000" in timeline_text(app)
        await pilot.press("left", "left")
        assert feed.engine.ordinal == at - 1 and feed.shown == events[at - 2].mono
        assert feed.model.view(feed.shown) == fold_until(events, feed.shown).view(feed.shown)
        await pilot.press("shift+right")
        assert feed.shown == pytest.approx(events[at - 2].mono + 10)
        await pilot.press("shift+left", "shift+left")
        assert feed.shown == pytest.approx(events[at - 2].mono - 10)
        await pilot.press("right_square_bracket", "right_square_bracket")
        assert feed.clock.speed == 4.0
        await pilot.press("left_square_bracket")
        assert feed.clock.speed == 2.0
        assert "⏸ 2×" in timeline_text(app)


@pytest.mark.slow
async def test_space_plays_at_the_speed_and_pauses(shared_log: tuple[Path, str]) -> None:
    wall = HandClock()
    feed = make_feed(shared_log[0], wall=wall, start=30.0)
    events = list(feed.engine.recording.events())
    app = _app(feed)
    async with app.run_test(size=SIZE) as pilot:
        await ready(pilot)
        await pilot.press("right_square_bracket")  # 2×
        await pilot.press("space")
        assert feed.clock.playing
        wall.advance(5.0)  # ten seconds of session time
        await until(pilot, lambda: feed.shown == 40.0, what="the clock to reach 0:40")
        await until(pilot, lambda: "▶ 2×" in timeline_text(app) and "0:40" in timeline_text(app))
        assert feed.engine.ordinal == sum(1 for e in events if e.mono <= 40.0)
        assert "replay ▶ 2× 0:40" in app.screen.query_one("#topbar", Line).plain
        await pilot.press("space")
        wall.advance(5.0)
        await pilot.pause(0.2)
        assert not feed.clock.playing and feed.shown == 40.0


@pytest.mark.slow
async def test_n_and_shift_n_go_to_deadlines_errors_and_late_drops(shared_log: tuple[Path, str]) -> None:
    feed = make_feed(shared_log[0])
    problems = [m for m in feed.markers() if m.is_problem]
    app = _app(feed)
    async with app.run_test(size=SIZE) as pilot:
        await ready(pilot)
        await pilot.press("n")
        assert feed.shown == problems[0].mono
        await pilot.press("n", "n")
        assert feed.shown == problems[2].mono
        target = problems[2]
        view = feed.model.view(feed.shown)
        if target.kind == "late_drop":
            assert view.counters.late_dropped >= 1
        else:  # the call it stopped at is the newest finished one, with that outcome
            assert view.requests[0].request_id == target.request_id and view.requests[0].outcome != "ok"
        await pilot.press("N")
        assert feed.shown == problems[1].mono
        feed.seek(feed.clock.end)
        await pilot.press("n")
        assert feed.shown == feed.clock.end  # nothing later: stays, and says so


@pytest.mark.slow
async def test_goto_explains_a_bad_value_and_goes_to_a_good_one(shared_log: tuple[Path, str]) -> None:
    feed = make_feed(shared_log[0])
    app = _app(feed)
    async with app.run_test(size=SIZE) as pilot:
        await ready(pilot)
        await pilot.press("g")
        await until(pilot, lambda: isinstance(app.screen, GotoPrompt), what="the dialog")
        box = app.screen.query_one(Input)
        box.value = "soon"
        await pilot.press("enter")
        problem = str(app.screen.query_one("#problem").render())
        assert isinstance(app.screen, GotoPrompt) and "not a time: 'soon'" in problem and "1m30s" in problem
        box.value = "99:00"
        await pilot.press("enter")
        assert isinstance(app.screen, GotoPrompt)
        assert "past the end: the recording lasts" in str(app.screen.query_one("#problem").render())
        box.value = "1:30"
        await pilot.press("enter")
        await until(pilot, lambda: not isinstance(app.screen, GotoPrompt), what="the dialog to close")
        assert feed.shown == 90.0
        await pilot.press("g")
        await until(pilot, lambda: isinstance(app.screen, GotoPrompt))
        await pilot.press("escape")
        await until(pilot, lambda: not isinstance(app.screen, GotoPrompt))
        assert feed.shown == 90.0
        await pilot.press("g")  # typed, not set: the replay keys (n, space, [ ]) must reach the box
        await until(pilot, lambda: isinstance(app.screen, GotoPrompt))
        await pilot.press("e", "n", "d", "enter")
        await until(pilot, lambda: not isinstance(app.screen, GotoPrompt), what="the dialog to close")
        assert feed.shown == feed.engine.recording.end_mono


@pytest.mark.slow
async def test_operator_actions_are_absent_the_filter_keeps_its_keys_and_a_detail_copies_and_exports(
    shared_log: tuple[Path, str], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """README: operator actions are absent in replay — not bound, on the main screen or a request's detail. Keys
    typed in the filter do not drive the replay. Help lists y · Y · x for a request's detail; in replay they copy
    and export too (a recording is read, not changed). One app run, in that order."""
    from mcpwatch.console.headless import export
    from mcpwatch.replay.app import ReplayDetailScreen

    monkeypatch.setattr(export, "export_dir", lambda: tmp_path)
    feed = make_feed(shared_log[0], start=120.0)
    app = _app(feed)
    copied: list[str] = []
    monkeypatch.setattr(app, "copy_to_clipboard", copied.append)
    async with app.run_test(size=SIZE) as pilot:
        await ready(pilot)
        actions = {b.binding.action for b in app.screen.active_bindings.values()}
        assert not actions & (OPERATOR_ACTIONS | {"pause"})
        assert {"toggle_play", "goto", "problem(1)", "step(1)"} <= actions
        bound = {b.action for bindings in app.screen._bindings.key_to_bindings.values() for b in bindings}
        assert not bound & (OPERATOR_ACTIONS | {"pause"}) and "filter" in bound
        before = feed.engine.ordinal
        await pilot.press("h", "m", "c", "d", "t", "p")
        await pilot.pause(0.1)
        assert not current(app, ReplayMainScreen).session.paused
        assert feed.engine.ordinal == before
        names = [name for name, _, _ in ConsoleCommands(app.screen)._commands()]
        assert not [n for n in names if n.startswith("operator:") or "pause the view" in n]
        assert {"replay: play", "replay: go to a time…", "replay: next deadline, error or late drop"} <= set(names)
        await pilot.press("question_mark")
        await until(pilot, lambda: isinstance(app.screen, HelpScreen))
        text = app.screen.query_one("#help-text", Line).plain
        assert "Replay" in text and "go to a time" in text and "not available here" in text
        assert "pause the view" not in text and "health check now" not in text and "cancel the selected" not in text
        await pilot.press("space")  # over the help, the replay keys do nothing
        assert not feed.clock.playing
        await pilot.press("escape")
        await until(pilot, lambda: not isinstance(app.screen, HelpScreen))

        # Typing in the filter does not drive the replay.
        await pilot.press("slash")
        await pilot.press(*"n g", "right", "left_square_bracket")
        box = app.screen.query_one("#filter", Input)
        assert box.value == "n g["
        assert feed.engine.ordinal == before and not feed.clock.playing and feed.clock.speed == 1.0
        await pilot.press("escape")
        await pilot.press("right")  # the filter closed: the keys drive the replay again
        assert feed.engine.ordinal == before + 1

        # A request's detail: no operator keys; y, Y and x copy and export.
        main = current(app, ReplayMainScreen)
        await until(pilot, lambda: main.last_view is not None and bool(main.last_view.requests))
        assert main.last_view is not None
        request_id = main.last_view.requests[0].request_id
        main.open_request(request_id)
        await until(pilot, lambda: isinstance(app.screen, ReplayDetailScreen))
        await pilot.pause(0.2)
        bound = {b.action for bindings in app.screen._bindings.key_to_bindings.values() for b in bindings}
        assert not bound & OPERATOR_ACTIONS
        await pilot.press("y")
        await until(pilot, lambda: len(copied) == 1, what="y to copy the request as JSON")
        assert copied[0].lstrip().startswith("{") and request_id in copied[0]
        await pilot.press("Y")
        await until(pilot, lambda: len(copied) == 2, what="Y to copy the request as Markdown")
        assert not copied[1].lstrip().startswith("{")
        await pilot.press("x")
        await until(pilot, lambda: len(list(tmp_path.iterdir())) == 2, what="x to export JSON and Markdown")
        await pilot.press("escape", "q")
        await until(pilot, lambda: not app.is_running, what="q to quit")


@pytest.mark.slow
async def test_the_detail_screen_follows_the_replay_and_redraws_a_draw_cut_short(
    shared_log: tuple[Path, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A running call's detail follows the replay past its deadline. Paused, nothing changes to make the detail
    screen draw again: a draw that failed half-way (as when a tick meets a screen still being built) must not be
    remembered as done."""
    from mcpwatch.console.headless import render_detail

    feed = make_feed(shared_log[0])
    deadline = next(m for m in feed.markers() if m.kind == "deadline")
    feed.seek(deadline.mono - 1.0)  # the call still running, a second before its budget ends
    app = _app(feed)
    async with app.run_test(size=SIZE) as pilot:
        await ready(pilot)
        assert deadline.request_id is not None
        current(app, ReplayMainScreen).open_request(deadline.request_id)
        await until(pilot, lambda: isinstance(app.screen, RequestDetailScreen))
        await until(pilot, lambda: "still running" in screen_text(app), what="the running call")
        screen = app.screen
        assert isinstance(screen, RequestDetailScreen)

        # A draw cut short is done again by the next tick.
        feed.seek(deadline.mono + 1.0)
        real = render_detail.timeline_panel

        def broken(*args: object, **kwargs: object) -> object:
            raise RuntimeError("cut short")

        monkeypatch.setattr(render_detail, "timeline_panel", broken)
        with pytest.raises(RuntimeError):
            screen.refresh_view()
        monkeypatch.setattr(render_detail, "timeline_panel", real)
        timeline = screen.query_one("#timeline", Line)
        await until(pilot, lambda: "deadline after" in timeline.plain, what="the next tick to draw the timeline")

        # Back before the deadline, then past it with a key from the detail screen.
        feed.seek(deadline.mono - 1.0)
        await until(pilot, lambda: "still running" in screen_text(app), what="the running call again")
        await pilot.press("shift+right")  # past the deadline, from the detail screen
        await until(pilot, lambda: "◷ deadline" in screen_text(app), what="the deadline in the detail")
        assert "tombstone" in screen_text(app)


async def test_a_far_seek_waits_for_the_index_and_then_lands(tmp_path: Path) -> None:
    path = tmp_path / "events.db"
    write_log(path, 3000)
    feed = make_feed(path, every=200, indexed=False)
    app = _app(feed)
    async with app.run_test(size=SIZE) as pilot:
        await ready(pilot)
        assert feed.seek(feed.clock.end * 0.8) is False
        app.redraw()
        assert "going to" in timeline_text(app) and "indexing the recording, 0%" in timeline_text(app)
        indexer = ThreadIndexer(feed.engine.recording, feed.index)  # now let it index (the app's feed would
        indexer.start()  # have started a child process on mount)
        await until(pilot, lambda: feed.pending is None, what="the pending seek")
        assert feed.shown == feed.clock.end * 0.8
        await until(pilot, lambda: "going to" not in timeline_text(app))
        indexer.stop()


async def test_small_terminal_keeps_the_replay_keys_and_the_counts(shared_log: tuple[Path, str]) -> None:
    feed = make_feed(shared_log[0])
    deadline = [m for m in feed.markers() if m.kind == "deadline"][1]
    feed.seek(deadline.mono + 5.0)
    app = _app(feed)
    async with app.run_test(size=(80, 24)) as pilot:
        await ready(pilot)
        await pilot.pause(0.2)
        keys = [a.binding.key for a in app.screen.active_bindings.values() if a.binding.show]
        assert {"q", "question_mark", "space", "g", "n"} <= set(keys)
        bar = timeline_text(app).splitlines()
        assert len([line for line in bar if line.strip()]) == 3  # the status line does not wrap out of the bar
        assert "◷2" in bar[2] and "✗" in bar[2]
        inflight = app.screen.query_one("#inflight")
        assert inflight.size.height >= 5  # several in-flight rows, not one
        assert "Tombstones" in screen_text(app) and "#" in app.screen.query_one("#tombstones", ScrollPanel).plain


@pytest.mark.slow
async def test_toasts_keep_clear_of_the_timeline_bar(
    shared_log: tuple[Path, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    feed = make_feed(shared_log[0], start=60.0)
    app = _app(feed)
    notify = app.notify

    def lasting(*args: Any, **kwargs: Any) -> None:
        """A toast lasts 3 s from when it is posted: on a loaded machine it could be gone before it was drawn.
        Where it is placed is what this test is about, so it stays until looked at."""
        kwargs["timeout"] = 600.0
        notify(*args, **kwargs)

    monkeypatch.setattr(app, "notify", lasting)
    async with app.run_test(size=(100, 30), notifications=True) as pilot:
        await ready(pilot)
        await pilot.press("n")
        await until(pilot, lambda: app.screen.query("Toast"), what="a toast")
        await pilot.pause(0.1)
        bar = app.screen.query_one("#timeline").region
        for toast in app.screen.query("Toast"):
            assert not toast.region.overlaps(bar), (toast.region, bar)
