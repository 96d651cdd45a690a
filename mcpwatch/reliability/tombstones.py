"""Tombstones: upstream ids whose caller has gone, so a late response for them is dropped, not delivered.

Seed: tombstone-ttl-adr. TTL = request_timeout + init_timeout + backoff_max + epsilon, covering the worst case of a
call that timed out just as the connection went into maximum backoff and then re-initialised. Unlike the seed's
single global TTL, each tombstone keeps the TTL it was given at insert, so a TTL change applies to new tombstones
only and a long per-tool budget is still covered.

An id is tombstoned while its age < ttl; `sweep` removes those with age ≥ ttl. Lookups apply the same test, so an
expired entry counts as absent even before the sweep. Both use `now - inserted_at` against `ttl_s` exactly, so the
boundary is the same everywhere. Keys are the ints from `UpstreamIds`; a bool or unhashable id is never found.
"""

from __future__ import annotations

import math
from collections import OrderedDict
from dataclasses import dataclass
from typing import TYPE_CHECKING

from mcpwatch.clock import Clock
from mcpwatch.events import TtlTermsBlock

if TYPE_CHECKING:
    from mcpwatch.reliability.deadline import Budget
    from mcpwatch.reliability.settings import TombstoneSettings

REASONS = frozenset({"deadline", "host_cancel", "operator_cancel", "upstream_lost", "shutdown"})
DEFAULT_CAP = 100_000


@dataclass(frozen=True)
class TtlTerms:
    """The TTL formula's terms, kept apart so the console can show how the TTL was reached."""

    request_timeout_s: float
    init_timeout_s: float
    backoff_max_s: float
    epsilon_s: float

    @property
    def total_s(self) -> float:
        return self.request_timeout_s + self.init_timeout_s + self.backoff_max_s + self.epsilon_s

    def to_dict(self) -> TtlTermsBlock:
        return TtlTermsBlock(
            request_timeout_s=self.request_timeout_s,
            init_timeout_s=self.init_timeout_s,
            backoff_max_s=self.backoff_max_s,
            epsilon_s=self.epsilon_s,
            total_s=self.total_s,
        )


def ttl_terms(budget: Budget, settings: TombstoneSettings) -> TtlTerms:
    """TTL terms for a call with this budget; a disabled budget counts as the host timeout (the host gives up)."""
    request = budget.seconds if budget.seconds is not None else budget.host_timeout_s
    return TtlTerms(request, settings.init_timeout_s, settings.backoff_max_s, settings.epsilon_s)


@dataclass(slots=True)
class Tombstone:
    key: int
    request_id: str | None
    tool: str | None
    reason: str
    inserted_at: float  # the clock's monotonic seconds
    ttl_s: float
    hits: int = 0

    def age(self, now: float) -> float:
        return now - self.inserted_at

    def expires_in(self, now: float) -> float:
        return self.ttl_s - (now - self.inserted_at)

    def is_live(self, now: float) -> bool:
        return now - self.inserted_at < self.ttl_s

    @property
    def expires_at(self) -> float:
        return self.inserted_at + self.ttl_s


