"""Reading the event log: sessions with their counts, and a session's events streamed in seq order.

Read-only (a live wrapper may be writing the same file); every file-level problem is a `LogError`. `prune` is the
one writer here: it deletes old sessions but never one whose wrapper is still alive.
"""

from __future__ import annotations

import json
import math
import re
import sqlite3
import time
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from operator import itemgetter
from pathlib import Path
from typing import Any, NamedTuple

from mcpwatch.events import Event, Kind
from mcpwatch.registry import pid_alive
from mcpwatch.store import session_counts
from mcpwatch.store.db import (
    BUSY_TIMEOUT_MS,
    LogError,
    connect_reader,
    immediate,
    translate_errors,
)
from mcpwatch.store.folded_starts import MAX_ROWID, ODD_START, FoldedStarts
from mcpwatch.store.schema import (
    FAR_START,
    FOLD_NEAR,
    NEAR_START,
    REQUEST_INDEX_KIND_NAMES,
    REQUEST_INDEX_KINDS,
    index_definition,
)
from mcpwatch.store.unfold import COLUMNS, Bounds, Row, in_range, number, row_event, sql_order, start_event

_DATA = "CASE WHEN json_valid(data) THEN data END"  # a damaged row reads as no data rather than failing the query

_MARKERS = f"""
SELECT seq, mono, kind, request_id, tool,
  CASE WHEN kind IN ('{Kind.REQUEST_END}', '{Kind.LATE_RESULT}') THEN json_extract({_DATA}, '$.outcome') END,
  CASE kind WHEN '{Kind.CONFIG_CHANGE}' THEN json_extract({_DATA}, '$.key') END,
  CASE kind WHEN '{Kind.CONFIG_CHANGE}' THEN json_extract({_DATA}, '$.old') END,
  CASE kind WHEN '{Kind.CONFIG_CHANGE}' THEN json_extract({_DATA}, '$.new') END,
  CASE kind WHEN '{Kind.LATE_RESULT}' THEN json_extract({_DATA}, '$.delay_s') END
FROM events
WHERE session_id = ? AND seq <= ?
  AND (kind IN ('{Kind.TOMBSTONE_HIT}', '{Kind.LATE_RESULT}', '{Kind.CONFIG_CHANGE}')
       OR (kind = '{Kind.REQUEST_END}' AND json_extract({_DATA}, '$.outcome') IN ({{outcomes}})))
ORDER BY seq
"""


EVENTS_PAGE = 2000

_SESSION_COLUMNS = "id, name, upstream, pid, started_at, ended_at, end_reason, version, config"


class MarkerRow(NamedTuple):
    """The narrow columns of one event worth marking on a replay's timeline (see `EventReader.marker_rows`)."""

    seq: int
    mono: float
    kind: str
    request_id: str | None
    tool: str | None
    outcome: str | None  # request_end, late_result
    key: str | None  # config_change
    old: Any
    new: Any
    delay_s: Any  # late_result: how long after its cut the answer came


@dataclass(frozen=True, slots=True)
class SessionInfo:
    """One session's row plus counts. `duration` runs to `ended_at`, or to the last event while still open.

    `running` is true for a session with no end whose recorded pid was alive when the row was read.
    """

    id: str
    name: str | None
    upstream: str | None
    pid: int | None
    started_at: float
    ended_at: float | None
    duration: float
    requests: int = 0
    timeouts: int = 0
    late_drops: int = 0
    events: int = 0
    end_reason: str | None = None
    version: str | None = None
    config: dict[str, Any] = field(default_factory=dict)
    last_ts: float | None = None
    running: bool = False

    @property
    def state(self) -> str:
        """`ended`, `running` (no end, wrapper alive) or `crashed` (no end and its wrapper is gone: it died or was
        killed without recording one; it counts as ended at its last event)."""
        if self.ended_at is not None:
            return "ended"
        return "running" if self.running else "crashed"

    def to_dict(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "name": self.name,
            "upstream": self.upstream,
            "pid": self.pid,
            "started_at": self.started_at,
            "ended_at": self.ended_at,
            "end_reason": self.end_reason,
            "state": self.state,
            "last_event_at": self.last_ts,
            "duration": self.duration,
            "requests": self.requests,
            "timeouts": self.timeouts,
            "late_drops": self.late_drops,
            "events": self.events,
            "version": self.version,
        }


