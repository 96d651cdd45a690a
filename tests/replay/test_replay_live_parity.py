"""What replay shows at T is what the live console showed at T, on a real recording.

A real `mcpwatch wrap` process runs in front of tests/fixtures/raw_server.py, driven by an MCP SDK client: a quick
call, a state-sync invalidation, a call that hits its deadline and answers late (a tombstone drops the late
progress and answer), an operator margin change, and an upstream crash and respawn. Meanwhile the real live console
(`ConsoleApp` following the wrapper's operator event stream) runs headless; at quiet moments the test keeps the
view state its main screen last drew. Once the wrapper has exited, the log it wrote is replayed: seeking to each
kept time must give the same `ViewState`, both from the replay engine and on the replay app's screen after going
there with the `g` dialog.
"""

from __future__ import annotations

import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
import pytest
from replay_helpers import make_feed, ready
from textual.widgets import Input

from mcpwatch import paths
from mcpwatch.console.app import ConsoleApp
from mcpwatch.console.headless.source import Target
from mcpwatch.console.headless.views import RequestDetail, ViewState
from mcpwatch.console.screens.main import MainScreen
from mcpwatch.events import Event
from mcpwatch.operator.client import OperatorClient
from mcpwatch.registry import find_wrapper
from mcpwatch.replay.app import GotoPrompt, ReplayApp
from mcpwatch.store import EventReader

from pilot_tools import current, until
from waiting import patience

pytestmark = [
    pytest.mark.anyio,
    pytest.mark.slow,
]

POLICIES = """
[state_sync]
[[state_sync.policies]]
match = "tasks.update"
invalidates = ["tasks.*", "sprints.*"]
"""
QUIET_S = 0.3  # how long the live console keeps drawing after the awaited event before its view is kept
LIVE_REFRESH_S = 0.2  # the live console draws five times a second (20 cost 0.6 CPU-s more a run, proving no more)


@dataclass(frozen=True)
class Capture:
    what: str
    view: ViewState
    last_seq: int  # the last event the live console had folded when it drew that view
    details: dict[str, RequestDetail | None]  # what its detail screen showed for each request, at that time


async def _capture(pilot: Any, app: ConsoleApp, what: str, condition: Any) -> Capture:
    """Wait until the live main screen shows `condition(view)`, let it draw a few more ticks, keep its view."""

    def drawn() -> ViewState | None:
        screen = app.screen
        return screen.last_view if isinstance(screen, MainScreen) else None

    await until(pilot, lambda: (v := drawn()) is not None and condition(v), timeout=20, what=what)
    await pilot.pause(QUIET_S)
    view = drawn()
    assert view is not None and app.session is not None
    model, t = app.session.model, view.now_mono
    ids = [r.request_id for r in view.requests] + [r.request_id for r in view.in_flight]
    return Capture(what, view, model.last_seq, {rid: model.request_detail(rid, t) for rid in ids})


def _quiet(events: list[Event], capture: Capture) -> None:
    """The capture's precondition, checked on the log: live had folded exactly the events up to its time T."""
    t = capture.view.now_mono
    seen = [e for e in events if e.seq <= capture.last_seq]
    later = [e for e in events if e.seq > capture.last_seq]
    assert seen and max(e.mono for e in seen) <= t, f"{capture.what}: the live console was ahead of its clock"
    assert not later or later[0].mono > t, (
        f"{capture.what}: an event at {later[0].mono} had happened by T={t} but had not reached the live console "
        "yet (the machine was too slow for this capture's quiet window)"
    )


