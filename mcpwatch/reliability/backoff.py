"""Exponential backoff with jitter for upstream reconnects, so a crashing upstream is not restarted in a hot loop."""

from __future__ import annotations

import math
import random


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
    ) -> None:
        for name, value in (("base_s", base_s), ("max_s", max_s), ("factor", factor), ("jitter", jitter)):
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
        self._rng = rng if rng is not None else random.Random()
        self.attempt = 0

    def peek(self) -> float:
        """The next delay before jitter, without consuming an attempt."""
        try:
            raw = self.base_s * self.factor**self.attempt
        except OverflowError:
            return self.max_s
        return min(self.max_s, raw)

    def next_delay(self) -> float:
        """The delay before the next attempt; never negative, never above max_s·(1 + jitter)."""
        delay = self.peek()
        if self.jitter:
            delay *= 1.0 + self._rng.uniform(-self.jitter, self.jitter)
        self.attempt += 1
        return min(max(0.0, delay), self.max_s * (1.0 + self.jitter))

    def reset(self) -> None:
        """Back to the first delay (after a connection stayed up)."""
        self.attempt = 0
