"""The fold attacked as whoever writes the log and as an upstream: a flood of short calls behind one that never ends
(the held events stay bounded), a call whose end never comes (its start is written when its window ends), clocks
that jump either way, two writers on one log, and a wrapper killed with -9 (the log keeps a prefix of what was
emitted, and an open call's start once its window has passed)."""

from __future__ import annotations

import os
import random
import signal
import sqlite3
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import pytest
from writer_wake import CountingWake, warning

from mcpwatch.clock import ManualClock
from mcpwatch.events import Event, Kind
from mcpwatch.store import EventReader, EventWriter
from mcpwatch.store.fold import CallFolder, expand

from waiting import patience, wait_until

SID = "20260101-000000000-cccccc"


def _start(seq: int, rid: str, sid: str = SID) -> Event:
    return Event(Kind.REQUEST_START, sid, 1e9 + seq, seq, seq, rid, "t", None, {"method": "tools/call", "up_id": seq})


def _end(seq: int, rid: str, sid: str = SID) -> Event:
    return Event(Kind.REQUEST_END, sid, 1e9 + seq, seq, seq, rid, "t", None, {"outcome": "ok", "duration_s": 0.001})


def _short_calls(first_seq: int, count: int, sid: str = SID) -> list[Event]:
    out = []
    for n in range(count):
        seq = first_seq + 2 * n
        out += [_start(seq, f"c{seq}", sid), _end(seq + 1, f"c{seq}", sid)]
    return out


def test_a_flood_behind_a_call_that_never_ends_holds_a_bounded_number_of_events() -> None:
    folder = CallFolder(window=60.0, held_max=100)
    folder.admit([_start(1, "never")], now=0.0)
    written: list[object] = []
    for batch in range(50):  # 50,000 events, the clock standing: only the bound can let them through
        folder.admit(_short_calls(2 + 1000 * batch, 500), now=0.0)
        written += folder.take(now=0.0)
        assert len(folder) <= 100
    assert expand(written)[0].request_id == "never"  # given up on: written as a row of its own, first
    assert sum(item.__class__ is tuple for item in written) >= 24_000  # the short calls still fold


def test_what_is_committed_never_passes_a_folded_start_whose_row_waits() -> None:
    # A folded (start 1, end 4) behind call 3, still open; event 2 lies between the start and its row: giving 2 out
    # while 1 waits in its row would leave a gap (a kill keeps it; a reader tailing by seq moves past 1 for good).
    folder = CallFolder(window=10.0)  # the events' own times are their seqs: every call here is short
    folder.admit([_start(1, "a"), warning(SID, 2), _start(3, "b"), _end(4, "a")], now=0.0)
    assert [e.seq for e in folder.take(now=0.5)] == [1, 2]  # call a written as two rows, not held
    folder.admit([_end(5, "b")], now=0.6)
    assert [[e.seq for e in expand([row])] for row in folder.take(now=0.6)] == [[4], [3, 5]]


def test_steady_overlapping_calls_commit_a_gapless_prefix_and_keep_up() -> None:
    # Calls always in flight, each short (folded when it can), their ends in any order: after every take what was
    # given out is seqs 1..n with no gap, and what is held stays within the window's worth of batches.
    rng = random.Random(5)
    folder = CallFolder(window=3.0)
    seq, folded = 0, 0
    opened: list[str] = []
    written: list[int] = []
    for batch in range(300):
        events = []
        for _ in range(20):
            seq += 1
            if opened and (len(opened) > 15 or rng.random() < 0.5):
                events.append(_end(seq, opened.pop(rng.randrange(len(opened)))))
            else:
                opened.append(f"c{seq}")
                events.append(_start(seq, f"c{seq}"))
        events = [replace(e, mono=e.seq * 0.001) for e in events]  # every call far shorter than the window
        folder.admit(events, now=float(batch))
        rows = folder.take(now=float(batch))
        folded += sum(row.__class__ is tuple for row in rows)
        written += [e.seq for e in expand(rows)]
        assert sorted(written) == list(range(1, len(written) + 1))
        assert len(folder) <= 5 * 20, batch  # about the window (3 batches) of events, never the whole stream
    assert folded > 1000


