"""The replay feed without a screen: the time it reports is always one the model is folded up to exactly."""

from __future__ import annotations

import time
from pathlib import Path

import pytest
from replay_helpers import HandClock, fold_until, make_feed, write_log

from mcpwatch.bench.replay import measure
from mcpwatch.console.headless.session import WatchSession
from mcpwatch.replay.feed import ReplayFeed, open_replay
from mcpwatch.store import EventWriter

from waiting import patience


def test_playing_faster_than_folding_holds_the_clock_back(shared_log: tuple[Path, str]) -> None:
    wall = HandClock()
    feed = make_feed(shared_log[0], wall=wall, every=1000, playing=True)
    session = WatchSession(feed, None, model=feed.model)
    events = list(feed.engine.recording.events())
    feed.clock.set_speed(64.0)
    wall.advance(1.0)  # 64 s of session: hundreds of events
    assert feed.pump(feed.model, limit=50) == 50  # a slow machine: 50 events a tick
    shown = session.now()
    assert shown < 64.0 and feed.clock.now() == shown  # held back to where the fold is
    assert feed.model.view(shown) == fold_until(events, shown).view(shown)
    assert feed.pump(feed.model, limit=50) == 0  # no wall time passed: the clock is where the fold stopped
    assert session.now() == shown
    wall.advance(0.5)  # the clock carries on from where it was held, at its speed
    session.pump()
    assert session.now() == pytest.approx(shown + 32.0)
    now = session.now()
    assert feed.model.view(now) == fold_until(events, now).view(now)
    assert feed.status().text.startswith("replay ▶ 64× ") and feed.status().connected


def test_play_at_the_end_starts_again_from_the_start(shared_log: tuple[Path, str]) -> None:
    wall = HandClock()
    feed = make_feed(shared_log[0], wall=wall)
    feed.seek(feed.clock.end)
    assert feed.engine.at_end and feed.step(1) == "at the end of the recording"
    assert feed.toggle_play()
    feed.pump(feed.model)
    assert feed.shown == 0.0 and feed.engine.ordinal == sum(1 for e in feed.engine.recording.events() if e.mono <= 0)


def test_an_open_session_without_events_replays_as_empty(tmp_path: Path) -> None:
    path = tmp_path / "events.db"
    with EventWriter(path) as writer:
        writer.start_session(name="idle", upstream="x", pid=1, config={})
    feed: ReplayFeed = open_replay(path, indexer="thread")
    feed.start()
    try:
        assert feed.clock.end == 0.0 and feed.engine.at_end
        assert feed.pump(feed.model) == 0 and feed.step(1) == "at the end of the recording"
        assert feed.step(-1) == "at the start of the recording"
        deadline = time.monotonic() + patience(10)
        while not feed.index.done and time.monotonic() < deadline:
            time.sleep(0.01)
        assert feed.index.done and feed.next_problem(1) == "no later deadline, error or late drop"
        view = feed.model.view(feed.now_mono(feed.model))
        assert not view.has_session and view.events_applied == 0
    finally:
        feed.close()


def test_a_file_corrupt_further_in_pauses_the_replay_and_says_so(tmp_path: Path) -> None:
    path = tmp_path / "events.db"
    write_log(path, 3000)
    with path.open("r+b") as handle:  # one page of garbage, where the later events' pages are
        handle.seek(int(path.stat().st_size * 0.85) // 8192 * 8192)
        handle.write(b"\x00\xff" * 4096)
    wall = HandClock()
    feed = open_replay(path, indexer="none", wall=wall)  # opens fine: the first and last events are readable
    feed.clock.set_speed(1024.0)
    assert feed.clock.playing  # open_replay plays unless asked to start paused
    for _ in range(100):
        wall.advance(1.0)
        feed.pump(feed.model)  # never raises
        if feed.problem:
            break
    assert feed.problem is not None and str(path) in feed.problem and not feed.clock.playing
    shown = feed.shown
    assert 0 < feed.engine.ordinal < 3000 and shown == feed.engine.mono
    assert feed.model.view(shown).events_applied > 0  # what was read before the bad page is still shown
    assert feed.position().note.startswith("⚠ ") and str(path) in feed.position().note
    assert feed.step(1) == feed.problem  # trying again fails again, with the same one line
    assert feed.seek(feed.clock.end) is False and feed.pending is None
    feed.close()


@pytest.mark.slow
@pytest.mark.bench
def test_the_benchmark_measures_and_judges_a_small_session(tmp_path: Path) -> None:
    # A previous run's recording (not even a log) and its side files: replaced, not added to or opened
    (tmp_path / "replay.db").write_bytes(b"an older recording")
    (tmp_path / "replay.db-wal").write_bytes(b"its write-ahead log")
    (tmp_path / "replay.db-shm").write_bytes(b"its shared memory")
    figures = measure(3000, seeks=5, folder=tmp_path)
    assert figures["events"] == 3000 and figures["index_error"] is None and figures["checkpoints"] >= 1
    assert figures["seek_ms"]["samples"] == 5 and figures["markers"] > 0
    assert set(figures["verdict"]) == {"open_and_first_frame_le_1_5s", "every_seek_le_150ms", "rss_le_300mb"}
    assert figures["open_and_first_frame_s"] > 0 and figures["rss_mb"]["peak"] > 0  # its value: the benchmark's
    # the recording is kept, so that it can be replayed afterwards, and the figures say how
    assert figures["recording"] == str(tmp_path / "replay.db") and (tmp_path / "replay.db").stat().st_size > 0
    assert figures["replay_it"].startswith(f"mcpwatch replay {tmp_path / 'replay.db'} --session ")
    assert (tmp_path / "replay.db").read_bytes().startswith(b"SQLite format 3\x00")
    assert {p.read_bytes() for p in tmp_path.glob("replay.db-*")}.isdisjoint(
        {b"its write-ahead log", b"its shared memory"}
    )
    assert sorted(p.name for p in tmp_path.iterdir() if not p.name.startswith("replay.db")) == []