def _count(value: Any) -> int:
    """A count read back from the log's counts table: a whole number ≥ 0, anything else (a hand-edited row's
    text, blob, fraction or infinity) 0, never an exception in every reader of the log."""
    if isinstance(value, float) and math.isfinite(value) and value.is_integer():
        value = int(value)
    return value if isinstance(value, int) and value >= 0 else 0


def _session(row: tuple[Any, ...], counts: tuple[Any, ...] | None) -> SessionInfo:
    sid, name, upstream, pid, started_at, ended_at, end_reason, version, config = row
    events, requests, timeouts, late_drops, last_ts = counts or (0, 0, 0, 0, None)
    events, requests, timeouts, late_drops = _count(events), _count(requests), _count(timeouts), _count(late_drops)
    last_ts = number(last_ts, None)
    started = float(started_at or 0.0)
    end = ended_at if ended_at is not None else last_ts
    try:
        parsed = json.loads(config) if config else {}
    except ValueError:
        parsed = {}
    return SessionInfo(
        id=sid,
        name=name,
        upstream=upstream,
        pid=pid,
        started_at=started,
        ended_at=ended_at,
        duration=max(0.0, float(end) - started) if end is not None else 0.0,
        requests=requests,
        timeouts=timeouts,
        late_drops=late_drops,
        events=events,
        end_reason=end_reason,
        version=version,
        config=parsed if isinstance(parsed, dict) else {},
        last_ts=last_ts,
        running=ended_at is None and pid_alive(pid),
    )


