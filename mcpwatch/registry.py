"""The registry of running wrappers: one JSON file per wrapper, so `mcpwatch watch` can find them.

`<state dir>/wrappers/<pid>.json`, mode 0600 (it holds the operator token) in a 0700 directory, removed on clean
exit; a file whose process is gone (a wrapper that crashed or was killed) is removed by whoever reads the registry
next. Only loopback operator URLs are taken from it: a console never sends its token anywhere else on the word of
a file (another URL must be given on the command line).
"""

from __future__ import annotations

import contextlib
import json
import os
import sys
from dataclasses import asdict, dataclass
from pathlib import Path
from urllib.parse import urlsplit

from mcpwatch import paths, privacy


@dataclass(frozen=True)
class WrapperEntry:
    pid: int
    name: str
    operator_url: str
    token: str
    log_path: str
    session_id: str
    upstream: str = ""
    started_at: float = 0.0


def pid_alive(pid: int | None) -> bool:
    """Whether a process with this pid exists on this machine: the test for "its wrapper is still running".

    A process we may not signal (PermissionError) is alive. pid 0 and negative pids name process groups, not a
    process, so they count as gone. On Windows signal 0 would be CTRL_C_EVENT, so every pid counts as alive there:
    keeping a crashed session is harmless, deleting a live one is not.
    """
    if pid is None or isinstance(pid, bool) or not isinstance(pid, int) or pid <= 0:
        return False
    if sys.platform == "win32":  # pragma: no cover - no Windows runner
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    except (OverflowError, ValueError, OSError):  # not a pid this system can have
        return False
    return True


def is_loopback_url(url: str) -> bool:
    """An http(s) URL whose host is this machine's loopback (127.0.0.0/8, ::1 or localhost)."""
    try:
        parts = urlsplit(url)
        host = parts.hostname
    except ValueError:
        return False
    if parts.scheme not in ("http", "https") or not host:
        return False
    if host == "localhost":
        return True
    import ipaddress  # here, as `secrets` below: the log commands import this module only for `pid_alive`

    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def register(entry: WrapperEntry, directory: Path | None = None) -> Path:
    """Write the entry atomically with mode 0600 (never readable by others, even for an instant).

    The temporary file has a random name and is opened with O_EXCL|O_NOFOLLOW, so a file or symlink planted under
    that name cannot make the wrapper write its token anywhere else; the directory must be private (0700, ours).
    """
    directory = directory or paths.registry_dir()
    if directory == paths.registry_dir():
        privacy.ensure_dir(directory.parent)
    privacy.ensure_dir(directory, "registry directory")
    final = directory / f"{entry.pid}.json"
    import secrets

    temp = directory / f".{entry.pid}.{secrets.token_hex(8)}.tmp"
    fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, privacy.FILE_MODE)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            json.dump(asdict(entry), handle)
        os.replace(temp, final)  # rename() replaces a symlink at `final` itself, never the file it points to
    except BaseException:
        with contextlib.suppress(OSError):
            temp.unlink()
        raise
    return final


def unregister(pid: int, directory: Path | None = None) -> None:
    directory = directory or paths.registry_dir()
    with contextlib.suppress(FileNotFoundError):
        (directory / f"{pid}.json").unlink()


def _remove_ghost(file: Path) -> None:
    """A registry file whose wrapper is gone: remove it (another reader may have done so first)."""
    with contextlib.suppress(OSError):
        file.unlink()


def running_wrappers(directory: Path | None = None) -> list[WrapperEntry]:
    """Entries whose process is alive and whose operator URL is loopback, oldest first.

    Files of dead pids are removed on the way; unreadable files are skipped, as are entries pointing elsewhere.
    """
    directory = directory or paths.registry_dir()
    entries: list[WrapperEntry] = []
    if not directory.is_dir():
        return entries
    try:
        check_registry(directory)
    except privacy.UnsafePathError:
        return entries  # `mcpwatch watch` says why when it starts (check_registry); a console never trusts it
    for file in directory.glob("*.json"):
        try:
            raw = json.loads(file.read_text(encoding="utf-8"))
            entry = WrapperEntry(**raw)
        except (OSError, ValueError, TypeError):
            continue
        if not pid_alive(entry.pid):
            if file.name == f"{entry.pid}.json":
                _remove_ghost(file)
            continue
        if isinstance(entry.operator_url, str) and is_loopback_url(entry.operator_url):
            entries.append(entry)
    entries.sort(key=lambda e: (e.started_at, e.pid))
    return entries


def check_registry(directory: Path | None = None) -> None:
    """UnsafePathError (one line: the path and the fix) when the state or registry directory is not private."""
    directory = directory or paths.registry_dir()
    privacy.check_dir(directory.parent)
    privacy.check_dir(directory, "registry directory")


def remove_ghosts(directory: Path | None = None) -> None:
    """Remove the files of wrappers that are gone; for commands that read the log rather than the registry."""
    with contextlib.suppress(OSError, privacy.UnsafePathError):
        running_wrappers(directory)


def find_wrapper(selector: str | None, directory: Path | None = None) -> list[WrapperEntry]:
    """Wrappers matching a name, a pid, or (None) all of them."""
    entries = running_wrappers(directory)
    if selector is None:
        return entries
    return [e for e in entries if e.name == selector or str(e.pid) == selector]
