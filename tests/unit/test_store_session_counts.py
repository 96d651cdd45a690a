"""The per-session counts the writer keeps: always what the aggregate over the events answers, back-filled into
a log written before they existed, removed by prune; and `sessions` reads them in work that does not grow with
the log (counted in SQLite VM steps, not in seconds)."""

from __future__ import annotations

import sqlite3
import subprocess
import sys
import threading
from pathlib import Path

from mcpwatch.clock import ManualClock
from mcpwatch.events import Event, Kind
from mcpwatch.store import EventReader, EventWriter, prune
from mcpwatch.store.batch import commit_batch
from mcpwatch.store.db import connect_writer
from mcpwatch.store.schema import MIGRATIONS
from mcpwatch.store.session_counts import AGGREGATE, READ, TABLE, batch_counts

# how an mcpwatch before folded calls (schema 5 and older) inserts its events: no `start_seq`
INSERT_EVENT = (
    "INSERT INTO events (session_id, seq, ts, mono, kind, request_id, tool, model, data) VALUES (?,?,?,?,?,?,?,?,?)"
)


def _aggregate(path: Path) -> dict[str, tuple]:
    with sqlite3.connect(path) as conn:
        return {r[0]: tuple(r[1:]) for r in conn.execute(AGGREGATE.format(where=""))}


def _table(path: Path) -> dict[str, tuple]:
    with sqlite3.connect(path) as conn:
        return {r[0]: tuple(r[1:]) for r in conn.execute(READ)}


def _calls(writer: EventWriter, sid: str, count: int, *, cut_every: int = 3, start: float = 1e9) -> None:
    for n in range(count):
        rid = str(n)
        writer.emit(Event(Kind.REQUEST_START, sid, start + n, n, 2 * n + 1, rid, "t", None, {"method": "tools/call"}))
        outcome = "deadline" if n % cut_every == 0 else "ok"
        # a result that merely mentions the word is not a cut
        data = {"outcome": outcome, "duration_s": 0.5, "result_preview": "no deadline here"}
        writer.emit(Event(Kind.REQUEST_END, sid, start + n + 0.5, n + 0.5, 2 * n + 2, rid, "t", None, data))
        if n % 4 == 0:
            writer.emit(Event(Kind.TOMBSTONE_HIT, sid, start + n + 0.7, n + 0.7, 10**6 + n, rid, "t", None, {}))


def test_the_counts_equal_the_aggregate_over_the_events(tmp_path: Path) -> None:
    path = tmp_path / "events.db"
    writer = EventWriter(path, clock=ManualClock())
    first = writer.start_session(name="a", upstream="stdio: x", pid=1, config={})
    second = writer.start_session(name="b", upstream="stdio: y", pid=2, config={})
    _calls(writer, first, 50)
    assert writer.flush(10)
    _calls(writer, second, 7, cut_every=2, start=2e9)
    _calls(writer, first, 10, start=3e9)  # a later batch adds to the same row
    writer.close()
    table, aggregate = _table(path), _aggregate(path)
    assert table == aggregate and set(table) == {first, second}
    assert table[second][:4] == (7 * 2 + 2, 7, 4, 2)  # events, requests, cut (0, 2, 4, 6), late drops (0, 4)
    with EventReader(path) as reader:
        shown = {s.id: (s.events, s.requests, s.timeouts, s.late_drops, s.last_ts) for s in reader.sessions()}
    assert shown == {sid: tuple(row) for sid, row in aggregate.items()}