class EventReader:
    """Read-only access to one log file. Use from one thread at a time."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self._conn = connect_reader(self.path)

    def close(self) -> None:
        self._conn.close()

    def __enter__(self) -> EventReader:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _query(self, sql: str, params: Iterable[Any] = ()) -> list[tuple[Any, ...]]:
        with translate_errors(self.path):
            try:
                return self._conn.execute(sql, tuple(params)).fetchall()
            except sqlite3.OperationalError as exc:
                raise _index_changed(self.path, sql, exc) or exc from None

    def _counts(self, session_id: str | None = None) -> dict[str, tuple[Any, ...]]:
        """Each session's counts: from the table the writer keeps (one row a session, whatever the log's size)."""
        where, params = ("AND session_id = ?", (session_id,)) if session_id is not None else ("", ())
        rows = self._query(f"{session_counts.READ} {where}", params)
        counts = {r[0]: r[1:] for r in rows}
        with translate_errors(self.path):
            mark = session_counts.uncounted_from(self._conn)
        if mark is not None:  # events written by an mcpwatch that keeps no counts: added as the writer will
            where = "NOT INDEXED WHERE id > ?" + (" AND session_id = ?" if session_id is not None else "")
            for sid, *more in self._query(session_counts.AGGREGATE.format(where=where), (mark, *params)):
                counts[sid] = session_counts.added(counts.get(sid), more)
        return counts

    def sessions(self) -> list[SessionInfo]:
        """All sessions, oldest first."""
        rows = self._query(f"SELECT {_SESSION_COLUMNS} FROM sessions ORDER BY started_at, id")
        counts = self._counts()
        return [_session(r, counts.get(r[0])) for r in rows]

    def session(self, id_or_prefix: str) -> SessionInfo:
        """The session with this id, or the only one whose id starts with it; LogError otherwise."""
        return self.find_session(id_or_prefix)

    def latest_session(self) -> SessionInfo:
        """The most recently started session; LogError when the log has none."""
        return self.find_session(None)

    def find_session(self, id_or_prefix: str | None, *, counts: bool = True) -> SessionInfo:
        """The session with this id, the only one starting with it, or (None) the latest; LogError otherwise.

        `counts=False` skips the aggregate over the session's events (about a second for a million): the counts
        then read 0 and an open session's duration 0 — what a replay opening a huge recording needs.
        """
        if id_or_prefix is None:
            rows = self._query(f"SELECT {_SESSION_COLUMNS} FROM sessions ORDER BY started_at DESC, id DESC LIMIT 1")
            if not rows:
                raise LogError(f"{self.path}: the event log has no sessions yet")
        else:
            rows = self._query(f"SELECT {_SESSION_COLUMNS} FROM sessions WHERE id = ?", (id_or_prefix,))
            if not rows and id_or_prefix:
                rows = self._query(
                    f"SELECT {_SESSION_COLUMNS} FROM sessions WHERE substr(id, 1, ?) = ? ORDER BY id LIMIT 6",
                    (len(id_or_prefix), id_or_prefix),
                )
            if not rows:
                raise LogError(f"{self.path}: no session {id_or_prefix!r} (see `mcpwatch sessions`)")
            if len(rows) > 1:
                shown = ", ".join(r[0] for r in rows[:5])
                raise LogError(f"{self.path}: session {id_or_prefix!r} is ambiguous: it starts {shown}")
        return _session(rows[0], self._counts(rows[0][0]).get(rows[0][0]) if counts else None)

    def events(
        self,
        session_id: str,
        *,
        after_seq: int = 0,
        start_mono: float | None = None,
        end_mono: float | None = None,
        start_ts: float | None = None,
        end_ts: float | None = None,
        kinds: Iterable[str] | None = None,
        limit: int | None = None,
    ) -> Iterator[Event]:
        """The session's events with seq > after_seq, start_mono <= mono < end_mono and start_ts <= ts < end_ts
        (wall clock, unix seconds: "what happened between 14:00 and 14:05"), in seq order.

        Streamed a page at a time, each page its own short read, so a slow consumer (a replay) never holds a
        snapshot open that would stop writers' WAL checkpoints; events written before a later page is read
        are included.
        """
        where = ["session_id = ?", "(seq, id) > (?, ?)"]
        params: list[Any] = [session_id]
        filters: list[Any] = []
        if start_mono is not None:
            where.append("mono >= ?")
            filters.append(start_mono)
        if end_mono is not None:
            where.append("mono < ?")
            filters.append(end_mono)
        if start_ts is not None:
            where.append("ts >= ?")
            filters.append(start_ts)
        if end_ts is not None:
            where.append("ts < ?")
            filters.append(end_ts)
        wants_starts = True
        if kinds is not None:
            wanted = sorted({str(k) for k in kinds})
            if not wanted:
                return
            wants_starts = Kind.REQUEST_START.value in wanted
            where.append(f"kind IN ({','.join('?' * len(wanted))})")
            filters.extend(wanted)
        sql = f"SELECT {COLUMNS} FROM events WHERE {' AND '.join(where)} ORDER BY seq, id LIMIT ?"
        bounds = (start_mono, end_mono, start_ts, end_ts)
        remaining = None if limit is None else max(0, int(limit))
        last_seq, last_id = int(after_seq), MAX_ROWID  # (seq, id) > (after_seq, max) <=> seq > after_seq
        while remaining is None or remaining > 0:
            size = EVENTS_PAGE if remaining is None else min(EVENTS_PAGE, remaining)
            rows = self._query(sql, [*params, last_seq, last_id, *filters, size])
            full = len(rows) == size
            starts = None
            if wants_starts:  # the starts of folded calls in this page's range of seqs, each in its place
                upto = rows[-1][2] if full else None
                starts = FoldedStarts(self._query, session_id, last_seq, upto, EVENTS_PAGE)
            for item in _merged(rows, starts, bounds):
                yield item if isinstance(item, Event) else row_event(item)
                if remaining is not None:
                    remaining -= 1
                    if remaining == 0:
                        return
            if not full:
                return
            last_seq, last_id = rows[-1][2], rows[-1][0]

    def trend_rows(
        self, session_id: str, *, after_seq: int = 0, limit: int = 20_000
    ) -> list[tuple[int, float, str, str | None, str | None, float | None, str | None]]:
        """What the Trends view folds, as plain tuples in seq order (no `Event` objects: a million-event session
        must read quickly): (seq, ts, kind, tool or method, outcome, duration_s, data) for request_end, where data
        is None, and for config_change and upstream_state, where data is the event's JSON text. At most `limit`
        rows after `after_seq`, so a caller pages and a live session is read only from where it left off. A row
        whose JSON was damaged reads as unknown outcome and duration."""
        valid_end = "kind = 'request_end' AND json_valid(data)"
        sql = (
            "SELECT seq, ts, kind,"
            f" coalesce(tool, CASE WHEN {valid_end} THEN json_extract(data, '$.method') END),"
            f" CASE WHEN {valid_end} THEN json_extract(data, '$.outcome') END,"
            f" CASE WHEN {valid_end} THEN json_extract(data, '$.duration_s') END,"
            " CASE WHEN kind = 'request_end' THEN NULL ELSE data END"
            " FROM events INDEXED BY events_by_session_seq"
            " WHERE session_id = ? AND seq > ? AND kind IN ('request_end', 'config_change', 'upstream_state')"
            " ORDER BY seq LIMIT ?"
        )
        return self._query(sql, (session_id, int(after_seq), max(1, int(limit))))

    def model_rows(
        self, session_id: str, *, after_seq: int = 0, limit: int = 20_000
    ) -> list[tuple[int, float, str, str | None, str | None, float | None, str | None, str | None]]:
        """What the Models view folds, in seq order: (seq, ts, kind, model, status, latency_ms, request_id, data)
        for every model_status that is not `pending` (data None) and every operator_call (data its JSON text, model
        None), at most `limit` after `after_seq`."""
        valid = "json_valid(data)"
        sql = (
            "SELECT seq, ts, kind, model,"
            f" CASE WHEN kind = 'model_status' AND {valid} THEN json_extract(data, '$.status') END,"
            f" CASE WHEN kind = 'model_status' AND {valid} THEN json_extract(data, '$.latency_ms') END,"
            " request_id,"
            # the tool is the event's column, not a data field: put it where the Models view reads it
            f" CASE WHEN kind = 'operator_call' AND {valid} THEN json_set(data, '$.tool', tool) END"
            " FROM events INDEXED BY events_by_session_seq"
            " WHERE session_id = ? AND seq > ? AND kind IN ('model_status', 'operator_call')"
            f" AND NOT (kind = 'model_status' AND {valid} AND json_extract(data, '$.status') IS 'pending')"
            " ORDER BY seq LIMIT ?"
        )
        return self._query(sql, (session_id, int(after_seq), max(1, int(limit))))

    def recent_outcomes(self, session_id: str, since_ts: float) -> dict[str, int]:
        """How the session's calls that ended at or after `since_ts` ended: {outcome: count} (by the ts index)."""
        rows = self._query(
            "SELECT CASE WHEN json_valid(data) THEN json_extract(data, '$.outcome') END, count(*)"
            " FROM events INDEXED BY events_by_ts WHERE ts >= ? AND session_id = ? AND kind = 'request_end'"
            " GROUP BY 1",
            (since_ts, session_id),
        )
        return {str(outcome): int(n) for outcome, n in rows if outcome is not None}

    def last_of_kind(self, session_id: str, kind: str, *, scan: int = 20_000) -> Event | None:
        """The session's latest event of `kind` among its last `scan` rows (None if none there): bounded, so a
        quiet kind in a huge session costs no full scan."""
        starts = kind == Kind.REQUEST_START.value
        rows = self._query(
            f"SELECT {COLUMNS} FROM ("
            " SELECT * FROM events WHERE session_id = ? ORDER BY seq DESC LIMIT ?)"
            " WHERE kind = ? OR (? AND start_seq IS NOT NULL) ORDER BY seq DESC",
            (session_id, max(1, int(scan)), kind, starts),
        )
        best: Event | None = None
        for row in rows:
            if best is not None and row[2] < best.seq:
                break  # a row's start is before the row: none further down is later than the best
            event = start_event(row) if starts and row[10] is not None else row_event(row)
            if event.kind == kind and (best is None or event.seq > best.seq):
                best = event
        return best

    def count_by_kind(self, session_id: str) -> dict[str, int]:
        """Events of each kind (a folded call counts its request_start and its request_end)."""
        rows = self._query(
            "SELECT kind, count(*), count(start_seq) FROM events WHERE session_id = ? GROUP BY kind", (session_id,)
        )
        counts = {kind: int(n) for kind, n, _ in rows}
        folded = sum(int(f) for _, _, f in rows)
        if folded:
            counts[Kind.REQUEST_START.value] = counts.get(Kind.REQUEST_START.value, 0) + folded
        return counts

    def request_events(self, session_id: str, request_ids: Iterable[str], kind: str) -> Iterator[Event]:
        """The events of one kind for these requests, in seq order per request (the `events_by_request` index): how
        `report` reads the progress of the few calls it estimates, not of the whole session."""
        starts = kind == Kind.REQUEST_START.value
        # the index holds only the kinds read by request (schema 7): its condition, said here, lets the query use it
        by_request = kind in REQUEST_INDEX_KIND_NAMES
        indexed = f"INDEXED BY events_by_request WHERE {REQUEST_INDEX_KINDS} AND" if by_request else "WHERE"
        sql = (
            f"SELECT {COLUMNS} FROM events {indexed} session_id = ? AND request_id = ?"
            " AND (kind = ? OR (? AND kind = 'request_end' AND start_seq IS NOT NULL)) ORDER BY seq"
        )
        for request_id in request_ids:
            rows = self._query(sql, (session_id, request_id, kind, starts))
            found = [start_event(r) if starts and r[10] is not None else row_event(r) for r in rows]
            yield from sorted(found, key=lambda e: e.seq) if starts else found

    def event_count(self, session_id: str) -> int:
        """Events (a folded call is one row standing for two)."""
        query = "SELECT count(*) + count(start_seq) FROM events WHERE session_id = ?"
        return int(self._query(query, (session_id,))[0][0])

    def max_seq(self, session_id: str) -> int:
        """The highest seq written so far (0 for none): where a live tail continues from."""
        return int(self._query("SELECT coalesce(max(seq), 0) FROM events WHERE session_id = ?", (session_id,))[0][0])

    def event_at_offset(self, session_id: str, after_seq: int, last_seq: int, offset: int) -> tuple[int, float] | None:
        """(seq, mono) of the `offset`-th event after `after_seq` (1 = the next one, up to `last_seq`); None past
        the end. Short walks of the (session, seq) index, for the rows and the starts near them, and of
        `events_by_start`, at most `offset` events each (never the rest of the session): how a seek tells whether a
        time lies within a few thousand events."""
        wanted = max(1, offset)  # the offset-th of the merge is among the first `offset` of each side
        rows = self._query(  # (a start kept with a start_seq of no integer is at its row's seq: `start_event`)
            f"SELECT seq, 1, id, mono, {_ODD_CASE} THEN {_KEPT_MONO} END, {_ODD_CASE} THEN 1 END FROM events"
            " WHERE session_id = ? AND seq > ? AND seq <= ? ORDER BY seq, id LIMIT ?",
            (session_id, after_seq, last_seq, wanted),
        )
        reach = rows[-1][0] if len(rows) == wanted else last_seq  # no later event is among the first `wanted`
        rows += [(row[0], 0, row[2], row[3], row[4]) for row in rows if row[5]]
        rows += self._query(
            f"SELECT start_seq, 0, id, mono, {_KEPT_MONO} FROM events INDEXED BY events_by_session_seq"
            f" WHERE session_id = ? AND seq > ? AND seq <= ? + {FOLD_NEAR} AND {NEAR_START}"
            " AND start_seq > ? AND start_seq <= ? ORDER BY start_seq, id LIMIT ?",
            (session_id, after_seq, reach, after_seq, reach, wanted),
        )
        rows += self._query(
            f"SELECT start_seq, 0, id, mono, {_KEPT_MONO} FROM events INDEXED BY events_by_start"
            f" WHERE session_id = ? AND {FAR_START} AND start_seq > ? AND start_seq <= ?"
            " AND typeof(start_seq) = 'integer' ORDER BY start_seq, id LIMIT ?",
            (session_id, after_seq, last_seq, wanted),
        )
        if len(rows) < wanted:
            return None
        rows.sort(key=_SEEK_ORDER)  # a start before the rows of its seq, as `events` gives them
        seq, is_row, _, mono, kept = rows[wanted - 1][:5]
        return int(seq), number(mono if is_row else number(kept, mono), 0.0)  # a start's damaged time: its row's

    def marker_rows(self, session_id: str, last_seq: int, outcomes: Iterable[str]) -> list[MarkerRow]:
        """Late drops, late results, config changes and request_ends with one of `outcomes`, up to `last_seq`:
        in seq order, one pass over narrow columns (a replay's timeline), never decoding a whole event."""
        wanted = [str(o) for o in outcomes]
        sql = _MARKERS.format(outcomes=",".join("?" * len(wanted)) or "NULL")
        return [MarkerRow(*row) for row in self._query(sql, (session_id, last_seq, *wanted))]

    def prune(
        self, older_than_s: float, *, now: float | None = None, vacuum: bool = False, dry_run: bool = False
    ) -> PruneResult:
        """Delete sessions (and their events) that ended more than `older_than_s` ago; see `prune`."""
        return prune(self.path, older_than_s, now=now, vacuum=vacuum, dry_run=dry_run)