def test_a_call_whose_end_never_comes_is_written_when_its_window_ends() -> None:
    folder = CallFolder(window=0.05)
    folder.admit([_start(1, "never"), warning(SID, 2)], now=10.0)
    assert folder.take(now=10.049) == [] and folder.due_in(10.049) == pytest.approx(0.001)
    assert [e.seq for e in folder.take(now=10.05)] == [1, 2]
    assert not folder.holding and folder.due_in(10.05) is None


@pytest.mark.parametrize("later", [-3600.0, 1e9])
def test_a_clock_that_jumps_never_keeps_a_start_held(later: float) -> None:
    folder = CallFolder(window=0.05)
    folder.admit([_start(1, "a")], now=100.0)
    assert folder.due_in(100.0 + later) == 0.0
    assert [e.seq for e in folder.take(now=100.0 + later)] == [1]


def test_a_host_reusing_an_id_in_flight_keeps_every_start() -> None:
    folder = CallFolder(window=1.0)
    events = [_start(1, "x"), _start(2, "x"), _end(3, "x"), _end(4, "x")]
    folder.admit(events, now=0.0)
    out = folder.take(now=0.0, everything=True)
    assert expand(out) == events
    assert [item.__class__ is tuple for item in out] == [False, True, False]  # the second start with the first end


