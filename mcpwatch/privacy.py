"""Private by default: mcpwatch's state holds tool arguments, results and operator tokens.

Directories mcpwatch creates are 0700 and files 0600. A directory or file that another user owns, or that others
may write to, is refused in one line naming the path and the fix: whoever can write there can plant a file or a
symlink that makes mcpwatch read their data or overwrite another file of its user.
"""

from __future__ import annotations

import contextlib
import os
import stat
import sys
from pathlib import Path

from mcpwatch.errors import UserError

DIR_MODE = 0o700
FILE_MODE = 0o600
_OTHERS_WRITE = stat.S_IWGRP | stat.S_IWOTH


class UnsafePathError(UserError):
    """A state directory or log that is not private to this user; the message names the path and the fix."""


def _owner_problem(path: Path, info: os.stat_result, what: str, fix_mode: str) -> str | None:
    if sys.platform == "win32":  # pragma: no cover - no Windows runner; POSIX ownership does not apply
        return None
    me = os.geteuid()
    if info.st_uid != me:
        return (
            f"{path}: the {what} belongs to another user (uid {info.st_uid}), so mcpwatch will not use it; "
            f"use a directory of your own (MCPWATCH_STATE_DIR or --log) or `chown {me} {path}`"
        )
    if info.st_mode & _OTHERS_WRITE:
        return (
            f"{path}: the {what} is writable by other users (mode {stat.S_IMODE(info.st_mode):04o}), "
            f"so mcpwatch will not use it; fix it with `chmod {fix_mode} {path}`"
        )
    return None


def check_dir(path: Path, what: str = "state directory") -> None:
    """Refuse a directory owned by another user or writable by others; a missing one is fine (we create it)."""
    try:
        info = path.lstat()
    except FileNotFoundError:
        return
    except OSError:
        return  # unreadable: the real operation reports it, naming the path
    if stat.S_ISLNK(info.st_mode):
        with contextlib.suppress(OSError):
            info = path.stat()
    problem = _owner_problem(path, info, what, "700")
    if problem:
        raise UnsafePathError(problem)


def check_file(path: Path, what: str = "event log") -> None:
    """Refuse a file owned by another user or writable by others; a missing one is fine."""
    try:
        info = path.stat()
    except OSError:
        return
    if not stat.S_ISREG(info.st_mode):
        return  # a directory or device: the log's own checks say what is wrong with it
    problem = _owner_problem(path, info, what, "600")
    if problem:
        raise UnsafePathError(problem)


def check_opened(path: Path, fd: int, what: str) -> None:
    """Refuse what was opened at `path` (by its descriptor, so nothing can be swapped in after the check) unless it
    is a regular file of this user's that others cannot write: a FIFO, a device or a directory never reaches a
    read."""
    info = os.fstat(fd)
    if not stat.S_ISREG(info.st_mode):
        raise UnsafePathError(f"{path}: the {what} is not a regular file, so mcpwatch will not read it; remove it")
    problem = _owner_problem(path, info, what, "600")
    if problem:
        raise UnsafePathError(problem)


def check_log(path: Path) -> None:
    """`check_file` for a SQLite log, and what SQLite reads beside it: its directory (whoever may create files there
    may plant the `-wal`, whose pages SQLite reads over the whole file, even in a sticky /tmp) and the `-wal` and
    `-shm` present now (ours, not writable by others, never symlinks: SQLite would write through one)."""
    real = path.resolve() if path.is_symlink() else path
    check_file(real)
    check_dir(real.parent, "event log's directory")
    for suffix, what in (("-wal", "event log's WAL"), ("-shm", "event log's shared memory file")):
        side = Path(f"{real}{suffix}")
        try:
            info = side.lstat()
        except OSError:
            continue
        if stat.S_ISLNK(info.st_mode):
            raise UnsafePathError(f"{side}: the {what} is a symlink, so mcpwatch will not use the log; remove it")
        problem = _owner_problem(side, info, what, "600")
        if problem:
            raise UnsafePathError(problem)


def ensure_dir(path: Path, what: str = "state directory") -> Path:
    """Create `path` (and parents) with mode 0700 when missing, then check it is private; returns it."""
    if not path.exists():
        try:
            path.mkdir(mode=DIR_MODE, parents=True, exist_ok=True)
        except FileExistsError:
            pass
    check_dir(path, what)
    return path


def tighten(path: Path) -> None:
    """Make a file of ours 0600 when it is readable or writable by others (the log, its WAL and SHM)."""
    try:
        info = path.stat()
    except OSError:
        return
    if stat.S_ISREG(info.st_mode) and info.st_uid == os.geteuid() and stat.S_IMODE(info.st_mode) & 0o077:
        with contextlib.suppress(OSError):
            os.chmod(path, FILE_MODE)


def create_file(path: Path) -> None:
    """Create `path` empty with mode 0600 unless it exists (never through a symlink); tighten it if it does."""
    try:
        os.close(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, FILE_MODE))
    except FileExistsError:
        tighten(path)