@dataclass(frozen=True, slots=True)
class PruneCandidate:
    """A session old enough to prune: `last_at` is its end, else its last event, else its start."""

    id: str
    name: str | None
    pid: int | None
    started_at: float
    ended_at: float | None
    last_at: float
    events: int


@dataclass(frozen=True, slots=True)
class PruneResult:
    """What a prune removed (or, with dry_run, would remove), and the old open sessions it kept because their
    wrapper is still running."""

    pruned: tuple[PruneCandidate, ...]
    kept_running: tuple[PruneCandidate, ...]
    dry_run: bool = False

    @property
    def removed(self) -> int:
        return len(self.pruned)


# A session's age is taken from its end, else its last event (a crashed wrapper), else its start.
_PRUNE_CANDIDATES = """
SELECT s.id, s.name, s.pid, s.started_at, s.ended_at,
       coalesce(s.ended_at, (SELECT max(e.ts) FROM events AS e WHERE e.session_id = s.id), s.started_at) AS last_at,
       (SELECT count(*) + count(e.start_seq) FROM events AS e WHERE e.session_id = s.id) AS events
FROM sessions AS s
WHERE coalesce(s.ended_at, (SELECT max(e.ts) FROM events AS e WHERE e.session_id = s.id), s.started_at) < ?
ORDER BY s.started_at, s.id
"""


