"""The batched event writer: `emit()` is a deque append on the caller's thread; a background thread encodes and
inserts in batches, one IMMEDIATE transaction per batch.

The wrapper calls `emit()` from its asyncio loop, so it must never block: the queue is bounded, and an event that
does not fit is dropped and counted. Drops are never silent: the writer later records a `warning` event in the same
session, in the place (seq) of the first event it lost, saying how many were lost.
"""

from __future__ import annotations

import atexit
import json
import math
import secrets
import sqlite3
import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson

from mcpwatch import __version__
from mcpwatch.clock import SYSTEM_CLOCK, Clock
from mcpwatch.events import Event, Kind
from mcpwatch.store.db import LogError, connect_writer, immediate, is_busy, translate_errors

INSERT_EVENT = (
    "INSERT INTO events (session_id, seq, ts, mono, kind, request_id, tool, model, data) VALUES (?,?,?,?,?,?,?,?,?)"
)
BATCH_MAX = 20_000  # rows per transaction: bounds how long other processes wait for the write lock
WRITE_ATTEMPTS = 10  # each attempt may wait the whole busy timeout

_encoder = json.JSONEncoder(separators=(",", ":"), ensure_ascii=False, allow_nan=False, default=str)
_encode = _encoder.encode


def _fast_encoder() -> Any:
    """The C encoder called directly (no per-call setup, no circular-reference bookkeeping): ~3x faster per event.

    A circular structure then surfaces as RecursionError, which encode_json handles.
    """
    make = getattr(json.encoder, "c_make_encoder", None)
    if make is None:  # pragma: no cover - CPython always has the accelerator
        return _encode
    iterencode = make(None, str, json.encoder.encode_basestring, None, ":", ",", False, False, False)
    join = "".join
    return lambda value: join(iterencode(value, 0))


_fast_encode = _fast_encoder()


def _clean(value: Any) -> Any:
    """JSON-safe copy: non-finite floats become null (SQLite's JSON functions reject NaN), keys become text."""
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {str(k): _clean(v) for k, v in value.items()}
    if isinstance(value, list | tuple | set | frozenset):
        return [_clean(v) for v in value]
    return value


def encode_json(value: Any) -> str:
    """Compact JSON that SQLite's json functions can always read (orjson first: it writes NaN as null, as _clean
    does, ~10x faster, so the writer thread holds the GIL that much less; the standard library for the rest)."""
    try:
        return orjson.dumps(value, default=str).decode()
    except (TypeError, orjson.JSONEncodeError):
        pass
    try:
        return _fast_encode(value)
    except (ValueError, TypeError, RecursionError):
        try:
            return _encode(_clean(value))
        except (ValueError, TypeError, RecursionError) as exc:
            return _encode({"unencodable": f"{type(exc).__name__}: {exc}"})