@pytest.mark.slow
async def test_replay_at_t_equals_what_the_live_console_showed_at_t(tmp_path: Path) -> None:
    from wraptools import RAW_SERVER, wrapped_client

    config = tmp_path / "mcpwatch.toml"
    config.write_text(POLICIES)
    env = {"MCPWATCH_TOOL_CALL_DEADLINE_SEC": "3"}
    wrap_args = ["--name", "parity", "--config", str(config)]
    captures: list[Capture] = []
    async with wrapped_client([sys.executable, RAW_SERVER], env=env, wrap_args=wrap_args) as host:
        (entry,) = find_wrapper("parity")
        app = ConsoleApp(target=Target(selector="parity"), refresh_s=LIVE_REFRESH_S)
        async with app.run_test(size=(160, 48)) as pilot:
            await until(pilot, lambda: isinstance(app.screen, MainScreen) and app.screen.last_view is not None)
            assert (await host.call_tool("echo", {"x": 1})).is_error is False
            assert (await host.call_tool("tasks.update", {"id": 7})).is_error is False
            captures.append(
                await _capture(
                    pilot, app, "two calls done", lambda v: v.invalidations and v.requests[0].tool == "tasks.update"
                )
            )

            async def slow() -> None:
                await host.call_tool("sleep", {"seconds": 4, "steps": 2}, progress_callback=_ignore)

            async with anyio.create_task_group() as tg:
                tg.start_soon(slow)
                captures.append(
                    await _capture(
                        pilot, app, "in flight with progress", lambda v: v.in_flight and v.in_flight[0].progress == 1
                    )
                )
                captures.append(
                    await _capture(
                        pilot, app, "deadline hit", lambda v: v.counters.timeouts == 1 and v.tombstones.count == 1
                    )
                )
            captures.append(await _capture(pilot, app, "late answer dropped", lambda v: v.counters.late_dropped == 2))
            async with OperatorClient.for_entry(entry) as op:
                await op.set_margin(25)
            captures.append(await _capture(pilot, app, "margin changed", lambda v: v.deadline.margin_s == 25))
            crashed = await host.call_tool("crash", {"code": 3})
            assert crashed.is_error is True
            captures.append(
                await _capture(
                    pilot,
                    app,
                    "upstream respawned",
                    lambda v: v.header.generation == 2 and v.header.upstream_state == "ready" and v.counters.errors,
                )
            )

    log = paths.default_log_path()
    session_id = entry.session_id
    deadline = time.monotonic() + patience(15)
    while True:  # the wrapper records its session's end as it exits
        with EventReader(log) as reader:
            if reader.session(session_id).ended_at is not None:
                events = list(reader.events(session_id))
                break
        assert time.monotonic() < deadline, "the wrapper did not record the end of its session"
        await anyio.sleep(0.1)
    for capture in captures:
        _quiet(events, capture)

    # The replay engine: seek to each T (out of order, so checkpoints are restored too) and compare.
    feed = make_feed(log, session=session_id, every=8)
    for capture in sorted(captures, key=lambda c: -c.view.now_mono) + captures:
        t = capture.view.now_mono
        assert feed.seek(t)
        assert feed.engine.seq == capture.last_seq, capture.what
        assert feed.model.view(t) == capture.view, capture.what
        assert {rid: feed.model.request_detail(rid, t) for rid in capture.details} == capture.details, capture.what
    late = captures[3]  # the deadline's tombstone took both late drops, on its request's detail too
    (tombstoned,) = [d for d in late.details.values() if d is not None and d.tombstone is not None]
    assert tombstoned.tombstone is not None and tombstoned.tombstone.hits == 2

    # The replay app: go to each T with the dialog; the screen draws the same view.
    app = ReplayApp(feed, refresh_s=0.05)
    async with app.run_test(size=(160, 48)) as pilot:
        await ready(pilot)
        for capture in captures:
            await pilot.press("g")
            await until(pilot, lambda: isinstance(app.screen, GotoPrompt))
            app.screen.query_one(Input).value = repr(capture.view.now_mono)
            await pilot.press("enter")
            await until(pilot, lambda: isinstance(app.screen, MainScreen))

            def showing(c: Capture = capture) -> bool:
                return current(app, MainScreen).last_view == c.view

            await until(
                pilot,
                showing,
                timeout=5,
                what=f"the replay screen at {capture.what}",
            )
    feed.close()


async def _ignore(progress: float, total: float | None, message: str | None) -> None:
    return None


@pytest.mark.slow
async def test_a_council_session_replays_as_it_was_watched(tmp_path: Path) -> None:
    # The reference server behind the wrapper: tiers from the health check, per-model progress of a run, the
    # council's own partial answer under a short deadline. Live and replay must agree at each captured time.
    from checkout import mcpwatch_cmd
    from wraptools import wrapped_client

    council = mcpwatch_cmd("council", "--scenario", "default", "--time-scale", "0.02")
    env = {"MCPWATCH_HOST_TOOLS_CALL_TIMEOUT_SEC": "4", "MCPWATCH_TOOL_CALL_DEADLINE_MARGIN_SEC": "1"}
    captures: list[Capture] = []
    async with wrapped_client(council, env=env, wrap_args=["--name", "council-parity"]) as host:
        (entry,) = find_wrapper("council-parity")
        app = ConsoleApp(target=Target(selector="council-parity"), refresh_s=LIVE_REFRESH_S)
        async with app.run_test(size=(160, 48)) as pilot:
            await until(pilot, lambda: isinstance(app.screen, MainScreen) and app.screen.last_view is not None)
            assert (await host.call_tool("council_health_check", {})).is_error is False
            captures.append(await _capture(pilot, app, "tiers from the health check", lambda v: len(v.tiers) == 4))

            async def consult(confidence: str) -> None:
                arguments = {"query": "Which queue should we use?", "confidence": confidence}
                result = await host.call_tool("consult_council", arguments, progress_callback=_ignore)
                assert result.is_error is False

            await consult("high")  # captured once quiet: while models answer, events never pause long enough
            captures.append(
                await _capture(pilot, app, "run finished", lambda v: v.council is not None and v.council.finished)
            )
            await consult("reasoning")  # 600 s × 0.02 = 12 s: more than the 3 s budget, so the council cuts short
            captures.append(
                await _capture(
                    pilot,
                    app,
                    "partial answer in time",
                    lambda v: not v.in_flight and v.council is not None and v.council.tier == "reasoning",
                )
            )
    view = captures[1].view
    assert view.council is not None and view.council.tier == "high" and len(view.council.models) == 4
    assert {m.status for m in view.council.models} <= {"ok", "timeout", "rate_limited", "auth_error", "error"}
    assert captures[2].view.counters.timeouts == 0  # the council answered inside the budget by itself
    assert {t.tier for t in captures[0].view.tiers} == {"quick", "balanced", "high", "reasoning"}

    log = paths.default_log_path()
    deadline = time.monotonic() + patience(15)
    while True:
        with EventReader(log) as reader:
            if reader.session(entry.session_id).ended_at is not None:
                events = list(reader.events(entry.session_id))
                break
        assert time.monotonic() < deadline, "the wrapper did not record the end of its session"
        await anyio.sleep(0.1)
    for capture in captures:
        _quiet(events, capture)
    assert any(e.kind == "model_status" for e in events)
    assert any(e.kind == "progress" and e.data.get("stage") == 3 for e in events)
    feed = make_feed(log, session=entry.session_id, every=8)
    for capture in sorted(captures, key=lambda c: -c.view.now_mono) + captures:
        assert feed.seek(capture.view.now_mono)
        assert feed.engine.seq == capture.last_seq, capture.what
        assert feed.model.view(capture.view.now_mono) == capture.view, capture.what
    feed.close()
