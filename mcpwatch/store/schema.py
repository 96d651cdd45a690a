"""The event log's schema: tables, indexes, views and the forward migrations that build them.

The schema version lives in `PRAGMA user_version`; `PRAGMA application_id` marks the file as an mcpwatch log, so a
foreign SQLite file is refused instead of being written into. Each migration step moves the file one version up and
runs inside the caller's transaction. Views exist so a user can query the log with `sqlite-utils` or Datasette
without reading mcpwatch's code.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Sequence

APPLICATION_ID = 0x4D435057  # "MCPW"

Migration = Callable[[sqlite3.Connection], None]

REQUESTS_VIEW = """
SELECT
  s.session_id AS session_id,
  s.request_id AS request_id,
  s.tool AS tool,
  json_extract(s.data, '$.method') AS method,
  json_extract(s.data, '$.up_id') AS up_id,
  s.seq AS start_seq,
  s.ts AS start_ts,
  s.mono AS start_mono,
  e.seq AS end_seq,
  e.ts AS end_ts,
  json_extract(e.data, '$.outcome') AS outcome,
  json_extract(e.data, '$.duration_s') AS duration_s,
  json_extract(s.data, '$.budget_s') AS budget_s,
  json_extract(s.data, '$.budget_source') AS budget_source,
  json_extract(e.data, '$.error') AS error
FROM events AS s
LEFT JOIN events AS e ON e.id = (
  SELECT x.id FROM events AS x
  WHERE x.session_id = s.session_id AND x.request_id = s.request_id AND x.kind = 'request_end' AND x.seq > s.seq
  ORDER BY x.seq LIMIT 1
)
WHERE s.kind = 'request_start'
""".strip()


def _degraded_patterns() -> list[str]:
    """LIKE patterns for an older log's ok answer whose preview says it is degraded (before request_end carried
    the `degraded` mark): the spellings `reliability.degraded` reads, compact or spaced, plain or escaped."""
    pairs = [(key, word) for key in ("status", "synthesis_type") for word in ("partial", "failed", "insufficient")]
    pairs += [("status", "degraded"), ("synthesis_type", "degraded"), ("synthesized_by", "fallback")]
    found = []
    for key, word in pairs:
        for quote in ('"', '\\"'):
            for colon in (":", ": "):
                found.append(f"%{quote}{key}{quote}{colon}{quote}{word}{quote}%")
    return found


_DEGRADED_PREVIEW = " OR ".join(
    "json_extract(e.data, '$.result_preview') LIKE '" + p.replace("'", "''") + "'" for p in _degraded_patterns()
)

# v4: an ok answer that says it is not whole is "degraded", as `report` counts it (with the reason in `degraded`)
REQUESTS_VIEW_DEGRADED = REQUESTS_VIEW.replace(
    "  json_extract(e.data, '$.outcome') AS outcome,",
    "  CASE WHEN json_extract(e.data, '$.outcome') = 'ok' AND (json_extract(e.data, '$.degraded') IS NOT NULL"
    f" OR {_DEGRADED_PREVIEW}) THEN 'degraded' ELSE json_extract(e.data, '$.outcome') END AS outcome,\n"
    "  CASE WHEN json_extract(e.data, '$.outcome') = 'ok' THEN coalesce(json_extract(e.data, '$.degraded'),"
    f" CASE WHEN {_DEGRADED_PREVIEW} THEN 'said by its preview' END) END AS degraded,",
)


# The wrapper never reuses an upstream id within a session, so (session_id, up_id) names one tombstone.
TOMBSTONES_VIEW = """
WITH
  adds AS (
    SELECT session_id, seq, ts, mono, request_id, tool,
      json_extract(data, '$.up_id') AS up_id,
      json_extract(data, '$.ttl_s') AS ttl_s,
      json_extract(data, '$.reason') AS reason,
      json_extract(data, '$.expires_mono') AS expires_mono
    FROM events WHERE kind = 'tombstone_add'
  ),
  hits AS (
    SELECT session_id, json_extract(data, '$.up_id') AS up_id, count(*) AS hits, max(ts) AS last_hit_ts
    FROM events WHERE kind = 'tombstone_hit' GROUP BY 1, 2
  ),
  expiries AS (
    SELECT session_id, json_extract(data, '$.up_id') AS up_id, min(ts) AS expired_ts,
      min(json_extract(data, '$.age_s')) AS expired_age_s
    FROM events WHERE kind = 'tombstone_expire' GROUP BY 1, 2
  )
