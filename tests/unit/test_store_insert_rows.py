"""The writer inserts a batch's rows a chunk per statement (`store/batch.py` CHUNKS): every row, in order, whatever
the batch's size, and a row that cannot be bound in any chunk undoes the whole batch's rows before it, so the batch
is stored once, its odd values made text."""

from __future__ import annotations

import math
import sqlite3
import threading
from pathlib import Path

import pytest

from mcpwatch.store.batch import CHUNKS, commit_batch, insert_rows
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
