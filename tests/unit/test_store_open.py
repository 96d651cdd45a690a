"""What opening a current log for writing asks SQLite: every wrapper with a log pays it at start. Counted
(statements), never timed."""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

import pytest

from mcpwatch.store import db


def _statements_to_open(path: Path, monkeypatch: pytest.MonkeyPatch) -> list[str]:
    said: list[str] = []
    connect = sqlite3.connect

    def traced(*args: Any, **kwargs: Any) -> sqlite3.Connection:
        conn = connect(*args, **kwargs)
        conn.set_trace_callback(said.append)
        return conn

    monkeypatch.setattr(db.sqlite3, "connect", traced)
    db.connect_writer(path).close()
    monkeypatch.undo()
    return said


def test_a_current_log_is_opened_with_one_read_of_its_header(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    log = tmp_path / "events.db"
    made = _statements_to_open(log, monkeypatch)
    assert any(statement.startswith('CREATE TABLE "events"') for statement in made)  # the first open made it
    again = _statements_to_open(log, monkeypatch)
    headers = [statement for statement in again if "pragma_user_version()" in statement]
    assert len(headers) == 1, again  # the version it read first is the one it migrates from: nothing to do
    assert not [statement for statement in again if statement.startswith(("CREATE", "DROP", "ALTER", "BEGIN"))]
