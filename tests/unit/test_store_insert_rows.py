"""The writer inserts a batch's rows a chunk per statement (`store/batch.py` CHUNKS): every row, in order, whatever
the batch's size, and a row that cannot be bound in any chunk undoes the whole batch's rows before it, so the batch
is stored once, its odd values made text."""

from __future__ import annotations

import math
import sqlite3
import threading
from collections.abc import Sequence
from pathlib import Path

import pytest

from mcpwatch.events import Kind
from mcpwatch.store.batch import CHUNK_TEXT_MAX, CHUNKS, INSERT_EVENT, commit_batch, insert_rows
from mcpwatch.store.db import connect_writer

SID = "20260101-000000000-aaaaaa"


def _rows(count: int, first: int = 1) -> list[tuple[object, ...]]:
    return [
        (SID, seq, 1e9 + seq, float(seq), "warning", math.nan, math.nan, math.nan, f'{{"n":{seq}}}', math.nan)
        for seq in range(first, first + count)
    ]


@pytest.fixture
def conn(tmp_path: Path) -> sqlite3.Connection:
    conn = connect_writer(tmp_path / "log.db")
    conn.execute(
        "INSERT INTO sessions (id, name, upstream, pid, started_at, version, config) VALUES (?,?,?,?,?,?,?)",
        (SID, "x", "u", 1, 1e9, "0", "{}"),
    )
    return conn


def test_every_size_goes_in_whole_and_in_order(conn: sqlite3.Connection) -> None:
    first = 1
    for count in (0, 1, 3, 4, 5, 16, 63, 64, 65, sum(CHUNKS) + 2, 300):
        insert_rows(conn, _rows(count, first))
        first += count
    got = conn.execute("SELECT id, seq, data, request_id, start_seq FROM events ORDER BY id").fetchall()
    assert [r[1] for r in got] == list(range(1, first))
    assert [r[0] for r in got] == sorted(r[0] for r in got)
    assert all(r[2] == f'{{"n":{r[1]}}}' and r[3] is None and r[4] is None for r in got)


def test_an_unbindable_row_in_a_later_chunk_stores_the_batch_once(conn: sqlite3.Connection) -> None:
    rows = _rows(100)
    rows[90] = (SID, 91, 1e9, 91.0, "warning", object(), math.nan, math.nan, "{}", math.nan)  # not bindable
    errors: list[BaseException] = []
    error = commit_batch(conn, threading.Lock(), rows, [], write_attempts=1, busy_attempts=1, note_error=errors.append)
    assert error is None and not errors
    got = conn.execute("SELECT seq, request_id FROM events ORDER BY id").fetchall()
    assert [r[0] for r in got] == list(range(1, 101))
    assert isinstance(got[90][1], str) and got[90][1].startswith("<object object")


class _Binds:
    """A connection that records the characters of text each statement binds (SQLite copies them all until the
    statement is reset), then runs it."""

    def __init__(self, conn: sqlite3.Connection) -> None:
        self.conn = conn
        self.bound: list[int] = []

    def execute(self, sql: str, params: Sequence[object] = ()) -> sqlite3.Cursor:
        self.bound.append(sum(len(p) for p in params if isinstance(p, str)))
        return self.conn.execute(sql, params)


