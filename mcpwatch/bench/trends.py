"""`mcpwatch bench trends`: drawing the Trends screen over the 1,000,000-event replay recording.

The recording is `bench replay`'s (the same generator and seed). In a headless replay app (160×48):

- read: the one pass that rolls the log up per tool and minute (`TrendLog.update`), done off the UI thread the
  first time Trends opens. It is also the direct path: without the rollup, every frame would read this much;
- draw: a window chosen (15 min, 1 h, the whole session: what keys 1, 2, 3 do) at replay positions across the
  recording, timed from the switch to the first frame handed to the terminal after it (fold + text + layout +
  paint), the first time at each position and again.

Target: every draw ≤ 300 ms.
"""

from __future__ import annotations

import asyncio
import gc
import os
import random
import tempfile
import time
from pathlib import Path
from typing import Any

from mcpwatch.bench.procstat import rss_mb
from mcpwatch.bench.replay import FULL_EVENTS, QUICK_EVENTS, _ms, write_session

HELP = "Trends over the 1,000,000-event replay recording: read once, then every draw ≤ 300 ms"

TARGET_DRAW_MS = 300.0
POSITIONS = 8
WINDOW_KEYS = {"15 min": "1", "1 h": "2", "session": "3"}


async def _measure(path: Path, positions: int, seed: int) -> dict[str, Any]:
    from mcpwatch.console.headless.trends import trend_log
    from mcpwatch.console.screens.trends import TrendsScreen
    from mcpwatch.replay.app import ReplayApp
    from mcpwatch.replay.feed import open_replay

    painted: list[float] = []

    class TimedApp(ReplayApp):
        def _display(self, screen: Any, renderable: Any) -> None:
            painted.append(time.perf_counter())
            super()._display(screen, renderable)

    gc_pauses: list[float] = []
    gc_started: list[float] = []

    def on_gc(phase: str, info: dict[str, Any]) -> None:  # how much of a slow frame is the garbage collector
        if phase == "start":
            gc_started.append(time.perf_counter())
        elif gc_started:
            gc_pauses.append(time.perf_counter() - gc_started.pop())

    feed = open_replay(path, None, paused=True, indexer="thread")
    app = TimedApp(feed, title="bench", refresh_s=0.1)
    out: dict[str, Any] = {}
    async with app.run_test(size=(160, 48)) as pilot:
        while not (feed.index.done or feed.index.error):
            await pilot.pause(0.1)
        feed.seek(feed.clock.end)
        await pilot.pause(0.2)
        started = time.perf_counter()
        await pilot.press("T")
        screen = app.screen
        assert isinstance(screen, TrendsScreen)
        while screen.drawn_key is None:
            await asyncio.sleep(0.005)
        out["open_with_first_read_s"] = round(time.perf_counter() - started, 2)
        log = trend_log(str(path), feed.engine.recording.session.id)
        out["rows_rolled_up"] = log.rows_read
        rng = random.Random(seed)
        end = feed.clock.end
        gc.callbacks.append(on_gc)
        targets = [end] + [rng.uniform(0.1 * end, end) for _ in range(positions - 1)]
        first: dict[str, list[float]] = {w: [] for w in WINDOW_KEYS}
        again: dict[str, list[float]] = {w: [] for w in WINDOW_KEYS}
        fold_ms: list[float] = []
        for target in targets:
            feed.seek(target)
            await pilot.pause(0.3)  # the replay refolds the main view at the new position: not the draw's cost
            for runs in (first, again):
                for window in WINDOW_KEYS:
                    if screen.window == window:  # make the switch change something
                        screen.action_cycle_window()
                        await pilot.pause(0.05)
                    painted.clear()
                    t0 = time.perf_counter()
                    screen.action_window(window)  # what the window's key does: fold, text, then a frame
                    while not painted:
                        await asyncio.sleep(0.001)
                    assert screen.drawn_key is not None and screen.drawn_key[0] == window
                    runs[window].append(painted[0] - t0)
                    fold_ms.append(screen.draw_ms or 0.0)
        out["draw_ms_first_at_a_position"] = {w: _ms(v) for w, v in first.items()}
        out["draw_ms_again"] = {w: _ms(v) for w, v in again.items()}
        out["fold_and_text_ms"] = _ms([v / 1000 for v in fold_ms])
        gc.callbacks.remove(on_gc)
        out["gc_pauses_while_drawing_ms"] = _ms(gc_pauses) if gc_pauses else {"samples": 0}
        out["load_average"] = [round(v, 2) for v in os.getloadavg()]
        rss, peak = rss_mb()
        out["rss_mb"] = {"end": round(rss, 1), "peak": round(peak, 1)}
    feed.close()
    # The direct path: reading the log again from scratch, which a frame without the rollup would cost.
    from mcpwatch.console.headless.trends import TrendLog
    from mcpwatch.store.reader import EventReader

    fresh = TrendLog(str(path), log.session_id)
    t0 = time.perf_counter()
    with EventReader(path) as reader:
        fresh.update(reader)
    out["read_whole_log_s"] = round(time.perf_counter() - t0, 2)
    return out


def run(quick: bool = False) -> dict[str, Any]:
    events = QUICK_EVENTS if quick else FULL_EVENTS
    os.environ.setdefault("TEXTUAL_ANIMATIONS", "none")
    with tempfile.TemporaryDirectory(prefix="mcpwatch-bench-trends-") as tmp:
        path = Path(tmp) / "events.db"
        t0 = time.perf_counter()
        write_session(path, events)
        written = time.perf_counter() - t0
        figures = asyncio.run(_measure(path, 3 if quick else POSITIONS, seed=11))
    worst = max(
        max(s["max"] for s in figures["draw_ms_first_at_a_position"].values()),
        max(s["max"] for s in figures["draw_ms_again"].values()),
    )
    ok = worst <= TARGET_DRAW_MS
    return {
        "events": events,
        "write_s": round(written, 1),
        **figures,
        "worst_draw_ms": round(worst, 1),
        "targets": {"every_draw_le_300ms": ok},
        "verdict": {"every_draw_le_300ms": "pass" if ok else "FAIL"},
        "quick": quick,
    }
