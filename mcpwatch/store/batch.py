"""What the writer thread commits in one transaction: the items taken off the writer's queue, and the commit.

A batch is kept whole while the log cannot be written, so it is retried as it was, markers and all; a flush
marker ends a batch early so the flush returns as soon as everything before it is committed.
"""

from __future__ import annotations

import sqlite3
import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from itertools import chain
from operator import itemgetter
from typing import Any

import orjson

from mcpwatch.events import Event, Kind
from mcpwatch.store.db import immediate, is_busy
from mcpwatch.store.encoding import NULL, coerce_row, column_text, encode_json
from mcpwatch.store.fold import START_KEY
from mcpwatch.store.session_counts import add_batch, catch_up

INSERT_EVENT = (
    "INSERT INTO events (session_id, seq, ts, mono, kind, request_id, tool, model, data, start_seq)"
    " VALUES (?,?,?,?,?,?,?,?,?,?)"
)
END_SESSION = "UPDATE sessions SET ended_at = ?, end_reason = ? WHERE id = ?"

# Rows go in by statements of CHUNKS rows each (largest first): one statement's program opens the table's and every
# index's cursor once for all its rows, where one statement a row opens and closes them for each (with its step,
# reset and halt): about a fifth of the writer's work per plain call. Seven fixed sizes keep the prepared
# statements few (sqlite3's statement cache holds them).
CHUNKS = (64, 32, 16, 8, 4, 2, 1)  # a batch's rest below 64 in at most six statements
_INSERT_MANY = {
    n: INSERT_EVENT.replace(" VALUES (?,?,?,?,?,?,?,?,?,?)", " VALUES " + ",".join(["(?,?,?,?,?,?,?,?,?,?)"] * n))
    for n in CHUNKS
}


def _folded_calls_sql(n: int) -> str:
    """The insert of n folded calls' rows of one session (no model): the session bound once, the kind and the model
    written in the statement, each other column's n values bound as one run (a column after another, so the values
    are the rows' columns sliced, not rows taken apart): of a row's five texts and ten values, two texts and a value
    fewer bound, each text bound being a copy SQLite makes."""
    per_column = (1, 2, 3, 5, 6, 8, 9)  # seq, ts, mono, request_id, tool, data, start_seq: bound a row each
    rows = []
    for i in range(n):
        p = [f"?{2 + k * n + i}" for k in range(len(per_column))]
        rows.append(f"(?1,{p[0]},{p[1]},{p[2]},'request_end',{p[3]},{p[4]},NULL,{p[5]},{p[6]})")
    return INSERT_EVENT.replace(" VALUES (?,?,?,?,?,?,?,?,?,?)", " VALUES " + ",".join(rows))


_FOLDED_CALLS = {n: _folded_calls_sql(n) for n in CHUNKS if n > 1}


def _folded_calls_values(chunk: list[tuple[Any, ...]]) -> list[Any] | None:
    """What `_FOLDED_CALLS[n]` binds for a chunk of n rows, when they are rows of ten values of one session, each a
    request_end with no model (the writer's batch of plain calls); None else. The chunk is read a column at a time
    (`zip`), so no row is taken apart in Python."""
    n = len(chunk)
    try:
        columns = list(zip(*chunk, strict=True))
    except ValueError:  # rows of different widths: bound as they are
        return None
    if len(columns) != 10:
        return None
    session = columns[0][0]
    if columns[0].count(session) != n or columns[4].count("request_end") != n or columns[7].count(NULL) != n:
        return None
    return [session, *columns[1], *columns[2], *columns[3], *columns[5], *columns[6], *columns[8], *columns[9]]


# SQLite copies every text a statement binds until the statement is reset: a chunk whose data texts hold more than
# this many characters goes in a row a statement, so 64 kept results of 16 MiB each cost one's copy, not a GiB.
CHUNK_TEXT_MAX = 1 << 20


def insert_rows(conn: sqlite3.Connection, rows: list[tuple[Any, ...]]) -> None:
    """Insert `rows` in order, a chunk of rows per statement (see CHUNKS), large rows one a statement."""
    at, total = 0, len(rows)
    execute = conn.execute
    one = _INSERT_MANY[1]
    for size in CHUNKS:
        sql = _INSERT_MANY[size]
        while total - at >= size:
            chunk = rows[at : at + size]
            if size == 1:
                execute(sql, chunk[0])
            elif _small(chunk):
                folded = _folded_calls_values(chunk)
                if folded is None:
                    execute(sql, list(_flat(chunk)))
                else:
                    execute(_FOLDED_CALLS[size], folded)
            else:
                for row in chunk:
                    execute(one, row)
            at += size


def _small(chunk: list[tuple[Any, ...]]) -> bool:
    """Whether the chunk's data texts hold at most CHUNK_TEXT_MAX characters in all (a value that is not text, which
    only an odd row has, counts as large: its row is bound alone, as any unbindable row is met)."""
    try:
        return sum(map(len, map(_data_of, chunk))) <= CHUNK_TEXT_MAX
    except TypeError:
        return False


_flat = chain.from_iterable
_data_of = itemgetter(8)

BATCH_MAX = 20_000  # rows per transaction: bounds how long other processes wait for the write lock


class _KindText(dict[Any, Any]):
    """A kind as plain text (a `Kind` is a str subclass, which sqlite3 adapts at a cost; see `NULL`)."""

    def __missing__(self, kind: Any) -> Any:
        return kind  # a kind mcpwatch does not know (a test's, a bench's): bound as it is


KIND_TEXT = _KindText({kind: kind.value for kind in Kind})


