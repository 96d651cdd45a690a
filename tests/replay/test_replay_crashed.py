"""A session whose wrapper died without recording its end replays as ended (crashed) at its last event."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from replay_helpers import make_feed, ready

from mcpwatch.logview.units import format_time
from mcpwatch.replay.app import ReplayApp
from mcpwatch.replay.recording import Recording

from pilot_tools import screen_text, until

pytestmark = pytest.mark.anyio

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "unit"))
from test_store_sample import dead_pid, write_sample  # noqa: E402


def test_a_crashed_session_ends_with_a_stand_in_at_its_last_event(tmp_path: Path) -> None:
    path = tmp_path / "events.db"
    sample = write_sample(path, name="crashed", end=False, pid=dead_pid())
    last = sample.emitted[-1]
    recording = Recording(path)
    events = list(recording.events())
    assert [e.seq for e in events[:-1]] == [e.seq for e in sample.emitted]
    end = events[-1]
    assert end.kind == "session_end" and end.seq == last.seq + 1 and recording.last_seq == end.seq
    assert (end.ts, end.mono) == (last.ts, last.mono)
    assert end.data["crashed"] and format_time(last.ts) in end.data["reason"]
    assert list(recording.events(after_seq=end.seq)) == []
    assert list(recording.events(limit=3)) == events[:3]
    recording.close()


def test_a_session_still_running_or_properly_ended_gets_no_stand_in(tmp_path: Path) -> None:
    path = tmp_path / "events.db"
    running = write_sample(path, name="live", end=False)  # this process: alive
    ended = write_sample(path, name="ended")
    for sample in (running, ended):
        recording = Recording(path, sample.session_id)
        assert [e.seq for e in recording.events()] == [e.seq for e in sample.emitted]
        recording.close()


@pytest.mark.slow
async def test_the_replay_console_says_the_session_crashed(tmp_path: Path, utc: None) -> None:
    path = tmp_path / "events.db"
    sample = write_sample(path, name="crashed", end=False, pid=dead_pid())
    feed = make_feed(path, start=sample.emitted[-1].mono + 1)
    app = ReplayApp(feed, refresh_s=0.1)
    async with app.run_test(size=(160, 48)) as pilot:
        await ready(pilot)
        await until(pilot, lambda: "crashed" in screen_text(app), what="the crashed session's end")
        text = screen_text(app)
        assert "ended: crashed — its wrapper stopped without recording an end" in text
        assert format_time(sample.emitted[-1].ts) in text
