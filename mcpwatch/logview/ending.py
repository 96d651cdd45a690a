"""How a session that never recorded its end is shown: ended (crashed) at its last event.

A wrapper killed outright (SIGKILL, a power cut, an out-of-memory kill) never writes `session_end`. Readers that
know its process is gone stand in for it with an end event of their own, at the time of the last recorded event,
so the console and replay stop the clocks there and say why, as `sessions` and `report` do.
"""

from __future__ import annotations

from mcpwatch.events import Event, Kind
from mcpwatch.logview.units import format_time


def crashed_reason(last_ts: float | None) -> str:
    return f"crashed — its wrapper stopped without recording an end; last event {format_time(last_ts)}"


def stand_in_end(session_id: str, last: Event, reason: str) -> Event:
    """The `session_end` a reader shows for a session whose wrapper is gone, right after its last event."""
    return Event(
        Kind.SESSION_END.value,
        session_id,
        last.ts,
        last.mono,
        last.seq + 1,
        data={"reason": reason, "crashed": True, "stand_in": True},
    )


def gone_reason(log_path: str | None, session_id: str, last_ts: float | None) -> str:
    """Why a watched wrapper's session is over, once its process is gone: the end its log recorded, else crashed.

    The operator endpoint closes before the wrapper records its end, so a live console learns it from the log.
    """
    if log_path:
        from mcpwatch.store import EventReader, LogError

        try:
            with EventReader(log_path) as reader:
                session = reader.session(session_id)
        except (LogError, OSError):
            session = None
        if session is not None and session.ended_at is not None:
            return session.end_reason or "ended"
        if session is not None:
            return crashed_reason(session.last_ts if session.last_ts is not None else last_ts)
    return f"its wrapper is gone (no log says how it ended); last event {format_time(last_ts)}"
