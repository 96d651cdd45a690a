"""Late results end to end with a real slow server: cut at 0.5 s, it answers at 1.5 s; the log keeps the answer,
report and whatif read it, and a reuse policy (only then) answers the next identical call with it. That a State
Sync mutation's late result is never reused, and every other rule of reuse, is the core's
(tests/unit/test_late_results.py)."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
import time
from pathlib import Path

import pytest
from clirun import run_cli

from mcpwatch.events import payload_problems
from mcpwatch.store import EventReader

from pilot_tools import current
from waiting import patience
from wraptools import RAW_SERVER, Operator, registry_entry, wrapped_client

pytestmark = pytest.mark.anyio
BUDGET_HALF_S = {"MCPWATCH_HOST_TOOLS_CALL_TIMEOUT_SEC": "1.5", "MCPWATCH_TOOL_CALL_DEADLINE_MARGIN_SEC": "1"}
SLOW = {"seconds": 1.5, "steps": 1}  # the raw server ignores cancellation and answers at 1.5 s


async def wait_for_late_results(operator: Operator, count: int, timeout: float = 20.0) -> dict:
    deadline = time.monotonic() + patience(timeout)
    while True:
        status = await operator.tool("status")
        if status["counters"]["late_results"] >= count or time.monotonic() > deadline:
            return status
        await asyncio.sleep(0.1)


async def cut_call(client, arguments: dict) -> float:
    started = time.monotonic()
    result = await client.call_tool("sleep", arguments)
    elapsed = time.monotonic() - started
    assert result.is_error is True and "deadline budget of 0.5 s" in result.content[0].text
    return elapsed


def run(*args: str) -> subprocess.CompletedProcess[str]:
    return run_cli(*args)


@pytest.mark.slow
async def test_the_late_result_is_kept_and_read_by_report_and_whatif(isolated_state: Path) -> None:
    async with wrapped_client([sys.executable, RAW_SERVER], env=BUDGET_HALF_S) as client:
        operator = Operator(registry_entry(isolated_state))
        assert await cut_call(client, SLOW) >= 0.45  # never early; how late is the machine's load
        status = await wait_for_late_results(operator, 1)
        assert status["counters"]["late_results"] == 1 and status["counters"]["late_reused"] == 0
        # without a reuse policy the identical call goes to the server again (and is cut again)
        await cut_call(client, SLOW)
    log = isolated_state / "events.db"
    with EventReader(log) as reader:
        session = reader.latest_session()
        late = list(reader.events(session.id, kinds=["late_result"]))
        reuses = list(reader.events(session.id, kinds=["late_reuse"]))
    assert not reuses
    first = late[0]
    assert first.tool == "sleep" and first.data["outcome"] == "ok" and first.data["reason"] == "deadline"
    # cut at the 0.5 s budget, answered after the server's 1.5 s sleep (lower bounds: timers never fire early)
    assert first.data["cut_after_s"] >= 0.45 and first.data["duration_s"] >= 1.4
    assert first.data["delay_s"] == pytest.approx(first.data["duration_s"] - first.data["cut_after_s"], abs=1e-5)
    assert first.data["result"]["content"] == [{"type": "text", "text": "slept 1.5"}]
    assert first.data["size_bytes"] == len(json.dumps(first.data["result"], separators=(",", ":")))

    report = run("report", str(log), "--json")
    assert report.returncode == 0, report.stderr
    (row,) = json.loads(report.stdout)["finished_late"]
    assert (row["tool"], row["cut"], row["finished_late"]) == ("sleep", 2, len(late))
    assert row["p50_delay_s"] == sorted(e.data["delay_s"] for e in late)[0]
    text = run("report", str(log))
    assert "finished late" in text.stdout and "sleep: " in text.stdout

    whatif = run("whatif", str(log), "--budget", "4", "--json")
    assert whatif.returncode == 0, whatif.stderr
    figures = json.loads(whatif.stdout)
    assert (figures["calls"], figures["cut_now"], figures["saved"]) == (2, 2, len(late))
    assert figures["per_tool"]["sleep"]["saved"] == len(late)
    assert figures["budget_to_save"]["p50"] == pytest.approx(min(e.data["duration_s"] for e in late))
    assert first.request_id is not None  # a late result names its request
    await replay_shows_the_late_result(log, first.request_id)


async def replay_shows_the_late_result(log: Path, request_id: str) -> None:
    """`mcpwatch replay` over the log: a late-result marker on the timeline, and the late answer in the detail."""
    from mcpwatch.console.screens.detail import RequestDetailScreen
    from mcpwatch.console.widgets import Line
    from mcpwatch.replay.app import ReplayApp, ReplayMainScreen
    from mcpwatch.replay.clock import ReplayClock
    from mcpwatch.replay.engine import ReplayEngine, ThreadIndexer
    from mcpwatch.replay.feed import ReplayFeed
    from mcpwatch.replay.recording import Recording

    recording = Recording(log)
    markers = [m for m in recording.markers() if m.kind == "late_result"]
    assert markers and markers[0].request_id == request_id and "finished late (ok)" in markers[0].text
    engine = ReplayEngine(recording, every=50)
    ThreadIndexer(recording, engine.index).run()
    feed = ReplayFeed(engine, ReplayClock(recording.end_mono, playing=False), indexer="none", start_at=0.0)
    feed.seek(recording.end_mono)
    app = ReplayApp(feed, refresh_s=0.05)
    async with app.run_test(size=(160, 48)) as pilot:
        for _ in range(200):
            if isinstance(app.screen, ReplayMainScreen) and app.screen.last_view is not None:
                break
            await pilot.pause(0.02)
        assert "↪" in app.screen.query_one("#timeline", Line).plain
        current(app, ReplayMainScreen).open_request(request_id)
        for _ in range(200):
            screen = app.screen
            found = list(screen.query("#result").results(Line)) if isinstance(screen, RequestDetailScreen) else []
            if found and "finished late" in found[0].plain:
                break
            await pilot.pause(0.02)
        words = " ".join(app.screen.query_one("#result", Line).plain.split())
        assert "finished late (ok)" in words and "slept 1.5" in words
        await pilot.press("escape", "q")


@pytest.mark.slow
async def test_a_reuse_policy_answers_the_next_identical_call_at_once(isolated_state: Path, tmp_path: Path) -> None:
    config = tmp_path / "mcpwatch.toml"
    config.write_text('[[late_results.reuse]]\nmatch = "sleep"\nttl_s = 60\n')
    async with wrapped_client(
        [sys.executable, RAW_SERVER], env=BUDGET_HALF_S, wrap_args=["--config", str(config)]
    ) as client:
        operator = Operator(registry_entry(isolated_state))
        await cut_call(client, SLOW)
        await wait_for_late_results(operator, 1)
        reused = await client.call_tool("sleep", {"steps": 1, "seconds": 1.5})
        assert reused.is_error is False  # not sent upstream again: that would be cut at the 0.5 s budget
        note, answer = reused.content
        meta = reused.meta["dev.mcpwatch/late_result"]
        assert meta["ttl_s"] == 60 and meta["delay_s"] > 0
        delay = f"{meta['delay_s']:.1f}".removesuffix(".0")
        assert note.text.startswith(
            f"[mcpwatch: result of an identical call that finished {delay} s after its deadline"
        )
        assert answer.text == "slept 1.5"
        # once only: the next identical call goes upstream again; other arguments never matched
        await cut_call(client, SLOW)
        await cut_call(client, {**SLOW, "other": True})
        status = await operator.tool("status")
        assert status["counters"]["late_reused"] == 1
    with EventReader(isolated_state / "events.db") as reader:
        session = reader.latest_session().id
        (reuse,) = reader.events(session, kinds=["late_reuse"])
        logged = list(reader.events(session))
    assert reuse.data["from_request_id"] is not None and reuse.tool == "sleep"
    mine = ("late_result", "late_reuse", "request_start", "request_end", "tombstone_hit")
    for event in (e for e in logged if e.kind in mine):  # the late ones and the reused call's, as their types say
        assert payload_problems(event.kind, event.data) == [], (event.kind, event.data)
