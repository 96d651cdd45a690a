"""A console feed of fixed events at a fixed time, for tests and snapshots (the `Feed` protocol of
`mcpwatch.console.headless.source`)."""

from __future__ import annotations

from collections import deque
from collections.abc import Sequence

from mcpwatch.console.headless.model import ConsoleModel
from mcpwatch.console.headless.source import PUMP_LIMIT, FeedStatus
from mcpwatch.events import Event


class StaticFeed:
    """A fixed list of events shown at a fixed time: tests, snapshots, and a frozen moment of a recording."""

    def __init__(self, events: Sequence[Event], now_mono: float, status: FeedStatus | None = None) -> None:
        self._pending = deque(events)
        self._now = now_mono
        self._status = status or FeedStatus("static", "recorded events")

    def start(self) -> None:
        pass

    def stop(self) -> None:
        pass

    def pump(self, model: ConsoleModel, limit: int = PUMP_LIMIT) -> int:
        count = 0
        while self._pending and count < limit:
            model.apply(self._pending.popleft())
            count += 1
        return count

    def push(self, events: Sequence[Event]) -> None:
        self._pending.extend(events)

    def set_now(self, now_mono: float) -> None:
        self._now = now_mono

    def set_status(self, status: FeedStatus) -> None:
        self._status = status

    def now_mono(self, model: ConsoleModel) -> float:
        return self._now

    def status(self) -> FeedStatus:
        return self._status

    @property
    def backlog(self) -> int:
        return len(self._pending)
