"""A small hand-made session written into a real log through the real writer, for the Trends and Models tests:
every count, latency and marker in it is known, so the tests check exact numbers."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from mcpwatch.clock import ManualClock
from mcpwatch.console.headless.source import FeedStatus
from mcpwatch.events import Event
from mcpwatch.registry import WrapperEntry
from mcpwatch.store import EventWriter
from mcpwatch.testing.feed import StaticFeed

ORIGIN = 1_767_225_600.0  # 2026-01-01T00:00:00Z, a minute boundary


class Script:
    """Events at given session seconds, numbered in order."""

    def __init__(self) -> None:
        self.events: list[tuple[float, str, dict[str, Any]]] = []

    def at(self, t: float, kind: str, **fields: Any) -> Script:
        self.events.append((t, kind, fields))
        return self

    def call(self, t: float, tool: str, outcome: str, took: float, rid: str) -> Script:
        self.at(t, "request_start", request_id=rid, tool=tool, data={"method": "tools/call", "up_id": int(rid)})
        return self.at(
            t + took,
            "request_end",
            request_id=rid,
            tool=tool,
            data={"method": "tools/call", "outcome": outcome, "duration_s": took},
        )

    def write(self, path: Path, *, end: bool = True) -> str:
        clock = ManualClock(monotonic=0.0, wall=ORIGIN)
        with EventWriter(path, clock=clock) as writer:
            sid = writer.start_session(name="trends", upstream="python server.py", pid=4242, config={})
            ordered = sorted(self.events, key=lambda e: e[0])
            for seq, (t, kind, fields) in enumerate(ordered, start=1):
                data = fields.pop("data", {})
                writer.emit(Event(kind, sid, ORIGIN + t, t, seq, data=data, **fields))
            if end:
                clock.advance(ordered[-1][0] if ordered else 0.0)
                writer.end_session(sid, "host closed stdin")
            writer.flush()
        return sid


def standard_script() -> Script:
    """Ten minutes: `search` every 20 s (one deadline, one error), `fetch` twice a minute from minute 5, a margin
    change at 4:00 and an upstream restart at 7:30."""
    s = Script()
    s.at(0.0, "session_start", data={"name": "trends"})
    s.at(0.1, "upstream_state", data={"state": "ready", "generation": 1})
    rid = 0
    for i in range(30):
        rid += 1
        t = 1.0 + 20.0 * i
        outcome = "deadline" if i == 10 else "error" if i == 20 else "ok"
        s.call(t, "search", outcome, 2.0 + (i % 5), str(rid))
    for i in range(10):
        rid += 1
        s.call(300.0 + 30.0 * i, "fetch", "ok", 0.5, str(rid))
    s.at(240.0, "config_change", data={"key": "margin_s", "old": 10.0, "new": 15.0, "source": "operator"})
    s.at(450.0, "upstream_state", data={"state": "backoff", "generation": 1})
    s.at(450.5, "upstream_state", data={"state": "connecting", "generation": 2})
    s.at(451.0, "upstream_state", data={"state": "ready", "generation": 2})
    return s


class LoggedFeed(StaticFeed):
    """A live-looking feed (its wrapper's registry entry names the log) over fixed events: the live path of the
    log-backed screens, deterministic for snapshots."""

    def __init__(self, path: Path, session_id: str, now_mono: float) -> None:
        super().__init__([], now_mono, FeedStatus("live", "live"))

        class _Locator:
            last = WrapperEntry(
                pid=4242,
                name="trends",
                operator_url="http://127.0.0.1:1/",
                token="t",
                log_path=str(path),
                session_id=session_id,
                started_at=ORIGIN,
            )

        self.locator = _Locator()
