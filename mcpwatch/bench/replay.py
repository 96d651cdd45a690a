"""`mcpwatch bench replay`: opening, first frame and seeking in a 1,000,000-event recording, and the memory it takes.

A realistic session (a discrete-event simulation of one wrapper's day: overlapping council runs with per-model
status and progress, quick calls, deadlines with tombstones and late answers, invalidations, health checks, margin
changes, upstream restarts) is written into a temporary log through the real `EventWriter`. Then, in this process:

- open + first frame: resolve the session, start the replay engine and draw the main screen once in a headless
  Textual app (`run_test`, 160×48) — what `mcpwatch replay` does before the operator sees anything;
- index: the background pass that folds the whole session once and keeps checkpoints (reported, not a target);
- seeks: random times across the session, each restoring the nearest checkpoint and folding the events between
  (median, p95, max), plus single-event steps;
- RSS after all of that.

Targets: open + first frame ≤ 1.5 s, every seek ≤ 150 ms, RSS ≤ 300 MB.
"""

from __future__ import annotations

import asyncio
import gc
import heapq
import itertools
import os
import random
import statistics
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, cast

from mcpwatch import paths
from mcpwatch.bench import synthetic_traffic as traffic
from mcpwatch.bench.procstat import rss_mb
from mcpwatch.events import COUNTER_NAMES, CountersBlock, DeadlineBlock, Event, Kind, SessionEndData

HELP = "replay of a 1,000,000-event recording: open + first frame ≤ 1.5 s, seek ≤ 150 ms, RSS ≤ 300 MB"

FULL_EVENTS = 1_000_000
QUICK_EVENTS = 100_000
SEEKS = 60
TARGET_OPEN_S = 1.5
TARGET_SEEK_MS = 150.0
TARGET_RSS_MB = 300.0


# --- the synthetic session ------------------------------------------------------------------------------------


@dataclass(order=True)
class _Due:
    mono: float
    order: int
    kind: str = field(compare=False)
    request_id: str | None = field(compare=False, default=None)
    tool: str | None = field(compare=False, default=None)
    model: str | None = field(compare=False, default=None)
    data: dict[str, Any] = field(compare=False, default_factory=dict)


class SyntheticSession:
    """A seeded simulation of one wrapper's traffic, yielding events in time order with increasing `seq`.

    Calls overlap (a few in flight at once), so a request's events are interleaved with others' the way a real
    log's are. About 25 events a second of session time: a million events is roughly eleven hours.
    """

    def __init__(
        self,
        session_id: str,
        origin_ts: float,
        *,
        seed: int = 7,
        calls_per_s: float = 2.2,
        rare_every_s: float = 3600.0,
    ) -> None:
        """`rare_every_s`: the typical gap between margin changes and upstream restarts (tests make it short)."""
        self.session_id = session_id
        self.origin_ts = origin_ts
        self.rng = random.Random(seed)
        self.calls_per_s = calls_per_s
        self.rare_every_s = rare_every_s
        self._queue: list[_Due] = []
        self._order = itertools.count()
        self._host_id = itertools.count(1)
        self._up_id = itertools.count(1)
        self.generation = 1
        self.margin = 10.0
        self.host_timeout = 120.0

    def new_call_ids(self) -> tuple[str, int]:
        """The next host request id and upstream request id."""
        return str(next(self._host_id)), next(self._up_id)

    @property
    def budget(self) -> float:
        return self.host_timeout - self.margin

    def at(self, mono: float, kind: str, **fields: Any) -> None:
        """Schedule one event at session time `mono`."""
        data = fields.pop("data", None) or {}
        heapq.heappush(self._queue, _Due(mono, next(self._order), kind, data=data, **fields))

    def deadline_block(self) -> DeadlineBlock:
        return DeadlineBlock(
            host_timeout_s=self.host_timeout,
            margin_s=self.margin,
            override_s=None,
            budget_s=self.budget,
            source="env",
            explanation=f"host timeout {self.host_timeout:g} s − margin {self.margin:g} s",
        )

    def tombstone_ttl(self) -> float:
        return self.budget + 10.0 + 30.0 + 5.0

    def events(self, count: int) -> Iterator[Event]:
        """Exactly `count` events (the last one a session_end), in time order."""
        rng = self.rng
        traffic.session_opening(self)
        next_call = 1.0
        next_health = 2.0
        rare = self.rare_every_s
        next_margin = rare
        next_restart = rng.uniform(0.8 * rare, 2.5 * rare)
        seq = 0
        queue = self._queue
        counters = dict.fromkeys(COUNTER_NAMES, 0)
        while True:
            horizon = min(next_call, next_health, next_margin, next_restart)
            while queue and queue[0].mono <= horizon:
                due = heapq.heappop(queue)
                seq += 1
                _count(counters, due)
                yield Event(
                    str(due.kind),
                    self.session_id,
                    self.origin_ts + due.mono,
                    due.mono,
                    seq,
                    due.request_id,
                    due.tool,
                    due.model,
                    due.data,
                )
                if seq == count - 1:
                    yield Event(
                        Kind.SESSION_END.value,
                        self.session_id,
                        self.origin_ts + due.mono + 0.5,
                        due.mono + 0.5,
                        seq + 1,
                        data=dict(SessionEndData(reason="host closed stdin", counters=cast(CountersBlock, counters))),
                    )
                    return
            if horizon == next_call:
                if rng.random() < 0.3:
                    traffic.council_call(self, next_call)
                else:
                    traffic.quick_call(self, next_call)
                next_call += rng.expovariate(self.calls_per_s)
            elif horizon == next_health:
                traffic.health_check(self, next_health)
                next_health += 60.0
            elif horizon == next_margin:
                traffic.margin_change(self, next_margin)
                next_margin += rng.uniform(0.5 * rare, 2.0 * rare)
            else:
                traffic.upstream_restart(self, next_restart)
                next_restart += rng.uniform(0.8 * rare, 2.5 * rare)