def _prune_plan(conn: sqlite3.Connection, cutoff: float) -> PruneResult:
    """Split the sessions older than `cutoff` into those to delete and the live ones to keep."""
    pruned: list[PruneCandidate] = []
    kept: list[PruneCandidate] = []
    for sid, name, pid, started_at, ended_at, last_at, events in conn.execute(_PRUNE_CANDIDATES, (cutoff,)):
        candidate = PruneCandidate(
            sid, name, pid, float(started_at or 0.0), ended_at, float(last_at or 0.0), int(events or 0)
        )
        # A wrapper that is alive but quiet has an old last event; deleting its session would orphan every event
        # it writes from now on, so a session without an end is kept for as long as its pid lives.
        (kept if ended_at is None and pid_alive(pid) else pruned).append(candidate)
    return PruneResult(tuple(pruned), tuple(kept))


def prune(
    path: str | Path,
    older_than_s: float,
    *,
    now: float | None = None,
    vacuum: bool = False,
    dry_run: bool = False,
) -> PruneResult:
    """Delete the sessions (and their events) last active more than `older_than_s` ago.

    A session that never recorded its end counts as ended at its last event, but only once its wrapper's pid is
    gone from this machine: a live wrapper's open session is kept however quiet it has been. With `dry_run`
    nothing is written (not even a lock taken) and the result says what would go. Opens its own short-lived
    write connection; the choice and the deletes happen under one write lock, so a wrapper cannot end or write
    to a session between the two.
    """
    path = Path(path)
    if not (older_than_s >= 0):  # also refuses NaN
        raise LogError(f"{path}: prune needs a non-negative age, not {older_than_s!r}")
    cutoff = (time.time() if now is None else now) - older_than_s
    reader = connect_reader(path)  # validates the file (missing, foreign, corrupt, newer) before writing to it
    if dry_run:
        try:
            with translate_errors(path):
                plan = _prune_plan(reader, cutoff)
        finally:
            reader.close()
        return PruneResult(plan.pruned, plan.kept_running, dry_run=True)
    reader.close()
    try:
        conn = sqlite3.connect(path, isolation_level=None, timeout=BUSY_TIMEOUT_MS / 1000)
    except sqlite3.Error as exc:  # pragma: no cover - the file was just readable
        raise LogError(f"{path}: cannot open the event log for writing ({exc})") from None
    try:
        conn.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
        with translate_errors(path), immediate(conn):
            plan = _prune_plan(conn, cutoff)
            for candidate in plan.pruned:
                conn.execute("DELETE FROM events WHERE session_id = ?", (candidate.id,))
                conn.execute(f"DELETE FROM {session_counts.TABLE} WHERE session_id = ?", (candidate.id,))
                conn.execute("DELETE FROM sessions WHERE id = ?", (candidate.id,))
        if vacuum and plan.pruned:
            with translate_errors(path):
                conn.execute("VACUUM")
    except sqlite3.Error as exc:  # pragma: no cover - translate_errors turns the known ones into LogError
        raise LogError(f"{path}: pruning failed ({exc})") from None
    finally:
        conn.close()
    return plan


