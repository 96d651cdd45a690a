"""`mcpwatch bench console`: the live console under an event flood.

Drives the real app headless (Textual's `run_test`) at 160×48 against a real `mcpwatch wrap` that a flooding host
(`mcpwatch.bench.flood_host`, a separate process) makes emit 5,000 events/s; the console follows it through the
operator endpoint exactly as `mcpwatch watch` does. Meanwhile it presses a key every 500 ms and times key press →
the next repaint that shows the moved selection. Reports p50/p95/max of that latency, the backlog (events the
wrapper emitted that the console has not shown yet) over time, and the console's RSS.
`python -m mcpwatch.bench.console --feed` floods the console's feed directly instead (a producer thread, a
realistic mix from `console.sample.flood`): the UI alone.
Targets: p95 ≤ 100 ms, no growing backlog, RSS ≤ 250 MB.
"""

from __future__ import annotations

import asyncio
import json
import os
import statistics
import sys
import tempfile
import threading
import time
from collections import deque
from typing import TYPE_CHECKING, Any

from mcpwatch.bench.procstat import rss_mb

if TYPE_CHECKING:
    from mcpwatch.console.headless.model import ConsoleModel

HELP = "the console under a 5,000 events/s flood: key-to-repaint latency, backlog, RSS"

RATE = 5000.0
# The flood of a smoke run (`--quick`): every figure's shape (a few key presses, a backlog), not a measurement.
QUICK_S, QUICK_RATE = 1.0, 1000.0
KEY_EVERY_S = 0.5  # longer than the tables hold still after a key, so every press meets a rebuilding table


class FloodFeed:
    """A `Feed` filled by a producer thread at a fixed rate (the live feed's deque, without the network)."""

    def __init__(self, rate: float) -> None:
        from mcpwatch.console.headless.source import FeedStatus
        from mcpwatch.testing.sample import EventFactory, flood

        self._events = flood(EventFactory(session_id="bench"), rate=rate)
        self._rate = rate
        self._buffer: deque[Any] = deque()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._produce, name="bench-producer", daemon=True)
        self._status = FeedStatus("live", "bench flood")
        self.produced = 0
        self.applied = 0
        self._start = 0.0

    def start(self) -> None:
        self._start = time.monotonic()
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(5)

    def _produce(self) -> None:
        while not self._stop.is_set():
            due = int((time.monotonic() - self._start) * self._rate)
            batch = [next(self._events) for _ in range(max(0, due - self.produced))]
            self._buffer.extend(batch)
            self.produced += len(batch)
            time.sleep(0.01)

    def pump(self, model: ConsoleModel, limit: int = 20_000) -> int:
        count = 0
        while self._buffer and count < limit:
            model.apply(self._buffer.popleft())
            count += 1
        self.applied += count
        return count

    def now_mono(self, model: ConsoleModel) -> float:
        return model.last_mono

    def status(self) -> Any:
        return self._status

    @property
    def backlog(self) -> int:
        return len(self._buffer)


class WrapperFlood:
    """The flooding host and its wrapper, as separate processes; the console watches the wrapper."""

    def __init__(self, state_dir: str) -> None:
        self.state_dir = state_dir
        self.process: asyncio.subprocess.Process | None = None
        self.pid = 0

    async def start(self, rate: float, duration: float) -> None:
        self.process = await asyncio.create_subprocess_exec(
            sys.executable,
            "-m",
            "mcpwatch.bench.flood_host",
            str(rate),
            str(duration + 30),
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
            env={**os.environ, "MCPWATCH_STATE_DIR": self.state_dir},
        )
        assert self.process.stdout is not None
        line = await asyncio.wait_for(self.process.stdout.readline(), 60)
        if not line.strip().isdigit():
            raise RuntimeError("the flooding host did not start its wrapper")
        self.pid = int(line)

    async def wrapper_latest(self) -> int:
        from pathlib import Path

        from mcpwatch.bench.memory import LATEST
        from mcpwatch.bench.operator_tool import operator_tool

        events = await asyncio.to_thread(operator_tool, Path(self.state_dir), self.pid, "events", after=LATEST)
        return int((events or {}).get("latest", 0))

    async def stop(self) -> dict[str, Any]:
        assert self.process is not None and self.process.stdin is not None and self.process.stdout is not None
        self.process.stdin.close()
        out = await asyncio.wait_for(self.process.stdout.read(), 60)
        await self.process.wait()
        return json.loads(out.splitlines()[-1]) if out.strip() else {}