SELECT
  a.session_id AS session_id, a.seq AS seq, a.ts AS added_ts, a.mono AS added_mono, a.request_id AS request_id,
  a.tool AS tool, a.up_id AS up_id, a.ttl_s AS ttl_s, a.reason AS reason, a.expires_mono AS expires_mono,
  coalesce(h.hits, 0) AS hits, h.last_hit_ts AS last_hit_ts,
  x.expired_ts AS expired_ts, x.expired_age_s AS expired_age_s
FROM adds AS a
LEFT JOIN hits AS h ON h.session_id = a.session_id AND h.up_id = a.up_id
LEFT JOIN expiries AS x ON x.session_id = a.session_id AND x.up_id = a.up_id
""".strip()

# Each host session of an HTTP front has its own upstream and id space: a tombstone is (session_id, host_session,
# up_id), host_session null on the stdio front.
TOMBSTONES_VIEW_BY_HOST = """
WITH
  adds AS (
    SELECT session_id, seq, ts, mono, request_id, tool,
      json_extract(data, '$.host_session') AS host_session,
      json_extract(data, '$.up_id') AS up_id,
      json_extract(data, '$.ttl_s') AS ttl_s,
      json_extract(data, '$.reason') AS reason,
      json_extract(data, '$.expires_mono') AS expires_mono
    FROM events WHERE kind = 'tombstone_add'
  ),
  hits AS (
    SELECT session_id, json_extract(data, '$.host_session') AS host_session, json_extract(data, '$.up_id') AS up_id,
      count(*) AS hits, max(ts) AS last_hit_ts
    FROM events WHERE kind = 'tombstone_hit' GROUP BY 1, 2, 3
  ),
  expiries AS (
    SELECT session_id, json_extract(data, '$.host_session') AS host_session, json_extract(data, '$.up_id') AS up_id,
      min(ts) AS expired_ts, min(json_extract(data, '$.age_s')) AS expired_age_s
    FROM events WHERE kind = 'tombstone_expire' GROUP BY 1, 2, 3
  )
SELECT
  a.session_id AS session_id, a.seq AS seq, a.ts AS added_ts, a.mono AS added_mono, a.request_id AS request_id,
  a.tool AS tool, a.up_id AS up_id, a.ttl_s AS ttl_s, a.reason AS reason, a.expires_mono AS expires_mono,
  coalesce(h.hits, 0) AS hits, h.last_hit_ts AS last_hit_ts,
  x.expired_ts AS expired_ts, x.expired_age_s AS expired_age_s, a.host_session AS host_session
FROM adds AS a
LEFT JOIN hits AS h ON h.session_id = a.session_id AND h.host_session IS a.host_session AND h.up_id = a.up_id
LEFT JOIN expiries AS x ON x.session_id = a.session_id AND x.host_session IS a.host_session AND x.up_id = a.up_id
""".strip()

INVALIDATIONS_VIEW = """
SELECT
  session_id, seq, ts, mono, request_id,
  coalesce(json_extract(data, '$.caused_by'), tool) AS caused_by,
  json_extract(data, '$.patterns') AS patterns,
  json_array_length(data, '$.patterns') AS pattern_count
FROM events WHERE kind = 'invalidation'
""".strip()


# A cut call's late response, beside what the call looked like to the host (its request_end): the true duration is
# cut_after_s + delay_s.
LATE_RESULTS_VIEW = """
SELECT
  l.session_id AS session_id, l.seq AS seq, l.ts AS ts, l.mono AS mono, l.request_id AS request_id, l.tool AS tool,
  json_extract(l.data, '$.up_id') AS up_id,
  json_extract(l.data, '$.reason') AS reason,
  json_extract(l.data, '$.cut_after_s') AS cut_after_s,
  json_extract(l.data, '$.delay_s') AS delay_s,
  json_extract(l.data, '$.duration_s') AS duration_s,
  json_extract(l.data, '$.outcome') AS outcome,
  json_extract(l.data, '$.size_bytes') AS size_bytes,
  coalesce(json_extract(l.data, '$.truncated'), 0) AS truncated,
  json_extract(l.data, '$.reuse_ttl_s') AS reuse_ttl_s
