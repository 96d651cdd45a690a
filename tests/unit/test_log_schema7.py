"""Schema 7: `events_by_request` holds only what is read by request (progress, task status), so a plain call's row
costs the writer no entry there. An older log is upgraded in place and reads the same (`test_log_fold.py` compares
every reader's answers on a schema-6 log); an older mcpwatch still writing schema-6 rows beside the upgrade, and a
log whose index another writer rebuilt, are read alike."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest

from mcpwatch.events import Event, Kind
from mcpwatch.store import EventReader, EventWriter
from mcpwatch.store.batch import INSERT_EVENT
from mcpwatch.store.db import LogError, connect_writer
from mcpwatch.store.kept_tasks import KeptRef, find_kept_task, read_kept_refs
from mcpwatch.store.schema import MIGRATIONS, SCHEMA_VERSION

SID = "20260101-000000000-aaaaaa"
TS = 1_767_225_600.0
KEPT = {"upstream": "up-key", "result": {"content": []}, "ttl_s": 60}


def _index_entries(path: Path, index: str) -> int:
    with sqlite3.connect(path) as conn:
        found = conn.execute("SELECT sum(ncell) FROM dbstat WHERE name = ? AND pagetype = 'leaf'", (index,))
        return int(found.fetchone()[0] or 0)


def _request_index_sql(path: Path) -> str:
    with sqlite3.connect(path) as conn:
        return str(conn.execute("SELECT sql FROM sqlite_master WHERE name = 'events_by_request'").fetchone()[0])


def _row(seq: int, kind: str, request_id: str, data: str, start_seq: int | None = None) -> tuple[object, ...]:
    return (SID, seq, TS + seq, float(seq), kind, request_id, "t", None, data, start_seq)


def _old_log(path: Path) -> sqlite3.Connection:
    """A schema-6 log with one session, left open as an older mcpwatch's writer holds it."""
    conn = connect_writer(path, steps=MIGRATIONS[:6])
    conn.execute(
        "INSERT INTO sessions (id, name, upstream, pid, started_at, version, config) VALUES (?,?,?,?,?,?,?)",
        (SID, "old", "stdio: x", 1, TS, "0.1.0", "{}"),
    )
    return conn


def _calls(conn: sqlite3.Connection, first_seq: int, count: int) -> int:
    """Folded plain calls as schema 6 writes them; the next free seq."""
    rows = []
    for n in range(count):
        seq = first_seq + 2 * n
        start = {"seq": seq, "ts": TS + seq, "mono": float(seq), "data": {}}
        data = json.dumps({"outcome": "ok", "duration_s": 0.001, "start": start}, separators=(",", ":"))
        rows.append(_row(seq + 1, "request_end", f"p{seq}", data, seq))
    conn.executemany(INSERT_EVENT, rows)
    return first_seq + 2 * count


def emit_plain_calls(writer: EventWriter, sid: str, calls: int, progress_every: int = 0) -> None:
    """`calls` plain calls through a real writer, each ending at once (so each is folded), a progress on every
    `progress_every`-th (none for 0)."""
    for n in range(calls):
        rid = str(n)
        writer.emit(Event(Kind.REQUEST_START, sid, TS, 0.0, 2 * n + 1, rid, "t", None, {"method": "tools/call"}))
        if progress_every and n % progress_every == 0:
            writer.emit(Event(Kind.PROGRESS, sid, TS, 0.0, 2 * n + 1, rid, "t", None, {"progress": 1}))
        writer.emit(Event(Kind.REQUEST_END, sid, TS, 0.0, 2 * n + 2, rid, "t", None, {"outcome": "ok"}))
    assert writer.flush(30)


def test_a_fresh_log_indexes_no_plain_call_by_request(tmp_path: Path) -> None:
    path = tmp_path / "log.db"
    with EventWriter(path) as writer:
        sid = writer.start_session(name="w", upstream="u", pid=1, config={})
        emit_plain_calls(writer, sid, 300, progress_every=100)
    assert "WHERE kind IN ('progress', 'task_status')" in _request_index_sql(path)
    assert _index_entries(path, "events_by_request") == 3  # the progress rows alone
    with EventReader(path) as reader:
        assert [e.seq for e in reader.request_events(sid, ["0", "100", "5"], "progress")] == [1, 201]


def test_an_older_writer_beside_the_upgrade_is_read_alike(tmp_path: Path) -> None:
    path = tmp_path / "log.db"
    old = _old_log(path)
    seq = _calls(old, 1, 50)
    assert _index_entries(path, "events_by_request") == 50  # schema 6: every request's row
    with EventReader(path) as reader:  # the upgrade, while the older writer keeps its connection
        assert reader.event_count(SID) == 100
    with sqlite3.connect(path) as conn:
        assert conn.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION
    assert _index_entries(path, "events_by_request") == 0
    # the older mcpwatch goes on writing schema-6 rows: plain calls, a progress, an offered task's end
    seq = _calls(old, seq, 20)
    old.execute(INSERT_EVENT, _row(seq, "progress", "slow", '{"progress":1,"total":2}'))
    task = '{"task_id":"T1","status":"completed","kept":{"upstream":"up-key","result":{"content":[]},"ttl_s":60}}'
    old.execute(INSERT_EVENT, _row(seq + 1, "task_status", "slow", task))
    old.close()
    assert _index_entries(path, "events_by_request") == 2
    with EventReader(path) as reader:
        assert [e.seq for e in reader.request_events(SID, ["slow", "p1"], "progress")] == [seq]
        assert [e.request_id for e in reader.request_events(SID, ["p1"], "request_start")] == ["p1"]
        assert reader.session(SID).events == 142 and reader.session(SID).requests == 70
    refs = read_kept_refs(path, "up-key", TS)
    assert refs.refs == {"T1": KeptRef(SID, "slow")}
    assert find_kept_task(path, refs.refs["T1"], "T1") == KEPT


def test_a_request_index_rebuilt_by_whoever_writes_the_log(tmp_path: Path) -> None:
    """Whoever writes the log may rebuild the index whole (as schema 6 had it): the answers are the rows'. An index
    that can no longer serve the read is one line naming the file, never a traceback or a wrong answer."""
    path = tmp_path / "log.db"
    old = _old_log(path)
    seq = _calls(old, 1, 5)
    old.execute(INSERT_EVENT, _row(seq, "progress", "p1", '{"progress":1}'))
    old.close()
    with EventReader(path) as reader:
        before = [e.seq for e in reader.request_events(SID, ["p1"], "progress")]
    assert before == [seq]
    for definition, answer in (
        ("(session_id, request_id, seq)", before),
        ("(session_id, request_id, seq) WHERE 0", None),
    ):
        with sqlite3.connect(path) as conn:
            conn.execute("DROP INDEX events_by_request")
            conn.execute(f"CREATE INDEX events_by_request ON events {definition}")
        with EventReader(path) as reader:
            if answer is None:
                with pytest.raises(LogError, match=f"^{path}: .*no query solution"):
                    list(reader.request_events(SID, ["p1"], "progress"))
            else:
                assert [e.seq for e in reader.request_events(SID, ["p1"], "progress")] == answer
