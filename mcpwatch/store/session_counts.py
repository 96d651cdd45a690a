"""Per-session counts kept beside the events as they are written, so `mcpwatch sessions` reads one row per session
instead of aggregating every event (3 s on a 1 GB log before; a table read after, whatever the log's size).

The writer adds each batch's counts in the batch's own transaction (one upsert per session in the batch, not a
trigger per row: the writer's cost per event stays what it was); migration 4 back-fills logs written before;
`prune` removes a pruned session's row with its events. What the table holds is exactly what the aggregate over
`events` answers (tested against it): events, request starts, request ends cut at their deadline, late drops
(tombstone hits) and the last event's time.

An mcpwatch from before the table may still be writing to the log when it is upgraded (its wrapper checked the
version when it opened the file): its events are counted by no one. So the table also keeps a mark, the highest
event id it counts (the row of the empty session id, which no session has); each batch first adds the events above
the mark to the table (a range over the primary key: nothing when every writer counts), and a reader adds them to
what it reads. The counts stay the aggregate whoever wrote the events.
"""

from __future__ import annotations

import json
import sqlite3
from typing import Any

TABLE = "session_counts"

CREATE = f"""
CREATE TABLE IF NOT EXISTS {TABLE} (
  session_id TEXT PRIMARY KEY,
  events INTEGER NOT NULL,
  requests INTEGER NOT NULL,
  timeouts INTEGER NOT NULL,
  late_drops INTEGER NOT NULL,
  last_ts REAL
)
""".strip()

# the aggregate over the events themselves: what the table must always equal; a folded call (`store/fold.py`,
# `start_seq` set) is one row standing for two events, one of them a request's start; a time that is no number (by
# hand, an older writer) is skipped, as `batch_counts` skips it (bytes would sort after every number)
AGGREGATE = """
SELECT session_id,
  count(*) + count(start_seq) AS events,
  sum(kind = 'request_start') + count(start_seq) AS requests,
  coalesce(sum(CASE WHEN kind = 'request_end' AND json_valid(data)
    THEN json_extract(data, '$.outcome') = 'deadline' END), 0) AS timeouts,
  sum(kind = 'tombstone_hit') AS late_drops,
  max(CASE WHEN typeof(ts) IN ('integer', 'real') THEN ts END) AS last_ts
FROM events {where} GROUP BY session_id
"""

# how migration 5 back-fills, before the events had `start_seq` (migration 6 adds it; no row is folded before it)
BACKFILL = f"INSERT OR REPLACE INTO {TABLE} " + AGGREGATE.format(where="").replace(" + count(start_seq)", "")

UPSERT = f"""
INSERT INTO {TABLE} (session_id, events, requests, timeouts, late_drops, last_ts) VALUES (?, ?, ?, ?, ?, ?)
ON CONFLICT(session_id) DO UPDATE SET
  events = events + excluded.events,
  requests = requests + excluded.requests,
  timeouts = timeouts + excluded.timeouts,
  late_drops = late_drops + excluded.late_drops,
  last_ts = coalesce(max(last_ts, excluded.last_ts), last_ts, excluded.last_ts)
""".strip()

READ = f"SELECT session_id, events, requests, timeouts, late_drops, last_ts FROM {TABLE} WHERE session_id != ''"

MARK = ""  # the session id of the mark's row: `events` is the highest events.id the table counts
READ_MARK = f"SELECT events FROM {TABLE} WHERE session_id = ''"
TOP = "SELECT max(id) FROM events"
SET_MARK = f"""
INSERT INTO {TABLE} (session_id, events, requests, timeouts, late_drops, last_ts) VALUES ('', ?, 0, 0, 0, NULL)
ON CONFLICT(session_id) DO UPDATE SET events = max(events, excluded.events)
""".strip()
# the mark and the highest event id in one statement (the writer asks both before each batch)
READ_MARK_AND_TOP = f"SELECT ({READ_MARK}), ({TOP})"
# the mark moved to the highest event id, read inside the statement (one statement after each batch)
SET_MARK_TO_TOP = SET_MARK.replace("VALUES ('', ?,", f"VALUES ('', coalesce(({TOP}), 0),")
# the rows above the mark by the primary key alone: left to the planner, the GROUP BY chose the session index and
# read the whole log, for every batch while an older writer shared it and for every `sessions`
UNCOUNTED = AGGREGATE.format(where="NOT INDEXED WHERE id > ?")
CATCH_UP = UPSERT.split(" VALUES ", 1)[0] + " " + UNCOUNTED + " " + UPSERT.split("\n", 1)[1]


def _cut_at_deadline(data: Any) -> bool:
    """A request_end's data (JSON text) says outcome "deadline"; only text that mentions it is parsed."""
    if not isinstance(data, str) or "deadline" not in data:
        return False
    try:
        parsed = json.loads(data)
    except ValueError:
        return False
    return isinstance(parsed, dict) and parsed.get("outcome") == "deadline"