_OUTCOME_COUNTER: dict[Any, str] = {"ok": "ok", "deadline": "timeouts", "cancelled": "cancelled"}
_KIND_COUNTER: dict[str, str] = {
    Kind.REQUEST_START: "requests",
    Kind.TOMBSTONE_HIT: "late_dropped",
    Kind.UNKNOWN_RESPONSE: "unknown_dropped",
    Kind.INVALIDATION: "invalidations",
}


def _count(counters: dict[str, int], due: _Due) -> None:
    """The wrapper's counters, kept as it would keep them, for the session_end that closes the session."""
    name = _KIND_COUNTER.get(due.kind)
    if due.kind == Kind.REQUEST_END:
        name = _OUTCOME_COUNTER.get(due.data.get("outcome"), "errors")
    if name is not None:
        counters[name] += 1


def write_session(path: Path, count: int, *, seed: int = 7, name: str = "council", rare_every_s: float = 3600.0) -> str:
    """Write a synthetic session of `count` events into the log at `path` with the real writer; return its id.

    The writer's clock is the simulation's, so the session row's start and end agree with its events.
    """
    from mcpwatch.clock import ManualClock
    from mcpwatch.store import EventWriter

    origin = 1_767_225_600.0  # 2026-01-01T00:00:00Z
    clock = ManualClock(monotonic=0.0, wall=origin)
    with EventWriter(path, queue_max=100_000, clock=clock) as writer:
        session_id = writer.start_session(
            name=name, upstream="mcpwatch council --scenario default", pid=40100, config={}
        )
        last = origin
        for event in SyntheticSession(session_id, origin, seed=seed, rare_every_s=rare_every_s).events(count):
            while writer.pending >= 90_000:
                time.sleep(0.005)  # let the writer thread catch up rather than drop
            writer.emit(event)
            last = event.ts
        clock.advance(last - origin)
        writer.end_session(session_id, "host closed stdin")
        writer.flush()
    return session_id


# --- measuring ------------------------------------------------------------------------------------------------


def _ms(values: list[float]) -> dict[str, float]:
    ms = sorted(v * 1000 for v in values)
    return {
        "samples": len(ms),
        "median": round(statistics.median(ms), 1),
        "p95": round(ms[min(len(ms) - 1, int(0.95 * len(ms)))], 1),
        "max": round(ms[-1], 1),
    }