class FlushMarker:
    """A flush request travelling through the queue: set once everything before it is committed."""

    __slots__ = ("done",)

    def __init__(self) -> None:
        self.done = threading.Event()


@dataclass(slots=True)
class SessionEnd:
    session_id: str
    reason: str
    ended_at: float


@dataclass(slots=True)
class Batch:
    """Items taken off the queue for one transaction; kept whole while the log cannot be written."""

    events: list[Event] = field(default_factory=list)
    ends: list[SessionEnd] = field(default_factory=list)
    markers: list[FlushMarker] = field(default_factory=list)
    folded: int = 0  # folded calls among `events` (each one row standing for two events)

    def release(self) -> None:
        for marker in self.markers:
            marker.done.set()
        self.markers.clear()


def take_batch(queue: deque[Any]) -> Batch:
    """Up to BATCH_MAX items off the queue, stopping after a flush marker."""
    batch = Batch()
    pop = queue.popleft
    append = batch.events.append
    try:
        for _ in range(BATCH_MAX):
            item = pop()
            if item.__class__ is Event:
                append(item)
            elif isinstance(item, FlushMarker):
                batch.markers.append(item)
                break  # commit now, so the flush returns as early as it can
            elif isinstance(item, SessionEnd):
                batch.ends.append(item)
            else:
                append(item)
    except IndexError:
        pass
    return batch


def event_row(e: Event) -> tuple[Any, ...]:
    """The `events` row for one event."""
    data = e.data
    request_id, tool, model = e.request_id, e.tool, e.model
    return (
        e.session_id,
        e.seq,
        e.ts,
        e.mono,
        KIND_TEXT[e.kind],
        NULL if request_id is None else request_id,
        NULL if tool is None else tool,
        NULL if model is None else model,
        encode_json(data) if data else "{}",
        NULL,
    )


_dumps = orjson.dumps


def _rows_or_raise(items: list[Any]) -> list[tuple[Any, ...]]:
    """Rows for items that are events or folded calls, raising on an item it cannot use (`event_rows` then goes one
    by one). A folded call is one row, its request_end's with the start kept in `data` (see `store/fold.py`), built
    inline: one row a call, so this loop is most of what the writer does for it. The start's seq is its row's
    `start_seq` column alone (no reader takes it from the data), its time and data are kept in the end's data under
    `start`; orjson's common case inline, `encode_json` for the rest."""
    rows: list[Any] = [None] * len(items)
    for at, item in enumerate(items):
        if item.__class__ is not tuple:
            rows[at] = event_row(item)
            continue
        start, end = item
        kept = {"ts": start.ts, "mono": start.mono, "data": start.data}
        if start.tool != end.tool:  # kept as its own row's column would keep it
            kept["tool"] = None if start.tool is None else column_text(start.tool)
        if start.model is not None:
            kept["model"] = column_text(start.model)
        data = end.data.copy()
        data[START_KEY] = kept
        try:
            text = _dumps(data, default=str).decode()
        except (TypeError, orjson.JSONEncodeError):
            text = encode_json(data)
        tool, model = end.tool, end.model
        rows[at] = (
            end.session_id,
            end.seq,
            end.ts,
            end.mono,
            "request_end",  # what the fold folds into (and plain text, see `NULL`)
            end.request_id,  # never None: a call is folded by its request id
            NULL if tool is None else tool,
            NULL if model is None else model,
            text,
            start.seq,
        )
    return rows


def event_rows(events: list[Any], on_unusable: Callable[[object, Exception], None]) -> list[tuple[Any, ...]]:
    """Rows for the batch (events and folded calls); an item that is not a usable event goes to `on_unusable`, not
    allowed to sink it."""
    try:
        return _rows_or_raise(events)
    except Exception:
        rows = []
        for e in events:
            try:
                rows += _rows_or_raise([e])
            except Exception as exc:
                on_unusable(e, exc)
        return rows


def commit_batch(
    conn: sqlite3.Connection,
    conn_lock: threading.Lock,
    rows: list[tuple[Any, ...]],
    ends: list[SessionEnd],
    *,
    write_attempts: int,
    busy_attempts: int,
    note_error: Callable[[BaseException], None],
) -> BaseException | None:
    """Insert rows and session ends in one transaction; retry while the file is busy. The error if not.

    `note_error` hears every failed attempt, a busy one that a retry then overcomes included."""
    if not rows and not ends:
        return None
    for attempt in range(write_attempts):
        try:
            with conn_lock, immediate(conn, busy_attempts):
                stored = rows  # (odd values made text, when the rows cannot be bound as they are)
                catch_up(conn)  # events an mcpwatch that keeps no counts wrote since the last batch
                conn.execute("SAVEPOINT batch")
                try:
                    insert_rows(conn, rows)
                except (
                    sqlite3.InterfaceError,
                    sqlite3.ProgrammingError,
                    sqlite3.IntegrityError,
                    ValueError,
                    OverflowError,
                ):
                    # something unbindable or missing (an odd type, a huge int, a lone surrogate, a None
                    # timestamp): undo the rows inserted before it, then store the whole batch with odd values
                    # made text
                    conn.execute("ROLLBACK TO batch")
                    stored = [coerce_row(r) for r in rows]
                    insert_rows(conn, stored)
                conn.execute("RELEASE batch")
                add_batch(conn, stored)  # the sessions' counts of the rows as stored, in their transaction
                for end in ends:
                    conn.execute(END_SESSION, (end.ended_at, end.reason, end.session_id))
            return None
        except Exception as exc:
            note_error(exc)
            if not is_busy(exc) or attempt == write_attempts - 1:
                return exc
            time.sleep(0.05 * (attempt + 1))
    return None  # pragma: no cover - the loop always returns
