"""The recent-requests filter language (pure): `outcome:deadline tool:search* took>15s`.

Terms are ANDed. `key:value` matches a field (outcome, tool, id, method; `*` and `?` are wildcards, case does not
matter); `took>15s`, `took<=0.5s`, `took>2m` compare the duration (s, ms, m, h; seconds when no unit); a bare word
matches tool, method, outcome or id as a substring, as before.
"""

from __future__ import annotations

import fnmatch
import math
import re
from collections.abc import Callable, Iterable

from mcpwatch.console.headless import words
from mcpwatch.console.headless.panels.requests import RequestView

Test = Callable[[RequestView], bool]
FIELDS = ("outcome", "tool", "id", "method")
_COMPARE = re.compile(r"^took(>=|<=|>|<|=)(.+)$")
_DURATION = re.compile(r"^(\d+(?:\.\d+)?|\.\d+)(ms|s|m|h)?$")
_UNITS = {"ms": 0.001, "s": 1.0, "m": 60.0, "h": 3600.0, None: 1.0}


# The syntax as help shows it (term, what it does).
SYNTAX = (
    ("words", "a bare word matches tool, method, outcome or id (part of it)"),
    ("field:value", "outcome:deadline · tool:search* · id:42 · method:tools/list (* and ? are wildcards)"),
    ("took>15s", "by duration: > < >= <= =, in ms, s, m or h (took<=500ms, took>2m)"),
    ("a b", "terms are ANDed; enter keeps the filter, esc clears it; one not understood is said in the title"),
)


class FilterError(ValueError):
    """A term the filter does not understand; the message says which and what would work."""


def _duration(text: str) -> float:
    match = _DURATION.match(text.strip().lower())
    if match is None:
        raise FilterError(f"not a duration: {text!r} (try 15s, 500ms, 2m)")
    return float(match.group(1)) * _UNITS[match.group(2)]


def _field(r: RequestView, name: str) -> tuple[str, ...]:
    if name == "outcome":
        raw = r.outcome or "in flight"
        return (raw.lower(), words.outcome(raw).lower())  # the wire's name or the console's word
    if name == "tool":
        return ((r.tool or "").lower(),)
    if name == "id":
        return (r.request_id.lower(),)
    return (r.method.lower(),)


def _term(term: str) -> Test:
    compare = _COMPARE.match(term.lower())
    if compare is not None:
        op, limit = compare.group(1), _duration(compare.group(2))
        ops: dict[str, Callable[[float, float], bool]] = {
            ">": lambda a, b: a > b,
            "<": lambda a, b: a < b,
            ">=": lambda a, b: a >= b,
            "<=": lambda a, b: a <= b,
            "=": lambda a, b: math.isclose(a, b, abs_tol=0.005),
        }
        check = ops[op]
        return lambda r: r.duration_s is not None and check(r.duration_s, limit)
    if ":" in term:
        name, _, pattern = term.partition(":")
        name = name.lower()
        if name not in FIELDS:
            raise FilterError(f"unknown field {name!r}: use {', '.join(FIELDS)} or took>15s")
        pattern = pattern.lower()
        if not pattern:
            raise FilterError(f"{name}: needs a value, e.g. {name}:search*")
        wildcard = any(ch in pattern for ch in "*?[")
        if wildcard:
            return lambda r: any(fnmatch.fnmatchcase(v, pattern) for v in _field(r, name))
        return lambda r: any(v == pattern for v in _field(r, name))
    needle = term.lower()
    return lambda r: any(needle in v for f in FIELDS for v in _field(r, f))


def parse(text: str) -> Test:
    """A test for requests from the filter text; FilterError for a term it does not understand."""
    tests = [_term(term) for term in text.split()]
    return lambda r: all(test(r) for test in tests)


def filter_requests(requests: Iterable[RequestView], text: str) -> tuple[RequestView, ...]:
    """The requests the filter keeps (all of them for a blank filter); FilterError when it cannot be read."""
    if not text.strip():
        return tuple(requests)
    test = parse(text)
    return tuple(r for r in requests if test(r))