async def _measure(path: Path, session_id: str, seeks: int, seed: int) -> dict[str, Any]:
    """Open + first frame, the index pass, then seeks and steps in the headless app."""
    from mcpwatch.replay.app import ReplayApp, ReplayMainScreen
    from mcpwatch.replay.feed import open_replay

    painted: list[float] = []

    class TimedApp(ReplayApp):
        def _display(self, screen: Any, renderable: Any) -> None:  # every frame handed to the terminal
            painted.append(time.perf_counter())
            super()._display(screen, renderable)

    gc.collect()
    started = time.perf_counter()
    feed = open_replay(path, session_id, paused=True, indexer="process")
    opened = time.perf_counter()
    app = TimedApp(feed, title="bench")
    out: dict[str, Any] = {}
    async with app.run_test(size=(160, 48)) as pilot:
        while not (isinstance(app.screen, ReplayMainScreen) and app.screen.last_view is not None and painted):
            await asyncio.sleep(0.001)
        first_frame = painted[0]
        screen = app.screen
        out["open_s"] = round(opened - started, 3)
        out["open_and_first_frame_s"] = round(first_frame - started, 3)
        # The index pass, in its own process; the app stays responsive meanwhile (a tick every 0.1 s).
        index = feed.index
        indexer = feed.indexer
        child_pid = getattr(indexer, "pid", None)
        child_peak = 0.0
        index_started = time.perf_counter()
        while not (index.done or index.error):
            child_peak = max(child_peak, rss_mb(child_pid)[0])
            await pilot.pause(0.1)
        out["index_s"] = round(time.perf_counter() - index_started, 2)
        out["index_error"] = index.error
        out["checkpoints"] = len(index.checkpoints)
        out["checkpoint_every_events"] = index.every
        out["checkpoint_bytes"] = sum(len(c.blob or b"") for c in index.checkpoints)
        out["markers"] = len(index.markers or ())
        out["indexer_rss_peak_mb"] = round(child_peak, 1)
        # Seeks to random times: the engine's restore + fold, then the main screen rebuilt from the new view.
        rng = random.Random(seed)
        end = feed.clock.end
        engine_s: list[float] = []
        with_view_s: list[float] = []
        for _ in range(seeks):
            target = rng.uniform(0.0, end)
            t0 = time.perf_counter()
            feed.seek(target)
            t1 = time.perf_counter()
            screen.refresh_view()
            t2 = time.perf_counter()
            engine_s.append(t1 - t0)
            with_view_s.append(t2 - t0)
            await pilot.pause()
        out["seek_ms"] = _ms(engine_s)
        out["seek_and_view_ms"] = _ms(with_view_s)
        steps: list[float] = []
        for direction in (-1,) * 10 + (1,) * 10:
            t0 = time.perf_counter()
            feed.step(direction)
            screen.refresh_view()
            steps.append(time.perf_counter() - t0)
        out["step_and_view_ms"] = _ms(steps)
        problems: list[float] = []
        feed.seek(0.0)
        for _ in range(10):
            t0 = time.perf_counter()
            feed.next_problem(1)
            screen.refresh_view()
            problems.append(time.perf_counter() - t0)
        out["next_problem_and_view_ms"] = _ms(problems)
        rss, peak = rss_mb()
        out["rss_mb"] = {"end": round(rss, 1), "peak": round(peak, 1)}
    feed.close()
    return out


def run(quick: bool = False) -> dict[str, Any]:
    return measure(QUICK_EVENTS if quick else FULL_EVENTS, quick=quick)


def recording_dir() -> Path:
    """Where the benchmark leaves its recording, so that it can be replayed afterwards (the next run replaces it)."""
    return paths.state_dir() / "bench"


def measure(
    events: int, *, seeks: int = SEEKS, quick: bool = False, seed: int = 11, folder: Path | None = None
) -> dict[str, Any]:
    """Write a session of `events` events into `folder` (default `recording_dir()`), then measure replaying it
    (see the module docstring). The recording is kept, and the figures say where and how to replay it."""
    os.environ.setdefault("TEXTUAL_ANIMATIONS", "none")
    folder = folder or recording_dir()
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "replay.db"
    for old in folder.glob("replay.db*"):
        old.unlink()  # the previous run's recording (and its -wal/-shm): replaced, not added to
    t0 = time.perf_counter()
    session_id = write_session(path, events)
    written = time.perf_counter() - t0
    size = sum(p.stat().st_size for p in folder.glob("replay.db*"))
    figures = asyncio.run(_measure(path, session_id, seeks, seed))
    peak = figures["rss_mb"]["peak"]
    targets = {
        "open_and_first_frame_le_1_5s": figures["open_and_first_frame_s"] <= TARGET_OPEN_S,
        "every_seek_le_150ms": figures["seek_and_view_ms"]["max"] <= TARGET_SEEK_MS,
        "rss_le_300mb": peak <= TARGET_RSS_MB,
    }
    return {
        "events": events,
        "write_s": round(written, 1),
        "recording": str(path),
        "replay_it": f"mcpwatch replay {path} --session {session_id}",
        "log_mb": round(size / 1e6, 1),
        **figures,
        "targets": targets,
        "verdict": {name: "pass" if ok else "FAIL" for name, ok in targets.items()},
        "quick": quick,
    }
