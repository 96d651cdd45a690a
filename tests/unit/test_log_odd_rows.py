"""A log's rows as whoever writes the file may leave them (a hand edit, a damaged disk, an older mcpwatch beside a
newer one): seqs near int64's ends, of text, bytes or huge floats, seqs and start seqs shared by several rows. Every
read gives the expansion of the rows into their events in seq order (a folded row's start before any row of its
seq), or one clear line; never a traceback, never an event out of its place, never one lost."""

from __future__ import annotations

import json
import random
import sqlite3
import tracemalloc
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from mcpwatch.clock import ManualClock
from mcpwatch.store import EventReader, EventWriter
from mcpwatch.store import reader as reader_module
from mcpwatch.store.batch import INSERT_EVENT
from mcpwatch.store.db import LogError, connect_writer
from mcpwatch.store.schema import MIGRATIONS
from mcpwatch.store.unfold import COLUMNS, number, row_event, sql_order, start_event

SID = "20260101-000000000-cccccc"
TS = 1_767_225_600.0
INT64_MAX = 2**63 - 1
Seen = tuple[Any, str, str]  # (seq, kind, request id) of an event


def _row(seq: Any, start_seq: Any = None, rid: str = "r", mono: float = 1.0, kept_mono: Any = 0.5) -> tuple[Any, ...]:
    """An events row: a folded call's end (its start kept, at `start_seq`) or, without `start_seq`, a progress."""
    if start_seq is None:
        return (SID, seq, TS, mono, "progress", rid, "t", None, "{}", None)
    kept = json.dumps({"outcome": "ok", "start": {"ts": TS, "mono": kept_mono, "data": {}}})
    return (SID, seq, TS, mono, "request_end", rid, "t", None, kept, start_seq)


def _log(path: Path, rows: Sequence[tuple[Any, ...]]) -> Path:
    conn = connect_writer(path)
    conn.execute(
        "INSERT INTO sessions (id, name, upstream, pid, started_at, version, config) VALUES (?,?,?,?,?,?,?)",
        (SID, "s", "stdio: x", 1, TS, "0.1.0", "{}"),
    )
    conn.executemany(INSERT_EVENT, rows)
    conn.close()
    return path


def _expansion(path: Path, after_seq: Any) -> list[Seen]:
    """Every row's events (a folded row: its start, at start_seq when an integer, else at its own seq; then the
    row), in SQLite's order of seq, a start before the rows of its seq: what every read must give."""
    with sqlite3.connect(path) as conn:
        rows = conn.execute("SELECT id, seq, kind, request_id, start_seq FROM events WHERE session_id = ?", (SID,))
        placed: list[tuple[tuple[Any, ...], Seen]] = []
        for eid, seq, kind, rid, start_seq in rows.fetchall():
            placed.append(((sql_order(seq), 1, eid), (seq, kind, rid)))
            if start_seq is not None:
                at = start_seq if start_seq.__class__ is int else seq
                placed.append(((sql_order(at), 0, eid), (at, "request_start", rid)))
    placed.sort()
    return [seen for key, seen in placed if key[0] > sql_order(after_seq)]


def _check_read(path: Path, after_seq: Any = 0) -> list[Seen]:
    """The events read equal the expansion as a whole, and come in its order (ties of seq between rows aside)."""
    with EventReader(path) as reader:
        read = [(e.seq, str(e.kind), e.request_id or "") for e in reader.events(SID, after_seq=after_seq)]
    expected = _expansion(path, after_seq)
    assert sorted(map(repr, read)) == sorted(map(repr, expected))
    places = [(sql_order(seq), kind != "request_start") for seq, kind, _ in read]
    assert places == sorted(places), read
    return read


