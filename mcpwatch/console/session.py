"""A watched session: the model, the feed that fills it and, in live mode, the operator's controls.

Screens render a `WatchSession`; they neither know nor care whether it is live or replayed.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from mcpwatch.console.controls import Controls
from mcpwatch.console.model import ConsoleModel, ViewState
from mcpwatch.console.source import Feed, FeedStatus


@dataclass
class WatchSession:
    feed: Feed
    controls: Controls | None = None  # None: actions that change the wrapper are absent (replay)
    model: ConsoleModel = field(default_factory=ConsoleModel)
    title: str = ""
    paused: bool = False  # the view stops updating; the feed and the model carry on
    applied_while_paused: int = 0

    def pump(self) -> int:
        applied = self.feed.pump(self.model)
        if self.paused:
            self.applied_while_paused += applied
        return applied

    def now(self) -> float:
        return self.feed.now_mono(self.model)

    def view(self, selected: str | None = None) -> ViewState:
        return self.model.view(self.now(), selected)

    def status(self) -> FeedStatus:
        return self.feed.status()

    def toggle_pause(self) -> bool:
        self.paused = not self.paused
        self.applied_while_paused = 0
        return self.paused
