"""Seeking in a recorded session: checkpoints of the console's folded model, and a cursor that moves between them.

The console's view of a session at time T is `ConsoleModel` folded over every event up to T. Folding a million
events takes ~15 s of CPU, so an index pass (`build_index`, run in a child process or a thread) folds the session
once, in order, and keeps a checkpoint (`ConsoleModel.snapshot()`, pickled and compressed: ~80 KB instead of
~1.7 MB in memory) every `every` events. A seek restores the nearest checkpoint at or before T and folds the few
thousand events after it, so it costs a bounded amount whatever the session's length. The pass never holds more
than one page of events; the index it leaves is the checkpoints plus the markers (deadlines, errors, late drops,
config changes) that the timeline bar shows and `n` / `N` jump between.

The cursor (`ReplayEngine`) works on one `ConsoleModel` in place, the one the screens hold, so the live console's
screens show a replay unchanged: what replay shows at T is that model folded up to T, exactly as live mode folded
it. Before the index reaches a position, a seek there would mean folding everything before it: such a seek is
refused (`False`) until the index gets there, unless forced. Nothing here imports Textual.
"""

from __future__ import annotations

import bisect
import contextlib
import gc
import math
import pickle
import threading
import zlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Protocol

from mcpwatch.console.headless.model import ConsoleModel, ModelSnapshot
from mcpwatch.events import Event
from mcpwatch.replay.recording import Marker, Recording
from mcpwatch.store import EventReader, LogError

CHECKPOINT_EVERY = 3_000  # events between checkpoints: a seek folds at most this many (~27 ms at ~9 µs each)
MAX_CHECKPOINTS = 600  # beyond 1,800,000 events the interval grows instead, so memory stays bounded (~48 MB)
PROGRESS_EVERY = 1_000  # how often the index pass publishes how far it got (and looks for a stop request)


@contextlib.contextmanager
def _collector_paused() -> Iterator[None]:
    """No garbage collection while a seek folds: a restore and a few thousand events allocate enough to trigger a
    full collection over the whole process (the app's widgets included), which alone can cost more than the seek
    (measured: worst seek 155 ms with it, 64 ms without). The collector runs as usual right after."""
    if not gc.isenabled():
        yield
        return
    gc.disable()
    try:
        yield
    finally:
        gc.enable()


def checkpoint_interval(events: int) -> int:
    """Events between checkpoints for a session of this size."""
    return max(CHECKPOINT_EVERY, math.ceil(events / MAX_CHECKPOINTS))


def pack(snapshot: ModelSnapshot) -> bytes:
    """A checkpoint's compact form. Pickle keeps the object graph (a request and the tombstones table share one
    tombstone), and zlib at level 1 shrinks it ~5× for ~2 ms. The bytes never leave this process."""
    return zlib.compress(pickle.dumps(snapshot, protocol=pickle.HIGHEST_PROTOCOL), 1)


def unpack(blob: bytes) -> ModelSnapshot:
    snapshot = pickle.loads(zlib.decompress(blob))
    if not isinstance(snapshot, ModelSnapshot):  # pragma: no cover - only pack() makes these
        raise TypeError("not a model checkpoint")
    return snapshot


@dataclass(frozen=True, slots=True)
class Checkpoint:
    """The model after `ordinal` events (the last one `seq`); `mono` is the latest session time among them."""

    ordinal: int
    seq: int
    mono: float
    blob: bytes | None  # None: the empty model (before the first event)


