"""Checking what an operator types, before anything is sent: the wrapper's own rule for seconds (pure)."""

from __future__ import annotations

from mcpwatch.reliability.seconds import InvalidValue, check_seconds

__all__ = ["InvalidValue", "parse_seconds"]


def parse_seconds(
    text: str,
    *,
    what: str = "the value",
    allow_empty: bool = False,
    allow_zero: bool = True,
    budget: bool = False,
) -> float | None:
    """Finite, non-negative seconds as typed (a trailing `s` is fine); `None` for blank when allowed.

    The rule is `reliability.seconds`, the one the wrapper applies, so what is refused here would be refused there.
    """
    raw = text.strip()
    if raw.lower().endswith("s") and not raw.lower().endswith(("nans", "infs")):
        raw = raw[:-1].strip()
    if not raw:
        if allow_empty:
            return None
        raise InvalidValue("type a number of seconds, e.g. 15")
    return check_seconds(raw, what, allow_zero=allow_zero, budget=budget)
