"""The batched event writer: `emit()` is a deque append on the caller's thread; a background thread encodes and
inserts in batches, one IMMEDIATE transaction per batch.

The wrapper calls `emit()` from its asyncio loop, so it must never block: the queue is bounded, and an event that
does not fit is dropped and counted. Drops are never silent: the writer later records a `warning` event in the same
session, in the place (seq) of the first event it lost, saying how many were lost (see `losses`).

A log that cannot be written for a while (locked by another process, read-only, on a full disk, damaged, or not a
log at all) never stops the caller: the batch in hand is kept, events wait in the bounded queue, and the writer
retries every `retry_interval`. With `open_now=False` even opening the file happens on the writer thread, so a
wrapper serves its host at once whatever state its log is in.
"""

from __future__ import annotations

import atexit
import secrets
import sqlite3
import threading
import time
from collections import deque
from collections.abc import Callable
from pathlib import Path
from typing import Any

from mcpwatch import __version__
from mcpwatch.clock import SYSTEM_CLOCK, Clock
from mcpwatch.errors import UserError
from mcpwatch.events import Event
from mcpwatch.store.availability import LogAvailability, keeps_connection, retriable
from mcpwatch.store.batch import (
    BATCH_MAX,
    Batch,
    FlushMarker,
    SessionEnd,
    commit_batch,
    event_row,
    event_rows,
    take_batch,
)
from mcpwatch.store.db import (
    BUSY_ATTEMPTS,
    BUSY_TIMEOUT_MS,
    LogError,
    connect_writer,
    immediate,
    problem_text,
    translate_errors,
)
from mcpwatch.store.encoding import encode_json
from mcpwatch.store.fold import FOLD_WINDOW_S, HELD_MAX, CallFolder, expand
from mcpwatch.store.losses import LossLedger

INSERT_SESSION = "INSERT INTO sessions (id, name, upstream, pid, started_at, version, config) VALUES (?,?,?,?,?,?,?)"
WRITE_ATTEMPTS = 10  # each attempt may wait the whole busy timeout
DEFERRED_BUSY_MS = 1000  # a writer that must never hold up its caller waits this long per try for the lock


