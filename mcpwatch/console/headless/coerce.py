"""Event payloads are data, never trusted: these turn anything odd into None (or an empty tuple)."""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any


def as_num(value: Any) -> float | None:
    """A finite float, or None for anything else (the stream is data, never trusted)."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    number = float(value)
    return number if math.isfinite(number) else None


def as_int(value: Any) -> int | None:
    number = as_num(value)
    return None if number is None else int(number)


def clock_text(clock: Any) -> str | None:
    """A host clock from a host_info event or status, as the header shows it: "tool_timeout_sec 60 s"."""
    if not isinstance(clock, Mapping):
        return None
    setting, seconds = as_text(clock.get("setting")), as_num(clock.get("seconds"))
    if setting is None or seconds is None:
        return None
    return f"{setting} {seconds:g} s"


def up_key(data: Mapping[str, Any], field: str = "up_id") -> str | None:
    """An upstream id as the model keys it: each HTTP host session has its own upstream and id space, so its ids
    are qualified by the session (`<host_session>/<up_id>`); the stdio front's are plain."""
    up_id = as_text(data.get(field))
    session = as_text(data.get("host_session"))
    return up_id if up_id is None or session is None else f"{session}/{up_id}"


def as_text(value: Any) -> str | None:
    if value is None:
        return None
    return value if isinstance(value, str) else str(value)


def as_strs(value: Any) -> tuple[str, ...]:
    if isinstance(value, list | tuple):
        return tuple(str(v) for v in value)
    return ()