class Index:
    """Checkpoints and markers, written by one indexer and read by the cursor's thread.

    Lists are only appended to and fields only move forward, so readers need no lock: a reader sees a consistent
    prefix, and `built_*` is published only after the checkpoints it relies on. The write side (`set_markers`,
    `add`, `advance`, `finish`, `fail`) is the `IndexSink` an indexer fills, here or through a pipe.
    """

    def __init__(self, last_seq: int, every: int = CHECKPOINT_EVERY) -> None:
        self.every = every
        self.last_seq = last_seq  # the session's last event when it was opened: what the indexer works towards
        self.checkpoints: list[Checkpoint] = [Checkpoint(0, 0, -math.inf, None)]
        self.markers: list[Marker] | None = None  # None until the markers pass is done
        self.built_ordinal = 0
        self.built_seq = 0
        self.built_mono = -math.inf
        self.done = False
        self.error: str | None = None

    @property
    def progress(self) -> float:
        """How much of the session the index covers, 0..1."""
        if self.done or self.last_seq <= 0:
            return 1.0
        return min(1.0, self.built_seq / self.last_seq)

    def covers(self, mono: float) -> bool:
        """Whether a seek to `mono` is bounded (a checkpoint lies at most `every` events before it)."""
        return self.done or mono <= self.built_mono

    def at_time(self, mono: float) -> Checkpoint:
        """The last checkpoint whose events all lie at or before `mono`."""
        checkpoints = self.checkpoints
        i = bisect.bisect_right(checkpoints, mono, hi=len(checkpoints), key=lambda c: c.mono)
        return checkpoints[max(0, i - 1)]

    def at_ordinal(self, ordinal: int) -> Checkpoint:
        checkpoints = self.checkpoints
        i = bisect.bisect_right(checkpoints, ordinal, hi=len(checkpoints), key=lambda c: c.ordinal)
        return checkpoints[max(0, i - 1)]

    # -- the indexer's side ------------------------------------------------------------------------------------

    def set_markers(self, markers: list[Marker]) -> None:
        self.markers = markers

    def add(self, checkpoint: Checkpoint) -> None:
        self.checkpoints.append(checkpoint)
        self.advance(checkpoint.ordinal, checkpoint.seq, checkpoint.mono)

    def advance(self, ordinal: int, seq: int, mono: float) -> None:
        self.built_mono = max(self.built_mono, mono)
        self.built_seq = seq
        self.built_ordinal = ordinal

    def finish(self, ordinal: int, seq: int, mono: float) -> None:
        self.advance(ordinal, seq, mono)
        self.done = True

    def fail(self, message: str) -> None:
        self.error = message


class IndexSink(Protocol):
    """Where an index pass reports: the `Index` itself, or a pipe to it (see `mcpwatch.replay.indexer`)."""

    def set_markers(self, markers: list[Marker]) -> None: ...

    def add(self, checkpoint: Checkpoint) -> None: ...

    def advance(self, ordinal: int, seq: int, mono: float) -> None: ...

    def finish(self, ordinal: int, seq: int, mono: float) -> None: ...

    def fail(self, message: str) -> None: ...


def build_index(
    recording: Recording, sink: IndexSink, every: int, should_stop: Callable[[], bool] = lambda: False
) -> None:
    """The index pass: markers first (one SQL pass), then the whole session folded once, in order, with a
    checkpoint every `every` events. A `LogError` (a file found corrupt further in) ends it via `sink.fail`."""
    try:
        sink.set_markers(recording.markers())
        reader: EventReader = recording.open_reader()
        try:
            model = ConsoleModel()
            ordinal, seq, mono = 0, 0, -math.inf
            to_checkpoint, to_progress = every, PROGRESS_EVERY
            for event in recording.events(reader=reader):
                model.apply(event)
                ordinal += 1
                seq = event.seq
                if event.mono > mono:
                    mono = event.mono
                to_checkpoint -= 1
                to_progress -= 1
                if to_checkpoint == 0:
                    sink.add(Checkpoint(ordinal, seq, mono, pack(model.snapshot())))
                    to_checkpoint = every
                if to_progress == 0:
                    sink.advance(ordinal, seq, mono)
                    to_progress = PROGRESS_EVERY
                    if should_stop():
                        return
            sink.finish(ordinal, seq, mono)
        finally:
            reader.close()
    except LogError as exc:
        sink.fail(str(exc))


class ThreadIndexer:
    """Runs the index pass in a daemon thread of this process (tests; and when no child process can start)."""

    def __init__(self, recording: Recording, index: Index) -> None:
        self.recording = recording
        self.index = index
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def run(self) -> None:
        """The whole pass, in the calling thread."""
        build_index(self.recording, self.index, self.index.every, self._stop.is_set)

    def start(self) -> None:
        if self._thread is None:
            self._thread = threading.Thread(target=self.run, name="mcpwatch-replay-index", daemon=True)
            self._thread.start()

    def stop(self, timeout: float = 2.0) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout)

    @property
    def running(self) -> bool:
        return self._thread is not None and self._thread.is_alive()