def test_a_batch_is_summed_per_session_with_damaged_data_counted_as_no_cut() -> None:
    rows = [
        ("s", 1, 5.0, 0, "request_end", "1", "t", None, '{"outcome": "deadline"', None),  # damaged JSON
        ("s", 2, 4.0, 0, "request_end", "2", "t", None, '{"outcome": "deadline"}', None),
        ("s", 3, 3.0, 0, "request_start", "3", "t", None, "{}", None),
    ]
    assert batch_counts(rows) == [("s", 3, 1, 1, 0, 5.0)]
    # a folded call: one row, two events, one request (and its cut counted as any end's)
    folded = ("s", 5, 6.0, 0, "request_end", "4", "t", None, '{"outcome": "deadline", "start": {"seq": 4}}', 4)
    assert batch_counts([*rows, folded]) == [("s", 5, 2, 2, 0, 6.0)]


def test_an_older_log_is_back_filled_when_first_read(tmp_path: Path) -> None:
    path = tmp_path / "events.db"
    old = MIGRATIONS[:3]
    connect_writer(path, steps=old).close()
    conn = sqlite3.connect(path, isolation_level=None)
    conn.execute("INSERT INTO sessions (id, name, started_at) VALUES ('old', 'before', 1.0)")
    rows = [
        ("old", 1, 10.0, 0.0, "request_start", "1", "t", None, "{}"),
        ("old", 2, 12.0, 2.0, "request_end", "1", "t", None, '{"outcome": "deadline"}'),
        ("old", 3, 13.0, 3.0, "tombstone_hit", "1", "t", None, "{}"),
    ]
    conn.executemany(INSERT_EVENT, rows)
    assert conn.execute(f"SELECT count(*) FROM sqlite_master WHERE name = '{TABLE}'").fetchone()[0] == 0
    conn.close()
    with EventReader(path) as reader:  # upgrades in place, then reads the table
        (session,) = reader.sessions()
    assert (session.events, session.requests, session.timeouts, session.late_drops, session.last_ts) == (
        3,
        1,
        1,
        1,
        13.0,
    )
    assert _table(path) == _aggregate(path)


def test_prune_removes_a_sessions_counts_with_its_events(tmp_path: Path) -> None:
    path = tmp_path / "events.db"
    clock = ManualClock()
    writer = EventWriter(path, clock=clock)
    gone = writer.start_session(name="old", upstream="stdio: x", pid=1, config={})
    _calls(writer, gone, 3, start=clock.time())
    writer.end_session(gone, "done")
    writer.close()
    result = prune(path, older_than_s=0.0, now=clock.time() + 10)
    assert result.removed == 1
    assert _table(path) == {} == _aggregate(path)


def _steps_to_list(path: Path) -> int:
    """SQLite VM steps that `sessions()` takes (a count of work, the same on any machine under any load)."""
    steps = [0]
    with EventReader(path) as reader:
        reader._conn.set_progress_handler(lambda: steps.__setitem__(0, steps[0] + 1), 100)
        reader.sessions()
    return steps[0]


def test_listing_sessions_does_not_grow_with_the_log(tmp_path: Path) -> None:
    small, large = tmp_path / "small.db", tmp_path / "large.db"
    for path, calls in ((small, 10), (large, 5000)):
        writer = EventWriter(path, clock=ManualClock())
        sid = writer.start_session(name="n", upstream="stdio: x", pid=1, config={})
        _calls(writer, sid, calls)
        writer.close()
    assert _steps_to_list(large) <= _steps_to_list(small) + 2  # the old aggregate: about 500 times more


