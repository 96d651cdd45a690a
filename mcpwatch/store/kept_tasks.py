"""Finished tasks mcpwatch offered, read back from the log: a wrapper restarted between a task's end and the host's
`tasks/result` still answers it (the task's `task_status` event keeps its answer, for its TTL).

Read in two steps, so that no request costs a scan: once at start, the ids of this upstream's kept tasks and where
each one's event is (`read_kept_refs`, bounded by time and count); then one task by its place, through the
(session, request) index (`find_kept_task`). Both refuse a log another user owns, or others may write, as the
writer does: whoever could write it could answer a host's `tasks/result` with anything.
"""

from __future__ import annotations

import json
import sqlite3
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from mcpwatch.store.db import LogError, connect_private_reader
from mcpwatch.store.schema import REQUEST_INDEX_KINDS

REFS_MAX = 50_000  # kept tasks indexed at most (the newest): ~100 bytes each in memory

_REFS = (
    "SELECT session_id, request_id, json_extract(data, '$.task_id') FROM events INDEXED BY events_by_ts"
    " WHERE ts >= ? AND kind = 'task_status' AND json_valid(data)"
    " AND json_extract(data, '$.kept.upstream') = ? ORDER BY id DESC LIMIT ?"
)
_ONE = (
    f"SELECT data FROM events INDEXED BY events_by_request WHERE {REQUEST_INDEX_KINDS} AND session_id = ?"
    " AND request_id = ? AND kind = 'task_status' ORDER BY seq DESC LIMIT 8"
)


@dataclass(frozen=True, slots=True)
class KeptRef:
    """Where a kept task's end is in the log: its session and request (an indexed pair)."""

    session_id: str
    request_id: str


@dataclass(frozen=True, slots=True)
class KeptRefs:
    refs: dict[str, KeptRef]
    problem: str | None = None  # why the log could not be read (then no kept task of it is known)


def read_kept_refs(path: Path, upstream: str, since_ts: float, limit: int = REFS_MAX) -> KeptRefs:
    """The kept tasks of `upstream` (its identity key) logged since `since_ts`, newest first, at most `limit`."""
    try:
        conn = connect_private_reader(path)
    except LogError as exc:
        return KeptRefs({}, str(exc))
    refs: dict[str, KeptRef] = {}
    try:
        for session_id, request_id, task_id in conn.execute(_REFS, (since_ts, upstream, limit)):
            if isinstance(task_id, str) and isinstance(request_id, str) and task_id not in refs:
                refs[task_id] = KeptRef(str(session_id), request_id)
    except sqlite3.Error as exc:
        return KeptRefs(refs, f"{path}: {exc}")
    finally:
        conn.close()
    return KeptRefs(refs)


def find_kept_task(path: Path, ref: KeptRef, task_id: str) -> dict[str, Any] | None:
    """The `kept` block of the task's last terminal status, else None (also when the log cannot be read: the caller
    then says the task is unknown, which is all it can know)."""
    try:
        conn = connect_private_reader(path)
    except LogError:
        return None
    try:
        rows = conn.execute(_ONE, (ref.session_id, ref.request_id)).fetchall()
    except sqlite3.Error:
        return None
    finally:
        conn.close()
    for (data,) in rows:
        try:
            decoded = json.loads(data)
        except (TypeError, ValueError):
            continue
        kept = decoded.get("kept") if isinstance(decoded, dict) else None
        if isinstance(kept, dict) and decoded.get("task_id") == task_id:
            return kept
    return None
