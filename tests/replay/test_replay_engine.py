"""The replay engine without a screen: seeks and steps land on exactly what a fresh fold gives, checkpoints and the
index are built right (in a thread or a child process), and seeks the index cannot bound yet are refused."""

from __future__ import annotations

import math
import random
import sqlite3
import time
from pathlib import Path

import pytest
from replay_helpers import assert_same_as_fold, fold_until, write_log

from mcpwatch.console.headless.model import ConsoleModel
from mcpwatch.events import Kind
from mcpwatch.replay.engine import (
    MAX_CHECKPOINTS,
    Index,
    ReplayEngine,
    ThreadIndexer,
    checkpoint_interval,
    pack,
    unpack,
)
from mcpwatch.replay.indexer import ProcessIndexer
from mcpwatch.replay.recording import Recording
from mcpwatch.testing.sample import SAMPLE_NOW, sample_session

from waiting import patience


def _engine(path: Path, every: int = 250, *, indexed: bool = True) -> ReplayEngine:
    recording = Recording(path)
    engine = ReplayEngine(recording, every=every)
    if indexed:
        ThreadIndexer(recording, engine.index).run()
    return engine


@pytest.mark.slow
def test_seeks_anywhere_equal_a_fresh_fold(shared_log: tuple[Path, str]) -> None:
    engine = _engine(shared_log[0])
    events = list(engine.recording.events())
    assert engine.index.done and len(engine.index.checkpoints) == 1 + len(events) // 250
    rng = random.Random(4)
    times = [rng.uniform(0, engine.recording.end_mono) for _ in range(25)]
    times += [0.0, engine.recording.end_mono, events[1500].mono]  # the ends, and an instant several events share
    for t in times:  # forwards and backwards, from the cursor and from checkpoints
        assert engine.seek(t)
        assert_same_as_fold(engine.model, fold_until(events, t), t)
        assert engine.ordinal == sum(1 for e in events if e.mono <= t)
    engine.close()


def test_checkpoint_keeps_a_request_and_its_tombstone_one_object() -> None:
    """A late answer after a restored checkpoint must show on the request's detail, as it did live."""
    events = sample_session()
    hit = next(i for i, e in enumerate(events) if e.kind == Kind.TOMBSTONE_HIT)
    live = ConsoleModel()
    live.apply_many(events)
    before = ConsoleModel()
    before.apply_many(events[:hit])
    in_memory = ConsoleModel.restore(before.snapshot())
    packed = ConsoleModel()
    packed.load(unpack(pack(before.snapshot())))  # as the index keeps them
    adopted = ConsoleModel()
    adopted.adopt(unpack(pack(before.snapshot())))  # as a seek restores them
    for restored in (in_memory, packed, adopted):
        restored.apply_many(events[hit:])
        assert_same_as_fold(restored, live, SAMPLE_NOW)
        detail = restored.request_detail("20", SAMPLE_NOW)
        assert detail == live.request_detail("20", SAMPLE_NOW)
        assert detail is not None and detail.tombstone is not None and detail.tombstone.hits == 1
        assert detail.timeline[-1].kind == "tombstone_hit"


def test_steps_move_one_event_and_back(shared_log: tuple[Path, str]) -> None:
    engine = _engine(shared_log[0])
    events = list(engine.recording.events())
    assert engine.seek(events[700].mono)
    start = engine.ordinal
    stepped = [engine.step_forward() for _ in range(3)]
    assert [e.seq for e in stepped if e] == [e.seq for e in events[start : start + 3]]
    assert engine.ordinal == start + 3
    for _ in range(5):
        assert engine.step_back()
    reference = ConsoleModel()
    reference.apply_many(events[: start - 2])
    assert engine.ordinal == start - 2 and engine.seq == events[start - 3].seq
    now = events[start - 3].mono
    assert_same_as_fold(engine.model, reference, now)
    assert engine.seek_ordinal(0) and engine.ordinal == 0 and not engine.step_back()
    engine.close()


def test_a_seek_the_index_cannot_bound_yet_is_refused_until_it_can(tmp_path: Path) -> None:
    path = tmp_path / "events.db"
    write_log(path, 2000)
    engine = _engine(path, every=200, indexed=False)
    end = engine.recording.end_mono
    assert engine.seek(end) is False and engine.ordinal == 0  # nothing changed
    assert engine.seek(0.5)  # near the cursor: one indexed lookup says it is within an interval
    near = engine.ordinal
    assert 0 < near < 200
    assert engine.seek(end, force=True) and engine.at_end and engine.ordinal == 2000
    assert engine.seek(end / 2) is False  # backwards, far from any checkpoint the index has
    ThreadIndexer(engine.recording, engine.index).run()
    assert engine.seek(end / 2)
    events = list(engine.recording.events())
    assert_same_as_fold(engine.model, fold_until(events, end / 2), end / 2)
    engine.close()


def test_playing_forward_folds_at_most_the_limit_and_jumps_by_checkpoint(shared_log: tuple[Path, str]) -> None:
    engine = _engine(shared_log[0])
    events = list(engine.recording.events())
    assert engine.seek(0.0)
    assert engine.advance(events[40].mono, limit=100)  # a short way: folded in full
    assert engine.ordinal == sum(1 for e in events if e.mono <= events[40].mono)
    assert not engine.advance(events[200].mono, limit=10)  # stopped short: the caller holds its clock back
    assert engine.ordinal == sum(1 for e in events if e.mono <= events[40].mono) + 10
    far = events[2500].mono  # many checkpoints ahead: restored, then at most one interval folded
    assert engine.advance(far, limit=250)
    assert_same_as_fold(engine.model, fold_until(events, far), far)
    engine.close()


