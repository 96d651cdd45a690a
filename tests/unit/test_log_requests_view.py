"""Schema 8: the requests view finds a start's end without walking the session. Schema 7 narrowed the request index
the view's lookup used, so each start's end became a walk from the start on, and a start with no end (a wrapper
killed mid-call) a walk to the session's last row: the view cost the session's rows times its unended starts (a
150,000-call session with 200 unended starts: 0.23 s at schema 6, 4.5 s at 7, 0.14 s at 8; the same rows)."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

from mcpwatch.store import EventReader
from mcpwatch.store.batch import INSERT_EVENT
from mcpwatch.store.db import connect_writer
from mcpwatch.store.schema import MIGRATIONS

SID = "20260101-000000000-aaaaaa"
TS = 1_767_225_600.0
VIEW = "SELECT * FROM requests ORDER BY session_id, start_seq"


def _log(path: Path, steps: int, unended: int, calls: int) -> None:
    """A session: `unended` starts with no end, then `calls` folded calls, every 50th a long call (start, progress,
    end 300 calls later, as a long call's end lands among plain calls), one id used twice in a row."""
    conn = connect_writer(path, steps=MIGRATIONS[:steps])
    conn.execute(
        "INSERT INTO sessions (id, name, upstream, pid, started_at, version, config) VALUES (?,?,?,?,?,?,?)",
        (SID, "s", "stdio: x", 1, TS, "0", "{}"),
    )
    rows: list[tuple[object, ...]] = []
    seq = 1

    def add(kind: str, request_id: str, data: dict[str, object], start_seq: int | None = None) -> None:
        nonlocal seq
        rows.append((SID, seq, TS + seq, float(seq), kind, request_id, "t", None, json.dumps(data), start_seq))
        seq += 1

    for n in range(unended):
        add("request_start", f"u{n}", {"method": "tools/call"})
    ends: dict[int, str] = {}
    for n in range(calls):
        if n % 50 == 0:
            add("request_start", f"L{n}", {"method": "tools/call", "up_id": n})
            add("progress", f"L{n}", {"progress": 1})
            ends[n + 300] = f"L{n}"
        if n in ends:
            add("request_end", ends.pop(n), {"outcome": "deadline" if n % 100 else "ok", "duration_s": 60})
        rid = "again" if n in (7, 8) else f"p{n}"
        start = {"seq": seq, "ts": TS + seq, "mono": float(seq), "data": {"method": "tools/call"}}
        seq += 1
        add("request_end", rid, {"outcome": "ok", "duration_s": 0.001, "start": start}, seq - 2)
    conn.executemany(INSERT_EVENT, rows)
    conn.close()


def _view(path: Path) -> tuple[list[tuple[object, ...]], int]:
    """The view's rows, and the SQLite instructions reading them took (in hundreds)."""
    steps = 0

    def count() -> int:
        nonlocal steps
        steps += 1
        return 0

    with sqlite3.connect(path) as conn:
        conn.set_progress_handler(count, 100)
        return conn.execute(VIEW).fetchall(), steps


def test_the_requests_view_reads_a_session_once_whatever_its_unended_starts(tmp_path: Path) -> None:
    before, after = tmp_path / "v6.db", tmp_path / "now.db"
    _log(before, 6, unended=200, calls=3000)
    _log(after, 6, unended=200, calls=3000)
    EventReader(after).close()  # upgraded in place
    (old_rows, _), (rows, steps) = _view(before), _view(after)
    assert rows == old_rows and len(rows) == 200 + 3000 + 60
    assert sum(r[8] is None for r in rows) == 200 + 6  # the unended starts, the long calls still running
    with sqlite3.connect(after) as conn:
        size = int(conn.execute("SELECT count(*) FROM events").fetchone()[0])
    # SQLite's instructions, in hundreds: ≈ 3.6 a row of the log at schema 6 and now, ≈ 16 with a walk a start
    assert steps < 6 * size