async def _drive(duration: float, rate: float, through_wrapper: bool) -> dict[str, Any]:
    from mcpwatch.console.app import ConsoleApp
    from mcpwatch.console.headless.session import WatchSession
    from mcpwatch.console.headless.source import Target
    from mcpwatch.console.screens.main import MainScreen
    from mcpwatch.console.widgets import WindowTable

    paints: list[float] = []

    class BenchApp(ConsoleApp):
        def _display(self, screen: Any, renderable: Any) -> None:  # every frame the screen hands out
            paints.append(time.perf_counter())
            super()._display(screen, renderable)

    tmp = tempfile.TemporaryDirectory()
    flood: WrapperFlood | None = None
    feed: FloodFeed | None = None
    if through_wrapper:
        os.environ["MCPWATCH_STATE_DIR"] = tmp.name  # the console finds the wrapper in this registry
        flood = WrapperFlood(tmp.name)
        await flood.start(rate, duration)
        app = BenchApp(target=Target.parse(str(flood.pid), None))
    else:
        feed = FloodFeed(rate)
        app = BenchApp(session=WatchSession(feed))
    latencies: list[float] = []
    backlog: list[tuple[float, int]] = []
    try:
        async with app.run_test(size=(160, 48)) as pilot:
            while not (isinstance(app.screen, MainScreen) and app.screen.last_view is not None):
                await pilot.pause(0.02)
            table = app.screen.query_one("#requests", WindowTable)
            table.focus()
            await pilot.pause(0.5)  # let the flood fill the table
            started = time.monotonic()
            applied_before = app.session.model.last_seq if app.session else 0
            direction = "down"
            while time.monotonic() - started < duration:
                before = table.selected_key
                mark = len(paints)
                pressed = time.perf_counter()
                app.post_message(_key(direction))
                while time.perf_counter() - pressed < 2.0:
                    await asyncio.sleep(0.001)
                    if table.selected_key != before and len(paints) > mark and paints[-1] >= pressed:
                        # the first frame painted after the selection moved
                        break
                latencies.append(paints[-1] - pressed if len(paints) > mark else 2.0)
                direction = "up" if direction == "down" and table.cursor_row > 20 else "down"
                if flood is not None and app.session is not None:
                    shown = app.session.model.last_seq
                    backlog.append((time.monotonic() - started, max(0, await flood.wrapper_latest() - shown)))
                elif feed is not None:
                    backlog.append((time.monotonic() - started, feed.backlog))
                await asyncio.sleep(KEY_EVERY_S)
            elapsed = time.monotonic() - started
            applied = (app.session.model.last_seq if app.session else 0) - applied_before
            rss, peak = rss_mb()
    finally:
        host = await flood.stop() if flood is not None else {}
        if feed is not None:
            feed.stop()
            applied = feed.applied
        tmp.cleanup()
    ms = sorted(x * 1000 for x in latencies)
    p95 = ms[min(len(ms) - 1, int(0.95 * len(ms)))] if ms else float("nan")
    half = len(backlog) // 2
    first = statistics.mean(b for _, b in backlog[:half]) if half else 0.0
    second = statistics.mean(b for _, b in backlog[half:]) if backlog[half:] else 0.0
    return {
        "source": "a real wrapper flooded by a host process, followed through the operator endpoint"
        if through_wrapper
        else "feed (producer thread → deque → 10 Hz pump), not through a wrapper",
        "duration_s": round(elapsed, 1),
        "rate_target_events_per_s": rate,
        **({"host": host} if through_wrapper else {"events_produced": feed.produced if feed else 0}),
        "events_applied": applied,
        "applied_rate_events_per_s": round(applied / max(elapsed, 1e-9)),
        "key_to_repaint_ms": {
            "samples": len(ms),
            "p50": round(statistics.median(ms), 1) if ms else None,
            "p95": round(p95, 1),
            "max": round(ms[-1], 1) if ms else None,
        },
        "backlog_events": {
            "mean_first_half": round(first),
            "mean_second_half": round(second),
            "max": max((b for _, b in backlog), default=0),
            "final": backlog[-1][1] if backlog else 0,
        },
        "rss_mb": {"end": round(rss, 1), "peak": round(peak, 1)},
        "targets": {
            "p95_le_100ms": p95 <= 100,
            "no_growing_backlog": second <= max(first * 1.5, rate * 0.5),
            "rss_le_250mb": peak <= 250,
        },
    }


def _key(name: str) -> Any:
    from textual import events

    return events.Key(name, None)


def run(quick: bool = False) -> dict[str, Any]:
    os.environ.setdefault("TEXTUAL_ANIMATIONS", "none")
    duration, rate = (QUICK_S, QUICK_RATE) if quick else (60.0, RATE)
    return asyncio.run(_drive(duration, rate, through_wrapper=True))


if __name__ == "__main__":  # python -m mcpwatch.bench.console [--quick] [--feed]
    os.environ.setdefault("TEXTUAL_ANIMATIONS", "none")
    duration, rate = (QUICK_S, QUICK_RATE) if "--quick" in sys.argv else (60.0, RATE)
    figures = asyncio.run(_drive(duration, rate, through_wrapper="--feed" not in sys.argv))
    print(json.dumps({"benchmark": "console", **figures}, indent=2))