def test_markers_and_problem_navigation(shared_log: tuple[Path, str]) -> None:
    engine = _engine(shared_log[0])
    markers = engine.index.markers
    assert markers is not None
    kinds = {m.kind for m in markers}
    assert kinds == {"deadline", "error", "late_drop", "config"}
    events = {e.seq: e for e in engine.recording.events()}
    for m in markers:
        event = events[m.seq]
        assert event.mono == m.mono
        if m.kind == "late_drop":
            assert event.kind == Kind.TOMBSTONE_HIT
        elif m.kind == "config":
            assert event.kind == Kind.CONFIG_CHANGE and "margin_s" in m.text
        else:
            assert event.kind == Kind.REQUEST_END and event.data["outcome"] != "ok"
            assert (event.data["outcome"] == "deadline") == (m.kind == "deadline")
    problems = [m for m in markers if m.is_problem]
    first = engine.next_problem(-1.0)
    assert first == problems[0]
    after = engine.next_problem(first.mono)
    assert after is not None and after.mono > first.mono
    assert engine.previous_problem(after.mono) == next(m for m in reversed(problems) if m.mono < after.mono)
    assert engine.previous_problem(first.mono) is None
    assert engine.next_problem(engine.recording.end_mono) is None
    engine.close()


@pytest.mark.slow
def test_the_child_process_builds_the_same_index(shared_log: tuple[Path, str]) -> None:
    here = _engine(shared_log[0])
    recording = Recording(shared_log[0])
    there = Index(recording.last_seq, 250)
    indexer = ProcessIndexer(recording, there)
    indexer.start()
    deadline = time.monotonic() + patience(30)
    while not (there.done or there.error) and time.monotonic() < deadline:
        time.sleep(0.02)
    indexer.stop()
    assert there.error is None and there.done and indexer.pid is not None
    assert there.markers == here.index.markers
    assert [(c.ordinal, c.seq, c.mono) for c in there.checkpoints] == [
        (c.ordinal, c.seq, c.mono) for c in here.index.checkpoints
    ]
    mid = there.checkpoints[len(there.checkpoints) // 2]
    assert mid.blob is not None
    a, b = ConsoleModel(), ConsoleModel()
    a.load(unpack(mid.blob))
    b.load(unpack(here.index.checkpoints[len(there.checkpoints) // 2].blob or b""))
    assert a.view(mid.mono) == b.view(mid.mono)
    recording.close()
    here.close()


def test_a_child_that_never_starts_leaves_the_index_to_a_thread(shared_log: tuple[Path, str]) -> None:
    recording = Recording(shared_log[0])
    index = Index(recording.last_seq, 500)
    indexer = ProcessIndexer(recording, index, python="/bin/false")  # starts, says nothing, exits 1
    indexer.start()
    deadline = time.monotonic() + patience(30)
    while not (index.done or index.error) and time.monotonic() < deadline:
        time.sleep(0.02)
    indexer.stop()
    assert index.done and index.error is None and len(index.checkpoints) == 1 + 3000 // 500
    recording.close()


def test_a_file_corrupt_further_in_stops_the_index_with_a_message(tmp_path: Path) -> None:
    path = tmp_path / "events.db"
    write_log(path, 3000)
    recording = Recording(path)  # opens fine: the first and last events are readable
    size = path.stat().st_size
    with path.open("r+b") as handle:  # trash the middle of the file, where the events' pages are
        handle.seek(size // 2)
        handle.write(b"\x00\xff" * 40_000)
    index = Index(recording.last_seq, 250)
    ThreadIndexer(recording, index).run()  # no exception: the error is kept for the screen
    assert not index.done and index.error is not None
    assert str(path) in index.error and ("corrupt" in index.error or "malformed" in index.error)
    recording.close()


def test_checkpoint_interval_keeps_memory_bounded() -> None:
    assert checkpoint_interval(1000) == checkpoint_interval(1_000_000) == 3000
    assert math.ceil(10_000_000 / checkpoint_interval(10_000_000)) <= MAX_CHECKPOINTS


def test_recording_opens_without_reading_the_session(shared_log: tuple[Path, str]) -> None:
    path, session_id = shared_log
    recording = Recording(path, session_id[:12])
    assert recording.session_id == session_id and recording.session.name == "council"
    assert recording.first is not None and recording.first.kind == Kind.SESSION_START
    assert recording.last is not None and recording.last.kind == Kind.SESSION_END
    assert recording.last_seq == 3000 and recording.end_mono == recording.last.mono
    conn = sqlite3.connect(path)
    start, end = conn.execute("SELECT min(ts), max(ts) FROM events").fetchone()
    conn.close()
    assert recording.origin_ts == pytest.approx(start) and end - start == pytest.approx(recording.end_mono)
    assert recording.event_at_offset(0, 3) == (3, list(recording.events(limit=3))[-1].mono)
    assert recording.event_at_offset(2999, 2) is None
    recording.close()