def batch_counts(rows: list[tuple[Any, ...]]) -> list[tuple[Any, ...]]:
    """The UPSERT parameters for a batch of `events` rows (session_id, seq, ts, mono, kind, …, data, start_seq).
    A batch is mostly one session's rows in a run: the sums of a run are kept in locals (the writer's cost per row
    is this loop's), added to the session's totals when the run ends; a batch of plain calls' rows, none cut at a
    deadline, is counted a column at a time (`_folded_calls`)."""
    counted = _folded_calls(rows)
    if counted is not None:
        return [counted]
    sums: dict[Any, list[Any]] = {}
    session: Any = None
    events = requests = timeouts = late_drops = 0
    last_ts: Any = None
    for session_id, _, ts, _, kind, _, _, _, data, start_seq in rows:
        if session_id != session or session is None:
            if session is not None:
                _add_run(sums, session, events, requests, timeouts, late_drops, last_ts)
            session, events, requests, timeouts, late_drops, last_ts = session_id, 0, 0, 0, 0, None
        events += 1
        if kind == "request_start":
            requests += 1
        elif start_seq.__class__ is int:  # a folded call (its start's seq): its request_end's row, standing for two
            events += 1
            requests += 1
            if "deadline" in data and _cut_at_deadline(data):
                timeouts += 1
        elif kind == "request_end":
            if "deadline" in data and _cut_at_deadline(data):
                timeouts += 1
        elif kind == "tombstone_hit":
            late_drops += 1
        if (ts.__class__ is float or isinstance(ts, int | float)) and (last_ts is None or ts > last_ts):
            last_ts = ts
    if session is not None:
        _add_run(sums, session, events, requests, timeouts, late_drops, last_ts)
    return [(session_id, *counts) for session_id, counts in sums.items()]


def _folded_calls(rows: list[tuple[Any, ...]]) -> tuple[Any, ...] | None:
    """`batch_counts` of rows that are all request_end rows of one session, of ten values each, whose times are
    numbers and whose data is text never mentioning a deadline (the writer's batch of plain calls): counted by
    C-level passes over the columns (`zip`), no Python step a row. None for any other batch."""
    n = len(rows)
    try:
        columns = list(zip(*rows, strict=True))
    except ValueError:  # rows of different widths
        return None
    if not n or len(columns) != 10:
        return None
    sessions, ts, kinds, data, start_seqs = columns[0], columns[2], columns[4], columns[8], columns[9]
    if sessions.count(sessions[0]) != n or kinds.count("request_end") != n:
        return None
    try:
        if "deadline" in "".join(data):
            return None
        last_ts = max(ts)
    except TypeError:  # data that is not text, times that do not compare
        return None
    if last_ts.__class__ is not float and last_ts.__class__ is not int:
        return None  # times that are not numbers (all text, say): row by row, which skips them
    folded = list(map(type, start_seqs)).count(int)  # folded calls: two events each, one a request
    return (sessions[0], n + folded, folded, 0, 0, last_ts)


def _add_run(sums: dict[Any, list[Any]], session_id: Any, *run: Any) -> None:
    """Add one run's sums to its session's (a session whose rows come in more than one run of the batch)."""
    found = sums.get(session_id)
    if found is None:
        sums[session_id] = list(run)
        return
    for i in range(4):
        found[i] += run[i]
    if run[4] is not None and (found[4] is None or run[4] > found[4]):
        found[4] = run[4]


def uncounted_from(conn: sqlite3.Connection) -> int | None:
    """The first event id the table does not count, when events above its mark exist (written by an mcpwatch
    that keeps no counts); None when the table counts every event (or keeps no mark: a log not upgraded by this
    version, whose table is trusted as it is)."""
    mark, top = conn.execute(READ_MARK_AND_TOP).fetchone()
    if not isinstance(mark, int) or not isinstance(top, int) or top <= mark:
        return None
    return mark


def added(counted: tuple[Any, ...] | None, uncounted: list[Any]) -> tuple[Any, ...]:
    """A session's counts from the table plus those of its events above the mark (as CATCH_UP adds them)."""
    if counted is None:
        return tuple(uncounted)
    *sums, last_ts = counted
    sums = [a + b if isinstance(a, int) and isinstance(b, int) else a for a, b in zip(sums, uncounted[:4], strict=True)]
    times = [t for t in (last_ts, uncounted[4]) if isinstance(t, int | float)]
    return (*sums, max(times) if times else last_ts)


def catch_up(conn: sqlite3.Connection) -> None:
    """Inside the batch's transaction, before its rows are inserted: count the events no writer counted."""
    mark = uncounted_from(conn)
    if mark is not None:
        conn.execute(CATCH_UP, (mark,))


def add_batch(conn: sqlite3.Connection, rows: list[tuple[Any, ...]]) -> None:
    """Inside the batch's transaction, after its rows are inserted (and `catch_up` before them)."""
    conn.executemany(UPSERT, batch_counts(rows))
    conn.execute(SET_MARK_TO_TOP)


def create(conn: sqlite3.Connection) -> None:
    """Migration 4: the table, back-filled from the events already in the log."""
    conn.execute(CREATE)
    conn.execute(BACKFILL)
    conn.execute(SET_MARK, (conn.execute(TOP).fetchone()[0] or 0,))
