"""What each wrapped entry looked like before mcpwatch wrapped it, kept in the state directory (private, 0600), so
`hosts unwrap` puts the original text back byte for byte. The host's file itself carries nothing of mcpwatch's
but the wrap line, since hosts refuse keys they do not know."""

from __future__ import annotations

import json
import os
from pathlib import Path

from mcpwatch.hostconfig.plan import Record
from mcpwatch.paths import state_dir
from mcpwatch.privacy import check_dir, check_file, ensure_dir

FILE_NAME = "wrapped.json"
MAX_BYTES = 64 * 1024 * 1024


def folder() -> Path:
    return state_dir() / "hosts"


def check_private() -> None:
    """UnsafePathError (one line, the path and the fix) unless the records and the backups could only have been
    written by this user: a record is text that `unwrap` puts into a host's config, which the host then runs."""
    check_dir(state_dir(), "state directory")
    check_dir(folder(), "mcpwatch hosts folder")
    check_dir(folder() / "backups", "mcpwatch backups folder")
    check_file(folder() / FILE_NAME, "record of wrapped entries")


def load(path: Path | None = None) -> dict[str, Record]:
    """The kept records; an unreadable or damaged file counts as none (unwrapping then rebuilds from the args).
    Records another user could have written are refused (UnsafePathError), never trusted."""
    if path is None:
        check_private()
        path = folder() / FILE_NAME
    else:
        check_file(path, "record of wrapped entries")
    try:
        if path.stat().st_size > MAX_BYTES:
            return {}
        raw = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    if not isinstance(raw, dict):
        return {}
    return {
        str(key): Record(value["original"], value["wrapped"])
        for key, value in raw.items()
        if isinstance(value, dict) and isinstance(value.get("original"), str) and isinstance(value.get("wrapped"), str)
    }


def save(updates: dict[str, Record | None], path: Path | None = None) -> None:
    """Merge `updates` (None: forget) into the kept records, written atomically with mode 0600."""
    if not updates:
        return
    path = path or ensure_dir(folder(), "mcpwatch hosts folder") / FILE_NAME
    records = load(path)
    for key, record in updates.items():
        if record is None:
            records.pop(key, None)
        else:
            records[key] = record
    data = {key: {"original": r.original, "wrapped": r.wrapped} for key, r in records.items()}
    temp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as handle:
        json.dump(data, handle, indent=1)
    os.replace(temp, path)