FROM events AS l WHERE l.kind = 'late_result'
""".strip()

LATE_REUSES_VIEW = """
SELECT
  session_id, seq, ts, mono, request_id, tool,
  json_extract(data, '$.from_request_id') AS from_request_id,
  json_extract(data, '$.delay_s') AS delay_s,
  json_extract(data, '$.age_s') AS age_s,
  json_extract(data, '$.ttl_s') AS ttl_s
FROM events WHERE kind = 'late_reuse'
""".strip()


SESSIONS_TABLE = """
CREATE TABLE "sessions" (
   "id" TEXT PRIMARY KEY,
   "name" TEXT,
   "upstream" TEXT,
   "pid" INTEGER,
   "started_at" REAL,
   "ended_at" REAL,
   "end_reason" TEXT,
   "version" TEXT,
   "config" TEXT
)
""".strip()

EVENTS_TABLE = """
CREATE TABLE "events" (
   "id" INTEGER PRIMARY KEY,
   "session_id" TEXT NOT NULL REFERENCES "sessions"("id"),
   "seq" INTEGER NOT NULL,
   "ts" REAL NOT NULL,
   "mono" REAL NOT NULL,
   "kind" TEXT NOT NULL,
   "request_id" TEXT,
   "tool" TEXT,
   "model" TEXT,
   "data" TEXT NOT NULL
)
""".strip()

V1_INDEXES = (
    ("events_by_session_seq", "events", '"session_id", "seq"'),
    ("events_by_request", "events", '"session_id", "request_id", "seq"'),
    ("events_by_ts", "events", '"ts"'),
    ("sessions_by_start", "sessions", '"started_at"'),
)

V1_VIEWS = (("requests", REQUESTS_VIEW), ("tombstones", TOMBSTONES_VIEW), ("invalidations", INVALIDATIONS_VIEW))


def _v1_base(conn: sqlite3.Connection) -> None:
    """Sessions, events, their indexes and the query views: the statements sqlite-utils wrote for the first logs,
    written out (its import, with click and pluggy, cost a new log's writer more than the rest of its start)."""
    conn.execute(SESSIONS_TABLE)
    conn.execute(EVENTS_TABLE)
    for index, table, columns in V1_INDEXES:
        conn.execute(f'CREATE INDEX "{index}"\n    ON "{table}" ({columns})')
    for view, select in V1_VIEWS:
        conn.execute(f'CREATE VIEW "{view}" AS {select}')
    conn.execute(f"PRAGMA application_id = {APPLICATION_ID}")


def _v2_late_results(conn: sqlite3.Connection) -> None:
    """Views over late results and their reuse (the events themselves need no new table)."""
    conn.execute(f"CREATE VIEW IF NOT EXISTS late_results AS {LATE_RESULTS_VIEW}")
    conn.execute(f"CREATE VIEW IF NOT EXISTS late_reuses AS {LATE_REUSES_VIEW}")


def _v3_host_sessions(conn: sqlite3.Connection) -> None:
    """Tombstones told apart by host session (an HTTP front's sessions each number their upstream ids)."""
    conn.execute("DROP VIEW IF EXISTS tombstones")
    conn.execute(f"CREATE VIEW tombstones AS {TOMBSTONES_VIEW_BY_HOST}")


def _v4_degraded(conn: sqlite3.Connection) -> None:
    """The requests view says "degraded" where `report` does (an ok answer that is not whole)."""
    conn.execute("DROP VIEW IF EXISTS requests")
    conn.execute(f"CREATE VIEW requests AS {REQUESTS_VIEW_DEGRADED}")


def _v5_session_counts(conn: sqlite3.Connection) -> None:
    """Per-session counts the writer keeps as it writes (`store/session_counts.py`), back-filled from the events:
    `mcpwatch sessions` reads them instead of aggregating the whole log."""
    from mcpwatch.store.session_counts import create

    create(conn)


# v6: a call folded into one row (`store/fold.py`) is one request all the same: its start comes from the end row's
# `start` (its data, where `start_seq` is set), every other start from its own row, as before.
REQUESTS_VIEW_FOLDED = """WITH s AS (
  SELECT session_id, request_id, tool, data, seq, ts, mono FROM events WHERE kind = 'request_start'
  UNION ALL
  SELECT session_id, request_id, CASE WHEN json_type(data, '$.start.tool') IS NULL THEN tool
      ELSE json_extract(data, '$.start.tool') END,
    json_extract(data, '$.start.data'), start_seq, json_extract(data, '$.start.ts'), json_extract(data, '$.start.mono')
  FROM events INDEXED BY events_by_start WHERE start_seq IS NOT NULL
)
""" + REQUESTS_VIEW_DEGRADED.replace("FROM events AS s\n", "FROM s\n").replace("\nWHERE s.kind = 'request_start'", "")


def _v6_folded_calls(conn: sqlite3.Connection) -> None:
    """A short call may be one row: its request_end, with its start kept in `data` and its seq in `start_seq`
    (indexed for the starts a range of seqs holds); the requests view reads both forms."""
    conn.execute("ALTER TABLE events ADD COLUMN start_seq INTEGER")
    conn.execute("CREATE INDEX events_by_start ON events (session_id, start_seq) WHERE start_seq IS NOT NULL")
    conn.execute("DROP VIEW IF EXISTS requests")
    conn.execute(f"CREATE VIEW requests AS {REQUESTS_VIEW_FOLDED}")


# v7: the readers look a request up by (session, request) only for its progress (`report`, `whatif`) and a kept
# task's status (`store/kept_tasks.py`): the index holds those rows alone, not every call's, which cost the writer
# an entry a row (≈ 8,600 instructions of about 64,000). The name stays, so `INDEXED BY` reads either version.
REQUEST_INDEX_KIND_NAMES = ("progress", "task_status")
REQUEST_INDEX_KINDS = "kind IN ('" + "', '".join(REQUEST_INDEX_KIND_NAMES) + "')"  # the index's condition


def _v7_narrow_request_index(conn: sqlite3.Connection) -> None:
    """`events_by_request` holds only the kinds read by request: progress and task status."""
    conn.execute("DROP INDEX IF EXISTS events_by_request")
    conn.execute(f"CREATE INDEX events_by_request ON events (session_id, request_id, seq) WHERE {REQUEST_INDEX_KINDS}")


# v8: the requests view found each start's end by (session, request) in `events_by_request`, which schema 7 narrowed
# to progress and task status: each lookup became a walk of the session from the start on, to the end's row or (a
# start with no end: a wrapper killed mid-call) to the session's last row, so the view cost a session's rows times its
# unended starts. A folded call's end is its own row; another start's end is the first request_end of its request
# after it that is not a folded call (a folded row holds its own start), found in an index of those rows alone: a
# plain call's row still takes no entry.
REQUESTS_VIEW_BY_END = (
    REQUESTS_VIEW_FOLDED.replace(
        "SELECT session_id, request_id, tool, data, seq, ts, mono FROM events WHERE kind = 'request_start'",
        "SELECT session_id, request_id, tool, data, seq, ts, mono, NULL AS end_id FROM events"
        " WHERE kind = 'request_start'",
    )
    .replace(
        "json_extract(data, '$.start.mono')\n",
        "json_extract(data, '$.start.mono'),\n    CASE WHEN kind = 'request_end' AND seq > start_seq THEN id END\n",
    )
    .replace(
        "LEFT JOIN events AS e ON e.id = (\n  SELECT x.id FROM events AS x\n",
        "LEFT JOIN events AS e ON e.id = coalesce(s.end_id, (\n  SELECT x.id FROM events AS x\n",
    )
    .replace(
        "x.kind = 'request_end' AND x.seq > s.seq\n  ORDER BY x.seq LIMIT 1\n)",
        "x.kind = 'request_end' AND x.start_seq IS NULL\n    AND x.seq > s.seq\n  ORDER BY x.seq LIMIT 1\n))",
    )
)


def _v8_requests_view_by_end(conn: sqlite3.Connection) -> None:
    """The requests view finds a start's end without walking the session: see REQUESTS_VIEW_BY_END."""
    conn.execute(
        "CREATE INDEX events_by_request_end ON events (session_id, request_id, seq)"
        " WHERE kind = 'request_end' AND start_seq IS NULL"
    )
    conn.execute("DROP VIEW IF EXISTS requests")
    conn.execute(f"CREATE VIEW requests AS {REQUESTS_VIEW_BY_END}")


# v9: a folded row whose start lies at most FOLD_NEAR seqs before its own (nearly every one: a plain call ends a few
# events after it starts) is found from its own seq, in the session's seq index that every row has an entry in:
# `events_by_start` keeps only the others (an older writer's long folds, rows made odd by hand), so a plain call's
# row takes one b-tree entry fewer. The condition holds whoever wrote the row, so a reader never depends on which
# writer folded it.
FOLD_NEAR = 512
NEAR_START = f"typeof(start_seq) = 'integer' AND typeof(seq) = 'integer' AND seq - start_seq BETWEEN 1 AND {FOLD_NEAR}"
FAR_START = f"start_seq IS NOT NULL AND NOT ({NEAR_START})"  # the index's condition: a query on it repeats it
_ALL_STARTS = "FROM events INDEXED BY events_by_start WHERE start_seq IS NOT NULL"
if _ALL_STARTS not in REQUESTS_VIEW_BY_END:  # pragma: no cover - a guard on the derivation below
    raise AssertionError("the requests view no longer reads folded starts through events_by_start")
REQUESTS_VIEW_NEAR = REQUESTS_VIEW_BY_END.replace(_ALL_STARTS, "FROM events WHERE start_seq IS NOT NULL")


def _v9_near_starts(conn: sqlite3.Connection) -> None:
    """`events_by_start` holds only the folded rows whose start is not near them (FAR_START); the requests view
    reads every folded row without it."""
    conn.execute("DROP INDEX IF EXISTS events_by_start")
    conn.execute(f"CREATE INDEX events_by_start ON events (session_id, start_seq) WHERE {FAR_START}")
    conn.execute("DROP VIEW IF EXISTS requests")
    conn.execute(f"CREATE VIEW requests AS {REQUESTS_VIEW_NEAR}")


# MIGRATIONS[i] moves a log from version i to version i + 1. Append, never edit a released step.
MIGRATIONS: tuple[Migration, ...] = (
    _v1_base,
    _v2_late_results,
    _v3_host_sessions,
    _v4_degraded,
    _v5_session_counts,
    _v6_folded_calls,
    _v7_narrow_request_index,
    _v8_requests_view_by_end,
    _v9_near_starts,
)
SCHEMA_VERSION = len(MIGRATIONS)


def migrate(conn: sqlite3.Connection, current: int, steps: Sequence[Migration] = MIGRATIONS) -> int:
    """Apply steps[current:] inside the caller's open transaction; return the new version."""
    for version in range(current, len(steps)):
        steps[version](conn)
        conn.execute(f"PRAGMA user_version = {version + 1}")
    return len(steps)


def index_definition(name: str) -> str | None:
    """The statement that makes the index `name` as this version's log has it, on one line and without double
    quotes (its names need none), so a shell's double quotes can hold it (None: no such index): what to run when a
    hand edit dropped or changed an index a reader names (`INDEXED BY`)."""
    conn = sqlite3.connect(":memory:")
    try:
        migrate(conn, 0)
        found = conn.execute("SELECT sql FROM sqlite_master WHERE type = 'index' AND name = ?", (name,)).fetchone()
    finally:
        conn.close()
    return None if found is None or found[0] is None else " ".join(found[0].replace('"', "").split())
