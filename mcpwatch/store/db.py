"""Opening an event log file: validation, pragmas, migrations and the busy-retry discipline.

Every problem with the file (missing, not SQLite, corrupt, foreign, newer schema) becomes a `LogError`: one line,
naming the path, exit code 2 from the CLI. Writers take the write lock with BEGIN IMMEDIATE under a generous busy
timeout and retry on SQLITE_BUSY, so several wrapper processes can share one file.
"""

from __future__ import annotations

import contextlib
import os
import sqlite3
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TypeVar

from mcpwatch import privacy
from mcpwatch.errors import UserError
from mcpwatch.store.schema import APPLICATION_ID, MIGRATIONS, SCHEMA_VERSION, Migration, migrate

BUSY_TIMEOUT_MS = 30_000
BUSY_ATTEMPTS = 20
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


def problem_text(path: Path, exc: BaseException) -> str:
    """One line naming the path and what is wrong, for any error that stops the log being written."""
    if isinstance(exc, UserError):
        return str(exc)
    if is_busy(exc):
        return f"{path}: the event log is locked by another process"
    if isinstance(exc, sqlite3.DatabaseError | OSError) and disk_full(path):
        return f"{path}: the disk holding the event log is full ({exc})"
    if isinstance(exc, sqlite3.DatabaseError):
        return str(corrupt(path, exc))
    return f"{path}: {type(exc).__name__}: {exc}"


FULL_BELOW_BYTES = 64 * 1024  # less room than this and SQLite cannot grow its WAL or SHM: call it full


def disk_full(path: Path) -> bool:
    """Whether the file system holding `path` has (next to) no room left for this user.

    A full disk does not always come back as SQLITE_FULL: creating or growing the WAL and SHM files on a full file
    system fails as a disk I/O error, which would send a person looking for a broken disk.
    """
    try:
        info = os.statvfs(path.parent)
    except (OSError, AttributeError):
        return False
    return info.f_bavail * info.f_frsize < FULL_BELOW_BYTES


def corrupt(path: Path, exc: sqlite3.DatabaseError) -> LogError:
    """The one-line error for a file SQLite cannot use: not a database, corrupt, or an environment problem."""
    detail = str(exc).strip() or type(exc).__name__
    code = (getattr(exc, "sqlite_errorcode", None) or 0) & 0xFF
    if code == sqlite3.SQLITE_NOTADB or "not a database" in detail:
        return LogError(f"{path}: not an SQLite database, so not an mcpwatch event log")
    if code in (sqlite3.SQLITE_FULL, sqlite3.SQLITE_IOERR) and disk_full(path):
        return LogError(f"{path}: {_PROBLEM_BY_CODE[sqlite3.SQLITE_FULL]} ({detail})")
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


def retry_busy(action: Callable[[], T], *, attempts: int = BUSY_ATTEMPTS, pause: float = 0.05) -> T:
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
def immediate(conn: sqlite3.Connection, attempts: int = BUSY_ATTEMPTS) -> Iterator[sqlite3.Connection]:
    """A write transaction that holds the write lock from its start (no deadlock-prone lock upgrades)."""
    retry_busy(lambda: conn.execute("BEGIN IMMEDIATE"), attempts=attempts)
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


# One statement, so one snapshot: read apart, a log made meanwhile by another process showed its tables without the
# application id its maker set in the same transaction, and was refused as a foreign file.
_HEADER = (
    "SELECT v.user_version, a.application_id, m.name FROM pragma_user_version() AS v, pragma_application_id() AS a"
    " LEFT JOIN sqlite_master AS m ON m.type IN ('table', 'view') ORDER BY m.name"
)


def _header(conn: sqlite3.Connection) -> tuple[int, int, list[str]]:
    """The schema version, the application id and the tables and views (SQLite's own left out)."""
    rows = conn.execute(_HEADER).fetchall()
    names = [str(r[2]) for r in rows if r[2] is not None and not str(r[2]).startswith("sqlite_")]
    return int(rows[0][0]), int(rows[0][1]), names


def _describe_foreign(path: Path, names: list[str]) -> LogError:
    shown = ", ".join(names[:5]) + (", …" if len(names) > 5 else "")
    return LogError(f"{path}: an SQLite file but not an mcpwatch event log (it holds {shown})")


