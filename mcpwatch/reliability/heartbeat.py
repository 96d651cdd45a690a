"""When to send a heartbeat: progress the wrapper itself sends so a host's idle clock does not end a working call.

Some hosts end a call that has been silent for a while, and reset that clock on every progress notification (Claude
Code's remote idle timeout, the MCP Inspector's request timeout). While the upstream is silent the wrapper sends a
heartbeat at half that clock, never at or past the call's budget (the budget answers the host then anyway).
Pure: times in, times out, so the schedule is exact under a manual clock.
"""

from __future__ import annotations

HEARTBEAT_SHARE = 0.5  # of the host's idle clock: one lost or late heartbeat still leaves half the clock


def heartbeat_interval(idle_clock_s: float) -> float:
    return idle_clock_s * HEARTBEAT_SHARE


def next_heartbeat(last_activity: float, interval: float, started: float, budget_s: float | None) -> float | None:
    """The time the next heartbeat is due (on the same clock as the arguments), or None when it would fall at or
    after the end of the budget."""
    due = last_activity + interval
    if budget_s is not None and due >= started + budget_s:
        return None
    return due


def elapsed_text(seconds: float) -> str:
    """Elapsed time as people read it on a status line: 45s, 1m40s, 1h02m."""
    whole = max(0, int(seconds))
    hours, rest = divmod(whole, 3600)
    minutes, secs = divmod(rest, 60)
    if hours:
        return f"{hours}h{minutes:02d}m"
    if minutes:
        return f"{minutes}m{secs:02d}s"
    return f"{secs}s"


def heartbeat_message(elapsed_s: float) -> str:
    return f"still working: {elapsed_text(elapsed_s)}"
