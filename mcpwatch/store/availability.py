"""Whether the event log can be written right now, and saying so where a person will see it.

A log may be locked by another process, read-only, on a full disk, damaged or not a log at all for a while. The
writer keeps its batch and retries after the failures that may pass (`retriable`); this says what is wrong once per
distinct problem and says when writing works again.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable
from pathlib import Path

from mcpwatch.errors import UserError
from mcpwatch.store.db import is_busy

# SQLite result codes after which the file may become writable again (the lock freed, space or permission given,
# the file replaced): the batch is kept and retried rather than lost.
_RETRIABLE = frozenset(
    (
        sqlite3.SQLITE_BUSY,
        sqlite3.SQLITE_LOCKED,
        sqlite3.SQLITE_FULL,
        sqlite3.SQLITE_READONLY,
        sqlite3.SQLITE_IOERR,
        sqlite3.SQLITE_CANTOPEN,
        sqlite3.SQLITE_CORRUPT,
        sqlite3.SQLITE_NOTADB,
        sqlite3.SQLITE_PERM,
        sqlite3.SQLITE_PROTOCOL,
    )
)
# ...and those after which the open connection is still good; after the others it is closed and the file reopened.
_KEEP_CONNECTION = frozenset((sqlite3.SQLITE_BUSY, sqlite3.SQLITE_LOCKED, sqlite3.SQLITE_FULL))


def _result_code(exc: BaseException) -> int:
    return (getattr(exc, "sqlite_errorcode", None) or 0) & 0xFF


def retriable(exc: BaseException) -> bool:
    """True when the failure may pass by itself, so what could not be written is kept and retried."""
    if isinstance(exc, UserError):
        return True
    if not isinstance(exc, sqlite3.DatabaseError) or isinstance(exc, sqlite3.IntegrityError):
        return False
    return _result_code(exc) in _RETRIABLE or is_busy(exc)


def keeps_connection(exc: BaseException) -> bool:
    """True when the connection can be used again after this failure (the file was busy, locked or full)."""
    return _result_code(exc) in _KEEP_CONNECTION or is_busy(exc)


class LogAvailability:
    """The writer's account of its log: `problem` says why it cannot be written now (None while it can)."""

    def __init__(
        self,
        path: Path,
        *,
        queue_max: int,
        retry_interval: float,
        on_error: Callable[[str], None] | None,
        on_notice: Callable[[str], None] | None,
    ) -> None:
        self.path = path
        self.queue_max = queue_max
        self.retry_interval = retry_interval
        self.problem: str | None = None
        self._on_error = on_error
        self._on_notice = on_notice
        self._reported: set[str] = set()

    def unavailable(self, problem: str) -> None:
        """Note why the log cannot be written; say so the first time and for each new problem."""
        first = self.problem is None
        self.problem = problem
        if first or problem not in self._reported:
            self.report(
                f"{problem}; serving on without it: up to {self.queue_max} events wait in memory and the log is "
                f"retried every {self.retry_interval:g}s (events beyond that are counted as lost)"
            )
            self._reported.add(problem)

    def available(self, events_written: int, lost: int) -> None:
        """A write worked: if the log was unavailable, say it can be written again."""
        if self.problem is None:
            return
        self.problem = None
        if self._on_notice is not None:
            self._on_notice(
                f"{self.path}: the event log can be written again; {events_written} events written so far, "
                f"{lost} lost (recorded in the log as a warning)"
            )

    def report(self, message: str) -> None:
        """Pass a message to `on_error`, once."""
        if self._on_error is not None and message not in self._reported:
            self._reported.add(message)
            self._on_error(message)
