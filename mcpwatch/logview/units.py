"""Durations in and out: `7d` on the command line, `420ms`, `8.30s` or `3m 05s` in tables."""

from __future__ import annotations

import math
import re
import time

_AGE = re.compile(r"^\s*(\d+(?:\.\d+)?|\.\d+)\s*([smhdw]?)\s*$", re.IGNORECASE)
_UNIT_S = {"s": 1.0, "m": 60.0, "h": 3600.0, "d": 86400.0, "w": 7 * 86400.0}
AGE_UNITS = "s, m, h, d or w"


def parse_age(text: str) -> float:
    """`90s`, `15m`, `12h`, `7d`, `2w` → seconds. ValueError (with a message for the user) otherwise.

    A bare number is refused rather than read as seconds: `--older-than=7` meant 7 days to the user who pruned
    every session with it, so the unit must be said.
    """
    match = _AGE.match(text or "")
    if not match:
        raise ValueError(f"{text!r} is not an age: use a number with {AGE_UNITS} (e.g. 7d, 12h, 30m)")
    number, unit = match.groups()
    if not unit:
        raise ValueError(f"{text.strip()!r} needs a unit ({AGE_UNITS}): did you mean {number}d?")
    seconds = float(number) * _UNIT_S[unit.lower()]
    if not math.isfinite(seconds):
        raise ValueError(f"{text!r} is too large an age")
    return seconds


def format_duration(seconds: float | None) -> str:
    """One human format for every duration shown: `420ms`, `4.5ms`, `8.30s`, `45.2s`, `3m 05s`, `2h 03m`, `1d 02h`.

    Below a second in milliseconds (so a 3 ms call is not `0.00s`), above it in seconds; model latencies (logged in
    ms) and tool durations (logged in s) go through here alike, so the report's tables never mix units.
    """
    if seconds is None or not math.isfinite(seconds):
        return "-"
    if seconds < 0:
        return "-" + format_duration(-seconds)
    ms = seconds * 1000
    if round(ms, 1) < 10:
        return f"{ms:.1f}".rstrip("0").rstrip(".") + "ms"
    if round(ms) < 1000:
        return f"{ms:.0f}ms"
    if round(seconds, 2) < 10:
        return f"{seconds:.2f}s"
    if round(seconds, 1) < 60:
        return f"{seconds:.1f}s"
    whole = round(seconds)
    if whole < 3600:
        return f"{whole // 60}m {whole % 60:02d}s"
    if whole < 86400:
        return f"{whole // 3600}h {whole % 3600 // 60:02d}m"
    return f"{whole // 86400}d {whole % 86400 // 3600:02d}h"


def session_duration(duration: float, state: str) -> str:
    """A session's length as `sessions` and `report` both show it.

    `ended`: start to its recorded end. `crashed` (no end recorded and its wrapper is gone: it died or was killed):
    start to its last event, marked `(crashed)`. `running` (its wrapper is still alive): just `running`, since the
    time to its last event says nothing about a wrapper that is idle but well.
    """
    if state == "running":
        return "running"
    text = format_duration(duration)
    return text if state == "ended" else f"{text} ({state})"


def crashed_note(session_id: str, last_event_at: float | None) -> str:
    """The line that says what `crashed` means for one session, with the time of its last event."""
    return (
        f"{session_id}: crashed — its wrapper stopped without recording an end; "
        f"counted as ended at its last event, {format_time(last_event_at)}"
    )


def format_time(ts: float | None) -> str:
    """Local wall-clock time to the second."""
    if ts is None or not math.isfinite(ts):
        return "-"
    return time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(ts))
