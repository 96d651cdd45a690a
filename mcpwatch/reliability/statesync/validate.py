"""Fail-fast validation of State Sync policies: a bad policy stops start-up with a message naming it.

Rules (each message starts with "policy [i]: " so the operator can find the entry in mcpwatch.toml):

- `policies` is a list of tables; each has only the keys match, cache_control, invalidates.
- `match` is required and is a non-empty string.
- A pattern (match, or an entry of invalidates) is dot-separated segments, and each segment is non-empty, has no
  whitespace, and is either `*`, `**` or text without `*`. So `a..b`, `.a`, `a.` (empty segment), `***` and `a*b`
  (a wildcard must be a whole segment) are refused.
- `cache_control`, when given, is "no-store" or "immutable" (the seed's binary vocabulary: an LLM cannot count
  time, so max-age means nothing to it).
- `invalidates`, when given, is a list of patterns (a bare string is refused: it is almost always a forgotten
  pair of brackets). An empty list is allowed and means "invalidates nothing".
- `default_cache_control`, when given, is "no-store" or "immutable".

A key set to None counts as absent (TOML has no null, but policies built in code may carry one).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from mcpwatch.reliability.settings import CACHE_DIRECTIVES as CACHE_DIRECTIVES  # the setting owns its words
from mcpwatch.reliability.statesync.glob import ANY, ONE, SEPARATOR

POLICY_KEYS = ("match", "cache_control", "invalidates")


class StateSyncConfigError(ValueError):
    """A State Sync policy or default that cannot be used; the message names the policy index and the problem."""


@dataclass(frozen=True)
class Policy:
    """One validated policy, in declaration order."""

    index: int
    match: str
    cache_control: str | None = None
    invalidates: tuple[str, ...] = ()
    segments: tuple[str, ...] = field(default=(), repr=False, compare=False)

    def to_dict(self) -> dict[str, object]:
        out: dict[str, object] = {"match": self.match}
        if self.cache_control is not None:
            out["cache_control"] = self.cache_control
        if self.invalidates:
            out["invalidates"] = list(self.invalidates)
        return out


def pattern_problem(pattern: str) -> str | None:
    """What is wrong with a glob pattern (phrased to follow the quoted pattern), or None if it is valid."""
    for segment in pattern.split(SEPARATOR):
        if not segment:
            return "has an empty segment"
        if any(ch.isspace() for ch in segment):
            return f"has whitespace in segment {segment!r}"
        if "*" in segment and segment not in (ONE, ANY):
            return f"has an invalid segment {segment!r} (a wildcard must be a whole segment: '*' or '**')"
    return None


def _directive_problem(value: object) -> str | None:
    if value in CACHE_DIRECTIVES:
        return None
    return f"must be 'no-store' or 'immutable', got {value!r}"


def parse_policy(index: int, raw: object) -> Policy:
    """Validate one raw policy table into a `Policy`."""
    where = f"policy [{index}]"
    if not isinstance(raw, Mapping):
        raise StateSyncConfigError(f"{where}: must be a table with a match key, got {raw!r}")
    unknown = [key for key in raw if key not in POLICY_KEYS]
    if unknown:
        raise StateSyncConfigError(
            f"{where}: unknown key {', '.join(repr(k) for k in unknown)} (known: {', '.join(POLICY_KEYS)})"
        )

    match = raw.get("match")
    if match is None:
        raise StateSyncConfigError(f"{where}: match is required")
    if not isinstance(match, str) or not match:
        raise StateSyncConfigError(f"{where}: match must be a non-empty string, got {match!r}")
    problem = pattern_problem(match)
    if problem:
        raise StateSyncConfigError(f"{where}: match {match!r} {problem}")

    cache_control = raw.get("cache_control")
    if cache_control is not None:
        problem = _directive_problem(cache_control)
        if problem:
            raise StateSyncConfigError(f"{where}: cache_control {problem}")

    raw_invalidates = raw.get("invalidates")
    invalidates: list[str] = []
    if raw_invalidates is not None:
        if isinstance(raw_invalidates, str | bytes) or not isinstance(raw_invalidates, Sequence):
            raise StateSyncConfigError(f"{where}: invalidates must be a list of patterns, got {raw_invalidates!r}")
        for position, pattern in enumerate(raw_invalidates):
            if not isinstance(pattern, str) or not pattern:
                raise StateSyncConfigError(
                    f"{where}: invalidates[{position}] must be a non-empty string, got {pattern!r}"
                )
            problem = pattern_problem(pattern)
            if problem:
                raise StateSyncConfigError(f"{where}: invalidates[{position}] {pattern!r} {problem}")
            invalidates.append(pattern)

    return Policy(index, match, cache_control, tuple(invalidates), tuple(match.split(SEPARATOR)))


def parse_policies(policies: Sequence[Mapping[str, object]] | Sequence[Policy]) -> tuple[Policy, ...]:
    """Validate every policy in order, failing on the first bad one (`Policy` objects are checked and re-indexed)."""
    if isinstance(policies, str | bytes | Mapping) or not isinstance(policies, Sequence):
        raise StateSyncConfigError(f"policies must be a list of tables, got {policies!r}")
    parsed: list[Policy] = []
    for index, raw in enumerate(policies):
        parsed.append(parse_policy(index, raw.to_dict() if isinstance(raw, Policy) else raw))
    return tuple(parsed)


def validate_default(default_cache_control: object) -> None:
    if default_cache_control is None:
        return
    problem = _directive_problem(default_cache_control)
    if problem:
        raise StateSyncConfigError(f"default_cache_control {problem}")


def validate_config(policies: Sequence[Mapping[str, object]], default_cache_control: str | None) -> None:
    """Raise `StateSyncConfigError` on the first problem in the policies or the default, else return."""
    parse_policies(policies)
    validate_default(default_cache_control)
