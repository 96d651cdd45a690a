"""Nothing a peer, a log file or a registry entry says can rewrite the operator's terminal from the console.

Textual writes a cell's text to the terminal as it is (it strips only BEL), so a host name, tool name, progress
message, model name, result text, error text or wrapper name holding an OSC (retitle), CSI (clear), C1 or BEL
sequence would be obeyed. Here a hostile session is shown live (a static feed), in its detail screen, in the fleet
list and replayed from a real log; what Textual would write is read from the screen's rendered strips (the text of
every segment: Textual's own styling is added around it), and must hold no ESC, C1 or BEL — the names are shown with
their control characters visible (`\\x1b`) instead.
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path
from typing import Any

import pytest
from console_helpers import SIZE, RecordingControls, ready
from textual.app import App

from mcpwatch.console.app import ConsoleApp
from mcpwatch.console.headless.model import ConsoleModel
from mcpwatch.console.headless.session import WatchSession
from mcpwatch.console.screens.detail import RequestDetailScreen
from mcpwatch.console.screens.fleet import FleetScreen
from mcpwatch.console.screens.main import MainScreen
from mcpwatch.events import Event, Kind
from mcpwatch.registry import WrapperEntry
from mcpwatch.testing.feed import StaticFeed
from mcpwatch.testing.sample import EventFactory, session_start

from pilot_tools import current, until

pytestmark = pytest.mark.anyio

RETITLE = "\x1b]0;pwned\x07"  # OSC: set the window title, ended by BEL
CLEAR = "\x1b[2J"  # CSI: clear the screen
C1_CLEAR = "\x9b2J"  # the same as one C1 character
HOST = f"host{RETITLE}"
TOOL = f"tool{CLEAR}"
MESSAGE = f"step{C1_CLEAR}\x07"
MODEL = f"model{RETITLE}"
WRAPPER = f"wrap{CLEAR}"
RESULT = f"first{RETITLE}\nsecond{CLEAR}"
ERROR = f"failed{C1_CLEAR}"
RAW = re.compile("[\x1b\x07\x80-\x9f]")


def hostile_session() -> list[Event]:
    """A session whose every peer-chosen text holds a terminal control sequence; the result text is JSON-escaped
    in the preview (as the wrapper logs it), so it only turns raw when the detail screen decodes it."""
    f = EventFactory()
    preview = json.dumps({"content": [{"type": "text", "text": RESULT}]})
    return [
        session_start(f, name=WRAPPER),
        f.make(Kind.UPSTREAM_STATE, 0.1, state="ready", generation=1),
        f.make(Kind.HOST_INFO, 0.2, name=HOST, version="1", protocol_version="2025-11-25"),
        f.make(Kind.REQUEST_START, 1.0, request_id="1", tool=TOOL, method="tools/call", budget_s=110.0),
        f.make(Kind.REQUEST_END, 1.5, request_id="1", outcome="ok", duration_s=0.5, result_preview=preview),
        f.make(Kind.REQUEST_START, 2.0, request_id="2", tool=TOOL, method="tools/call", budget_s=110.0),
        f.make(Kind.REQUEST_END, 2.5, request_id="2", outcome="error", duration_s=0.5, error=ERROR),
        f.make(Kind.REQUEST_START, 3.0, request_id="3", tool=TOOL, method="tools/call", budget_s=110.0),
        f.make(Kind.PROGRESS, 3.5, request_id="3", progress=1, total=4, message=MESSAGE),
        f.make(Kind.MODEL_STATUS, 3.6, request_id="3", tool=TOOL, model=MODEL, stage=1, status="pending"),
    ]


def terminal_text(app: App[Any]) -> str:
    """The text of every segment the active screen renders: what Textual writes to the terminal between its own
    cursor and colour sequences."""
    strips = app.screen._compositor.render_strips()
    return "\n".join("".join(segment.text for segment in strip) for strip in strips)


def assert_nothing_raw(app: App[Any]) -> str:
    text = terminal_text(app)
    found = RAW.search(text)
    assert found is None, (
        f"raw {found.group()!r} reaches the terminal: {text[max(0, found.start() - 40) : found.end() + 40]!r}"
    )
    return text


async def test_a_hostile_session_is_shown_never_obeyed() -> None:
    app = ConsoleApp(session=WatchSession(StaticFeed(hostile_session(), 4.0), RecordingControls()))
    async with app.run_test(size=SIZE) as pilot:
        await ready(pilot)
        await until(pilot, lambda: "step" in terminal_text(app) and "model" in terminal_text(app), what="all drawn")
        assert_nothing_raw(app)
        for visible in (r"host\x1b]0;pwned\x07", r"tool\x1b[2J", r"step\u009b2J\x07", r"wrap\x1b[2J", r"model\x1b]0;"):

            def shows(v: str = visible) -> bool:
                return v in terminal_text(app)

            await until(pilot, shows, what=f"{visible} shown")
        assert_nothing_raw(app)
        current(app, MainScreen).open_request("1")
        await until(pilot, lambda: isinstance(app.screen, RequestDetailScreen), what="the detail screen")
        await pilot.pause()
        shown = assert_nothing_raw(app)
        assert r"first\x1b]0;pwned\x07" in shown and r"second\x1b[2J" in shown  # each on its own line
        await pilot.press("escape")
        await until(pilot, lambda: not isinstance(app.screen, RequestDetailScreen), what="back")
        current(app, MainScreen).open_request("2")
        await until(pilot, lambda: isinstance(app.screen, RequestDetailScreen), what="the error's detail")
        await pilot.pause()
        assert r"failed\u009b2J" in assert_nothing_raw(app)


async def test_a_hostile_wrapper_name_in_the_registry_is_shown_in_the_fleet() -> None:
    entry = WrapperEntry(os.getpid(), WRAPPER, "http://127.0.0.1:9/", "t", "", "", upstream=TOOL)
    app = ConsoleApp(session=WatchSession(StaticFeed(hostile_session(), 4.0), None))
    async with app.run_test(size=SIZE) as pilot:
        await ready(pilot)
        app.push_screen(FleetScreen(lambda: [entry], lambda _: None))
        await until(pilot, lambda: isinstance(app.screen, FleetScreen), what="the fleet")
        await until(pilot, lambda: r"wrap\x1b[2J" in terminal_text(app), what="the wrapper's name, visible")
        assert_nothing_raw(app)


async def test_a_hostile_recording_replays_shown_never_obeyed(tmp_path: Path) -> None:
    from mcpwatch.clock import ManualClock
    from mcpwatch.replay.app import ReplayApp
    from mcpwatch.replay.clock import ReplayClock
    from mcpwatch.replay.engine import ReplayEngine, ThreadIndexer
    from mcpwatch.replay.feed import ReplayFeed
    from mcpwatch.replay.recording import Recording
    from mcpwatch.store import EventWriter

    path = tmp_path / "hostile.db"
    events = hostile_session()
    clock = ManualClock(monotonic=0.0, wall=events[0].ts)
    with EventWriter(path, clock=clock) as writer:
        session_id = writer.start_session(name=WRAPPER, upstream=TOOL, pid=40100, config={})
        for event in events:
            event.session_id = session_id
            writer.emit(event)
        writer.flush()
    recording = Recording(path)
    engine = ReplayEngine(recording, every=4)
    ThreadIndexer(recording, engine.index).run()
    replay_clock = ReplayClock(recording.end_mono, wall=lambda: 1000.0, playing=False)
    app = ReplayApp(ReplayFeed(engine, replay_clock, indexer="none", start_at=recording.end_mono), title=WRAPPER)
    async with app.run_test(size=SIZE) as pilot:
        await until(pilot, lambda: "step" in terminal_text(app) and "model" in terminal_text(app), what="all drawn")
        assert_nothing_raw(app)
        for visible in (r"wrap\x1b[2J", r"tool\x1b[2J", r"step\u009b2J\x07", r"model\x1b]0;"):

            def shows(v: str = visible) -> bool:
                return v in terminal_text(app)

            await until(pilot, shows, what=f"{visible} shown")
        assert_nothing_raw(app)


def test_the_model_is_fed_safe_text_and_a_clean_event_is_not_copied() -> None:
    from mcpwatch.console.headless.wire_text import clean, clean_event

    model = ConsoleModel()
    for event in hostile_session():
        model.apply(event)
    model.seed({"wrapper": {"host": {"name": HOST}, "upstream": {"target": TOOL}}}, 4.0)
    view = model.view(4.0)
    assert not RAW.search(str(view.header.host_name or "") + str(view.header.upstream_target or ""))
    assert view.in_flight[0].message == r"step\u009b2J\x07"
    plain = EventFactory().make(Kind.PROGRESS, 1.0, request_id="1", message="ok", nested={"list": ["a", ("b",)]})
    assert clean_event(plain) is plain
    assert clean({"error": "a\nb\tc\x1b"}) == {"error": "a\nb\tc\\x1b"}  # line ends kept in multi-line texts
    assert clean({"name": "a\nb"}) == {"name": "a\\x0ab"}  # a name is one line
