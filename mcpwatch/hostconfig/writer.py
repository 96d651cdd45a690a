"""Writing a host's config file safely: only a regular file of this user's that it may write, never one changed
since it was read, atomically (a temporary file beside it, renamed over it, its mode kept), with a backup of the
old text in the state directory. A symlinked config is followed: the file it points at is edited (the link stays),
and the output says so."""

from __future__ import annotations

import difflib
import hashlib
import os
import stat
import sys
import time
from pathlib import Path

from mcpwatch.hostconfig.entries import display
from mcpwatch.hostconfig.records import folder
from mcpwatch.privacy import ensure_dir


class WriteRefused(ValueError):
    """The file is not one mcpwatch will write; one line naming it and the fix. Nothing was changed."""


def target(path: Path) -> Path:
    """The file an edit goes to: the path itself, or for a symlink the file it points at."""
    if not path.is_symlink():
        return path
    real = path.resolve()
    if not real.exists():
        raise WriteRefused(f"{display(path)} is a symlink to {real}, which does not exist; nothing was changed")
    return real


def check_writable(path: Path) -> None:
    """WriteRefused unless `path` is a regular file of this user's that this process may replace."""
    real = target(path)
    try:
        info = real.stat()
    except OSError as exc:
        raise WriteRefused(f"{display(real)}: {exc.strerror}; nothing was changed") from None
    if not stat.S_ISREG(info.st_mode):
        raise WriteRefused(f"{display(real)} is not a regular file; nothing was changed")
    if sys.platform != "win32" and info.st_uid != os.geteuid():
        raise WriteRefused(
            f"{display(real)} belongs to another user (uid {info.st_uid}); mcpwatch edits only your own config files"
        )
    if not info.st_mode & stat.S_IWUSR or not os.access(real, os.W_OK):
        raise WriteRefused(
            f"{display(real)} is not writable (mode {stat.S_IMODE(info.st_mode):04o}); nothing was changed"
        )
    if not os.access(real.parent, os.W_OK | os.X_OK):
        raise WriteRefused(f"{display(real.parent)}: cannot write a file there to replace {real.name} atomically")


def diff(path: Path, before: str, after: str) -> str:
    name = display(path)
    return "".join(
        difflib.unified_diff(before.splitlines(True), after.splitlines(True), f"{name} (now)", f"{name} (after)")
    )


def backup(path: Path, text: str) -> Path:
    """The old text kept in `<state>/hosts/backups/` (0600), named after the file, its folder and the time."""
    where = ensure_dir(folder() / "backups", "mcpwatch backups folder")
    stamp = time.strftime("%Y%m%dT%H%M%S")
    folder_tag = hashlib.sha256(str(path.parent).encode()).hexdigest()[:8]
    for attempt in range(1000):
        name = f"{path.name.lstrip('.')}.{folder_tag}.{stamp}" + (f".{attempt}" if attempt else "") + ".bak"
        try:
            fd = os.open(where / name, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
        except FileExistsError:
            continue
        with os.fdopen(fd, "w", encoding="utf-8", newline="") as handle:
            handle.write(text)
        return where / name
    raise WriteRefused(f"{display(where)}: too many backups of {path.name} this second; nothing was changed")


def _unchanged(real: Path, read_text: str) -> None:
    with open(real, "rb") as handle:
        now = handle.read()
    if now != read_text.encode("utf-8"):
        raise WriteRefused(
            f"{display(real)} changed since mcpwatch read it (the host wrote it?); nothing was changed, run again"
        )


def write(path: Path, read_text: str, new_text: str) -> Path:
    """Replace the file's text, refusing if it is no longer `read_text`; returns the backup's path. The file is
    compared again after the new copy is on disk, right before the rename, so a host that saved meanwhile keeps
    its text (what is left is the rename itself, which no lock the hosts honour can close). The file's mode and
    group are kept."""
    real = target(path)
    check_writable(path)
    _unchanged(real, read_text)
    try:
        data = new_text.encode("utf-8")
    except UnicodeEncodeError:
        raise WriteRefused(f"{display(real)}: the new text would not be UTF-8 (a bug); nothing was changed") from None
    saved = backup(real, read_text)
    info = real.stat()
    mode = stat.S_IMODE(info.st_mode)
    temp = real.with_name(f".{real.name}.mcpwatch-{os.getpid()}.tmp")
    fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, mode)
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        if sys.platform != "win32" and info.st_gid != os.stat(temp).st_gid:
            try:
                os.chown(temp, -1, info.st_gid)
            except OSError:
                raise WriteRefused(
                    f"{display(real)}: cannot keep its group (gid {info.st_gid}) on the new copy; nothing was changed"
                ) from None
        os.chmod(temp, mode)
        _unchanged(real, read_text)
        os.replace(temp, real)
    except BaseException:
        temp.unlink(missing_ok=True)
        raise
    return saved