def _index_changed(path: Path, sql: str, exc: sqlite3.OperationalError) -> LogError | None:
    """The one line for an index a query names (`INDEXED BY`) that a hand edit dropped, or made again on terms
    the query cannot use ("no query solution", which names no index): which one, and the statement that makes it
    again. None for any other error."""
    detail = str(exc)
    named = re.search(r"INDEXED BY (\w+)", sql)
    if named is None or not (detail.startswith("no such index") or detail == "no query solution"):
        return None
    name = named.group(1)
    again = f'; make it again: sqlite3 {path} "DROP INDEX IF EXISTS {name}; {index_definition(name)}"'
    return LogError(f"{path}: the event log's index {name} is missing or was changed by hand ({detail}){again}")


_SEEK_ORDER = itemgetter(0, 1, 2)  # event_at_offset's (seq, 0 for a start or 1 for a row, id)
_KEPT_MONO = (  # a folded row's kept start time where its data and start are objects, as `start_event` reads it
    "CASE WHEN json_valid(data) AND json_type(data, '$.start') = 'object' THEN json_extract(data, '$.start.mono') END"
)
_ODD_CASE = f"CASE WHEN {ODD_START}"  # a row whose start is at its own seq (`start_event`)


def _merged(rows: list[Row], starts: FoldedStarts | None, bounds: Bounds) -> Iterator[Row | Event]:
    """A page of rows and the folded starts in its range within `bounds`, in seq order (a start before a row of
    its own seq). The starts come a stretch at a time: the next is read only when a row lies past what the last
    one made sure of."""
    if starts is None:
        yield from rows
        return
    ready, sure = starts.next_stretch()
    at, count = 0, len(ready)
    for row in rows:
        seq = row[2]
        while True:
            if at < count:  # the next start read: before this row?
                if not _not_after(ready[at][0], seq):
                    break
                start = start_event(ready[at][1])
                if in_range(start, bounds):
                    yield start
                at += 1
            elif sure is None or _not_after(seq, sure):  # every start up to this row read
                break
            else:
                ready, sure = starts.next_stretch()
                at, count = 0, len(ready)
        yield row
    while True:
        for _, folded in ready[at:]:
            start = start_event(folded)
            if in_range(start, bounds):
                yield start
        if sure is None:
            return
        (ready, sure), at = starts.next_stretch(), 0


def _not_after(seq: Any, other: Any) -> bool:
    """seq <= other, in SQLite's order when either was made text or bytes by hand."""
    try:
        return bool(seq <= other)
    except TypeError:
        return sql_order(seq) <= sql_order(other)
