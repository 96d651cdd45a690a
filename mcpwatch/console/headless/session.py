"""A watched session: the model, the feed that fills it and, in live mode, the operator's controls.

Screens render a `WatchSession`; they neither know nor care whether it is live or replayed.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from mcpwatch.console.headless.controls import Controls, LiveControls
from mcpwatch.console.headless.model import ConsoleModel
from mcpwatch.console.headless.source import Feed, FeedStatus
from mcpwatch.console.headless.views import ViewState


@dataclass
class WatchSession:
    feed: Feed
    controls: Controls | None = None  # None: actions that change the wrapper are absent (replay)
    model: ConsoleModel = field(default_factory=ConsoleModel)
    title: str = ""
    paused: bool = False  # the view stops updating; the feed and the model carry on
    applied_while_paused: int = 0
    events_seen: int = 0  # notable events the operator has seen (the Events view); the rest count as unread
    _held_now: float | None = field(default=None, repr=False)  # the last time shown while connected

    def pump(self) -> int:
        applied = self.feed.pump(self.model)
        if self.paused:
            self.applied_while_paused += applied
        return applied

    def now(self) -> float:
        """The session time to show. While the feed is not connected, time stands still where the connection
        was last known good: nothing is known about what happened since, so no clock may keep running."""
        connected = self.feed.status().connected
        if not connected and self._held_now is not None:
            return self._held_now
        now = self.feed.now_mono(self.model)
        if connected:
            self._held_now = now
        return now

    def view(self, selected: str | None = None) -> ViewState:
        return self.model.view(self.now(), selected)

    def status(self) -> FeedStatus:
        return self.feed.status()

    @property
    def heading(self) -> str:
        """What the Trends and Models bars call the session: the watched wrapper's name once the feed has found
        it (`watch 4242` asks by pid; the wrapper is `demo`), else the title."""
        return self.status().target or self.title

    def stop(self) -> None:
        """Stop following: the feed, and the operator session the actions hold (one per wrapper watched, else one
        stays open to every wrapper visited from the fleet until the console quits)."""
        self.feed.stop()
        if isinstance(self.controls, LiveControls):
            self.controls.close()

    def toggle_pause(self) -> bool:
        self.paused = not self.paused
        self.applied_while_paused = 0
        return self.paused