class TombstoneTable:
    """Tombstones by upstream id: O(1) lookup, bounded by `cap` (the oldest is evicted first)."""

    def __init__(self, *, clock: Clock, cap: int = DEFAULT_CAP) -> None:
        if isinstance(cap, bool) or not isinstance(cap, int) or cap < 1:
            raise ValueError(f"cap must be a whole number ≥ 1, got {cap!r}")
        self._clock = clock
        self._cap = cap
        self._items: OrderedDict[int, Tombstone] = OrderedDict()  # insertion order = age order
        self.evicted = 0
        self.hits = 0

    @property
    def cap(self) -> int:
        return self._cap

    def __len__(self) -> int:
        """Entries held, including expired ones not yet swept."""
        return len(self._items)

    def __contains__(self, key: object) -> bool:
        return isinstance(key, int) and self.lookup(key) is not None

    def add(
        self,
        key: int,
        *,
        ttl_s: float,
        reason: str,
        request_id: str | None = None,
        tool: str | None = None,
    ) -> Tombstone:
        """Tombstone `key` for `ttl_s` from now; re-adding a key starts it afresh as the newest entry."""
        if reason not in REASONS:
            raise ValueError(f"unknown tombstone reason {reason!r} (known: {', '.join(sorted(REASONS))})")
        if isinstance(ttl_s, bool) or not isinstance(ttl_s, int | float) or not math.isfinite(ttl_s) or ttl_s < 0:
            raise ValueError(f"ttl_s must be a finite number ≥ 0, got {ttl_s!r}")
        stone = Tombstone(key, request_id, tool, reason, self._clock.monotonic(), float(ttl_s))
        items = self._items
        items.pop(key, None)
        items[key] = stone
        while len(items) > self._cap:
            items.popitem(last=False)
            self.evicted += 1
        return stone

    def lookup(self, key: int) -> Tombstone | None:
        """The live tombstone for `key`, or None (never tombstoned, swept, or expired)."""
        if key.__class__ is bool:  # True == 1 as a dict key, but a JSON true is never one of our ids
            return None
        try:
            stone = self._items.get(key)
        except TypeError:  # an unhashable id from a malformed message is simply not tombstoned
            return None
        if stone is not None and self._clock.monotonic() - stone.inserted_at < stone.ttl_s:
            return stone
        return None

    def hit(self, key: int) -> Tombstone | None:
        """`lookup` for a late message that is being dropped: counts the hit on the entry and in `hits`."""
        stone = self.lookup(key)
        if stone is not None:
            stone.hits += 1
            self.hits += 1
        return stone

    def discard(self, key: int) -> Tombstone | None:
        """Remove `key` whatever its age (e.g. the id is known to be dead for good)."""
        return self._items.pop(key, None)

    def sweep(self) -> list[Tombstone]:
        """Remove and return every entry with age ≥ ttl, oldest first."""
        now = self._clock.monotonic()
        items = self._items
        expired = [s for s in items.values() if now - s.inserted_at >= s.ttl_s]
        if not expired:
            return expired
        if len(expired) == len(items):
            items.clear()
        elif 2 * len(expired) > len(items):
            # Rebuilding from the few survivors is cheaper than deleting most entries one by one.
            self._items = OrderedDict((s.key, s) for s in items.values() if now - s.inserted_at < s.ttl_s)
        else:
            for stone in expired:
                del items[stone.key]
        return expired

    def next_expiry_in(self) -> float | None:
        """Seconds until the next entry expires; 0 when one already has (awaiting a sweep); None when empty."""
        if not self._items:
            return None
        now = self._clock.monotonic()
        soonest = min(s.ttl_s - (now - s.inserted_at) for s in self._items.values())
        return max(0.0, soonest)

    def stats(self, *, limit: int = 50) -> dict[str, object]:
        """Counters plus up to `limit` live entries, newest first (for the operator status and the console)."""
        now = self._clock.monotonic()
        live = 0
        for stone in self._items.values():
            if now - stone.inserted_at < stone.ttl_s:
                live += 1
        items: list[dict[str, object]] = []
        if limit > 0:
            for stone in reversed(self._items.values()):
                if now - stone.inserted_at < stone.ttl_s:
                    items.append(
                        {
                            "key": stone.key,
                            "request_id": stone.request_id,
                            "tool": stone.tool,
                            "reason": stone.reason,
                            "age_s": round(now - stone.inserted_at, 3),
                            "expires_in_s": round(stone.ttl_s - (now - stone.inserted_at), 3),
                            "hits": stone.hits,
                        }
                    )
                    if len(items) >= limit:
                        break
        return {
            "count": live,
            "stored": len(self._items),
            "hits": self.hits,
            "evicted": self.evicted,
            "next_expiry_in_s": self.next_expiry_in(),
            "items": items,
        }
