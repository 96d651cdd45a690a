"""Files that are not usable logs give one-line LogErrors naming the path; schema migrations move forward."""

from __future__ import annotations

import os
import random
import sqlite3
import subprocess
from pathlib import Path

import pytest

from mcpwatch.errors import UserError
from mcpwatch.events import Event
from mcpwatch.store import SCHEMA_VERSION, EventReader, EventWriter, LogError, prune
from mcpwatch.store.db import connect_reader, connect_writer
from mcpwatch.store.schema import MIGRATIONS

from checkout import mcpwatch_cmd


def one_line_error(action, path: Path, *fragments: str) -> str:
    with pytest.raises(LogError) as info:
        action()
    message = str(info.value)
    assert isinstance(info.value, UserError)
    assert "\n" not in message and str(path) in message, message
    for fragment in fragments:
        assert fragment in message, message
    return message


def written_log(path: Path, events: int = 10) -> str:
    writer = EventWriter(path)
    sid = writer.start_session(name="n", upstream="u", pid=1, config={})
    for seq in range(1, events + 1):
        writer.emit(Event("progress", sid, 1000.0 + seq, float(seq), seq, data={"message": "x" * 200}))
    writer.close()
    return sid


def test_missing_file(tmp_path: Path) -> None:
    path = tmp_path / "nope.db"
    one_line_error(lambda: EventReader(path), path, "no such event log")
    one_line_error(lambda: prune(path, 10), path, "no such event log")
    assert not path.exists()  # reading never creates it


def test_a_directory_is_not_a_log(tmp_path: Path) -> None:
    one_line_error(lambda: EventReader(tmp_path), tmp_path, "directory")
    one_line_error(lambda: EventWriter(tmp_path), tmp_path, "directory")


def test_text_file_is_not_sqlite_and_is_left_alone(tmp_path: Path) -> None:
    path = tmp_path / "notes.db"
    path.write_text("hello, this is not a database\n" * 10)
    before = path.read_bytes()
    one_line_error(lambda: EventReader(path), path, "not an SQLite database")
    one_line_error(lambda: EventWriter(path), path, "not an SQLite database")
    assert path.read_bytes() == before


def test_empty_file_is_not_a_log_for_readers_but_writers_initialise_it(tmp_path: Path) -> None:
    path = tmp_path / "events.db"
    path.touch()
    one_line_error(lambda: EventReader(path), path, "empty")
    EventWriter(path).close()
    with EventReader(path) as reader:
        assert reader.sessions() == []


def test_empty_sqlite_database_is_not_a_log_for_readers(tmp_path: Path) -> None:
    path = tmp_path / "events.db"
    sqlite3.connect(path).execute("PRAGMA user_version = 0").close()
    conn = sqlite3.connect(path)
    conn.execute("CREATE TABLE t (x)")
    conn.execute("DROP TABLE t")
    conn.commit()
    conn.close()
    one_line_error(lambda: EventReader(path), path, "empty SQLite database")


def test_foreign_sqlite_file_is_refused_and_untouched(tmp_path: Path) -> None:
    path = tmp_path / "other.db"
    conn = sqlite3.connect(path)
    conn.execute("CREATE TABLE customers (id INTEGER PRIMARY KEY, name TEXT)")
    conn.execute("CREATE TABLE events (id INTEGER PRIMARY KEY)")  # a same-named table does not make it ours
    conn.commit()
    conn.close()
    before = path.read_bytes()
    one_line_error(lambda: EventReader(path), path, "not an mcpwatch event log", "customers")
    one_line_error(lambda: EventWriter(path), path, "not an mcpwatch event log")
    one_line_error(lambda: prune(path, 0), path, "not an mcpwatch event log")
    assert path.read_bytes() == before


def test_other_application_id_is_foreign(tmp_path: Path) -> None:
    path = tmp_path / "other.db"
    conn = sqlite3.connect(path)
    conn.execute("PRAGMA application_id = 1234")
    conn.commit()
    conn.close()
    one_line_error(lambda: EventWriter(path), path, "not an mcpwatch event log")


