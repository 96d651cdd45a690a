"""Shared pieces for the replay tests: real logs written through the real `EventWriter`, feeds with a hand-moved
clock, and small Pilot helpers."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from textual.pilot import Pilot

from mcpwatch.bench.replay import write_session
from mcpwatch.console.headless.model import ConsoleModel
from mcpwatch.console.headless.views import ViewState
from mcpwatch.events import Event
from mcpwatch.replay.app import ReplayApp, ReplayMainScreen, TimelineBar
from mcpwatch.replay.clock import ReplayClock
from mcpwatch.replay.engine import ReplayEngine
from mcpwatch.replay.feed import ReplayFeed
from mcpwatch.replay.recording import Recording

from pilot_tools import until
from replay_index import build_index

SIZE = (160, 48)
EVENTS = 3000  # about 3.5 minutes of a busy wrapper: deadlines, errors, late drops, a margin change, a restart
RARE_EVERY_S = 60.0


class HandClock:
    """A wall clock for the replay clock that moves only when the test says."""

    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += seconds


def write_log(path: Path, count: int = EVENTS, *, seed: int = 5) -> str:
    """A synthetic but realistic session written into `path` through the real writer; its id."""
    return write_session(path, count, seed=seed, rare_every_s=RARE_EVERY_S)


def make_feed(
    path: Path,
    *,
    session: str | None = None,
    every: int = 250,
    wall: HandClock | None = None,
    start: float = 0.0,
    playing: bool = False,
    indexed: bool = True,
) -> ReplayFeed:
    """A feed over the log with a small checkpoint interval (so seeks restore checkpoints), the index built
    before the app starts when `indexed` (deterministic screens), and the clock on `wall`."""
    recording = Recording(path, session)
    engine = ReplayEngine(recording, every=every)
    if indexed:
        build_index(recording, engine.index, path, session)
    clock = ReplayClock(recording.end_mono, wall=wall or HandClock(), playing=playing)
    return ReplayFeed(engine, clock, indexer="none", start_at=start)


def fold_until(events: list[Event], mono: float) -> ConsoleModel:
    """The reference: a fresh model folded over every event up to `mono`, the way the live console folds."""
    model = ConsoleModel()
    for event in events:
        if event.mono > mono:
            break
        model.apply(event)
    return model


def assert_same_as_fold(model: ConsoleModel, reference: ConsoleModel, now: float) -> None:
    """Same view and same detail for every request the reference knows (finished and in flight)."""
    view: ViewState = reference.view(now)
    assert model.view(now) == view
    for request_id in [r.request_id for r in view.requests] + [r.request_id for r in view.in_flight]:
        assert model.request_detail(request_id, now) == reference.request_detail(request_id, now), request_id


async def ready(pilot: Pilot[Any]) -> None:
    app = pilot.app
    await until(
        pilot,
        lambda: isinstance(app.screen, ReplayMainScreen) and app.screen.last_view is not None,
        what="the replay screen",
    )
    await pilot.pause()


def timeline_text(app: ReplayApp) -> str:
    return app.screen.query_one("#timeline", TimelineBar).plain