@pytest.mark.parametrize("page", [1, 2, 3, 7])
def test_seqs_near_int64_s_ends_read_in_order(tmp_path: Path, page: int, monkeypatch: pytest.MonkeyPatch) -> None:
    """A page ending within FOLD_NEAR of int64's top made the reader ask for rows up to past it (an OverflowError
    out of `events`); at its bottom the starts before a page's rows are reached all the same."""
    monkeypatch.setattr(reader_module, "EVENTS_PAGE", page)
    top = [_row(INT64_MAX - 9 + n) for n in range(6)] + [_row(INT64_MAX - 2, INT64_MAX - 3, "c"), _row(INT64_MAX)]
    path = _log(tmp_path / "top.db", top)
    assert len(_check_read(path, after_seq=INT64_MAX - 20)) == len(top) + 1
    with EventReader(path) as reader:  # a seek's probe there too (its walk past the rows ends past int64)
        found = [reader.event_at_offset(SID, INT64_MAX - 20, INT64_MAX, n) for n in range(1, len(top) + 3)]
    assert found == [*_brute_force(path, INT64_MAX - 20, INT64_MAX), None]
    bottom = [_row(-(2**63) + 1), _row(-(2**63) + 3, -(2**63) + 2, "c"), _row(-(2**63) + 515, -(2**63) + 4, "d")]
    bottom.append(_row(INT64_MAX, -(2**63) + 5, "e"))  # seq - start_seq past int64: SQLite makes it a float
    path = _log(tmp_path / "bottom.db", bottom)
    assert len(_check_read(path, after_seq=-(2**63))) == len(bottom) + 3