class ReplayEngine:
    """A cursor over the recording: the model holds exactly the events up to the cursor (a prefix in seq order).

    Positions: `ordinal` (events folded), `seq` (the last one's seq) and `mono` (the latest session time among
    them). Every method leaves the model consistent with that prefix; which time the view shows is the caller's
    (the replay clock's) business.
    """

    def __init__(self, recording: Recording, *, model: ConsoleModel | None = None, every: int | None = None) -> None:
        self.recording = recording
        self.model = model if model is not None else ConsoleModel()
        self.index = Index(recording.last_seq, every or checkpoint_interval(recording.last_seq))
        self.ordinal = 0
        self.seq = 0
        self.mono = -math.inf
        self._ahead: Iterator[Event] | None = None
        self._peeked: Event | None = None
        self.model.reset()

    # -- reading forward ---------------------------------------------------------------------------------------

    def _peek(self) -> Event | None:
        if self._peeked is None:
            if self._ahead is None:
                self._ahead = self.recording.events(after_seq=self.seq)
            try:
                self._peeked = next(self._ahead, None)
            except BaseException:
                self._ahead = None  # a failed read (a corrupt page) is tried again next time, not taken as the end
                raise
        return self._peeked

    def _take(self, event: Event) -> None:
        self._peeked = None
        self.model.apply(event)
        self.ordinal += 1
        self.seq = event.seq
        if event.mono > self.mono:
            self.mono = event.mono

    def _fold_until(self, mono: float, limit: int | None = None) -> bool:
        """Fold the following events whose time is ≤ `mono` (stopping at the first later one); at most `limit`.
        True when the prefix is complete, False when the limit stopped it first."""
        done = 0
        while True:
            event = self._peek()
            if event is None or event.mono > mono:
                return True
            if limit is not None and done >= limit:
                return False
            self._take(event)
            done += 1

    def _restore(self, checkpoint: Checkpoint) -> None:
        if checkpoint.blob is None:
            self.model.reset()
        else:
            self.model.adopt(unpack(checkpoint.blob))  # a fresh object graph, this model's alone
        self.ordinal, self.seq, self.mono = checkpoint.ordinal, checkpoint.seq, checkpoint.mono
        self._ahead = None
        self._peeked = None

    # -- moving --------------------------------------------------------------------------------------------------

    @property
    def next_event(self) -> Event | None:
        """The event a step forward would fold (None at the end)."""
        return self._peek()

    @property
    def at_end(self) -> bool:
        return self._peek() is None

    def seek(self, mono: float, *, force: bool = False) -> bool:
        """Make the model hold every event up to session time `mono`. False (nothing changed) when that would
        mean folding from further back than the index reaches yet; `force` folds anyway."""
        checkpoint = self.index.at_time(mono)
        forward = self.mono <= mono and self.ordinal >= checkpoint.ordinal
        start_seq = self.seq if forward else checkpoint.seq
        if not (force or self.index.covers(mono) or self._near(start_seq, mono)):
            return False
        with _collector_paused():
            if not forward:
                self._restore(checkpoint)
            self._fold_until(mono)
        return True

    def _near(self, after_seq: int, mono: float) -> bool:
        """Whether `mono` lies within one checkpoint interval after `after_seq` (one indexed lookup)."""
        probe = self.recording.event_at_offset(after_seq, self.index.every)
        return probe is None or probe[1] > mono

    def advance(self, mono: float, limit: int) -> bool:
        """Play forward to `mono`, folding at most `limit` events (jumping by checkpoint when that is cheaper).
        True when the model holds everything up to `mono`; False when it stopped short (see `self.mono`)."""
        checkpoint = self.index.at_time(mono)
        with _collector_paused():
            if checkpoint.ordinal > self.ordinal + self.index.every and self.mono <= mono:
                self._restore(checkpoint)
            return self._fold_until(mono, limit)

    def step_forward(self) -> Event | None:
        """Fold exactly one more event; it is returned (None at the end)."""
        event = self._peek()
        if event is not None:
            self._take(event)
        return event

    def seek_ordinal(self, ordinal: int, *, force: bool = False) -> bool:
        """Make the model hold exactly the first `ordinal` events. False when not yet reachable (see `seek`)."""
        ordinal = max(0, ordinal)
        checkpoint = self.index.at_ordinal(ordinal)
        forward = checkpoint.ordinal <= self.ordinal <= ordinal
        if not (forward or force or ordinal - checkpoint.ordinal <= self.index.every):
            return False
        with _collector_paused():
            if not forward:
                self._restore(checkpoint)
            self._fold_count(ordinal - self.ordinal)
        return True

    def _fold_count(self, count: int) -> None:
        for _ in range(count):
            event = self._peek()
            if event is None:
                return
            self._take(event)

    def step_back(self, *, force: bool = False) -> bool:
        """Unfold the last event (by refolding from a checkpoint). False at the start or when not yet reachable."""
        if self.ordinal == 0:
            return False
        return self.seek_ordinal(self.ordinal - 1, force=force)

    # -- markers -------------------------------------------------------------------------------------------------

    def next_problem(self, after: float) -> Marker | None:
        """The first deadline, error or late drop later than session time `after` (None: none, or not read yet)."""
        markers = self.index.markers or []
        i = bisect.bisect_right(markers, after, key=lambda m: m.mono)
        return next((m for m in markers[i:] if m.is_problem), None)

    def previous_problem(self, before: float) -> Marker | None:
        markers = self.index.markers or []
        i = bisect.bisect_left(markers, before, key=lambda m: m.mono)
        return next((m for m in reversed(markers[:i]) if m.is_problem), None)

    def close(self) -> None:
        self._ahead = None
        self.recording.close()
