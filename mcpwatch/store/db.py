"""Opening an event log file: validation, pragmas, migrations and the busy-retry discipline.

Every problem with the file (missing, not SQLite, corrupt, foreign, newer schema) becomes a `LogError`: one line,
naming the path, exit code 2 from the CLI. Writers take the write lock with BEGIN IMMEDIATE under a generous busy
timeout and retry on SQLITE_BUSY, so several wrapper processes can share one file.
"""

from __future__ import annotations

import contextlib
import sqlite3
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TypeVar

from mcpwatch.errors import UserError
from mcpwatch.store.schema import APPLICATION_ID, MIGRATIONS, SCHEMA_VERSION, Migration, migrate

BUSY_TIMEOUT_MS = 30_000
PAGE_SIZE = 8192  # fewer, fuller b-tree pages: ~5-10% faster batched inserts than the default 4096
SQLITE_MAGIC = b"SQLite format 3\x00"

T = TypeVar("T")


class LogError(UserError):
    """The event log file cannot be used as asked; the message names the path."""


def is_busy(exc: BaseException) -> bool:
    """True for SQLITE_BUSY / SQLITE_LOCKED, which are worth retrying."""
    if not isinstance(exc, sqlite3.OperationalError):
        return False
    code = getattr(exc, "sqlite_errorcode", None)
    if code is not None:
        return code & 0xFF in (sqlite3.SQLITE_BUSY, sqlite3.SQLITE_LOCKED)
    text = str(exc).lower()
    return "locked" in text or "busy" in text


_PROBLEM_BY_CODE = {
    sqlite3.SQLITE_READONLY: "the event log cannot be written (read-only)",
    sqlite3.SQLITE_CANTOPEN: "the event log cannot be opened",
    sqlite3.SQLITE_FULL: "the disk holding the event log is full",
    sqlite3.SQLITE_IOERR: "the event log could not be read or written (I/O error)",
    sqlite3.SQLITE_PERM: "permission denied",
}


def corrupt(path: Path, exc: sqlite3.DatabaseError) -> LogError:
    """The one-line error for a file SQLite cannot use: not a database, corrupt, or an environment problem."""
    detail = str(exc).strip() or type(exc).__name__
    code = (getattr(exc, "sqlite_errorcode", None) or 0) & 0xFF
    if code == sqlite3.SQLITE_NOTADB or "not a database" in detail:
        return LogError(f"{path}: not an SQLite database, so not an mcpwatch event log")
    if code in _PROBLEM_BY_CODE:
        return LogError(f"{path}: {_PROBLEM_BY_CODE[code]} ({detail})")
    if "malformed JSON" in detail:  # a damaged data column: SQL over it fails, `export` still reads every event
        find = "SELECT id, kind FROM events WHERE NOT json_valid(data)"
        return LogError(f"{path}: an event's data is not valid JSON (find it: sqlite3 {path} '{find}')")
    return LogError(f"{path}: the event log is corrupt or unreadable ({detail})")


@contextlib.contextmanager
def translate_errors(path: Path) -> Iterator[None]:
    """Turn SQLite's file-level errors into LogError; busy ones arrive here only once the retries are spent."""
    try:
        yield
    except sqlite3.DatabaseError as exc:
        if is_busy(exc):
            raise LogError(f"{path}: the event log stayed locked by another process; try again") from None
        raise corrupt(path, exc) from None


def retry_busy(action: Callable[[], T], *, attempts: int = 20, pause: float = 0.05) -> T:
    """Run `action`, retrying when SQLite reports the file busy beyond its busy timeout."""
    for attempt in range(attempts):
        try:
            return action()
        except sqlite3.OperationalError as exc:
            if not is_busy(exc) or attempt == attempts - 1:
                raise
            time.sleep(pause * (attempt + 1))
    raise AssertionError("unreachable")  # pragma: no cover


@contextlib.contextmanager
def immediate(conn: sqlite3.Connection) -> Iterator[sqlite3.Connection]:
    """A write transaction that holds the write lock from its start (no deadlock-prone lock upgrades)."""
    retry_busy(lambda: conn.execute("BEGIN IMMEDIATE"))
    try:
        yield conn
    except BaseException:
        if conn.in_transaction:
            conn.execute("ROLLBACK")
        raise
    conn.execute("COMMIT")


def check_header(path: Path) -> bool:
    """Raise LogError unless `path` is empty or starts like an SQLite file; True when it has content."""
    try:
        with path.open("rb") as handle:
            head = handle.read(len(SQLITE_MAGIC))
    except IsADirectoryError:
        raise LogError(f"{path}: is a directory, not an mcpwatch event log") from None
    except PermissionError:
        raise LogError(f"{path}: permission denied") from None
    except FileNotFoundError:
        raise LogError(f"{path}: no such event log") from None
    if not head:
        return False
    if head != SQLITE_MAGIC:
        raise LogError(f"{path}: not an SQLite database, so not an mcpwatch event log")
    return True


def _tables(conn: sqlite3.Connection) -> list[str]:
    rows = conn.execute("SELECT name FROM sqlite_master WHERE type IN ('table', 'view') ORDER BY name").fetchall()
    return [r[0] for r in rows if not str(r[0]).startswith("sqlite_")]