def test_a_hand_edited_counts_row_of_odd_types_never_breaks_the_readers(tmp_path: Path) -> None:
    """Whoever can write the log can put any SQLite value in any column (a column's type is only an affinity):
    text, a blob, a float too large for an int. The session still lists, each odd count as 0 and an odd time as
    unknown, rather than a traceback for every reader of the log."""
    path = tmp_path / "events.db"
    writer = EventWriter(path, clock=ManualClock())
    sids = [writer.start_session(name=f"s{n}", upstream="stdio: x", pid=1, config={}) for n in range(4)]
    for sid in sids:
        _calls(writer, sid, 3)
    writer.close()
    odd = [
        ("'many'", "x'00ff'", "1e400", "'soon'"),
        ("x'01'", "-1e400", "'1'", "1e400"),
        ("'-3'", "'2.5'", "x''", "'x'"),
    ]
    with sqlite3.connect(path) as conn:
        for sid, (events, requests, timeouts, last_ts) in zip(sids, odd, strict=False):
            conn.execute(
                f"UPDATE {TABLE} SET events = {events}, requests = {requests}, timeouts = {timeouts},"
                f" late_drops = {events}, last_ts = {last_ts} WHERE session_id = ?",
                (sid,),
            )
    with EventReader(path) as reader:
        listed = {s.id: s for s in reader.sessions()}
        one = reader.session(sids[0])
    assert set(listed) == set(sids)
    assert (one.events, one.requests, one.timeouts, one.late_drops, one.last_ts) == (0, 0, 0, 0, None)
    assert listed[sids[1]].timeouts == 1 and listed[sids[1]].last_ts is None  # text of a number is that number
    assert (listed[sids[2]].events, listed[sids[2]].requests, listed[sids[2]].timeouts) == (0, 0, 0)
    assert listed[sids[3]].events == 3 * 2 + 1  # the untouched row reads as written
    for info in listed.values():
        info.to_dict()  # what `sessions --json` prints


def test_events_an_older_writer_adds_after_the_upgrade_are_counted_all_the_same(tmp_path: Path) -> None:
    """A wrapper of the version before the counts checked the log's version when it opened it and keeps writing
    after a newer mcpwatch upgraded the file: its events are in no count. Before, `sessions` then said 3 events
    for ever where the log held 6; now a reader adds what is above the table's mark, and the next batch of any
    writer that keeps counts adds it to the table."""
    path = tmp_path / "events.db"
    connect_writer(path, steps=MIGRATIONS[:4]).close()
    old_writer = sqlite3.connect(path, isolation_level=None)  # the older wrapper: inserts, counts nothing
    old_writer.execute("INSERT INTO sessions (id, name, started_at) VALUES ('old', 'before', 1.0)")
    old_writer.executemany(
        INSERT_EVENT, [("old", n, 10.0 + n, n, "request_start", str(n), "t", None, "{}") for n in (1, 2, 3)]
    )
    with EventReader(path) as reader:  # the newer mcpwatch upgrades the log in place
        assert reader.session("old").events == 3
    late = [("old", 4, 20.0, 4.0, "request_end", "1", "t", None, '{"outcome": "deadline"}')]
    late += [("old", n, 20.0 + n, n, "tombstone_hit", "1", "t", None, "{}") for n in (5, 6)]
    old_writer.executemany(INSERT_EVENT, late)  # still running, still not counting
    with EventReader(path) as reader:
        seen = reader.session("old")
        listed = {s.id: s for s in reader.sessions()}
    assert (seen.events, seen.requests, seen.timeouts, seen.late_drops, seen.last_ts) == (6, 3, 1, 2, 26.0)
    assert listed["old"].to_dict() == seen.to_dict()
    writer = EventWriter(path, clock=ManualClock())
    sid = writer.start_session(name="new", upstream="stdio: x", pid=1, config={})
    _calls(writer, sid, 5)
    writer.close()
    old_writer.execute(INSERT_EVENT, ("old", 7, 30.0, 7.0, "request_start", "7", "t", None, "{}"))
    assert {k: v for k, v in _table(path).items() if k != "old"} == {
        k: v for k, v in _aggregate(path).items() if k != "old"
    }
    with EventReader(path) as reader:
        assert {
            s.id: (s.events, s.requests, s.timeouts, s.late_drops, s.last_ts) for s in reader.sessions()
        } == _aggregate(path)
    old_writer.close()
    writer = EventWriter(path, clock=ManualClock())
    _calls(writer, writer.start_session(name="again", upstream="stdio: x", pid=1, config={}), 1)
    writer.close()
    assert _table(path) == _aggregate(path)  # the table itself caught up with the older writer's events


