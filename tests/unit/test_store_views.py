"""The SQL views, queried the way a user would: with sqlite-utils, knowing nothing of mcpwatch's code."""

from __future__ import annotations

import json
import sqlite3
import sys
from pathlib import Path

import pytest
import sqlite_utils
from test_store_sample import write_sample

from mcpwatch.events import Event
from mcpwatch.store import EventWriter, schema
from mcpwatch.store.db import connect_writer


@pytest.fixture
def sample(tmp_path: Path):
    path = tmp_path / "events.db"
    return path, write_sample(path)


def test_requests_view_pairs_each_start_with_its_end(sample) -> None:
    path, s = sample
    db = sqlite_utils.Database(path)
    rows = {r["request_id"]: r for r in db.query("SELECT * FROM requests WHERE session_id = ?", [s.session_id])}
    starts = [e for e in s.emitted if e.kind == "request_start"]
    assert sorted(rows) == sorted(e.request_id for e in starts)
    for start in starts:
        row = rows[start.request_id]
        end = next((e for e in s.emitted if e.kind == "request_end" and e.request_id == start.request_id), None)
        assert row["tool"] == start.tool and row["method"] == start.data["method"]
        assert row["start_ts"] == start.ts and row["budget_s"] == start.data["budget_s"]
        if end is None:
            assert row["end_ts"] is None and row["outcome"] is None and row["duration_s"] is None
        else:
            assert (row["end_ts"], row["outcome"], row["duration_s"]) == (
                end.ts,
                end.data["outcome"],
                end.data["duration_s"],
            )


def test_requests_view_handles_a_reused_host_id(tmp_path: Path) -> None:
    path = tmp_path / "events.db"
    writer = EventWriter(path)
    sid = writer.start_session(name="n", upstream="u", pid=1, config={})
    plan = [("request_start", 1.0, {}), ("request_end", 2.0, {"outcome": "ok", "duration_s": 1.0})]
    plan += [("request_start", 5.0, {}), ("request_end", 9.0, {"outcome": "error", "duration_s": 4.0})]
    for seq, (kind, at, data) in enumerate(plan, start=1):
        writer.emit(Event(kind, sid, at, at, seq, request_id="1", tool="t", data={"method": "tools/call", **data}))
    writer.close()
    rows = list(sqlite_utils.Database(path).query("SELECT start_ts, end_ts, outcome FROM requests ORDER BY start_seq"))
    assert rows == [
        {"start_ts": 1.0, "end_ts": 2.0, "outcome": "ok"},
        {"start_ts": 5.0, "end_ts": 9.0, "outcome": "error"},
    ]


def test_tombstones_view_adds_hits_and_expiry(sample) -> None:
    path, s = sample
    (row,) = sqlite_utils.Database(path).query("SELECT * FROM tombstones")
    add = next(e for e in s.emitted if e.kind == "tombstone_add")
    hits = [e for e in s.emitted if e.kind == "tombstone_hit" and e.data["up_id"] == add.data["up_id"]]
    expire = next(e for e in s.emitted if e.kind == "tombstone_expire")
    assert (row["up_id"], row["ttl_s"], row["reason"], row["request_id"]) == (
        add.data["up_id"],
        add.data["ttl_s"],
        add.data["reason"],
        add.request_id,
    )
    assert row["hits"] == len(hits) == 2
    assert row["last_hit_ts"] == max(h.ts for h in hits)
    assert row["expired_ts"] == expire.ts


def test_tombstones_view_counts_zero_hits(tmp_path: Path) -> None:
    path = tmp_path / "events.db"
    writer = EventWriter(path)
    sid = writer.start_session(name="n", upstream="u", pid=1, config={})
    writer.emit(Event("tombstone_add", sid, 1.0, 1.0, 1, data={"up_id": 5, "ttl_s": 10, "reason": "deadline"}))
    writer.close()
    (row,) = sqlite_utils.Database(path).query("SELECT hits, expired_ts FROM tombstones")
    assert row == {"hits": 0, "expired_ts": None}


def test_invalidations_view(sample) -> None:
    path, s = sample
    (row,) = sqlite_utils.Database(path).query("SELECT * FROM invalidations")
    inv = next(e for e in s.emitted if e.kind == "invalidation")
    assert row["caused_by"] == inv.data["caused_by"]
    assert json.loads(row["patterns"]) == inv.data["patterns"]
    assert row["pattern_count"] == len(inv.data["patterns"])


def test_sqlite_utils_sees_tables_views_and_the_foreign_key(sample) -> None:
    path, _ = sample
    db = sqlite_utils.Database(path)
    assert {"sessions", "events"} <= set(db.table_names())
    assert {"requests", "tombstones", "invalidations"} <= set(db.view_names())
    fks = db["events"].foreign_keys  # type: ignore[union-attr]
    assert [(fk.column, fk.other_table, fk.other_column) for fk in fks] == [("session_id", "sessions", "id")]


