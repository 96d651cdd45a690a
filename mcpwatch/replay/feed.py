"""The console `Feed` of a replay: the replay clock says what time it is, the engine folds the recording up to it.

It plugs into `WatchSession` where the live feed would, so the live console's screens render it unchanged. The
screens call `pump()` on every tick and then ask `now_mono()`; the time returned is always one the model is
folded up to exactly (if folding falls behind the clock at a high speed, the clock is held back), so what the
screen shows at T is what the live console showed at T. No Textual here.
"""

from __future__ import annotations

import functools
import math
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any, Literal, Protocol, TypeVar

from mcpwatch.console.headless.model import ConsoleModel
from mcpwatch.console.headless.source import FeedStatus
from mcpwatch.replay.clock import ReplayClock, offset_text, speed_text
from mcpwatch.replay.engine import Index, ReplayEngine, ThreadIndexer
from mcpwatch.replay.recording import Marker
from mcpwatch.replay.timeline import Position
from mcpwatch.store import LogError

T = TypeVar("T")
R = TypeVar("R")

FOLD_PER_TICK = 5_000  # events folded per UI tick while playing (~45 ms); further ahead, seeks jump by checkpoint
IndexerKind = Literal["process", "thread", "none"]


def _reads(failed: Callable[[ReplayFeed, str], R]) -> Callable[[Callable[..., T]], Callable[..., T | R]]:
    """For a feed method that reads the log: a file found corrupt further in pauses the replay and says so
    (`problem`, shown on the timeline) instead of raising into the screen; the method returns `failed(...)`."""

    def wrap(method: Callable[..., T]) -> Callable[..., T | R]:
        @functools.wraps(method)
        def guarded(self: ReplayFeed, *args: Any, **kwargs: Any) -> T | R:
            try:
                return method(self, *args, **kwargs)
            except LogError as exc:
                self._broken(str(exc))
                return failed(self, str(exc))

        return guarded

    return wrap


class Indexer(Protocol):
    def start(self) -> None: ...

    def stop(self, timeout: float = 2.0) -> None: ...


