"""How a setting's value is checked, declared on its dataclass field: `setting(default, check)` puts the check in
the field's metadata, so a section's keys and their checks are one declaration (`mcpwatch.config` reads them back
with `check_of`). The common checks live here, where the reliability core's own sections can use them without
importing `mcpwatch.config`; a check raises `Problem` with the words after the key's name (and, for an entry of a
table setting, where in the table it is).
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from dataclasses import Field, field
from typing import Any, TypeVar

from mcpwatch.reliability.seconds import InvalidValue, check_seconds, shown

T = TypeVar("T")
Check = Callable[[Any], Any]  # a raw TOML value -> the value the setting holds, or Problem

CHECK = "mcpwatch.check"  # the metadata key; its value is the field's Check


class Problem(Exception):
    """What is wrong with a value, in the words that follow the key's name ("must be …, got …"); `at` says where
    inside a table setting the bad value sits (".slow", "[0].match"), written right after the key's name."""

    def __init__(self, words: str, at: str = "") -> None:
        super().__init__(words)
        self.at = at


def setting(default: T, check: Check) -> T:
    """A setting's field: its default and how a value from the file is checked."""
    return field(default=default, metadata={CHECK: check})


def setting_table(factory: Callable[[], T], check: Check) -> T:
    """A setting whose default is made fresh for each instance (a dict), with its check."""
    return field(default_factory=factory, metadata={CHECK: check})


def check_of(f: Field[Any]) -> Check | None:
    """The field's check; None for a field declaring none (which `tests/unit/test_one_shape.py` refuses)."""
    check: Check | None = f.metadata.get(CHECK)
    return check


_BARE_KEY = re.compile(r"[A-Za-z0-9_-]+")


def toml_key(name: str) -> str:
    """A key as TOML writes it: bare when it can be, else quoted, so a key that looks like another (`"ttl_s "`, one
    with a dot or a control character) is told apart from it in a message."""
    return name if _BARE_KEY.fullmatch(name) else json.dumps(name, ensure_ascii=False)


def inside(at: str, check: Check, value: Any) -> Any:
    """`check(value)` for an entry of a table setting: its `Problem` names the entry (`at`) after the key."""
    try:
        return check(value)
    except Problem as exc:
        raise Problem(str(exc), at + exc.at) from None


def seconds_by_name(**rule: bool) -> Check:
    """A table of tool name = seconds (`[deadline.tools]`), each by the `seconds` rule given."""
    each = seconds(**rule)

    def check(value: Any) -> dict[str, float]:
        if not isinstance(value, dict):
            raise Problem("must be a table of tool name = seconds")
        return {str(name): inside(f".{toml_key(str(name))}", each, budget) for name, budget in value.items()}

    return check


def tables(header: str, known: tuple[str, ...], required: tuple[str, ...] = (), build: Check = dict) -> Check:
    """An array of tables (`[[header]]`): each a table of `known` keys, the `required` ones present, made into the
    setting's entry by `build` (whose `Problem` names the key inside the entry, e.g. ".ttl_s")."""

    def check(value: Any) -> tuple[Any, ...]:
        if not isinstance(value, list):
            raise Problem(f"must be an array of tables ([[{header}]]), got {value!r}")
        entries: list[Any] = []
        for index, item in enumerate(value):
            at = f"[{index}]"
            if not isinstance(item, dict):
                raise Problem(f"must be a table, got {item!r}", at)
            unknown = set(item) - set(known)
            if unknown:
                shown_keys = ", ".join(toml_key(key) for key in sorted(unknown))
                raise Problem(f"has unknown key(s): {shown_keys} (known: {', '.join(known)})", at)
            for key in required:
                if key not in item:
                    raise Problem(f"needs {key}", at)
            entries.append(inside(at, build, item))
        return tuple(entries)

    return check


def seconds(*, allow_zero: bool = True, allow_negative: bool = False, budget: bool = False) -> Check:
    """Seconds by the one rule every layer shares (`reliability.seconds`); TOML text is not a number here."""

    def check(value: Any) -> float:
        if isinstance(value, str):
            raise Problem(f"must be a number of seconds, got {value!r}")
        try:
            return check_seconds(value, "", allow_zero=allow_zero, allow_negative=allow_negative, budget=budget)
        except InvalidValue as exc:
            raise Problem(str(exc).lstrip()) from None

    return check


def whole(low: int, high: int) -> Check:
    """A whole number in [low, high]."""

    def check(value: Any) -> int:
        if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
            raise Problem(f"must be a whole number from {low} to {high}, got {shown(value)}")
        return value

    return check


def megabytes(value: Any) -> float:
    """A size in MiB: positive, finite, at most 4096 (an HTTP body the wrapper holds in memory)."""
    if isinstance(value, bool) or not isinstance(value, int | float) or not 0 < value <= 4096:
        raise Problem(f"must be a number of MiB above 0 and at most 4096, got {shown(value)}")
    return float(value)


def rate(value: Any) -> float:
    """A rate in KiB/s: positive and finite (a minimum a client must keep up)."""
    if isinstance(value, bool) or not isinstance(value, int | float) or not 0 < value <= 1024 * 1024:
        raise Problem(f"must be a number of KiB/s above 0 and at most 1048576, got {shown(value)}")
    return float(value)


def flag(value: Any) -> bool:
    if not isinstance(value, bool):
        raise Problem(f"must be true or false, got {value!r}")
    return value


def text(value: Any) -> str:
    if not isinstance(value, str) or not value.strip():
        raise Problem(f"must be a non-empty string, got {value!r}")
    return value


def path_text(value: Any) -> str:
    """A file's path: text no file system refuses on sight (a NUL byte ends a path in every OS call)."""
    path = text(value)
    if "\x00" in path:
        raise Problem(f"must be a file path without a NUL character, got {value!r}")
    return path


def one_of(choices: tuple[str, ...], *, quoted: bool = True) -> Check:
    """One of a few words (quoted in the message, or as written: `no-store, immutable`)."""

    def check(value: Any) -> str:
        if value not in choices:
            listed = ", ".join(repr(c) if quoted else c for c in choices)
            raise Problem(f"must be one of {listed}, got {value!r}")
        return str(value)

    return check