def test_late_results_and_reuses_views(tmp_path: Path) -> None:
    path = tmp_path / "events.db"
    writer = EventWriter(path)
    sid = writer.start_session(name="n", upstream="u", pid=1, config={})
    late = {"up_id": 7, "reason": "deadline", "cut_after_s": 1.0, "delay_s": 2.0, "duration_s": 3.0, "outcome": "ok"}
    late |= {"size_bytes": 60, "result": {"content": []}, "reuse_ttl_s": 30.0}
    writer.emit(Event("late_result", sid, 10.0, 3.0, 1, request_id="5", tool="slow", data=late))
    reuse = {"from_request_id": "5", "delay_s": 2.0, "age_s": 4.0, "ttl_s": 30.0}
    writer.emit(Event("late_reuse", sid, 14.0, 7.0, 2, request_id="6", tool="slow", data=reuse))
    writer.close()
    db = sqlite_utils.Database(path)
    (row,) = db.query("SELECT * FROM late_results")
    assert {k: row[k] for k in ("request_id", "tool", "up_id", "cut_after_s", "delay_s", "duration_s")} == {
        "request_id": "5", "tool": "slow", "up_id": 7, "cut_after_s": 1.0, "delay_s": 2.0, "duration_s": 3.0,
    }  # fmt: skip
    assert (row["outcome"], row["size_bytes"], row["truncated"], row["reuse_ttl_s"]) == ("ok", 60, 0, 30.0)
    (row,) = db.query("SELECT * FROM late_reuses")
    assert (row["request_id"], row["from_request_id"], row["age_s"], row["ttl_s"]) == ("6", "5", 4.0, 30.0)


def test_requests_view_counts_degraded_answers_as_report_does(tmp_path: Path) -> None:
    """The README's `select tool, outcome, count(*) from requests` said 262 ok where `report` said 208 degraded:
    the view now says degraded for an ok answer that is not whole (marked, or, in an older log, by its preview)."""
    from mcpwatch.logview.report import build_report
    from mcpwatch.store import EventReader

    path = tmp_path / "events.db"
    writer = EventWriter(path)
    sid = writer.start_session(name="n", upstream="u", pid=1, config={})
    ends = [
        {"outcome": "ok", "degraded": "fallback summary"},  # marked by the wrapper
        {"outcome": "ok", "result_preview": '{"metadata": {"synthesized_by": "fallback"}}'},  # an older log's
        {"outcome": "ok", "result_preview": json.dumps(json.dumps({"status": "partial"}))},  # inside a text block
        {"outcome": "ok", "result_preview": '{"status": "ok"}'},
        {"outcome": "error"},
    ]
    seq = 0
    for n, end in enumerate(ends):
        for kind, data in (("request_start", {}), ("request_end", {"duration_s": 1.0, **end})):
            seq += 1
            writer.emit(
                Event(kind, sid, seq, seq, seq, request_id=str(n), tool="t", data={"method": "tools/call", **data})
            )
    writer.close()
    db = sqlite_utils.Database(path)
    counted = {r["outcome"]: r["n"] for r in db.query("select outcome, count(*) as n from requests group by 1")}
    with EventReader(path) as reader:
        report = build_report(reader.events(sid))
    assert counted == report["requests"]["by_outcome"] == {"degraded": 3, "ok": 1, "error": 1}
    reasons = [r["degraded"] for r in db.query("select degraded from requests order by start_seq")]
    assert reasons == ["fallback summary", "said by its preview", "said by its preview", None, None]


def _v1_by_sqlite_utils(conn: sqlite3.Connection) -> None:
    """The first schema as sqlite-utils made it, before mcpwatch wrote its statements out."""
    db = sqlite_utils.Database(conn, recursive_triggers=False, execute_plugins=False)
    columns = {"id": str, "name": str, "upstream": str, "pid": int, "started_at": float, "ended_at": float}
    db["sessions"].create({**columns, "end_reason": str, "version": str, "config": str}, pk="id")  # type: ignore[union-attr]
    events = {"id": int, "session_id": str, "seq": int, "ts": float, "mono": float, "kind": str}
    db["events"].create(  # type: ignore[union-attr]
        {**events, "request_id": str, "tool": str, "model": str, "data": str},
        pk="id",
        not_null=["session_id", "seq", "ts", "mono", "kind", "data"],
        foreign_keys=[("session_id", "sessions", "id")],
    )
    db["events"].create_index(["session_id", "seq"], index_name="events_by_session_seq")  # type: ignore[union-attr]
    db["events"].create_index(["session_id", "request_id", "seq"], index_name="events_by_request")  # type: ignore[union-attr]
    db["events"].create_index(["ts"], index_name="events_by_ts")  # type: ignore[union-attr]
    db["sessions"].create_index(["started_at"], index_name="sessions_by_start")  # type: ignore[union-attr]
    db.create_view("requests", schema.REQUESTS_VIEW)
    db.create_view("tombstones", schema.TOMBSTONES_VIEW)
    db.create_view("invalidations", schema.INVALIDATIONS_VIEW)
    conn.execute(f"PRAGMA application_id = {schema.APPLICATION_ID}")


def test_a_new_log_gets_the_schema_sqlite_utils_made_without_importing_it(tmp_path: Path) -> None:
    """A new log's first schema is written as plain statements: the same tables, indexes and views, to the byte, as
    the sqlite-utils calls that made every older log (migrations and readers see no difference)."""
    made = {}
    for name, first in (("plain", schema.MIGRATIONS[0]), ("sqlite_utils", _v1_by_sqlite_utils)):
        conn = sqlite3.connect(tmp_path / f"{name}.db", isolation_level=None)
        first(conn)
        rows = conn.execute("SELECT type, name, tbl_name, sql FROM sqlite_master ORDER BY name").fetchall()
        made[name] = (rows, conn.execute("PRAGMA application_id").fetchone())
        conn.close()
    assert made["plain"] == made["sqlite_utils"]
    assert len(made["plain"][0]) == 10  # two tables, their five indexes (one automatic), three views


def test_a_new_log_is_made_without_sqlite_utils(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Its import (with click and pluggy) cost a new log's writer more than the rest of its start."""
    monkeypatch.setitem(sys.modules, "sqlite_utils", None)  # any import of it now fails
    conn = connect_writer(tmp_path / "new.db")
    assert conn.execute("PRAGMA user_version").fetchone() == (len(schema.MIGRATIONS),)
    conn.close()
