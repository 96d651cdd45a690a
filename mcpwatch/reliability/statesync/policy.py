"""First-match-wins policy resolution with a bounded cache (seed: state-sync, PolicyEngine).

Resolution of a tool name:

- Policies are tried in declaration order; the first whose match pattern matches wins and no later one is looked
  at, even when the winner says nothing (it still shadows the later ones).
- The winner's cache_control, or the default cache_control when the winner has none, and its invalidates make the
  result. A winner left with neither resolves to None: nothing is decorated and nothing is invalidated.
- When no policy matches, the default cache_control alone is the result (match None), or None without a default.

Results are cached per tool name. The cache holds at most CACHE_MAX entries and is emptied whole when full, so
dynamic tool names cannot grow it without bound, and the common case stays one dict lookup.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from mcpwatch.reliability.statesync.glob import SEPARATOR, match_segments
from mcpwatch.reliability.statesync.validate import Policy, parse_policies, validate_default

CACHE_MAX = 2048


@dataclass(frozen=True)
class ResolvedPolicy:
    """What applies to one tool: the matched policy's pattern (None for the default), directive and invalidations."""

    match: str | None
    cache_control: str | None
    invalidates: tuple[str, ...] = ()


class PolicyEngine:
    """Resolves tool names against validated policies; construction fails fast on a bad policy or default."""

    def __init__(
        self,
        policies: Sequence[Mapping[str, object]] | Sequence[Policy],
        default_cache_control: str | None = None,
    ) -> None:
        self.policies: tuple[Policy, ...] = parse_policies(policies)
        validate_default(default_cache_control)
        self.default_cache_control = default_cache_control
        self._default = None if default_cache_control is None else ResolvedPolicy(None, default_cache_control)
        self._cache: dict[str, ResolvedPolicy | None] = {}

    @property
    def cache_size(self) -> int:
        return len(self._cache)

    def resolve(self, name: str) -> ResolvedPolicy | None:
        """The policy for tool `name`, or None when nothing applies."""
        try:
            return self._cache[name]
        except KeyError:
            pass
        except TypeError:  # an unhashable name from a malformed message
            return None
        if not isinstance(name, str):
            return None
        resolved = self._resolve_uncached(name)
        if len(self._cache) >= CACHE_MAX:
            self._cache.clear()
        self._cache[name] = resolved
        return resolved

    def _resolve_uncached(self, name: str) -> ResolvedPolicy | None:
        segments = name.split(SEPARATOR)
        for policy in self.policies:
            if match_segments(policy.segments, segments):
                cache_control = policy.cache_control or self.default_cache_control
                if cache_control is None and not policy.invalidates:
                    return None
                return ResolvedPolicy(policy.match, cache_control, policy.invalidates)
        return self._default
