"""The registry of running wrappers: one JSON file per wrapper, so `mcpwatch watch` can find them.

`<state dir>/wrappers/<pid>.json`, mode 0600 (it holds the operator token), removed on clean exit and ignored
when its process is gone.
"""

from __future__ import annotations

import contextlib
import json
import os
import sys
from dataclasses import asdict, dataclass
from pathlib import Path

from mcpwatch import paths


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


def register(entry: WrapperEntry, directory: Path | None = None) -> Path:
    """Write the entry atomically with mode 0600 (never readable by others, even for an instant)."""
    directory = directory or paths.registry_dir()
    directory.mkdir(parents=True, exist_ok=True)
    final = directory / f"{entry.pid}.json"
    temp = directory / f".{entry.pid}.json.tmp"
    fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as handle:
        json.dump(asdict(entry), handle)
    os.chmod(temp, 0o600)
    os.replace(temp, final)
    return final


def unregister(pid: int, directory: Path | None = None) -> None:
    directory = directory or paths.registry_dir()
    with contextlib.suppress(FileNotFoundError):
        (directory / f"{pid}.json").unlink()


def running_wrappers(directory: Path | None = None) -> list[WrapperEntry]:
    """Entries whose process is alive, oldest first; unreadable or stale files are skipped."""
    directory = directory or paths.registry_dir()
    entries: list[WrapperEntry] = []
    if not directory.is_dir():
        return entries
    for file in directory.glob("*.json"):
        try:
            raw = json.loads(file.read_text(encoding="utf-8"))
            entry = WrapperEntry(**raw)
        except (OSError, ValueError, TypeError):
            continue
        if pid_alive(entry.pid):
            entries.append(entry)
    entries.sort(key=lambda e: (e.started_at, e.pid))
    return entries


def find_wrapper(selector: str | None, directory: Path | None = None) -> list[WrapperEntry]:
    """Wrappers matching a name, a pid, or (None) all of them."""
    entries = running_wrappers(directory)
    if selector is None:
        return entries
    return [e for e in entries if e.name == selector or str(e.pid) == selector]
