"""Shared pieces for the console's Pilot and snapshot tests."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from textual.pilot import Pilot
from textual.widgets import Footer

from mcpwatch.console.app import ConsoleApp
from mcpwatch.console.headless.session import WatchSession
from mcpwatch.console.headless.source import FeedStatus
from mcpwatch.events import Event, Kind
from mcpwatch.operator.client import OperatorRefused
from mcpwatch.testing.feed import StaticFeed
from mcpwatch.testing.sample import SAMPLE_NOW, EventFactory, sample_session, session_start

from pilot_tools import until
from replay_index import build_index

SIZE = (160, 48)


def footer_descriptions(footer: Footer) -> list[str]:
    """What the footer says each key does, as drawn. Textual draws a key as a FooterKey, which it does not export
    (it lives in the private textual.widgets._footer), so the keys are queried by name and typed as Widget."""
    return [key.description for key in footer.query("FooterKey")]  # type: ignore[attr-defined]  # private FooterKey


class RecordingControls:
    """Operator controls that record what the console asked for; `refuse` makes the next call fail like the wrapper."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, Any]] = []
        self.refuse: str | None = None

    def _answer(self, name: str, value: Any, result: dict[str, Any]) -> dict[str, Any]:
        self.calls.append((name, value))
        if self.refuse is not None:
            message, self.refuse = self.refuse, None
            raise OperatorRefused(message)
        return result

    async def health_check(self) -> dict[str, Any]:
        return self._answer("health_check", None, {"ok": True, "ping_ms": 2.0})

    async def set_margin(self, seconds: float) -> dict[str, Any]:
        return self._answer(
            "set_margin", seconds, {"host_timeout_s": 120, "margin_s": seconds, "budget_s": 120 - seconds}
        )

    async def set_host_timeout(self, seconds: float) -> dict[str, Any]:
        return self._answer(
            "set_host_timeout", seconds, {"host_timeout_s": seconds, "margin_s": 10, "budget_s": seconds}
        )

    async def set_deadline(self, seconds: float | None) -> dict[str, Any]:
        return self._answer("set_deadline", seconds, {"host_timeout_s": 120, "margin_s": 10, "budget_s": seconds})

    async def reset_deadline(self) -> dict[str, Any]:
        return self._answer("reset_deadline", None, {"host_timeout_s": 120, "margin_s": 10, "budget_s": 110})

    async def cancel(self, request_id: str) -> dict[str, Any]:
        return self._answer("cancel", request_id, {"cancelled": request_id})

    async def call_upstream(self, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
        return self._answer("call_upstream", (name, arguments), {"content": [], "isError": False})


def sample_app(
    *,
    controls: Any = None,
    theme: str = "mcpwatch-dark",
    status: FeedStatus | None = None,
    events: list | None = None,
    now: float = SAMPLE_NOW,
) -> ConsoleApp:
    """The console over the fixed sample session at a fixed time: deterministic, no network."""
    feed = StaticFeed(sample_session() if events is None else events, now, status)
    return ConsoleApp(session=WatchSession(feed, controls), theme=theme)


async def ready(pilot: Pilot[Any]) -> None:
    """Wait until the main screen is up and has drawn the session once."""
    from mcpwatch.console.screens.main import MainScreen

    app = pilot.app
    await until(pilot, lambda: isinstance(app.screen, MainScreen) and app.screen.last_view is not None, what="ready")
    await pilot.pause()


def generic_session(calls: int = 12) -> tuple[EventFactory, list[Event]]:
    """A server that is not a council: plain tools, a few errors and deadlines, no model status, no tiers."""
    f = EventFactory()
    events = [session_start(f, name="files")]
    events.append(f.make(Kind.HOST_INFO, 0.1, name="claude-code", version="2.1.3", protocol_version="2025-11-25"))
    events.append(f.make(Kind.UPSTREAM_STATE, 0.2, state="ready", generation=1))
    t = 1.0
    for i in range(calls):
        rid = str(i + 1)
        tool = ("search", "read_file", "write_file")[i % 3]
        outcome = "deadline" if i % 5 == 4 else "tool_error" if i % 7 == 6 else "ok"
        took = 0.1 * (i + 1)
        events.append(f.make(Kind.REQUEST_START, t, request_id=rid, tool=tool, method="tools/call", budget_s=110.0))
        events.append(f.make(Kind.REQUEST_END, t + took, request_id=rid, outcome=outcome, duration_s=took))
        t += 2.0
    return f, events


_COUNCIL_LOG: list[Path] = []  # the generated council log, written once per test process


def council_replay_app(tmp_path: Path) -> Any:
    """A replay console over a generated council session (6,000 events), paused at 80 % of it. The log is written
    and indexed once per test process (the first caller's `tmp_path` holds it; nothing writes to it again)."""
    from mcpwatch.bench.replay import write_session
    from mcpwatch.replay.app import ReplayApp
    from mcpwatch.replay.clock import ReplayClock
    from mcpwatch.replay.engine import ReplayEngine
    from mcpwatch.replay.feed import ReplayFeed
    from mcpwatch.replay.recording import Recording

    if not _COUNCIL_LOG:
        path = tmp_path / "replay.db"
        write_session(path, 6000, seed=5, rare_every_s=60.0)
        _COUNCIL_LOG.append(path)
    path = _COUNCIL_LOG[0]
    recording = Recording(path)
    engine = ReplayEngine(recording, every=250)
    build_index(recording, engine.index, path, None)
    clock = ReplayClock(recording.end_mono, wall=lambda: 1000.0, playing=False)
    feed = ReplayFeed(engine, clock, indexer="none", start_at=recording.end_mono * 0.8)
    return ReplayApp(feed, title="council")