def inspect(path: Path, conn: sqlite3.Connection, known: int | None = None) -> int:
    """The log's schema version; LogError for a foreign, newer or unreadable file. 0 means empty (no tables)."""
    known = SCHEMA_VERSION if known is None else known
    with translate_errors(path):
        version, app_id, names = _header(conn)
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


def _ensure_schema(
    path: Path,
    conn: sqlite3.Connection,
    steps: tuple[Migration, ...],
    busy_attempts: int = BUSY_ATTEMPTS,
    seen: int | None = None,
) -> None:
    """Migrate to the latest version under the write lock; another process may have done it meanwhile. `seen`: the
    version the caller has just read (a current log is then not read again)."""
    if (inspect(path, conn, len(steps)) if seen is None else seen) >= len(steps):
        return
    with translate_errors(path), immediate(conn, busy_attempts):
        version = inspect(path, conn, len(steps))
        if version < len(steps):
            migrate(conn, version, steps)


def _create_private(path: Path) -> None:
    """Create the log's directory (0700) and the empty file itself with mode 0600, never through a symlink.

    SQLite gives the WAL and SHM files the mode of the database file, so they are private too.
    """
    try:
        path.parent.mkdir(mode=privacy.DIR_MODE, parents=True, exist_ok=True)
    except OSError as exc:
        raise LogError(f"{path}: cannot create the event log's directory ({exc.strerror})") from None
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, privacy.FILE_MODE)
    except FileExistsError:
        return  # another process created it meanwhile (or a symlink is there: SQLite's own checks follow)
    except OSError as exc:
        raise LogError(f"{path}: cannot create the event log ({exc.strerror})") from None
    os.close(fd)


def connect_writer(
    path: Path,
    *,
    steps: tuple[Migration, ...] = MIGRATIONS,
    busy_timeout_ms: int | None = None,
    busy_attempts: int = BUSY_ATTEMPTS,
) -> sqlite3.Connection:
    """A read-write connection to a valid, current log, creating the file (and its directory) when needed.

    `busy_timeout_ms` and `busy_attempts` bound how long opening may wait for another process's write lock.
    """
    privacy.check_log(path)  # … and what SQLite reads beside it (a WAL planted there would be the whole log)
    if path.exists():
        check_header(path)
    else:
        _create_private(path)  # not in a directory others may write: checked above
    timeout_ms = BUSY_TIMEOUT_MS if busy_timeout_ms is None else busy_timeout_ms
    try:
        conn = sqlite3.connect(path, isolation_level=None, check_same_thread=False, timeout=timeout_ms / 1000)
    except sqlite3.Error as exc:
        raise LogError(f"{path}: cannot open the event log ({exc})") from None
    try:
        conn.execute(f"PRAGMA busy_timeout = {timeout_ms}")
        seen = inspect(path, conn, len(steps))  # refuse a foreign or newer file before changing it
        with translate_errors(path):
            if seen == 0:
                conn.execute(f"PRAGMA page_size = {PAGE_SIZE}")  # takes effect only on a file with no pages yet
            mode = retry_busy(lambda: conn.execute("PRAGMA journal_mode").fetchone()[0], attempts=busy_attempts)
            if str(mode).lower() != "wal":
                retry_busy(lambda: conn.execute("PRAGMA journal_mode = WAL").fetchone(), attempts=busy_attempts)
            conn.execute("PRAGMA synchronous = NORMAL")
            # 4 MB: an append touches few pages and the OS page cache keeps the rest; SQLite's cache is resident
            # memory in every wrapper, whose whole budget is 60 MB (bench memory); 16 MB bought no write speed.
            conn.execute("PRAGMA cache_size = -4000")
        _ensure_schema(path, conn, steps, busy_attempts, seen)
    except sqlite3.Error as exc:
        conn.close()
        raise LogError(problem_text(path, exc)) from None
    except BaseException:
        conn.close()
        raise
    for suffix in ("", "-wal", "-shm"):  # a log made before mcpwatch kept it private
        privacy.tighten(Path(f"{path}{suffix}"))
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


def connect_private_reader(path: Path) -> sqlite3.Connection:
    """`connect_reader` for what the wrapper acts on (kept task results, `offer_slow`'s slow calls): a log another
    user owns, or others may write, is refused in one line, as the writer refuses it."""
    try:
        privacy.check_log(path)
    except privacy.UnsafePathError as exc:
        raise LogError(str(exc)) from None
    return connect_reader(path)


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