def _describe_foreign(path: Path, names: list[str]) -> LogError:
    shown = ", ".join(names[:5]) + (", …" if len(names) > 5 else "")
    return LogError(f"{path}: an SQLite file but not an mcpwatch event log (it holds {shown})")


def inspect(path: Path, conn: sqlite3.Connection, known: int | None = None) -> int:
    """The log's schema version; LogError for a foreign, newer or unreadable file. 0 means empty (no tables)."""
    known = SCHEMA_VERSION if known is None else known
    with translate_errors(path):
        version = int(conn.execute("PRAGMA user_version").fetchone()[0])
        app_id = int(conn.execute("PRAGMA application_id").fetchone()[0])
        names = _tables(conn)
    if app_id != APPLICATION_ID:
        if app_id == 0 and not names and version == 0:
            return 0
        raise _describe_foreign(path, names or [f"application id {app_id:#x}"])
    if version > known:
        raise LogError(
            f"{path}: event log schema version {version} is newer than this mcpwatch understands "
            f"({known}); upgrade mcpwatch"
        )
    return version


def _configure(conn: sqlite3.Connection) -> None:
    conn.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")


def _ensure_schema(path: Path, conn: sqlite3.Connection, steps: tuple[Migration, ...]) -> None:
    """Migrate to the latest version under the write lock; another process may have done it meanwhile."""
    if inspect(path, conn, len(steps)) >= len(steps):
        return
    with translate_errors(path), immediate(conn):
        version = inspect(path, conn, len(steps))
        if version < len(steps):
            migrate(conn, version, steps)


def connect_writer(path: Path, *, steps: tuple[Migration, ...] = MIGRATIONS) -> sqlite3.Connection:
    """A read-write connection to a valid, current log, creating the file (and its directory) when needed."""
    if path.exists():
        check_header(path)
    else:
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise LogError(f"{path}: cannot create the event log's directory ({exc.strerror})") from None
    try:
        conn = sqlite3.connect(path, isolation_level=None, check_same_thread=False, timeout=BUSY_TIMEOUT_MS / 1000)
    except sqlite3.Error as exc:
        raise LogError(f"{path}: cannot open the event log ({exc})") from None
    try:
        _configure(conn)
        fresh = inspect(path, conn, len(steps)) == 0  # refuse a foreign or newer file before changing it
        with translate_errors(path):
            if fresh:
                conn.execute(f"PRAGMA page_size = {PAGE_SIZE}")  # takes effect only on a file with no pages yet
            mode = retry_busy(lambda: conn.execute("PRAGMA journal_mode").fetchone()[0])
            if str(mode).lower() != "wal":
                retry_busy(lambda: conn.execute("PRAGMA journal_mode = WAL").fetchone())
            conn.execute("PRAGMA synchronous = NORMAL")
            # 4 MB: an append touches few pages and the OS page cache keeps the rest; SQLite's cache is resident
            # memory in every wrapper, whose whole budget is 60 MB (bench memory); 16 MB bought no write speed.
            conn.execute("PRAGMA cache_size = -4000")
        _ensure_schema(path, conn, steps)
    except sqlite3.Error as exc:
        conn.close()
        if is_busy(exc):
            raise LogError(f"{path}: the event log stayed locked by another process; try again") from None
        raise corrupt(path, exc) from None
    except BaseException:
        conn.close()
        raise
    return conn


def connect_reader(path: Path) -> sqlite3.Connection:
    """A read-only connection to a valid log; an older log is first migrated in place when the file allows."""
    if not path.exists():
        raise LogError(f"{path}: no such event log")
    if not check_header(path):
        raise LogError(f"{path}: an empty file, not an mcpwatch event log")
    conn = _open_ro(path)
    try:
        version = inspect(path, conn)
        if version == 0:
            raise LogError(f"{path}: an empty SQLite database, not an mcpwatch event log")
        if version < SCHEMA_VERSION:
            conn.close()
            _upgrade(path)
            conn = _open_ro(path)
            inspect(path, conn)
    except BaseException:
        conn.close()
        raise
    return conn


def _open_ro(path: Path) -> sqlite3.Connection:
    uri = path.resolve().as_uri() + "?mode=ro"
    try:
        conn = sqlite3.connect(uri, uri=True, isolation_level=None, check_same_thread=False)
    except sqlite3.Error as exc:
        raise LogError(f"{path}: cannot open the event log ({exc})") from None
    _configure(conn)
    return conn


def _upgrade(path: Path) -> None:
    try:
        conn = sqlite3.connect(path, isolation_level=None, timeout=BUSY_TIMEOUT_MS / 1000)
    except sqlite3.Error as exc:  # pragma: no cover - the file existed a moment ago
        raise LogError(f"{path}: cannot open the event log to upgrade it ({exc})") from None
    try:
        _configure(conn)
        _ensure_schema(path, conn, MIGRATIONS)
    except sqlite3.OperationalError as exc:
        raise LogError(f"{path}: the event log needs a schema upgrade and it failed ({exc})") from None
    finally:
        conn.close()
