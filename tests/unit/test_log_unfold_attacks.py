"""The unfold (`store/unfold.py`, `EventReader`) attacked as whoever writes the log: a folded row whose `start_seq`
is text or bytes (hand-edited, or another program's), and the cost of a replay's seek probe, which must stay one
short walk of the index however much of the session follows it."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from mcpwatch.events import Event, Kind
from mcpwatch.store import EventReader, EventWriter

SID = "20260101-000000000-dddddd"


def _folded_log(path: Path, calls: int) -> Path:
    """A log of `calls` short calls, each folded into one row (seq 2n-1 the start, 2n the end)."""
    writer = EventWriter(path, fold_window=1.0)
    writer.start_session(name="x", upstream="u", pid=1, config={}, session_id=SID)
    for n in range(1, calls + 1):
        start, end = 2 * n - 1, 2 * n
        data = {"method": "tools/call", "arguments": "{}"}
        writer.emit(Event(Kind.REQUEST_START, SID, 1e9 + start, start / 1000, start, f"r{n}", "t", None, data))
        done = {"outcome": "ok", "duration_s": 0.001, "method": "tools/call"}
        writer.emit(Event(Kind.REQUEST_END, SID, 1e9 + end, end / 1000, end, f"r{n}", "t", None, done))
    writer.flush()
    writer.close()
    with sqlite3.connect(path) as conn:
        assert conn.execute("SELECT count(start_seq) FROM events").fetchone()[0] == calls
    return path


@pytest.mark.parametrize("damaged", ["'abc'", "x'00ff'"], ids=["text", "blob"])
def test_a_start_seq_that_is_not_a_number_reads_without_a_crash(tmp_path: Path, damaged: str) -> None:
    log = _folded_log(tmp_path / "events.db", 3)
    with sqlite3.connect(log) as conn:
        conn.execute(f"UPDATE events SET start_seq = {damaged} WHERE seq = 2")
    with EventReader(log) as reader:
        events = list(reader.events(SID))
    assert [(e.seq, e.kind) for e in events if e.seq != 2 and e.kind == "request_end"] == [
        (4, "request_end"),
        (6, "request_end"),
    ]
    assert sum(e.kind == "request_start" for e in events) == 3  # the damaged row's start is kept, not lost
    assert all(isinstance(e.seq, int) for e in events)  # placed at its row's seq: every consumer can order it


def _vm_steps(reader: EventReader, after_seq: int, last_seq: int, offset: int) -> int:
    """SQLite virtual-machine steps (in hundreds) one `event_at_offset` probe costs: a count, not a time."""
    steps = 0

    def count() -> int:
        nonlocal steps
        steps += 1
        return 0

    conn = reader._conn
    conn.set_progress_handler(count, 100)
    try:
        reader.event_at_offset(SID, after_seq, last_seq, offset)
    finally:
        conn.set_progress_handler(None, 100)
    return steps


def test_a_seek_probe_walks_offset_events_not_the_rest_of_the_session(tmp_path: Path) -> None:
    log = _folded_log(tmp_path / "events.db", 5000)
    with EventReader(log) as reader:
        last = reader.max_seq(SID)
        assert reader.event_at_offset(SID, 0, last, 7) == (7, 0.007)  # the starts count, in their places
        assert reader.event_at_offset(SID, last - 4, last, 4) == (last, last / 1000)
        assert reader.event_at_offset(SID, last - 4, last, 5) is None
        near_end = _vm_steps(reader, last - 100, last, 50)
        from_start = _vm_steps(reader, 0, last, 50)
    assert from_start <= 3 * near_end + 10, (from_start, near_end)  # was ~100x: every event after `after_seq`


def test_a_folded_call_exports_ids_that_stay_unique(tmp_path: Path) -> None:
    """A folded row stands for two events; both carried the row's id, so an export (`id` as a key in a table or a
    spreadsheet) held each id twice. The start has no row of its own: no id."""
    log = _folded_log(tmp_path / "events.db", 4)
    with EventReader(log) as reader:
        events = list(reader.events(SID))
    ids = [e.id for e in events if e.id is not None]
    assert len(events) == 8 and len(ids) == 4 and len(set(ids)) == 4
    assert all(e.id is None for e in events if e.kind == "request_start")