def new_session_id(now: float | None = None) -> str:
    """Sortable (UTC time to the millisecond) and unique (24 random bits): `20260509-073525123-a1b2c3`."""
    millis = round((time.time() if now is None else now) * 1000)
    stamp = time.strftime("%Y%m%d-%H%M%S", time.gmtime(millis // 1000))
    return f"{stamp}{millis % 1000:03d}-{secrets.token_hex(3)}"


class EventWriter:
    """Appends events to the log from any thread without blocking; see the module docstring."""

    wake_factory: Callable[[], threading.Event] = threading.Event  # tests count the writer's waits through it

    def __init__(
        self,
        path: str | Path,
        *,
        queue_max: int = 20_000,
        flush_interval: float = 0.1,
        clock: Clock = SYSTEM_CLOCK,
        on_error: Callable[[str], None] | None = None,
        on_notice: Callable[[str], None] | None = None,
        open_now: bool = True,
        retry_interval: float = 1.0,
        fold_window: float = FOLD_WINDOW_S,
    ) -> None:
        """`on_error(message)` is called from the writer thread when writes start failing (once per distinct
        problem), `on_notice(message)` when they work again, so the program can say so where a person will see
        it. With `open_now` a file that cannot be used raises LogError here; without, the writer thread opens
        it and keeps retrying, and `problem` says what is wrong meanwhile. A call that ends within `fold_window`
        seconds of its start is one row (`store/fold.py`); 0 writes every start as its own row."""
        if queue_max < 1:
            raise ValueError("queue_max must be at least 1")
        self.path = Path(path)
        self.queue_max = queue_max
        self.flush_interval = max(0.001, float(flush_interval))
        self.retry_interval = max(0.01, float(retry_interval))
        self.events_written = 0
        self.last_error: str | None = None
        self._availability = LogAvailability(
            self.path,
            queue_max=queue_max,
            retry_interval=self.retry_interval,
            on_error=on_error,
            on_notice=on_notice,
        )
        self._ledger = LossLedger()
        self._clock = clock
        self._busy_ms = BUSY_TIMEOUT_MS if open_now else DEFERRED_BUSY_MS
        self._busy_attempts = BUSY_ATTEMPTS if open_now else 1
        self._write_attempts = WRITE_ATTEMPTS if open_now else 1
        self._conn: sqlite3.Connection | None = connect_writer(self.path) if open_now else None
        self._conn_lock = threading.Lock()
        self._queue: deque[Any] = deque()
        self._held: Batch | None = None  # a batch the log refused for now, retried before anything else
        self._starts: list[tuple[Any, ...]] = []  # session rows not yet written (open_now=False)
        self._folder = CallFolder(fold_window, held_max=min(HELD_MAX, queue_max))  # the writer thread's only
        self._limit = queue_max  # set to -1 on close, so late emits take the (counted) drop path
        self._wake_at = min(max(queue_max // 4, 1), BATCH_MAX)
        self._wake = self.wake_factory()
        self._sleeping = False  # the writer waits with no timeout: the next event must wake it
        self._urgent = False  # a flush, an end, a start or a close: write now, without gathering a batch first
        self.wakeups = 0  # times the writer thread woke (an idle one: none)
        self._stopping = False
        self._give_up_at = float("inf")
        self._closed = False
        self._thread = threading.Thread(target=self._run, name="mcpwatch-log-writer", daemon=True)
        self._thread.start()
        atexit.register(self.close)

    # -- caller side -------------------------------------------------------------------------------------------

    @property
    def problem(self) -> str | None:
        """Why the log cannot be written right now; None while it can."""
        return self._availability.problem

    @property
    def dropped(self) -> int:
        """Events lost (a full queue, a failed write, emitted after close), whether or not recorded as lost."""
        return self._ledger.dropped

    @property
    def losses_recorded(self) -> int:
        """Of the events lost, how many a warning event written to the log accounts for."""
        return self._ledger.recorded

    def emit(self, event: Event) -> None:
        """Queue one event; O(1), never blocks, never raises for a full queue (the loss is counted and logged)."""
        queue = self._queue
        size = len(queue)
        if size < self._limit:
            queue.append(event)
            if size == self._wake_at or (size == 0 and self._sleeping):
                self._wake.set()
        elif self._closed:
            self._ledger.lose([event], "emitted after close")
        elif self.problem is not None:
            self._ledger.lose([event], f"the memory queue was full while the log could not be written: {self.problem}")
        else:
            self._ledger.lose([event], "the log writer's queue was full")

    def start_session(
        self,
        *,
        name: str,
        upstream: str,
        pid: int | None,
        config: dict[str, Any],
        session_id: str | None = None,
    ) -> str:
        """Record the session's row and return its id: now (with `open_now`) or, without, on the writer thread."""
        if self._closed:
            raise LogError(f"{self.path}: this event writer is closed")
        started_at = self._clock.time()
        session_id = session_id or new_session_id(started_at)
        row = (session_id, name, upstream, pid, started_at, __version__, encode_json(config))
        if self._conn is None:
            self._starts.append(row)
            self._wake_now()
            return session_id
        with self._conn_lock, translate_errors(self.path), immediate(self._conn) as conn:
            try:
                conn.execute(INSERT_SESSION, row)
            except sqlite3.IntegrityError:
                raise LogError(f"{self.path}: a session with id {session_id!r} already exists") from None
        return session_id

    def end_session(self, session_id: str, reason: str) -> None:
        """Record the session's end after every event emitted before this call; never blocks (see flush())."""
        if self._closed:
            self.last_error = f"end_session({session_id!r}) after close() was ignored"
            return
        self._queue.append(SessionEnd(session_id, reason, self._clock.time()))
        self._wake_now()

    def flush(self, timeout: float | None = None) -> bool:
        """Wait until everything emitted so far is handled: committed, or (on a write failure that cannot pass)
        counted in `dropped` and reported in a warning. False when `timeout` passed first."""
        if self._closed or not self._thread.is_alive():
            return not self._queue
        marker = FlushMarker()
        self._queue.append(marker)
        self._wake_now()
        return marker.done.wait(timeout)

    def close(self, timeout: float | None = 30.0) -> None:
        """Write what is queued, for at most `timeout` seconds while the log refuses it, then stop the writer
        thread and close the file; whatever could not be written is counted in `dropped`. Idempotent."""
        if self._closed:
            return
        self._closed = True
        self._limit = -1
        if timeout is not None:
            self._give_up_at = time.monotonic() + timeout
        self._stopping = True
        self._wake_now()
        self._thread.join(None if timeout is None else timeout + self._busy_ms / 1000 + 1.0)
        atexit.unregister(self.close)
        if self._thread.is_alive():  # stuck inside SQLite: leave the connection to it, count what it holds
            self._ledger.lose(self._unwritten(), f"not written before exit: {self.problem or self.last_error}")
            return
        if self._conn is not None:
            with self._conn_lock:
                self._conn.close()
        # events the log refused to the end, and an emit racing with close(): counted, at least
        left = self._unwritten()
        if left:
            self._ledger.lose(left, f"not written before exit: {self.problem or self.last_error or 'closing'}")
        self._queue.clear()

    def _unwritten(self) -> list[Event]:
        held, self._held = self._held, None
        events = [] if held is None else expand(held.events)
        if held is not None:
            held.release()
        events.extend(expand(self._folder.take(self._clock.monotonic(), everything=True)))
        for item in list(self._queue):
            if isinstance(item, Event):
                events.append(item)
            elif isinstance(item, FlushMarker):
                item.done.set()
        return events

    def __enter__(self) -> EventWriter:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @property
    def pending(self) -> int:
        """Events queued or held and not yet written."""
        held = self._held
        return len(self._queue) + len(self._folder) + (len(held.events) + held.folded if held is not None else 0)

    # -- writer thread -----------------------------------------------------------------------------------------

    def _wake_now(self) -> None:
        self._urgent = True
        self._wake.set()

    def _run(self) -> None:
        """Write a batch every `flush_interval` while events come; with nothing to write (and the log fine), wait
        until the next event, or until the window of a start held back for folding ends: with neither, with no
        timeout, so an idle wrapper's writer never wakes."""
        while True:
            gather = True
            if self.problem is None and not self._has_work() and not self._stopping:
                self._sleeping = True  # then look again: an event appended before this is seen, one after wakes us
                if not self._has_work() and not self._stopping:
                    gather = self._wake.wait(self._folder.due_in(self._clock.monotonic()))
                    self.wakeups += 1
                self._sleeping = False
                if not self._urgent:
                    self._wake.clear()  # woken by a first event: gather a batch for flush_interval
            if gather:  # not when only a held start's window ended: that one is written at once
                self._wake.wait(self.flush_interval if self.problem is None else self.retry_interval)
                self.wakeups += 1
            self._urgent = False
            self._wake.clear()
            stopping = self._stopping
            self._drain(stopping)
            if stopping:
                return

    def _has_work(self) -> bool:
        if self._queue or self._ledger or self._held is not None or self._starts:
            return True
        folder = self._folder
        return folder.holding and folder.due_in(self._clock.monotonic()) == 0

    def _drain(self, stopping: bool) -> None:
        """Write until the queue is empty; on a failure wait for the next round (or, closing, until give-up)."""
        while self._has_work():
            try:
                ok = self._write_some()
            except Exception as exc:  # a bug must not kill the thread: later events would pile up unseen
                self.last_error = f"{type(exc).__name__}: {exc}"
                ok = False
            if ok:
                continue
            if not stopping or time.monotonic() >= self._give_up_at:
                return
            time.sleep(min(self.retry_interval, 0.1))

    def _connect(self) -> bool:
        """Open the log if it is not open; on failure note the problem (once) and say False."""
        if self._conn is not None:
            return True
        try:
            self._conn = connect_writer(self.path, busy_timeout_ms=self._busy_ms, busy_attempts=self._busy_attempts)
        except (UserError, sqlite3.Error, OSError) as exc:
            self._availability.unavailable(problem_text(self.path, exc))
            return False
        return True

    def _write_starts(self) -> bool:
        rows = list(self._starts)
        try:
            with self._conn_lock, immediate(self._conn, self._busy_attempts) as conn:  # type: ignore[arg-type]  # open while the writer runs
                for row in rows:
                    try:
                        conn.execute(INSERT_SESSION, row)
                    except sqlite3.IntegrityError:
                        self.last_error = f"a session with id {row[0]!r} already exists"
        except Exception as exc:
            if retriable(exc):
                return self._failed(exc)
            self.last_error = f"session rows not written: {type(exc).__name__}: {exc}"  # never block the events
        del self._starts[: len(rows)]
        return True

    def _write_some(self) -> bool:
        """Commit the held batch, or up to BATCH_MAX new items, in one transaction."""
        if not self._connect():
            return False
        if self._starts and not self._write_starts():
            return False
        batch, self._held = self._held, None
        if batch is None:
            batch = self._fold(take_batch(self._queue))
        losses = self._ledger.take()
        rows = event_rows(batch.events, self._unusable)
        rows.extend(event_row(loss.warning()) for loss in losses)
        error = commit_batch(
            self._conn,  # type: ignore[arg-type]  # open while the writer runs
            self._conn_lock,
            rows,
            batch.ends,
            write_attempts=self._write_attempts,
            busy_attempts=self._busy_attempts,
            note_error=self._note_error,
        )
        if error is None:
            self.events_written += len(rows) + batch.folded
            self._ledger.mark_recorded(losses)
            batch.release()
            self._availability.available(self.events_written, self._ledger.dropped)
            return True
        self._ledger.restore(losses)
        if retriable(error):
            self._held = batch
            self._failed(error)
            return False
        self._ledger.lose(expand(batch.events), f"the log could not be written ({self.last_error})")
        batch.release()
        self._availability.report(
            f"{self.path}: events cannot be written ({self.last_error}); they are counted as lost"
        )
        return False

    def _fold(self, batch: Batch) -> Batch:
        """The batch as it is committed: its events through the fold, so what it holds is what may be written now
        (every start the fold holds, when the batch ends with a flush or a session's end, or the writer closes)."""
        folder = self._folder
        now = self._clock.monotonic()
        folder.admit(batch.events, now)
        batch.events = folder.take(now, everything=bool(batch.markers or batch.ends) or self._stopping)
        batch.folded = folder.taken_folded
        return batch

    def _note_error(self, exc: BaseException) -> None:
        self.last_error = f"{type(exc).__name__}: {exc}"

    def _failed(self, exc: BaseException) -> bool:
        """Note a failure that may pass; drop a connection that will not recover by itself. Always False."""
        self._note_error(exc)
        if retriable(exc):
            self._availability.unavailable(problem_text(self.path, exc))
            if self._conn is not None and not keeps_connection(exc):
                with self._conn_lock:
                    self._conn.close()
                self._conn = None  # reopened (and the file checked again) on the next try
        return False

    def _unusable(self, item: object, exc: Exception) -> None:
        self.last_error = f"unusable event {type(item).__name__}: {exc}"
        self._ledger.count_unusable()
