"""Per-tool figures for any server: calls, p50/p95 latency, error and deadline rates (pure, bounded)."""

from __future__ import annotations

from collections import deque

from mcpwatch.console.headless.panels.tools import ToolStatView

SAMPLES = 200  # latencies kept per tool for the percentiles
TOOLS = 100  # tools tracked; beyond that the least recently used is forgotten


def percentile(values: list[float], q: float) -> float | None:
    """Nearest-rank percentile (q in 0..1) of unsorted values; None when there are none."""
    if not values:
        return None
    ordered = sorted(values)
    rank = max(1, min(len(ordered), -(-len(ordered) * q // 1)))  # ceil(n·q), at least the first
    return ordered[int(rank) - 1]


class _Tool:
    __slots__ = ("calls", "deadlines", "durations", "errors")

    def __init__(self) -> None:
        self.calls = 0
        self.errors = 0
        self.deadlines = 0
        self.durations: deque[float] = deque(maxlen=SAMPLES)


class ToolStats:
    """Finished tools/call requests by tool. Errors are every outcome but ok and deadline (deadlines count apart)."""

    def __init__(self) -> None:
        self._tools: dict[str, _Tool] = {}

    def copy(self) -> ToolStats:
        clone = ToolStats()
        for name, t in self._tools.items():
            c = _Tool()
            c.calls, c.errors, c.deadlines = t.calls, t.errors, t.deadlines
            c.durations.extend(t.durations)
            clone._tools[name] = c
        return clone

    def record(self, tool: str, outcome: str, duration_s: float | None) -> None:
        t = self._tools.pop(tool, None) or _Tool()
        self._tools[tool] = t  # most recently used last
        if len(self._tools) > TOOLS:
            del self._tools[next(iter(self._tools))]
        t.calls += 1
        if outcome == "deadline":
            t.deadlines += 1
        elif outcome not in ("ok", "cancelled"):
            t.errors += 1
        if duration_s is not None:
            t.durations.append(duration_s)

    def view(self, in_flight: dict[str, int] | None = None) -> tuple[ToolStatView, ...]:
        """Busiest first; tools with calls in flight but none finished yet are listed too."""
        running = in_flight or {}
        names = list(self._tools) + [n for n in running if n not in self._tools]
        rows = []
        for name in names:
            t = self._tools.get(name) or _Tool()
            samples = list(t.durations)
            rows.append(
                ToolStatView(
                    name,
                    t.calls,
                    running.get(name, 0),
                    t.errors,
                    t.deadlines,
                    percentile(samples, 0.5),
                    percentile(samples, 0.95),
                )
            )
        rows.sort(key=lambda r: (-(r.calls + r.in_flight), r.tool))
        return tuple(rows)