def test_the_writer_writes_an_open_start_when_its_window_ends_and_then_sleeps(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(EventWriter, "wake_factory", CountingWake)
    CountingWake.made.clear()
    clock = ManualClock()
    path = tmp_path / "events.db"
    with EventWriter(path, clock=clock, fold_window=0.05) as writer:
        (wake,) = CountingWake.made
        sid = writer.start_session(name="w", upstream="stdio: x", pid=1, config={})
        writer.emit(_start(1, "slow", sid))
        writer.emit(warning(sid, 2))
        wait_until(lambda: 0 < (wake.timeouts[-1] or 0) < 0.06, what="the writer waiting out the window")
        with EventReader(path) as reader:
            assert list(reader.events(sid)) == []  # held: the call may still end within its window
        clock.advance(0.05)
        wait_until(lambda: _kinds(path, sid) == ["request_start", "warning"], what="the start written")
        assert wake.asleep.wait(patience(10)), "the writer keeps waking with nothing held"
        assert wake.timeouts[-1] is None


def test_a_clock_jumping_back_does_not_hold_a_start(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(EventWriter, "wake_factory", CountingWake)
    CountingWake.made.clear()
    clock = ManualClock(monotonic=5000.0)
    path = tmp_path / "events.db"
    with EventWriter(path, clock=clock, fold_window=0.05) as writer:
        (wake,) = CountingWake.made
        sid = writer.start_session(name="w", upstream="stdio: x", pid=1, config={})
        writer.emit(_start(1, "slow", sid))
        wait_until(lambda: 0 < (wake.timeouts[-1] or 0) < 0.06, what="the writer holding the start")
        clock._mono -= 3600.0  # the injected clock jumps back an hour
        writer.emit(warning(sid, 2))
        wait_until(lambda: _kinds(path, sid) == ["request_start", "warning"], what="the start written")


def _kinds(path: Path, sid: str) -> list[str]:
    with EventReader(path) as reader:
        return [e.kind for e in reader.events(sid)]


def test_two_writers_on_one_log_fold_their_own_calls(tmp_path: Path) -> None:
    path = tmp_path / "events.db"
    first, second = EventWriter(path, fold_window=60.0), EventWriter(path, fold_window=60.0)
    emitted: dict[str, list[Event]] = {}
    for n, writer in enumerate((first, second)):
        sid = writer.start_session(name=f"w{n}", upstream="stdio: x", pid=1, config={})
        emitted[sid] = _short_calls(1, 300, sid)  # the same request ids in both sessions
    for k in range(0, 600, 50):  # interleaved batches
        for events, writer in zip(emitted.values(), (first, second), strict=True):
            for event in events[k : k + 50]:
                writer.emit(event)
    first.close()
    second.close()
    with EventReader(path) as reader:
        for sid, events in emitted.items():
            assert [(e.seq, e.kind, e.request_id) for e in reader.events(sid)] == [
                (e.seq, e.kind, e.request_id) for e in events
            ]
            assert reader.session(sid).requests == 300 and reader.session(sid).events == 600


KILLED = """
import sys, time
from mcpwatch.events import Event, Kind
from mcpwatch.store import EventWriter

writer = EventWriter(sys.argv[1], fold_window=float(sys.argv[2]), flush_interval=0.01)
sid = writer.start_session(name="killed", upstream="stdio: x", pid=1, config={})
print(sid, flush=True)
seq = 0
def emit(kind, rid, **data):
    global seq
    seq += 1
    writer.emit(Event(kind, sid, 1e9 + seq, seq * 1e-4, seq, rid, "t", None, data))  # calls of 0.2 ms: folded
emit(Kind.REQUEST_START, "open", method="tools/call")  # a call that stays open
for n in range(100000):  # then short calls until killed
    emit(Kind.REQUEST_START, f"c{n}", method="tools/call")
    emit(Kind.PROGRESS, f"c{n}", progress=1)
    emit(Kind.REQUEST_END, f"c{n}", outcome="ok", duration_s=0.001)
    time.sleep(0.0005)
"""


def test_a_wrapper_killed_inside_the_window_leaves_a_prefix_of_what_it_emitted(tmp_path: Path) -> None:
    path = tmp_path / "events.db"
    script = tmp_path / "killed.py"
    script.write_text(KILLED)
    child = subprocess.Popen(
        [sys.executable, str(script), str(path), "0.05"], stdout=subprocess.PIPE, text=True, env={**os.environ}
    )
    try:
        sid = child.stdout.readline().strip()  # type: ignore[union-attr]  # a pipe
        # the open call's start is written once its window has passed, while short calls keep coming
        wait_until(lambda: path.exists() and len(_seqs(path, sid)) > 300, what="the log written while calls go on")
        child.send_signal(signal.SIGKILL)  # somewhere inside a window: short calls are held back
        child.wait(patience(10))
    finally:
        if child.poll() is None:
            child.kill()
            child.wait()
    seqs = _seqs(path, sid)
    assert seqs == list(range(1, len(seqs) + 1))  # a prefix: nothing after a lost event, no call half there
    with sqlite3.connect(path) as conn:  # and the short calls were folded (which is what held them back)
        assert conn.execute("SELECT count(*) FROM events WHERE start_seq IS NOT NULL").fetchone()[0] > 50
    with EventReader(path) as reader:
        first = next(reader.events(sid))
        assert (first.kind, first.request_id) == (Kind.REQUEST_START, "open")
        ends = [e for e in reader.events(sid) if e.kind == Kind.REQUEST_END]
        assert all(e.data == {"outcome": "ok", "duration_s": 0.001} for e in ends)  # each end as emitted


def _seqs(path: Path, sid: str) -> list[int]:
    with EventReader(path) as reader:
        return [e.seq for e in reader.events(sid)]


def test_a_call_longer_than_the_window_is_two_rows_however_late_the_writer_sees_it() -> None:
    folder = CallFolder(window=0.05)
    late = _end(2, "a")
    late.mono = 1.051  # the call took 50 ms and 1 µs by its own events' times
    quick = _end(4, "b")
    quick.mono = 3.05
    folder.admit([_start(1, "a"), late, _start(3, "b"), quick], now=0.0)  # all seen by the writer at once
    out = folder.take(now=0.0)
    assert [item.__class__ is tuple for item in out] == [False, False, True]