def _steps_counting_an_older_writer(path: Path, calls: int) -> int:
    """SQLite steps (per 100) of one listing and one batch's commit on a log of `calls` counted calls, beside three
    events an older writer added."""
    writer = EventWriter(path, clock=ManualClock())
    _calls(writer, writer.start_session(name="n", upstream="stdio: x", pid=1, config={}), calls)
    writer.close()
    old_writer = sqlite3.connect(path, isolation_level=None)
    old_writer.execute("INSERT INTO sessions (id, name, started_at) VALUES ('old', 'before', 1.0)")
    old_writer.executemany(
        INSERT_EVENT, [("old", n, 10.0 + n, n, "request_start", str(n), "t", None, "{}") for n in (1, 2, 3)]
    )
    old_writer.close()
    steps = [0]
    with EventReader(path) as reader:
        reader._conn.set_progress_handler(lambda: steps.__setitem__(0, steps[0] + 1), 100)
        assert reader.session("old").events == 3
    conn = connect_writer(path)
    conn.set_progress_handler(lambda: steps.__setitem__(0, steps[0] + 1), 100)
    row = ("old", 4, 20.0, 4.0, "tombstone_hit", "1", "t", None, "{}", None)
    assert commit_batch(conn, threading.Lock(), [row], [], write_attempts=1, busy_attempts=1, note_error=print) is None
    conn.close()
    assert _table(path) == _aggregate(path)
    return steps[0]


def test_counting_an_older_writers_events_reads_those_events_alone(tmp_path: Path) -> None:
    """While an older wrapper (which counts nothing) shares the log, every batch of a newer writer and every
    `sessions` adds up the events above the mark. The planner read them through the session index, so each batch
    and each listing read the whole log: about 800 times more SQLite steps on a log of 5,000 calls than on one of
    10. Counted in the steps of one batch's commit and one listing, which load does not change."""
    steps = {
        label: _steps_counting_an_older_writer(tmp_path / f"{label}.db", calls)
        for label, calls in (("small", 10), ("large", 5000))
    }
    assert steps["large"] <= steps["small"] + 5


WRITER_PROCESS = """
import sys
from mcpwatch.events import Event, Kind
from mcpwatch.store import EventWriter
path, name, count = sys.argv[1], sys.argv[2], int(sys.argv[3])
writer = EventWriter(path, flush_interval=0.001)
sid = writer.start_session(name=name, upstream="stdio: x", pid=1, config={})
for n in range(count):
    writer.emit(Event(Kind.REQUEST_START, sid, 1e9 + n, n, 2 * n + 1, str(n), "t", None, {"method": "tools/call"}))
    outcome = "deadline" if n % 3 == 0 else "ok"
    writer.emit(Event(Kind.REQUEST_END, sid, 1e9 + n, n, 2 * n + 2, str(n), "t", None, {"outcome": outcome}))
    if n % 50 == 0:
        writer.flush(30)  # many small transactions, interleaved with the other process's
writer.close()
"""


def test_two_writer_processes_on_one_log_keep_counts_equal_to_the_events(tmp_path: Path) -> None:
    path = tmp_path / "events.db"
    EventWriter(path).close()  # the log exists, at the current version, before either starts
    script = tmp_path / "writer.py"
    script.write_text(WRITER_PROCESS)
    writers = [subprocess.Popen([sys.executable, str(script), str(path), name, "2000"]) for name in ("first", "second")]
    assert [w.wait(120) for w in writers] == [0, 0]
    with sqlite3.connect(path) as conn:
        # every call folded or not, the events the rows stand for (a folded row, `start_seq` set, two)
        assert conn.execute("SELECT count(*) + count(start_seq) FROM events").fetchone()[0] == 2 * 4000
    assert _table(path) == _aggregate(path) and len(_table(path)) == 2
