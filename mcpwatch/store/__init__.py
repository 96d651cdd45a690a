"""The SQLite event log: one file, many sessions, several writing processes (DESIGN.md).

`EventWriter` appends without blocking its caller; `EventReader` lists sessions and streams their events. Tables
`sessions` and `events` and views `requests`, `tombstones` and `invalidations` are meant for `sqlite-utils` and
Datasette too.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from mcpwatch import paths
from mcpwatch.registry import pid_alive
from mcpwatch.store.db import LogError
from mcpwatch.store.schema import SCHEMA_VERSION

if TYPE_CHECKING:
    from mcpwatch.store.reader import EventReader, PruneCandidate, PruneResult, SessionInfo, prune
    from mcpwatch.store.writer import EventWriter, new_session_id

__all__ = [
    "SCHEMA_VERSION",
    "EventReader",
    "EventWriter",
    "LogError",
    "PruneCandidate",
    "PruneResult",
    "SessionInfo",
    "log_path",
    "new_session_id",
    "pid_alive",
    "prune",
]


def log_path(given: str | Path | None = None) -> Path:
    """The log a command should use: the one given, else `<state dir>/events.db`."""
    return Path(given).expanduser() if given else paths.default_log_path()


_LAZY = {
    "EventWriter": "writer",
    "new_session_id": "writer",
    "EventReader": "reader",
    "PruneCandidate": "reader",
    "PruneResult": "reader",
    "SessionInfo": "reader",
    "prune": "reader",
}


def __getattr__(name: str) -> Any:
    """The writer's and the reader's names, imported on first use: a command that only reads (`sessions`) does not
    load the writer, and a wrapper, which only writes, does not load the reader."""
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    from importlib import import_module

    value = globals()[name] = getattr(import_module(f"mcpwatch.store.{module}"), name)
    return value