def test_newer_schema_version_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "events.db"
    written_log(path)
    conn = sqlite3.connect(path)
    conn.execute(f"PRAGMA user_version = {SCHEMA_VERSION + 5}")
    conn.commit()
    conn.close()
    message = one_line_error(lambda: EventReader(path), path, "newer", str(SCHEMA_VERSION + 5))
    assert "upgrade mcpwatch" in message
    one_line_error(lambda: EventWriter(path), path, "newer")


def test_corrupt_schema_page(tmp_path: Path) -> None:
    path = tmp_path / "events.db"
    written_log(path)
    with path.open("r+b") as handle:
        handle.seek(100)  # just after the file header: the schema b-tree
        handle.write(bytes(random.Random(1).randrange(256) for _ in range(3000)))
    one_line_error(lambda: EventReader(path), path, "corrupt")
    one_line_error(lambda: EventWriter(path), path, "corrupt")


def test_corrupt_data_pages_surface_as_log_error_while_reading(tmp_path: Path) -> None:
    path = tmp_path / "events.db"
    sid = written_log(path, events=3000)
    size = path.stat().st_size
    with path.open("r+b") as handle:  # every page after the first third becomes noise
        handle.seek(size // 3 // 65536 * 65536)
        handle.write(random.Random(2).randbytes(size - handle.tell()))

    def read_everything() -> None:
        with EventReader(path) as reader:
            for _ in reader.events(sid):
                pass

    one_line_error(read_everything, path, "corrupt")


def test_truncated_header_garbage(tmp_path: Path) -> None:
    path = tmp_path / "events.db"
    path.write_bytes(os.urandom(4096))
    one_line_error(lambda: EventReader(path), path, "not an SQLite database")


def test_migrations_run_forward_once(tmp_path: Path) -> None:
    path = tmp_path / "events.db"
    written_log(path)
    calls: list[int] = []

    def add_notes(conn: sqlite3.Connection) -> None:
        calls.append(1)
        conn.execute("CREATE TABLE notes (id INTEGER PRIMARY KEY, text TEXT)")

    steps = (*MIGRATIONS, add_notes)
    connect_writer(path, steps=steps).close()
    connect_writer(path, steps=steps).close()
    assert calls == [1]
    conn = sqlite3.connect(path)
    assert conn.execute("PRAGMA user_version").fetchone()[0] == len(MIGRATIONS) + 1
    assert conn.execute("SELECT count(*) FROM events").fetchone()[0] == 10  # data kept
    conn.close()
    # this build now sees a newer log than it knows
    one_line_error(lambda: connect_reader(path), path, "newer")


def test_a_failing_migration_changes_nothing(tmp_path: Path) -> None:
    path = tmp_path / "events.db"
    written_log(path)

    def broken(conn: sqlite3.Connection) -> None:
        conn.execute("CREATE TABLE half_done (x)")
        conn.execute("THIS IS NOT SQL")

    with pytest.raises(LogError):
        connect_writer(path, steps=(*MIGRATIONS, broken))
    conn = sqlite3.connect(path)
    assert conn.execute("PRAGMA user_version").fetchone()[0] == len(MIGRATIONS)
    assert conn.execute("SELECT count(*) FROM sqlite_master WHERE name = 'half_done'").fetchone()[0] == 0
    conn.close()


def test_fresh_file_is_built_by_the_migration_list(tmp_path: Path) -> None:
    path = tmp_path / "events.db"
    connect_writer(path).close()
    conn = sqlite3.connect(path)
    assert conn.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION == len(MIGRATIONS)
    conn.close()


def test_reader_upgrades_an_older_log_in_place(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from mcpwatch.store import db

    path = tmp_path / "events.db"
    sid = written_log(path)

    def add_notes(conn: sqlite3.Connection) -> None:
        conn.execute("CREATE TABLE notes (id INTEGER PRIMARY KEY, text TEXT)")

    monkeypatch.setattr(db, "MIGRATIONS", (*MIGRATIONS, add_notes))
    monkeypatch.setattr(db, "SCHEMA_VERSION", len(MIGRATIONS) + 1)
    with EventReader(path) as reader:
        assert reader.event_count(sid) == 10
    conn = sqlite3.connect(path)
    assert conn.execute("PRAGMA user_version").fetchone()[0] == len(MIGRATIONS) + 1
    assert conn.execute("SELECT count(*) FROM notes").fetchone()[0] == 0
    conn.close()


def test_a_lock_held_too_long_is_a_clear_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from mcpwatch.store import db, reader

    path = tmp_path / "events.db"
    written_log(path)
    monkeypatch.setattr(db, "BUSY_TIMEOUT_MS", 50)
    monkeypatch.setattr(reader, "BUSY_TIMEOUT_MS", 50)
    monkeypatch.setattr(db, "retry_busy", lambda action, **_: action())
    holder = sqlite3.connect(path, isolation_level=None)
    holder.execute("BEGIN EXCLUSIVE")
    try:
        one_line_error(lambda: prune(path, 0), path, "locked")
    finally:
        holder.execute("ROLLBACK")
        holder.close()


def test_writes_that_start_failing_are_reported_once_and_counted(tmp_path: Path) -> None:
    # A log that opens but refuses inserts (here a trigger; in life a damaged page or a full disk): the writer
    # keeps the caller unblocked, counts every lost event, and says so once through on_error.
    path = tmp_path / "events.db"
    written_log(path, events=1)
    with sqlite3.connect(path) as conn:
        conn.execute("CREATE TRIGGER refuse BEFORE INSERT ON events BEGIN SELECT RAISE(ABORT, 'disk says no'); END")
    said: list[str] = []
    writer = EventWriter(path, on_error=said.append, flush_interval=0.01)
    sid = writer.start_session(name="n", upstream="u", pid=1, config={})
    for seq in range(1, 6):
        writer.emit(Event("progress", sid, 1000.0 + seq, float(seq), seq))
        writer.flush(0.2)  # never flushes: the log refuses every insert
    writer.close(timeout=1)
    assert writer.dropped >= 5 and writer.events_written == 0
    assert said == [f"{path}: events cannot be written (IntegrityError: disk says no); they are counted as lost"]


@pytest.mark.slow
def test_wrap_says_on_stderr_when_its_log_cannot_be_written(tmp_path: Path) -> None:
    path = tmp_path / "events.db"
    written_log(path, events=1)
    with sqlite3.connect(path) as conn:
        conn.execute("CREATE TRIGGER refuse BEFORE INSERT ON events BEGIN SELECT RAISE(ABORT, 'disk says no'); END")
    done = subprocess.run(
        mcpwatch_cmd("wrap", "--log", str(path), "--", "cat"), input=b"", capture_output=True, timeout=60
    )
    stderr = done.stderr.decode()
    assert done.returncode == 0 and "Traceback" not in stderr
    assert f"mcpwatch: warning: {path}: events cannot be written (IntegrityError: disk says no)" in stderr


@pytest.mark.slow
def test_wrap_serves_on_when_its_log_path_is_under_a_file(tmp_path: Path) -> None:
    # The host still gets its server; the log's problem is said once, and what was not written is counted.
    (tmp_path / "afile").write_text("x")
    target = tmp_path / "afile" / "sub" / "events.db"
    done = subprocess.run(
        mcpwatch_cmd("wrap", "--log", str(target), "--", "cat"),
        input=b"",
        capture_output=True,
        timeout=60,
    )
    assert done.returncode == 0
    lines = done.stderr.decode().strip().splitlines()
    problem = f"mcpwatch: warning: {target}: cannot create the event log's directory (Not a directory); serving on"
    assert sum(1 for line in lines if line.startswith(problem)) == 1, lines
    assert any("events of session" in line and "were not written" in line for line in lines), lines
    assert "Traceback" not in done.stderr.decode()
