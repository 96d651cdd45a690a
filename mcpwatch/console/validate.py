"""Checking what an operator types, before anything is sent: every refusal says why in words (pure)."""

from __future__ import annotations

import math

from mcpwatch.config import ABSURD_SECONDS


class InvalidValue(ValueError):
    """The typed value cannot be used; the message is shown under the input as is."""


def parse_seconds(text: str, *, allow_empty: bool = False, allow_zero: bool = True) -> float | None:
    """A finite, non-negative number of seconds (a trailing `s` is fine); `None` for blank when allowed."""
    raw = text.strip()
    if raw.lower().endswith("s") and not raw.lower().endswith(("nans", "infs")):
        raw = raw[:-1].strip()
    if not raw:
        if allow_empty:
            return None
        raise InvalidValue("type a number of seconds, e.g. 15")
    try:
        value = float(raw)
    except ValueError:
        raise InvalidValue(f"{text.strip()!r} is not a number of seconds") from None
    if math.isnan(value):
        raise InvalidValue("NaN is not a number of seconds")
    if math.isinf(value):
        if raw.lstrip("+-").lower() in ("inf", "infinity"):
            raise InvalidValue("infinity is not allowed: every host gives up at some point")
        raise InvalidValue(f"{text.strip()} is too large (at most {ABSURD_SECONDS:.0f} s, one week)")
    if value < 0:
        raise InvalidValue(f"{value:g} is negative; seconds must be 0 or more")
    if value == 0 and not allow_zero:
        raise InvalidValue("must be more than 0 seconds")
    if value > ABSURD_SECONDS:
        raise InvalidValue(f"{value:g} s is absurdly large (at most {ABSURD_SECONDS:.0f} s, one week)")
    return value