def test_a_chunk_of_large_rows_binds_one_row_at_a_time(conn: sqlite3.Connection) -> None:
    """64 kept results of 16 MiB each in one statement held a GiB of copies (1,028 MiB peak against 20 MiB a row a
    statement): a chunk over CHUNK_TEXT_MAX characters of data goes in a row a statement, small rows still a chunk."""
    big = '{"x":"' + "a" * (CHUNK_TEXT_MAX // 8) + '"}'
    rows = [(*row[:8], big if n % 2 else row[8], row[9]) for n, row in enumerate(_rows(64), 1)]
    rows += _rows(64, first=len(rows) + 1)
    binds = _Binds(conn)
    insert_rows(binds, rows)  # type: ignore[arg-type]  # the calls insert_rows makes, recorded
    assert max(binds.bound) <= CHUNK_TEXT_MAX + len(big) + 100 * 10
    assert len(binds.bound) == 64 + 1  # the small rows' chunk still one statement
    got = conn.execute("SELECT seq, length(data) FROM events ORDER BY id").fetchall()
    assert [r[0] for r in got] == list(range(1, len(rows) + 1))
    assert [r[1] for r in got] == [len(str(r[8])) for r in rows]


def _folded(count: int, first: int = 1, sid: object = SID) -> list[tuple[object, ...]]:
    return [
        (sid, s + 1, 1e9 + s, float(s), "request_end", f"r{s}", "t", math.nan, f'{{"n":{s}}}', s)
        for s in range(first, first + 2 * count, 2)
    ]


def _stored(conn: sqlite3.Connection) -> list[tuple[object, ...]]:
    columns = "session_id, seq, ts, mono, kind, request_id, tool, model, data, start_seq"
    typed = ", ".join(f"typeof({c})" for c in columns.split(", "))
    return conn.execute(f"SELECT id, {columns}, {typed} FROM events ORDER BY id").fetchall()


FOLDED_CHUNKS = {
    "folded calls of one session": lambda: _folded(64) + _folded(50, 200),
    "one with a model": lambda: [*_folded(31), (SID, 99, 1e9, 1.0, "request_end", "m", "t", "a model", "{}", 98)],
    "two sessions": lambda: _folded(16) + _folded(16, 100, "20260101-000000000-bbbbbb"),
    "the kind as the enum": lambda: [(*r[:4], Kind.REQUEST_END, *r[5:]) for r in _folded(16)],
    "another NaN as the model": lambda: [(*r[:7], float("nan"), *r[8:]) for r in _folded(16)],
    "odd starts' seqs and ids": lambda: [(*r[:5], None, None, r[7], r[8], "7") for r in _folded(8)],
    "an event among them": lambda: [*_folded(7), *_rows(1, 900)],
}


@pytest.mark.parametrize("name", sorted(FOLDED_CHUNKS))
def test_folded_calls_bound_a_column_at_a_time_are_stored_as_a_row_at_a_time(tmp_path: Path, name: str) -> None:
    # The chunk of one session's folded calls binds its session once and writes the kind and the model in the
    # statement (`batch._FOLDED_CALLS`): what it stores is what the row-by-row statement stores, value and type.
    rows = FOLDED_CHUNKS[name]()
    stored = []
    for path, insert in (("chunked", insert_rows), ("one by one", _one_by_one)):
        conn = connect_writer(tmp_path / f"{path}.db")
        for sid in {r[0] for r in rows}:
            conn.execute(
                "INSERT INTO sessions (id, name, upstream, pid, started_at, version, config) VALUES (?,?,?,?,?,?,?)",
                (sid, "x", "u", 1, 1e9, "0", "{}"),
            )
        insert(conn, rows)
        stored.append(_stored(conn))
        conn.close()
    assert stored[0] == stored[1] and len(stored[0]) == len(rows)


def _one_by_one(conn: sqlite3.Connection, rows: list[tuple[object, ...]]) -> None:
    for row in rows:
        conn.execute(INSERT_EVENT, row)


def test_folded_calls_with_a_host_id_sqlite_cannot_take_are_stored_once(conn: sqlite3.Connection) -> None:
    # A host's request id with a lone surrogate (legal JSON) sinks the folded calls' chunk as it sank a row: the batch
    # is undone and stored once, the surrogate replaced, every row of it in order.
    rows = _folded(20)
    rows[13] = (*rows[13][:5], "r\ud800", *rows[13][6:])
    errors: list[BaseException] = []
    error = commit_batch(conn, threading.Lock(), rows, [], write_attempts=1, busy_attempts=1, note_error=errors.append)
    assert error is None and not errors
    got = conn.execute("SELECT seq, request_id, start_seq FROM events ORDER BY id").fetchall()
    assert [(seq, start) for seq, _, start in got] == [(s + 1, s) for s in range(1, 41, 2)]
    assert got[13][1] == "r?" and got[12][1] == "r25"  # as `coerce_row` makes it, the batch's odd text
