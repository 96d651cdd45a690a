"""A finished task mcpwatch offered, read back from the log: a wrapper restarted between a task's end and the host's
`tasks/result` still answers it (the task's `task_status` event keeps its answer, for its TTL)."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import Any

from mcpwatch.store.db import LogError, connect_reader

_QUERY = (
    "SELECT data FROM events INDEXED BY events_by_ts WHERE ts >= ? AND kind = 'task_status'"
    " AND json_extract(data, '$.task_id') = ? AND json_extract(data, '$.kept') IS NOT NULL ORDER BY id DESC LIMIT 1"
)


def find_kept_task(path: Path, task_id: str, since_ts: float) -> dict[str, Any] | None:
    """The `kept` block of the task's last terminal status logged since `since_ts`, else None (also when the log
    cannot be read: the caller then says the task is unknown, which is all it can know)."""
    try:
        conn = connect_reader(path)
    except LogError:
        return None
    try:
        row = conn.execute(_QUERY, (since_ts, task_id)).fetchone()
    except sqlite3.Error:
        return None
    finally:
        conn.close()
    if row is None:
        return None
    kept = json.loads(row[0]).get("kept")
    return kept if isinstance(kept, dict) else None
