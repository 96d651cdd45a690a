"""How one upstream's tool calls ended lately, read back from the log: which ran past the host's budget.

`[tasks] offer_slow` offers such tools as tasks when a wrapper starts. The read is bounded so that it costs the same
on any log: the newest `max_sessions` sessions of the upstream, and of those only the newest `max_events` events in
all, walked down the (session, seq) index; a session of millions of events costs what its last ones cost, and a log
of many other upstreams' sessions costs its newest `SCANNED_SESSIONS`. Measured on
a 1.2 GB log of one million events (1 KB each): 0.15 s warm, 1.2 s with nothing in the page cache (2-core machine,
loaded), which is why the wrapper reads it in a thread while its upstream starts, waiting 2 s for it at most.
"""

from __future__ import annotations

import sqlite3
from dataclasses import dataclass
from pathlib import Path

from mcpwatch.store.db import LogError, connect_private_reader

MAX_SESSIONS = 50
MAX_EVENTS = 50_000
NAME_MAX = 512  # a longer tool name is no tool a host lists: read only far enough to tell (a hostile log's are huge)
SCANNED_SESSIONS = 5000  # the log's newest sessions (of any upstream) looked through for this upstream's

_SESSIONS = (
    "SELECT id FROM (SELECT id, upstream FROM sessions INDEXED BY sessions_by_start ORDER BY started_at DESC LIMIT ?)"
    " WHERE upstream = ? AND id != ? LIMIT ?"
)
# the newest `?` events of a session; of them only the ends of tool calls (with their method, and why a call that did
# not finish ended: a host's cancel is a sign too) and their late results (with the reason the call was cut)
_ENDS = (
    f"SELECT kind, substr(tool, 1, {NAME_MAX + 1}),"
    " CASE WHEN json_valid(data) THEN json_extract(data, '$.outcome') END,"
    " CASE WHEN json_valid(data) THEN json_extract(data, '$.duration_s') END,"
    " CASE WHEN NOT json_valid(data) THEN NULL WHEN kind = 'request_end' THEN json_extract(data, '$.method')"
    " ELSE json_extract(data, '$.reason') END,"
    " CASE WHEN json_valid(data) AND kind = 'request_end' THEN json_extract(data, '$.error') END"
    " FROM (SELECT kind, tool, data FROM events INDEXED BY events_by_session_seq"
    " WHERE session_id = ? ORDER BY seq DESC LIMIT ?)"
    " WHERE kind IN ('request_end', 'late_result') AND tool IS NOT NULL"
)


@dataclass(frozen=True, slots=True)
class CallEnd:
    """A tool call's end as logged: `late` is a result that came after the call was cut (its true duration);
    `host_cancel`, a call its host cancelled (after `duration_s`: it would have run longer)."""

    tool: str
    outcome: str | None
    duration_s: float | None
    late: bool
    host_cancel: bool = False


@dataclass(frozen=True, slots=True)
class CallEnds:
    ends: list[CallEnd]
    sessions: int  # sessions of the upstream read
    events: int  # events walked (at most MAX_EVENTS)
    problem: str | None = None  # why the log could not be read (then nothing is known of it)


def recent_call_ends(
    path: Path,
    upstream: str,
    *,
    exclude: str = "",
    max_sessions: int = MAX_SESSIONS,
    max_events: int = MAX_EVENTS,
    scanned_sessions: int = SCANNED_SESSIONS,
) -> CallEnds:
    """The tool calls' ends and late results among the newest events of this upstream's newest sessions (but
    `exclude`, the reader's own session, whose ends it learns as they happen)."""
    try:
        conn = connect_private_reader(path)
    except (LogError, OSError, sqlite3.Error) as exc:
        return CallEnds([], 0, 0, str(exc))
    ends: list[CallEnd] = []
    sessions: list[str] = []
    walked = 0
    try:
        sessions = [
            row[0] for row in conn.execute(_SESSIONS, (scanned_sessions, upstream, exclude, max(0, max_sessions)))
        ]
        for session_id in sessions:
            left = max_events - walked
            if left <= 0:
                break
            (count,) = conn.execute(
                "SELECT count(*) FROM (SELECT 1 FROM events WHERE session_id = ? LIMIT ?)", (session_id, left)
            ).fetchone()
            walked += int(count)
            for kind, tool, outcome, duration, method_or_reason, error in conn.execute(_ENDS, (session_id, left)):
                if method_or_reason != ("tools/call" if kind == "request_end" else "deadline"):
                    continue  # not a tool call; a late result of a call the host or an operator cancelled
                seconds = float(duration) if isinstance(duration, int | float) else None
                outcome = outcome if isinstance(outcome, str) else None
                cancel = outcome == "cancelled" and error == "host_cancel"
                ends.append(CallEnd(str(tool), outcome, seconds, late=kind == "late_result", host_cancel=cancel))
    except sqlite3.Error as exc:  # a damaged page: what was read stands, and the reason is said
        return CallEnds(ends, len(sessions), walked, f"{path}: {exc}")
    finally:
        conn.close()
    return CallEnds(ends, len(sessions), walked)