class ReplayFeed:
    """Replay's `Feed`: a clock, an engine over the recording, and the operations the replay keys call."""

    def __init__(
        self,
        engine: ReplayEngine,
        clock: ReplayClock,
        *,
        indexer: IndexerKind = "process",
        start_at: float = 0.0,
        fold_per_tick: int = FOLD_PER_TICK,
    ) -> None:
        self.engine = engine
        self.clock = clock
        self._indexer_kind = indexer
        self._indexer: Indexer | None = None
        self._fold_per_tick = fold_per_tick
        self._shown = 0.0
        self._pending: float | None = None  # a seek waiting for the index to get there
        self._marker_counts: dict[str, int] | None = None
        self.problem: str | None = None  # why reading the log failed, once it has
        # The session's first moment (a few events), shown while a later start waits for the index.
        engine.seek(0.0, force=True)
        self.clock.set(0.0)
        if start_at > 0:
            self.seek(start_at)

    @property
    def indexer(self) -> Indexer | None:
        return self._indexer

    @property
    def index(self) -> Index:
        return self.engine.index

    @property
    def model(self) -> ConsoleModel:
        return self.engine.model

    # -- Feed ----------------------------------------------------------------------------------------------

    def start(self) -> None:
        if self._indexer is not None or self._indexer_kind == "none":
            return
        if self._indexer_kind == "process":
            from mcpwatch.replay.indexer import ProcessIndexer

            self._indexer = ProcessIndexer(self.engine.recording, self.index)
        else:
            self._indexer = ThreadIndexer(self.engine.recording, self.index)
        self._indexer.start()

    def stop(self) -> None:
        if self._indexer is not None:
            self._indexer.stop()

    def close(self) -> None:
        """Stop indexing and close the log."""
        self.stop()
        self.engine.close()

    def _broken(self, message: str) -> None:
        self.problem = message
        self._pending = None
        self.clock.pause()
        self._shown = max(0.0, self.engine.mono)  # the model holds a whole prefix: show where it ends
        self.clock.set(self._shown)

    @_reads(lambda feed, message: 0)
    def pump(self, model: ConsoleModel, limit: int = FOLD_PER_TICK) -> int:
        """Bring the model to the clock's time (or to a pending seek's, once the index allows it)."""
        engine = self.engine
        before = engine.ordinal
        if self._pending is not None:
            target = self._pending
            if engine.seek(target):
                self._pending = None
                self.clock.set(target)
                self._shown = target
            return abs(engine.ordinal - before)
        t = self.clock.now()
        if t < engine.mono:  # the clock went back (play again from the start): a seek, not a fold
            self.seek(t)
            return abs(engine.ordinal - before)
        if engine.advance(t, min(limit, self._fold_per_tick)):
            self._shown = t
        else:  # folding cannot keep up with the clock at this speed: hold the clock where the model is
            self._shown = max(0.0, engine.mono)
            self.clock.set(self._shown)
        return engine.ordinal - before

    def now_mono(self, model: ConsoleModel) -> float:
        return self._shown

    def status(self) -> FeedStatus:
        state = "▶" if self.clock.playing and self._pending is None else "⏸"
        return FeedStatus("replay", f"replay {state} {speed_text(self.clock.speed)} {offset_text(self._shown)}")

    @property
    def backlog(self) -> int:
        return 0

    # -- where it is ---------------------------------------------------------------------------------------

    @property
    def shown(self) -> float:
        """The session time on screen."""
        return self._shown

    @property
    def pending(self) -> float | None:
        """A seek target still waiting for the index (None: none)."""
        return self._pending

    def position(self) -> Position:
        index = self.index
        note = ""
        if self.problem or index.error:
            note = f"⚠ {self.problem or index.error}"
        elif self._pending is not None:
            note = f"going to {offset_text(self._pending)} — indexing the recording, {index.progress:.0%}"
        elif not index.done:
            note = f"indexing {index.progress:.0%}"
        return Position(
            mono=self._shown,
            end=self.clock.end,
            playing=self.clock.playing and self._pending is None,
            speed=self.clock.speed,
            ordinal=self.engine.ordinal,
            total=index.last_seq,
            origin_ts=self.engine.recording.origin_ts,
            note=note,
        )

    def markers(self) -> list[Marker]:
        return self.index.markers or []

    def marker_counts(self) -> dict[str, int]:
        if self._marker_counts is None:
            if self.index.markers is None:
                return {}
            self._marker_counts = dict(Counter(m.kind for m in self.index.markers))
        return self._marker_counts

    # -- what the keys do ----------------------------------------------------------------------------------

    def toggle_play(self) -> bool:
        """Play or pause; returns whether it now plays."""
        return self.clock.toggle()

    @_reads(lambda feed, message: False)
    def seek(self, mono: float) -> bool:
        """Go to session time `mono` (clamped to the recording). False: it waits for the index (see `pending`)."""
        target = min(self.clock.end, max(0.0, mono))
        if self.engine.seek(target):
            self._pending = None
            self.clock.set(target)
            self._shown = target
            return True
        self._pending = None if self.index.error else target  # an index that stopped will not get there
        return False

    def jump(self, seconds: float) -> bool:
        return self.seek(self._shown + seconds)

    @_reads(lambda feed, message: message)
    def step(self, direction: int) -> str | None:
        """One event forward (+1) or back (-1), pausing first; None, or why it could not."""
        self.clock.pause()
        self._pending = None
        engine = self.engine
        if direction > 0:
            event = engine.step_forward()
            if event is None:
                return "at the end of the recording"
            self._shown = min(self.clock.end, max(self._shown, event.mono))
        else:
            if engine.ordinal == 0:
                return "at the start of the recording"
            if not engine.step_back():
                return f"the index has not reached here yet ({self.index.progress:.0%}); try again in a moment"
            self._shown = max(0.0, engine.mono) if engine.mono > -math.inf else 0.0
        self.clock.set(self._shown)
        return None

    def faster(self) -> float:
        return self.clock.faster()

    def slower(self) -> float:
        return self.clock.slower()

    @_reads(lambda feed, message: message)
    def next_problem(self, direction: int) -> Marker | str:
        """Go to the next (+1) or previous (-1) deadline, error or late drop: the marker, or why not."""
        if self.index.markers is None:
            return "still reading the recording's deadlines and errors; try again in a moment"
        engine = self.engine
        marker = engine.next_problem(self._shown) if direction > 0 else engine.previous_problem(self._shown)
        if marker is None:
            return f"no {'later' if direction > 0 else 'earlier'} deadline, error or late drop"
        self.clock.pause()
        self.seek(marker.mono)
        return marker


def open_replay(
    path: str | Path,
    session: str | None = None,
    *,
    speed: float = 1.0,
    at: str | None = None,
    paused: bool = False,
    indexer: IndexerKind = "process",
    wall: Callable[[], float] | None = None,
) -> ReplayFeed:
    """Open a recorded session for replay: LogError for a bad file or session, InvalidTime for a bad speed or
    `at`. Cheap whatever the session's size: indexing starts with the feed (`start()`)."""
    from mcpwatch.replay.clock import check_speed, parse_time
    from mcpwatch.replay.recording import Recording

    check_speed(speed)
    recording = Recording(path, session)
    try:
        start = 0.0 if at is None else parse_time(at, end=recording.end_mono, origin_ts=recording.origin_ts)
        engine = ReplayEngine(recording)
        clock = (
            ReplayClock(recording.end_mono, speed=speed, playing=not paused)
            if wall is None
            else ReplayClock(recording.end_mono, speed=speed, playing=not paused, wall=wall)
        )
        return ReplayFeed(engine, clock, indexer=indexer, start_at=start)
    except BaseException:
        recording.close()
        raise
