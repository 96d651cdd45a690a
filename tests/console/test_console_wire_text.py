"""Nothing a host or upstream sends is read as markup in the console: request ids, tool names, messages and errors
that look like Rich/Textual markup (`[/x]`, `[bold]…[/`) are shown as the text they are, on every screen, in every
title, dialog and notification. A real wrapper between a raw host and a real upstream; the console drives it."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from console_helpers import SIZE, ready

from mcpwatch.console.app import ConsoleApp
from mcpwatch.console.headless.source import Target
from mcpwatch.console.screens.detail import RequestDetailScreen
from mcpwatch.console.screens.main import MainScreen
from mcpwatch.console.screens.modals import Confirm
from mcpwatch.console.widgets import WindowTable
from mcpwatch.registry import find_wrapper

from checkout import REPO
from pilot_tools import current, screen_text, until
from waiting import patience

pytestmark = pytest.mark.anyio

RAW_SERVER = str(REPO / "tests" / "fixtures" / "raw_server.py")
HOSTILE_ID = "[/x]"
HOSTILE_TOOL = "[bold red]boom[/"


def send(process: subprocess.Popen[bytes], message: dict) -> None:
    assert process.stdin is not None
    process.stdin.write(json.dumps(message).encode() + b"\n")
    process.stdin.flush()


def start_host_and_wrapper(name: str) -> subprocess.Popen[bytes]:
    wrapper = subprocess.Popen(
        [sys.executable, "-m", "mcpwatch", "wrap", "--name", name, "--no-log", "--", sys.executable, RAW_SERVER],
        stdin=subprocess.PIPE,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        cwd=REPO,
    )
    params = {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "[i]host[/i", "version": "1"}}
    send(wrapper, {"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": params})
    send(wrapper, {"jsonrpc": "2.0", "method": "notifications/initialized"})
    deadline = time.monotonic() + patience(20)
    while not find_wrapper(name):
        assert time.monotonic() < deadline, "the wrapper did not register"
        time.sleep(0.05)
    return wrapper


def titles(app: ConsoleApp) -> str:
    """The border titles on screen as the text they show (`border_title` gives them back as markup)."""
    shown = (getattr(w, "_border_title", None) for w in app.screen.query("*"))
    return "\n".join(t.plain for t in shown if t is not None)


async def test_a_host_chosen_id_and_tool_that_look_like_markup_open_and_cancel(tmp_path: Path) -> None:
    wrapper = start_host_and_wrapper("markup")
    try:
        send(wrapper, {"jsonrpc": "2.0", "id": "[b]7[/b]", "method": "tools/call", "params": {"name": HOSTILE_TOOL}})
        sleep = {"name": "sleep", "arguments": {"seconds": 60, "steps": 60}, "_meta": {"progressToken": "[/p]"}}
        send(wrapper, {"jsonrpc": "2.0", "id": HOSTILE_ID, "method": "tools/call", "params": sleep})
        app = ConsoleApp(target=Target(selector="markup"))
        async with app.run_test(size=SIZE) as pilot:
            await ready(pilot)
            inflight = app.screen.query_one("#inflight", WindowTable)
            await until(pilot, lambda: inflight.selected_key == HOSTILE_ID, timeout=20, what="the call in flight")
            await until(pilot, lambda: HOSTILE_TOOL in screen_text(app), what="the hostile tool name, as text")
            inflight.focus()
            await pilot.press("enter")
            await until(pilot, lambda: isinstance(app.screen, RequestDetailScreen), what="the detail screen")
            await until(pilot, lambda: f"Request #{HOSTILE_ID}" in titles(app), what="the detail's title")
            await pilot.press("c")
            await until(pilot, lambda: isinstance(app.screen, Confirm), what="the cancel dialog")
            dialog_text = " ".join(str(w.render()) for w in app.screen.query("Label, Static"))
            assert f"#{HOSTILE_ID}" in dialog_text
            await pilot.press("y")
            await until(pilot, lambda: not isinstance(app.screen, Confirm), what="the dialog to close")
            await until(
                pilot,
                lambda: any(f"cancelled #{HOSTILE_ID}" in str(n.message) for n in app._notifications),
                what="the cancel notification",
            )
            await until(pilot, lambda: "cancelled" in screen_text(app), what="the call shown cancelled")
            await pilot.press("escape")
            await pilot.pause()
            assert app.is_running  # no MarkupError anywhere on the way
    finally:
        wrapper.kill()
        wrapper.wait(10)


WIRE_KEYS = {"message", "error", "tool", "name", "reason", "caused_by", "patterns", "text", "model", "status_text"}
TRAP = "[/x]"


def _trap(value: object, key: str | None = None) -> object:
    """Every string a host or upstream chose, prefixed with a closing tag that matches nothing."""
    if isinstance(value, str) and key in WIRE_KEYS:
        return TRAP + value
    if isinstance(value, dict):
        return {k: _trap(v, k if k in WIRE_KEYS else key if key == "patterns" else k) for k, v in value.items()}
    if isinstance(value, list) and key in WIRE_KEYS:
        return [TRAP + v if isinstance(v, str) else v for v in value]
    if isinstance(value, list):
        return [_trap(v, key) for v in value]
    return value


def _trapped_data(data: dict[str, Any]) -> dict[str, Any]:
    """An event's data, trapped: `_trap` rebuilds a dict key by key, so a dict comes back."""
    trapped = _trap(data)
    assert isinstance(trapped, dict)
    return trapped


def trapped_session() -> list:
    from mcpwatch.events import Event
    from mcpwatch.testing.sample import sample_session

    out = []
    for e in sample_session():
        out.append(
            Event(
                e.kind,
                e.session_id,
                e.ts,
                e.mono,
                e.seq,
                None if e.request_id is None else TRAP + e.request_id,
                None if e.tool is None else TRAP + e.tool,
                e.model,  # model ids key the council's structured state; their names are trapped in the data
                _trapped_data(e.data),
            )
        )
    return out


@pytest.mark.slow
async def test_every_screen_shows_wire_text_that_looks_like_markup_as_text() -> None:
    from console_helpers import RecordingControls, sample_app

    from mcpwatch.console.screens.help import HelpScreen

    events = trapped_session()
    app = sample_app(controls=RecordingControls(), events=events)
    async with app.run_test(size=SIZE) as pilot:
        await ready(pilot)
        assert TRAP in screen_text(app) and app.tick_errors == 0
        request_ids = sorted({e.request_id for e in events if e.request_id})
        assert len(request_ids) > 3
        session = app.session
        assert session is not None  # sample_app watches a session of its own
        for request_id in request_ids:
            if session.model.request_detail(request_id, session.now()) is None:
                continue  # not a request the console keeps (a notification's id)
            current(app, MainScreen).open_request(request_id)
            await until(pilot, lambda: isinstance(app.screen, RequestDetailScreen), what="the detail")
            await pilot.pause()
            assert f"Request #{request_id}" in titles(app), titles(app)
            await pilot.press("escape")
            await until(pilot, lambda: not isinstance(app.screen, RequestDetailScreen), what="back to the main screen")
        await pilot.press("slash")
        await pilot.press(*"[/x]")
        await pilot.press("enter")
        await pilot.pause(0.2)
        assert "matching '[/x]'" in titles(app)
        await pilot.press("question_mark")
        await until(pilot, lambda: isinstance(app.screen, HelpScreen), what="help")
        await pilot.press("escape")
        await pilot.pause(0.2)
        assert app.tick_errors == 0 and app.is_running