def new_session_id(now: float | None = None) -> str:
    """Sortable (UTC time to the millisecond) and unique (24 random bits): `20260509-073525123-a1b2c3`."""
    millis = round((time.time() if now is None else now) * 1000)
    stamp = time.strftime("%Y%m%d-%H%M%S", time.gmtime(millis // 1000))
    return f"{stamp}{millis % 1000:03d}-{secrets.token_hex(3)}"


class _Marker:
    """A flush request travelling through the queue: set once everything before it is committed."""

    __slots__ = ("done",)

    def __init__(self) -> None:
        self.done = threading.Event()


@dataclass(slots=True)
class _EndSession:
    session_id: str
    reason: str
    ended_at: float


@dataclass(slots=True)
class _Loss:
    """A run of lost events in one session, to be recorded as one warning event."""

    first: Event
    count: int
    last_seq: int
    cause: str


class EventWriter:
    """Appends events to the log from any thread without blocking; see the module docstring."""

    def __init__(
        self,
        path: str | Path,
        *,
        queue_max: int = 20_000,
        flush_interval: float = 0.1,
        clock: Clock = SYSTEM_CLOCK,
        on_error: Callable[[str], None] | None = None,
    ) -> None:
        """`on_error(message)` is called from the writer thread when writes start failing (once per distinct
        error), so the program can say so where a person will see it; the lost events are counted either way."""
        if queue_max < 1:
            raise ValueError("queue_max must be at least 1")
        self.path = Path(path)
        self.queue_max = queue_max
        self.flush_interval = max(0.001, float(flush_interval))
        self.events_written = 0
        self.dropped = 0
        self.last_error: str | None = None
        self._on_error = on_error
        self._reported_error: str | None = None
        self._clock = clock
        self._conn = connect_writer(self.path)
        self._conn_lock = threading.Lock()
        self._queue: deque[Any] = deque()
        self._limit = queue_max  # set to -1 on close, so late emits take the (counted) drop path
        self._wake_at = min(max(queue_max // 4, 1), BATCH_MAX)
        self._wake = threading.Event()
        self._loss_lock = threading.Lock()
        self._losses: dict[str, _Loss] = {}
        self._stopping = False
        self._closed = False
        self._thread = threading.Thread(target=self._run, name="mcpwatch-log-writer", daemon=True)
        self._thread.start()
        atexit.register(self.close)

    # -- caller side -------------------------------------------------------------------------------------------

    def emit(self, event: Event) -> None:
        """Queue one event; O(1), never blocks, never raises for a full queue (the loss is counted and logged)."""
        queue = self._queue
        size = len(queue)
        if size < self._limit:
            queue.append(event)
            if size == self._wake_at:
                self._wake.set()
        else:
            self._lose([event], "the log writer's queue was full" if not self._closed else "emitted after close")

    def start_session(
        self,
        *,
        name: str,
        upstream: str,
        pid: int | None,
        config: dict[str, Any],
        session_id: str | None = None,
    ) -> str:
        """Write the session's row now (synchronously) and return its id."""
        if self._closed:
            raise LogError(f"{self.path}: this event writer is closed")
        started_at = self._clock.time()
        session_id = session_id or new_session_id(started_at)
        row = (session_id, name, upstream, pid, started_at, __version__, encode_json(config))
        with self._conn_lock, translate_errors(self.path), immediate(self._conn) as conn:
            try:
                conn.execute(
                    "INSERT INTO sessions (id, name, upstream, pid, started_at, version, config)"
                    " VALUES (?,?,?,?,?,?,?)",
                    row,
                )
            except sqlite3.IntegrityError:
                raise LogError(f"{self.path}: a session with id {session_id!r} already exists") from None
        return session_id

    def end_session(self, session_id: str, reason: str) -> None:
        """Record the session's end after every event emitted before this call; never blocks (see flush())."""
        if self._closed:
            self.last_error = f"end_session({session_id!r}) after close() was ignored"
            return
        self._queue.append(_EndSession(session_id, reason, self._clock.time()))
        self._wake.set()

    def flush(self, timeout: float | None = None) -> bool:
        """Wait until everything emitted so far is handled: committed, or (on a write failure) counted in
        `dropped` and reported in a warning. False when `timeout` passed first."""
        if self._closed or not self._thread.is_alive():
            return not self._queue
        marker = _Marker()
        self._queue.append(marker)
        self._wake.set()
        return marker.done.wait(timeout)

    def close(self, timeout: float | None = 30.0) -> None:
        """Flush, stop the writer thread and close the file. Idempotent."""
        if self._closed:
            return
        self._closed = True
        self._limit = -1
        self._stopping = True
        self._wake.set()
        self._thread.join(timeout)
        atexit.unregister(self.close)
        if not self._thread.is_alive():
            with self._conn_lock:
                self._conn.close()
            # an emit racing with close() may have slipped in after the last drain: count it, at least
            late = [item for item in self._queue if isinstance(item, Event)]
            self._queue.clear()
            if late:
                self._lose(late, "emitted while closing")

    def __enter__(self) -> EventWriter:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @property
    def pending(self) -> int:
        """Items queued and not yet written."""
        return len(self._queue)

    # -- writer thread -----------------------------------------------------------------------------------------

    def _lose(self, events: list[Event], cause: str) -> None:
        with self._loss_lock:
            self.dropped += len(events)
            for event in events:
                if not isinstance(event, Event):
                    continue  # counted; without a session there is nowhere to report it
                loss = self._losses.get(event.session_id)
                if loss is None:
                    self._losses[event.session_id] = _Loss(event, 1, event.seq, cause)
                else:
                    loss.count += 1
                    loss.last_seq = max(loss.last_seq, event.seq)

    def _take_losses(self) -> list[_Loss]:
        if not self._losses:
            return []
        with self._loss_lock:
            losses = list(self._losses.values())
            self._losses.clear()
        return losses

    def _restore_losses(self, losses: list[_Loss]) -> None:
        with self._loss_lock:
            for loss in losses:
                current = self._losses.get(loss.first.session_id)
                if current is None:
                    self._losses[loss.first.session_id] = loss
                else:
                    current.count += loss.count
                    current.last_seq = max(current.last_seq, loss.last_seq)
                    if loss.first.seq < current.first.seq:
                        current.first = loss.first

    def _run(self) -> None:
        queue = self._queue
        while True:
            self._wake.wait(self.flush_interval)
            self._wake.clear()
            stopping = self._stopping
            failures = 0
            while queue or self._losses:
                try:
                    ok = self._write_some(queue)
                except Exception as exc:  # a bug must not kill the thread: later events would pile up unseen
                    self.last_error = f"{type(exc).__name__}: {exc}"
                    ok = False
                if not ok:
                    failures += 1
                    if not stopping or failures >= 3:
                        break  # try again after the next interval (or give up when closing)
            if stopping:
                return

    def _write_some(self, queue: deque[Any]) -> bool:
        """Take up to BATCH_MAX items off the queue and commit them in one transaction."""
        events: list[Event] = []
        ends: list[_EndSession] = []
        markers: list[_Marker] = []
        pop = queue.popleft
        append = events.append
        try:
            for _ in range(BATCH_MAX):
                item = pop()
                if item.__class__ is Event:
                    append(item)
                elif isinstance(item, _Marker):
                    markers.append(item)
                    break  # commit now, so the flush returns as early as it can
                elif isinstance(item, _EndSession):
                    ends.append(item)
                else:
                    append(item)
        except IndexError:
            pass
        try:
            return self._commit_batch(events, ends)
        finally:
            for marker in markers:
                marker.done.set()

    def _commit_batch(self, events: list[Event], ends: list[_EndSession]) -> bool:
        losses = self._take_losses()
        rows = self._rows(events)
        rows.extend(self._row(self._warning(loss)) for loss in losses)
        ok = self._commit(rows, ends)
        if ok:
            self.events_written += len(rows)
        else:
            self._restore_losses(losses)
            self._lose(events, f"the log could not be written ({self.last_error})")
            if self._on_error is not None and self.last_error != self._reported_error:
                self._reported_error = self.last_error
                self._on_error(f"{self.path}: events cannot be written ({self.last_error}); they are counted as lost")
        return ok

    def _rows(self, events: list[Event]) -> list[tuple[Any, ...]]:
        """Rows for the batch; an item that is not a usable event is counted as dropped, not allowed to sink it."""
        row = self._row
        try:
            return [row(e) for e in events]
        except Exception:
            rows = []
            for e in events:
                try:
                    rows.append(row(e))
                except Exception as exc:
                    self.last_error = f"unusable event {type(e).__name__}: {exc}"
                    with self._loss_lock:
                        self.dropped += 1
            return rows

    @staticmethod
    def _row(e: Event) -> tuple[Any, ...]:
        data = e.data
        return (
            e.session_id,
            e.seq,
            e.ts,
            e.mono,
            e.kind,
            e.request_id,
            e.tool,
            e.model,
            encode_json(data) if data else "{}",
        )

    def _warning(self, loss: _Loss) -> Event:
        first = loss.first
        message = (
            f"{loss.count} events dropped ({loss.cause}; seq {first.seq}..{loss.last_seq}); "
            f"this warning takes the seq of the first one lost"
        )
        return Event(
            kind=Kind.WARNING.value,
            session_id=first.session_id,
            ts=first.ts,
            mono=first.mono,
            seq=first.seq,
            data={"message": message, "dropped": loss.count, "first_seq": first.seq, "last_seq": loss.last_seq},
        )

    def _commit(self, rows: list[tuple[Any, ...]], ends: list[_EndSession]) -> bool:
        """Insert rows and session ends in one transaction; retry while the file is busy. False if they were lost."""
        if not rows and not ends:
            return True
        for attempt in range(WRITE_ATTEMPTS):
            try:
                with self._conn_lock, immediate(self._conn) as conn:
                    conn.execute("SAVEPOINT batch")
                    try:
                        conn.executemany(INSERT_EVENT, rows)
                    except (
                        sqlite3.InterfaceError,
                        sqlite3.ProgrammingError,
                        sqlite3.IntegrityError,
                        ValueError,
                        OverflowError,
                    ):
                        # something unbindable or missing (an odd type, a huge int, a lone surrogate, a None
                        # timestamp): undo the rows
                        # inserted before it, then store the whole batch with odd values made text
                        conn.execute("ROLLBACK TO batch")
                        conn.executemany(INSERT_EVENT, [_coerce(r) for r in rows])
                    conn.execute("RELEASE batch")
                    for end in ends:
                        conn.execute(
                            "UPDATE sessions SET ended_at = ?, end_reason = ? WHERE id = ?",
                            (end.ended_at, end.reason, end.session_id),
                        )
                return True
            except Exception as exc:
                self.last_error = f"{type(exc).__name__}: {exc}"
                if not is_busy(exc) or attempt == WRITE_ATTEMPTS - 1:
                    return False
                time.sleep(0.05 * (attempt + 1))
        return False  # pragma: no cover - the loop always returns


def _text(value: Any, errors: str = "replace") -> str:
    """Text SQLite can store: valid UTF-8 (a lone surrogate is replaced, or escaped when inside JSON)."""
    text = value if isinstance(value, str) else str(value)
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        text = text.encode("utf-8", errors).decode("utf-8")
    return text


def _int64(value: Any) -> int:
    return value if isinstance(value, int) and -(2**63) <= value < 2**63 else 0


def _real(value: Any) -> float:
    try:
        number = float(value)
    except (TypeError, ValueError, OverflowError):
        return 0.0
    return number if math.isfinite(number) else 0.0


def _coerce(row: tuple[Any, ...]) -> tuple[Any, ...]:
    """Make every field of a row bindable; used only when a batch holds something odd."""
    session_id, seq, ts, mono, kind, request_id, tool, model, data = row
    return (
        _text(session_id),
        _int64(seq),
        _real(ts),
        _real(mono),
        _text(kind),
        None if request_id is None else _text(request_id),
        None if tool is None else _text(tool),
        None if model is None else _text(model),
        _text(data, "backslashreplace"),  # inside JSON strings, `\udc80` is a valid escape: nothing is lost
    )
