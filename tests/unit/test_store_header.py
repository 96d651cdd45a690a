"""A reader opening a log another process is making reads its version, its application id and its tables in one
snapshot: read apart, the tables made meanwhile showed without the id set in the same transaction, and a log being
made was refused as a foreign file (seen as four processes started writing one new log)."""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any, cast

import pytest

from mcpwatch.store.db import connect_writer, inspect
from mcpwatch.store.schema import SCHEMA_VERSION


class MadeMeanwhile:
    """A reader's connection after whose `after`-th statement another connection makes the log."""

    def __init__(self, path: Path, after: int) -> None:
        self.conn = sqlite3.connect(path)
        self.path, self.after, self.statements = path, after, 0

    def execute(self, sql: str, *args: Any) -> sqlite3.Cursor:
        cursor = self.conn.execute(sql, *args)
        rows = cursor.fetchall()  # this statement's snapshot is taken before the other process writes
        self.statements += 1
        if self.statements == self.after:
            connect_writer(self.path).close()
        return cast(sqlite3.Cursor, _Rows(rows))


class _Rows:
    def __init__(self, rows: list[Any]) -> None:
        self.rows = rows

    def fetchone(self) -> Any:
        return self.rows[0] if self.rows else None

    def fetchall(self) -> list[Any]:
        return self.rows


@pytest.mark.parametrize("after", [1, 2, 3])
def test_a_log_made_while_it_is_inspected_reads_as_empty_or_whole(tmp_path: Path, after: int) -> None:
    path = tmp_path / "events.db"
    path.touch()
    reader = MadeMeanwhile(path, after)
    assert inspect(path, cast(sqlite3.Connection, reader)) in (0, SCHEMA_VERSION)
    connect_writer(path).close()  # made now, if the reader's statements were fewer than `after`
    assert inspect(path, sqlite3.connect(path)) == SCHEMA_VERSION
