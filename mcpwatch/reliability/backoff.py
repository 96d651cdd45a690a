"""Delays between reconnect attempts, so a crashing upstream (or a wrapper a console follows) is not retried in a
hot loop: exponential with jitter, or a fixed list of steps; back to the first delay once a connection stayed up."""

from __future__ import annotations

import math
import random
from collections.abc import Sequence

STABLE_AFTER_S = 30.0  # a connection that lived this long resets the backoff


class Backoff:
    """Delays base·factor^attempt, capped at max_s, each spread by ±jitter (a fraction) so restarts do not align."""

    def __init__(
        self,
        *,
        base_s: float = 0.5,
        max_s: float = 30.0,
        factor: float = 2.0,
        jitter: float = 0.2,
        rng: random.Random | None = None,
        steps: Sequence[float] | None = None,
    ) -> None:
        checked = [("base_s", base_s), ("max_s", max_s), ("factor", factor), ("jitter", jitter)]
        checked += [("steps", step) for step in steps or ()]
        for name, value in checked:
            if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value) or value < 0:
                raise ValueError(f"{name} must be a finite number ≥ 0, got {value!r}")
        if factor < 1:
            raise ValueError(f"factor must be ≥ 1, got {factor!r}")
        if jitter > 1:
            raise ValueError(f"jitter must be a fraction between 0 and 1, got {jitter!r}")
        self.base_s = float(base_s)
        self.max_s = float(max_s)
        self.factor = float(factor)
        self.jitter = float(jitter)
        if steps is not None and not steps:
            raise ValueError("steps must name at least one delay")
        self.steps = tuple(float(step) for step in steps) if steps is not None else None
        self._rng = rng if rng is not None else random.Random()
        self.attempt = 0

    def peek(self) -> float:
        """The next delay before jitter, without consuming an attempt."""
        if self.steps is not None:  # the listed delays, the last one repeating
            return self.steps[min(self.attempt, len(self.steps) - 1)]
        try:
            raw = self.base_s * self.factor**self.attempt
        except OverflowError:
            return self.max_s
        return min(self.max_s, raw)

    def next_delay(self) -> float:
        """The delay before the next attempt; never negative, never above max_s·(1 + jitter) (nor, with steps, above
        the longest step·(1 + jitter))."""
        delay = self.peek()
        if self.jitter:
            delay *= 1.0 + self._rng.uniform(-self.jitter, self.jitter)
        self.attempt += 1
        ceiling = max(self.steps) if self.steps is not None else self.max_s
        return min(max(0.0, delay), ceiling * (1.0 + self.jitter))

    def reset(self) -> None:
        """Back to the first delay (after a connection stayed up)."""
        self.attempt = 0


class Reconnect:
    """When to try a connection again: the backoff's next delay after each loss, and the first delay again after a
    connection that stayed up `stable_after_s` (times are the caller's monotonic seconds)."""

    def __init__(self, backoff: Backoff, *, stable_after_s: float = STABLE_AFTER_S) -> None:
        self.backoff = backoff
        self.stable_after_s = stable_after_s
        self.attempts = 0
        self._started_at: float | None = None

    def started(self, now: float) -> None:
        """A connection attempt begins."""
        self._started_at = now
        self.attempts += 1

    def delay_after_loss(self, now: float) -> float:
        """The wait before the next attempt, after the current one ended at `now`."""
        if self._started_at is not None and now - self._started_at >= self.stable_after_s:
            self.backoff.reset()
        return self.backoff.next_delay()
