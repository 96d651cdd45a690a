"""Which log, which session and which "now" a watched session's log-backed views (Trends, Models) read.

Live: the wrapper's registry entry names its log and session, and now is the wall clock. Replay: the recording's
file and session, and now is the replay position. Both are then read the same way, through `EventReader`.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from mcpwatch.clock import SYSTEM_CLOCK, Clock


@dataclass(frozen=True, slots=True)
class LogScope:
    path: Path
    session_id: str
    end_ts: float  # "now": the window ends here
    start_ts: float | None  # the session's start, when known


class NoLog(Exception):
    """The session has no log these views can read (said in one line)."""


def scope_of(feed: Any, model: Any = None, clock: Clock | None = None) -> LogScope:
    """The log scope of a live or replay feed; `NoLog` with the reason when there is none. `clock`: the app's,
    where it has one (tests), else the system's."""
    clock = SYSTEM_CLOCK if clock is None else clock
    engine = getattr(feed, "engine", None)
    recording = getattr(engine, "recording", None)
    if recording is not None:  # replay
        started = float(recording.session.started_at)
        origin = recording.origin_ts
        origin = started if origin is None else float(origin)
        return LogScope(Path(recording.path), str(recording.session.id), origin + float(feed.shown), started)
    locator = getattr(feed, "locator", None)
    entry = getattr(locator, "last", None)
    if entry is None:
        raise NoLog("not connected to a wrapper yet")
    if not entry.log_path or not entry.session_id:
        raise NoLog("this wrapper's log is not known here (watched by URL, not from this machine's registry)")
    path = Path(entry.log_path)
    if not path.exists():
        raise NoLog(f"the wrapper's log {path} is not readable from here")
    started_at = float(entry.started_at) if entry.started_at else None
    return LogScope(path, entry.session_id, clock.time(), started_at)
