"""Durations in and out: `7d` on the command line, `3m 05s` in tables."""

from __future__ import annotations

import math
import re
import time

_AGE = re.compile(r"^\s*(\d+(?:\.\d+)?|\.\d+)\s*([smhd]?)\s*$", re.IGNORECASE)
_UNIT_S = {"": 1.0, "s": 1.0, "m": 60.0, "h": 3600.0, "d": 86400.0}


def parse_age(text: str) -> float:
    """`90`, `90s`, `15m`, `12h`, `7d` → seconds. ValueError (with a message for the user) otherwise."""
    match = _AGE.match(text or "")
    if not match:
        raise ValueError(f"{text!r} is not an age: use a number with s, m, h or d (e.g. 7d, 12h, 30m)")
    seconds = float(match.group(1)) * _UNIT_S[match.group(2).lower()]
    if not math.isfinite(seconds):
        raise ValueError(f"{text!r} is too large an age")
    return seconds


def format_duration(seconds: float | None) -> str:
    """Short and readable: `0.42s`, `45.2s`, `3m 05s`, `2h 03m`, `1d 02h`."""
    if seconds is None or not math.isfinite(seconds):
        return "-"
    if seconds < 0:
        return "-" + format_duration(-seconds)
    if seconds < 10:
        return f"{seconds:.2f}s"
    if seconds < 60:
        return f"{seconds:.1f}s"
    whole = round(seconds)
    if whole < 3600:
        return f"{whole // 60}m {whole % 60:02d}s"
    if whole < 86400:
        return f"{whole // 3600}h {whole % 3600 // 60:02d}m"
    return f"{whole // 86400}d {whole % 86400 // 3600:02d}h"


def format_time(ts: float | None) -> str:
    """Local wall-clock time to the second."""
    if ts is None or not math.isfinite(ts):
        return "-"
    return time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(ts))
