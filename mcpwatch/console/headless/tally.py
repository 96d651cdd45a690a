"""The model's counters part: one count per `mcpwatch.events.COUNTER_NAMES`, bumped by the parts that fold the
events counted, and settled by what the wrapper itself says it counted (session_end, `status()`)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from mcpwatch.console.headless.coerce import as_int
from mcpwatch.events import COUNTER_NAMES


class Tally:
    def __init__(self, counts: dict[str, int] | None = None) -> None:
        self.counts = counts if counts is not None else dict.fromkeys(COUNTER_NAMES, 0)

    def add(self, name: str) -> None:
        self.counts[name] += 1

    def settle(self, counters: Mapping[str, Any]) -> None:
        """The wrapper's own final counts (session_end) replace the folded ones."""
        degraded = self.counts["degraded"]
        for name in COUNTER_NAMES:
            value = as_int(counters.get(name))
            if value is not None:
                self.counts[name] = value
        if "degraded" not in counters:  # an older wrapper counted its degraded answers as ok
            self.counts["ok"] = max(0, self.counts["ok"] - degraded)

    def seed(self, counters: Mapping[str, Any]) -> None:
        """What a `status()` says was counted before the console attached (never lowers a count)."""
        for name in COUNTER_NAMES:  # (a wrapper before `degraded` counted those as ok)
            value = as_int(counters.get(name))
            if value is not None:
                self.counts[name] = max(self.counts[name], value)

    def copy(self) -> Tally:
        return Tally(dict(self.counts))