@pytest.mark.parametrize("odd", ["text", b"\x01bytes", 1e300, 40.5], ids=["text", "bytes", "huge", "fraction"])
def test_a_page_edge_on_a_seq_no_integer_reads_on(tmp_path: Path, odd: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    """A page whose last row has a seq of text, bytes or a float past int64 made the next read of starts fail
    (`upto + FOLD_NEAR` on text, an int of the float too big for SQLite): a TypeError or OverflowError, not events."""
    monkeypatch.setattr(reader_module, "EVENTS_PAGE", 3)
    rows = [_row(1), _row(3, 2, "c"), _row(odd, None, "o1"), _row(odd, None, "o2"), _row(odd, None, "o3")]
    assert len(_check_read(_log(tmp_path / "log.db", rows))) == len(rows) + 1


def test_a_start_at_the_edge_of_what_is_read_comes_before_its_row(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Rows sharing a seq (by hand) split by a page of the rows read past the page: the unread one's start, exactly
    FOLD_NEAR before, was taken as given already, and came after the row of its own seq."""
    monkeypatch.setattr(reader_module, "EVENTS_PAGE", 2)
    rows = [_row(100), _row(104), _row(612, 103, "x"), _row(612, 102, "b"), _row(612, 100, "c")]
    read = _check_read(_log(tmp_path / "log.db", rows))
    assert read[:2] == [(100, "request_start", "c"), (100, "progress", "r")]


def test_far_starts_sharing_a_start_seq_are_each_read(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Rows far from a start seq they share (by hand) across a page of `events_by_start`: the page after resumed
    past the shared value and lost the rest."""
    monkeypatch.setattr(reader_module, "EVENTS_PAGE", 2)
    rows = [_row(1), *(_row(2000 + n, 5, f"f{n}") for n in range(5))]
    read = _check_read(_log(tmp_path / "log.db", rows))
    assert sum(1 for _, kind, _ in read if kind == "request_start") == 5


def _hostile_session(seed: int, odd_types: bool = False) -> list[tuple[Any, ...]]:
    """Rows at gaps of 0 (a shared seq), 1, 511, 512, 513; starts near, at the bound, far, equal to their row's seq,
    after it, at or below 0, shared; kept times numbers, missing, text. With `odd_types`, seqs and start seqs of
    text, bytes, fractions and floats past int64 too (shared as well)."""
    rng = random.Random(seed)
    rows, seq = [], 0
    for n in range(rng.randint(5, 40)):
        seq += rng.choice([0, 1, 1, 2, 511, 512, 513])
        start: Any = None
        if rng.random() < 0.6:
            start = seq - rng.choice([1, 2, 511, 512, 513, 0, -3, seq, seq + 5])
        at: Any = seq
        if odd_types and rng.random() < 0.3:
            at = rng.choice(["t", "u", b"\x01", seq + 0.5, 1e300])
            start = rng.choice([start, "x", b"\x02", seq - 0.5, seq - 600.5])
        kept_mono = rng.choice([float(seq) - 0.5, None, "late", 7])
        rows.append(_row(at, start, f"r{n}", mono=float(seq) + 0.25, kept_mono=kept_mono))
    return rows


@pytest.mark.parametrize("odd_types", [False, True], ids=["integers", "odd-types"])
@pytest.mark.parametrize("page", [1, 3, 2000])
def test_hostile_sessions_read_as_their_expansion(
    tmp_path: Path, page: int, odd_types: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    """(With odd types, a page's rows sharing a float seq past 2**53 were taken as read: seq - 513 is that seq.)"""
    monkeypatch.setattr(reader_module, "EVENTS_PAGE", page)
    for seed in range(40):
        rows = _hostile_session(seed, odd_types)
        path = _log(tmp_path / f"{seed}.db", rows)
        middle = rows[len(rows) // 2][1]
        for after in (0, middle if isinstance(middle, int) else 7):
            _check_read(path, after_seq=after)


def _brute_force(path: Path, after_seq: int, last_seq: int) -> list[tuple[int, float]]:
    """(seq, mono) of every event in (after_seq, last_seq], each row expanded by `unfold` (which defines a folded
    row's events), in seq order, a start before the rows of its seq."""
    with sqlite3.connect(path) as conn:
        rows = conn.execute(f"SELECT {COLUMNS} FROM events WHERE session_id = ?", (SID,)).fetchall()
    placed = []
    for row in rows:
        placed.append(((sql_order(row[2]), 1, row[0]), row_event(row)))
        if row[10] is not None:
            placed.append(((sql_order(start_event(row).seq), 0, row[0]), start_event(row)))
    placed.sort(key=lambda item: item[0])
    within = (0, after_seq), (0, last_seq)
    return [(int(e.seq), number(e.mono, 0.0)) for key, e in placed if within[0] < key[0] <= within[1]]


@pytest.mark.parametrize("odd_start", [None, 3.5, "text", "types"], ids=["integers", "float", "text", "odd-types"])
def test_event_at_offset_is_the_brute_force_at_every_offset(tmp_path: Path, odd_start: Any) -> None:
    """A seek's probe against the expansion, at every offset from two places: a start sharing its seq with a row
    came after it (their times swapped), a start whose kept time is damaged read 0.0 where `events` gives its
    row's, and a start_seq of no integer (placed at its row's seq) was not counted at all."""
    for seed in range(25):
        rows = _hostile_session(seed, odd_types=odd_start == "types")
        if odd_start in (3.5, "text"):
            rows[len(rows) // 3] = _row(rows[len(rows) // 3][1], odd_start, "odd", mono=2.0)
        path = _log(tmp_path / f"{seed}.db", rows)
        last = max([row[1] for row in rows if isinstance(row[1], int)], default=10)
        with EventReader(path) as reader:
            for after in (0, last // 2):
                expected = _brute_force(path, after, last)
                found = [reader.event_at_offset(SID, after, last, n) for n in range(1, len(expected) + 3)]
                assert found == [*expected, None, None]


@pytest.mark.parametrize("odd_start", [22.5, "text", b"\x00"], ids=["float", "text", "bytes"])
@pytest.mark.parametrize("page", [3, 2000])
def test_a_start_seq_of_no_integer_reads_at_its_row(
    tmp_path: Path, odd_start: Any, page: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Such a start is placed at its row's seq (`start_event`) but was read where its start_seq falls: a text one
    after the session's last event, and after any `after_seq` at all. A reader paging on by the last seq it got
    (a replay) was sent back to the row's seq at every last page and never reached the end. Read by kind or by
    time, the start is found without its row."""
    monkeypatch.setattr(reader_module, "EVENTS_PAGE", page)
    rows = [*(_row(n) for n in range(1, 20)), _row(20, odd_start, "odd"), *(_row(n) for n in range(21, 40))]
    path = _log(tmp_path / "log.db", rows)
    for after in (0, 19, 20, 30):
        _check_read(path, after_seq=after)
    with EventReader(path) as reader:
        paged: list[Any] = []
        while len(paged) <= len(rows) + 1:
            page_read = list(reader.events(SID, after_seq=paged[-1].seq if paged else 0, limit=5))
            if not page_read:
                break
            paged += page_read
        seqs = [e.seq for e in paged]  # (a page may end between the start and its row, which share a seq)
        assert seqs == sorted(seqs) and set(seqs) == set(range(1, 40)) and len(seqs) <= len(rows) + 1
        starts = list(reader.events(SID, kinds=["request_start"]))
        assert [(e.seq, e.request_id) for e in starts] == [(20, "odd")]
        assert [e.seq for e in reader.events(SID, start_mono=0.5, end_mono=0.75)] == [20]  # the kept start's time


def test_an_older_writer_s_damaged_time_leaves_the_session_s_last_time(tmp_path: Path) -> None:
    """An older mcpwatch beside the upgrade (its rows counted by no one) writes a row whose ts is text or bytes:
    a reader skipped it, but the next batch of a newer writer added `max(ts)` to the counts table, where bytes sort
    after every number, and the session's last time read as unknown (its duration 0) from then on."""
    path = tmp_path / "log.db"
    old = connect_writer(path, steps=MIGRATIONS[:8])
    old.execute(
        "INSERT INTO sessions (id, name, upstream, pid, started_at, version, config) VALUES (?,?,?,?,?,?,?)",
        (SID, "s", "stdio: x", 1, TS, "0.1.0", "{}"),
    )
    with EventReader(path) as reader:  # the upgrade, while the older writer keeps its connection
        assert reader.session(SID).events == 0
    rows = [_row(1), _row(3, 2, "c"), (SID, 4, "noon", 1.0, "progress", "r", "t", None, "{}", None)]
    rows += [(SID, 5, b"\x00", 1.0, "progress", "r", "t", None, "{}", None)]
    old.executemany(INSERT_EVENT, [(*row[:2], TS + 30, *row[3:]) if row[1] == 3 else row for row in rows])
    with EventReader(path) as reader:
        before = reader.session(SID)
    assert (before.events, before.requests, before.last_ts) == (5, 1, TS + 30)
    writer = EventWriter(path, clock=ManualClock())
    writer.start_session(name="new", upstream="stdio: x", pid=2, config={})
    writer.close()  # its batch counts the older writer's rows into the table
    old.close()
    with EventReader(path) as reader:
        after = reader.session(SID)
    assert (after.events, after.requests, after.last_ts, after.duration) == (5, 1, TS + 30, 30.0)


_HAND_MADE_INDEXES = {
    "dropped": "DROP INDEX events_by_start",
    "emptied": "DROP INDEX events_by_start; CREATE INDEX events_by_start ON events (session_id, start_seq) WHERE 0",
    "every-row": "DROP INDEX events_by_start; CREATE INDEX events_by_start ON events (session_id, start_seq)",
    "other-columns": "DROP INDEX events_by_start; CREATE INDEX events_by_start ON events (seq)",
    "seq-dropped": "DROP INDEX events_by_session_seq",
    "seq-other": "DROP INDEX events_by_session_seq; CREATE INDEX events_by_session_seq ON events (kind)",
}


@pytest.mark.parametrize("change", sorted(_HAND_MADE_INDEXES))
def test_an_index_changed_by_hand_reads_right_or_says_so(tmp_path: Path, change: str) -> None:
    """An index the readers name (`INDEXED BY`) dropped, emptied or made again on other terms: each read gives the
    expansion, or fails with one line naming the file, the index and the statement that makes it again (an index
    made again with a condition no read can use said "no query solution", naming none); never a wrong answer."""
    rows = [_row(n, n - 1 if n % 3 == 0 else None, f"r{n}") for n in range(1, 60)] + [_row(2000, 7, "far")]
    path = _log(tmp_path / "log.db", rows)
    with sqlite3.connect(path) as conn:
        conn.executescript(_HAND_MADE_INDEXES[change])
    try:
        _check_read(path)
        with EventReader(path) as reader:
            assert reader.event_at_offset(SID, 0, 2000, 2) == (2, 0.5)  # the start kept at seq 2, then its row
    except LogError as error:
        line = str(error)
        assert line.startswith(f"{path}: the event log's index events_by_") and "\n" not in line
        made_again = line.split('"')[1]  # the statement it gives does make the index again
        with sqlite3.connect(path) as conn:
            conn.executescript(made_again)
        _check_read(path)


def _peak_to_first_event(path: Path, **options: Any) -> int:
    """Bytes allocated at most (tracemalloc's peak) while a read gives its first event, the second time (the first
    pays what a process allocates once: compiled statements, caches)."""
    with EventReader(path) as reader:
        peaks = []
        for _ in range(2):
            read = reader.events(SID, **options)
            tracemalloc.start()
            try:
                next(read)
                peaks.append(tracemalloc.get_traced_memory()[1])
            finally:
                tracemalloc.stop()
            del read
        return peaks[-1]


@pytest.mark.parametrize("near_every", [None, 50], ids=["all-far", "some-near"])
def test_a_read_of_far_starts_holds_a_page_not_the_session(
    tmp_path: Path, near_every: int | None, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Calls whose ends lie more than FOLD_NEAR seqs past their starts (a busy server's long calls, an older
    writer's) read by kind: the rows of the page are few, so its starts run to the session's end, and every far row
    past the near ones read was taken at once: the session's far rows held before the first event was given."""
    monkeypatch.setattr(reader_module, "EVENTS_PAGE", 100)
    peaks = []
    for calls in (1_000, 8_000):
        rows = [_row(2 * n + 2000, 2 * n + 1, f"c{n}") for n in range(calls)]  # each 1,999 seqs past its start
        if near_every:
            rows += [_row(2 * n + 2001, 2 * n + 2000, f"n{n}") for n in range(0, calls, near_every)]
        path = _log(tmp_path / f"{calls}.db", rows)
        peaks.append(_peak_to_first_event(path, kinds=["request_start"]))
    assert peaks[1] < peaks[0] * 2, peaks  # (it held the far rows: 8 times as much)


@pytest.mark.parametrize(
    "bound", ["start_mono", "end_mono", "start_ts", "end_ts"], ids=["from-mono", "to-mono", "from-ts", "to-ts"]
)
def test_a_start_whose_times_are_no_numbers_reads_within_bounds(tmp_path: Path, bound: str) -> None:
    """A folded row whose mono and ts were made text and bytes by hand, its kept times damaged too: the start takes
    its row's times (`start_event`), and a read bounded in time compared them with a number in Python (a
    TypeError). It is within the bounds exactly when its row is (SQLite's order: text and bytes after numbers)."""
    odd = (SID, 3, b"\x00", "noon", "request_end", "c", "t", None, '{"start": {"ts": "x", "data": {}}}', 2)
    path = _log(tmp_path / "log.db", [_row(1), odd, _row(4)])
    with EventReader(path) as reader:
        options: dict[str, Any] = {bound: 0.5 if bound.startswith("start") else 5.0}
        read = [(e.seq, str(e.kind)) for e in reader.events(SID, **options)]
    row_within = bound.startswith("start")  # text and bytes come after every number
    assert ((2, "request_start") in read) == ((3, "request_end") in read) == row_within


@pytest.mark.parametrize("page", [7, 2000])
def test_a_row_whose_seq_and_start_seq_are_no_integers_holds_no_start_back(
    tmp_path: Path, page: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Its start is at its row's seq of text (after every number), but it sat among the numbers in
    `events_by_start` (a start_seq of 5.5): read in that order it was given before the starts at 10 and 20, or, in
    one page, held them back past their own ends."""
    monkeypatch.setattr(reader_module, "EVENTS_PAGE", page)
    rows = [*(_row(n) for n in range(1, 100)), _row("x", 5.5, "a"), _row(2000, 10, "b"), _row(2100, 20, "c")]
    read = _check_read(_log(tmp_path / "log.db", rows))
    assert read[-2:] == [("x", "request_start", "a"), ("x", "request_end", "a")]
