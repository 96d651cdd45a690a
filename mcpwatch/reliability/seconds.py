"""The one rule for a number of seconds, wherever it comes from: mcpwatch.toml, an environment variable, the
operator endpoint or the console's prompt. One rule, so a value refused in one place is refused in all of them, with
the same words.

A value is refused when it is not a plain number, not finite, negative (unless allowed), 0 (unless allowed), above a
week (no host waits longer for one tool call) or — for a deadline budget — positive but below `BUDGET_FLOOR_S`, which
would cut every call at once.
"""

from __future__ import annotations

import math
import numbers
import re

ABSURD_S = 7 * 24 * 3600.0  # a week: no host waits longer for one tool call
BUDGET_FLOOR_S = 0.05  # a budget below this cuts every call before an upstream can answer

# A number as people type it: what float() takes, less its extras (underscores, non-ASCII digits, "0x10")
_PLAIN_NUMBER = re.compile(
    r"[+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?|[+-]?(?:inf|infinity|nan)", re.IGNORECASE | re.ASCII
)


class InvalidValue(ValueError):
    """A number of seconds that cannot be used; the message names what it was for and says why, in words."""


def parse_number(text: str) -> float:
    """A plain decimal number (ASCII digits, optional sign, point and exponent); ValueError for anything else."""
    if not _PLAIN_NUMBER.fullmatch(text):
        raise ValueError(text)
    return float(text)


def fmt_seconds(value: float) -> str:
    """Seconds as a person writes them: 120, 0.5, 1e+09."""
    if value == int(value) and abs(value) < 1e15:
        return str(int(value))
    return f"{value:.6g}"


def shown(value: object) -> str:
    """A value for a message; an integer too long to print is described instead."""
    if isinstance(value, int) and not isinstance(value, bool) and abs(value) > 10**30:
        return f"a {len(str(abs(value))) if value.bit_length() < 10_000 else 'huge'}-digit number"
    return repr(value)


def _amount(value: object) -> str:
    text = shown(value)
    return text if text.endswith("-digit number") else f"{text} s"


def check_seconds(
    value: object,
    what: str,
    *,
    allow_zero: bool = True,
    allow_negative: bool = False,
    budget: bool = False,
) -> float:
    """`value` (a number, or text as typed) as float seconds, or `InvalidValue` naming `what` and the value.

    `budget`: the value is a deadline budget, so a positive value below `BUDGET_FLOOR_S` is refused as too small.
    """
    if isinstance(value, bool):
        raise InvalidValue(f"{what} must be a number of seconds, got {value!r}")
    if isinstance(value, str):
        try:
            number = parse_number(value.strip())
        except ValueError:
            raise InvalidValue(f"{what} must be a number of seconds, got {value!r}") from None
        if math.isinf(number) and "inf" not in value.lower():  # "1e309": a finite number, too large for a float
            number = math.copysign(ABSURD_S + 1, number)
    elif isinstance(value, int):
        # integers (TOML, JSON) may be far beyond any float: compare before converting
        number = float(max(-ABSURD_S - 1, min(value, ABSURD_S + 1)))
    elif isinstance(value, numbers.Real):
        try:
            number = float(value)
        except OverflowError:
            number = math.copysign(ABSURD_S + 1, value)
    else:
        raise InvalidValue(f"{what} must be a number of seconds, got {value!r}")
    if not math.isfinite(number):
        raise InvalidValue(f"{what} must be finite, got {value!r}")
    if number < 0 and not allow_negative:
        raise InvalidValue(f"{what} must not be negative, got {shown(value)}")
    if number == 0 and not allow_zero:
        raise InvalidValue(f"{what} must be greater than 0, got {shown(value)}")
    if abs(number) > ABSURD_S:  # a negative deadline disables the budget, but minus a year is a typo
        raise InvalidValue(f"{what} is absurdly large ({_amount(value)}; at most {fmt_seconds(ABSURD_S)} s)")
    if budget and 0 < number < BUDGET_FLOOR_S:
        raise InvalidValue(f"{what} is too small ({_amount(value)}; at least {fmt_seconds(BUDGET_FLOOR_S)} s)")
    return number
