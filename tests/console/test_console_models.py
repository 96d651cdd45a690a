"""Models: per council model counts, latency and last failure read from a real log; sorting; the screen live and
in replay (snapshots); and disabling a model on a real council behind a real wrapper, through the operator's
`call_upstream`, logged as an operator_call."""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path
from typing import Any

import pytest
from console_helpers import SIZE as MAIN_SIZE
from console_helpers import RecordingControls, council_replay_app, ready
from trends_helpers import ORIGIN, LoggedFeed, Script

from mcpwatch.clock import ManualClock
from mcpwatch.console.app import ConsoleApp
from mcpwatch.console.headless.council_models import ModelLog, enabled_from_list, sort_stats
from mcpwatch.console.headless.session import WatchSession
from mcpwatch.console.headless.source import Target
from mcpwatch.console.screens.models import ModelsScreen
from mcpwatch.console.widgets import Line, WindowTable
from mcpwatch.operator.client import OperatorClient, OperatorRefused
from mcpwatch.registry import find_wrapper
from mcpwatch.store.reader import EventReader

from pilot_tools import until

SIZE = (150, 30)
MODELS = ("openai/gpt-5.1", "anthropic/claude-opus-4.5", "google/gemini-3-pro")
COUNCIL = [sys.executable, "-m", "mcpwatch", "council", "--scenario", "default", "--time-scale", "0.05"]


pytestmark = pytest.mark.usefixtures("utc")  # wall-clock times on screen are local


def council_script() -> Script:
    """Six council runs: gpt answers in 1-6 s, claude times out on run 3, gemini is rate limited on run 5 and hits
    an auth error on run 6; the operator disables gemini after run 6."""
    s = Script().at(0.0, "session_start", data={})
    for run in range(1, 7):
        t = 60.0 * run
        rid = str(run)
        for model in MODELS:
            s.at(t, "model_status", request_id=rid, tool="consult_council", model=model, data={"status": "pending"})
        statuses = {
            "openai/gpt-5.1": ("ok", 1000.0 * run),
            "anthropic/claude-opus-4.5": ("timeout", 45000.0) if run == 3 else ("ok", 2000.0),
            "google/gemini-3-pro": {5: ("rate_limited", 300.0), 6: ("auth_error", None)}.get(run, ("ok", 500.0)),
        }
        for model, (status, latency) in statuses.items():
            s.at(
                t + 1.0,
                "model_status",
                request_id=rid,
                tool="consult_council",
                model=model,
                data={"status": status, "latency_ms": latency},
            )
    s.at(
        400.0,
        "operator_call",
        tool="council.models.disable",
        data={"tool": "council.models.disable", "arguments": json.dumps({"model": "google/gemini-3-pro"}), "ok": True},
    )
    return s


@pytest.fixture
def logged(tmp_path: Path) -> tuple[Path, str]:
    path = tmp_path / "events.db"
    return path, council_script().write(path)


def _read(path: Path, sid: str) -> ModelLog:
    log = ModelLog(str(path), sid)
    with EventReader(path) as reader:
        log.update(reader)
    return log


def test_counts_latency_and_last_failure(logged: tuple[Path, str]) -> None:
    log = _read(*logged)
    stats = {s.model: s for s in log.stats(ORIGIN + 1000.0)}
    gpt, claude, gemini = (stats[m] for m in MODELS)
    assert gpt.counts == {"ok": 6, "timeout": 0, "rate_limited": 0, "auth_error": 0, "error": 0}
    assert gpt.p50_ms == 3000.0 and gpt.p95_ms == 6000.0 and gpt.last_failure is None
    assert claude.counts["timeout"] == 1 and claude.p95_ms == 45000.0
    assert claude.last_failure is not None and claude.last_failure.status == "timeout"
    assert claude.last_failure.request_id == "3" and claude.last_failure.ts == ORIGIN + 181.0
    assert gemini.counts["rate_limited"] == 1 and gemini.counts["auth_error"] == 1 and gemini.failures == 2
    assert gemini.last_failure is not None and gemini.last_failure.status == "auth_error"
    assert gemini.p50_ms == 500.0  # the auth error had no latency
    assert gemini.enabled is False and gpt.enabled is None  # from the operator's logged disable


def test_stats_stop_at_now_and_the_council_says_what_is_enabled(logged: tuple[Path, str]) -> None:
    log = _read(*logged)
    early = {s.model: s for s in log.stats(ORIGIN + 200.0)}  # runs 1-3
    assert early["openai/gpt-5.1"].answers == 3 and early["google/gemini-3-pro"].enabled is None
    listed = enabled_from_list(
        {"models": [{"id": "openai/gpt-5.1", "enabled": True}, {"id": "x-ai/grok-4", "enabled": False}]}
    )
    assert listed == {"openai/gpt-5.1": True, "x-ai/grok-4": False}
    stats = {s.model: s for s in log.stats(ORIGIN + 1000.0, enabled=listed)}
    assert stats["openai/gpt-5.1"].enabled is True
    assert stats["x-ai/grok-4"].enabled is False and stats["x-ai/grok-4"].answers == 0  # listed, never asked
    assert enabled_from_list("not a list") == {}


def test_sorting(logged: tuple[Path, str]) -> None:
    stats = _read(*logged).stats(ORIGIN + 1000.0)
    assert [s.model for s in sort_stats(stats, "model")] == sorted(MODELS)
    assert next(s.model for s in sort_stats(stats, "p95")) == "anthropic/claude-opus-4.5"
    assert next(s.model for s in sort_stats(stats, "failures")) == "google/gemini-3-pro"
    assert [s.model for s in sort_stats(stats, "last failure")][-1] == "openai/gpt-5.1"  # never failed: last
    assert [s.model for s in sort_stats(stats, "model", reverse=True)] == sorted(MODELS, reverse=True)


class CouncilControls(RecordingControls):
    """Recording controls that also answer the council's admin tools like a council would."""

    def __init__(self) -> None:
        super().__init__()
        self.enabled = dict.fromkeys(MODELS, True)

    async def call_upstream(self, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
        self.calls.append((name, arguments))
        if name in ("council.models.disable", "council.models.enable"):
            self.enabled[arguments["model"]] = name.endswith("enable")
        models = [{"id": m, "enabled": on} for m, on in self.enabled.items()]
        return {"tool": name, "ok": True, "result": {"models": models}, "error": None}


def _live_app(path: Path, sid: str, controls: Any = None) -> ConsoleApp:
    now = ORIGIN + 1000.0
    return ConsoleApp(
        session=WatchSession(LoggedFeed(path, sid, now - ORIGIN), controls or CouncilControls(), title="council"),
        clock=ManualClock(monotonic=0.0, wall=now),
    )


async def _models_drawn(pilot: Any) -> None:
    await pilot.pause(0.2)
    await pilot.press("M")
    await until(pilot, lambda: isinstance(pilot.app.screen, ModelsScreen) and pilot.app.screen.shown, what="rows")
    await pilot.pause(0.3)


def test_models_snapshot_live(snap_compare: Any, logged: tuple[Path, str]) -> None:
    assert snap_compare(_live_app(*logged), terminal_size=SIZE, run_before=_models_drawn)


@pytest.mark.slow
def test_models_snapshot_replay(snap_compare: Any, tmp_path: Path) -> None:

    async def open_models(pilot: Any) -> None:
        await _models_drawn(pilot)
        assert pilot.app.screen.check_action("toggle_model", ()) is False  # a recording cannot change a council
        await pilot.press("s", "s", "s")  # sorted by p95
        await pilot.pause(0.3)

    assert snap_compare(council_replay_app(tmp_path), terminal_size=SIZE, run_before=open_models)


# -- against a real council behind a real wrapper ------------------------------------------------------------


@pytest.mark.anyio
@pytest.mark.slow
@pytest.mark.skipif(importlib.util.find_spec("mcpwatch.commands.wrap") is None, reason="no `mcpwatch wrap`")
async def test_disable_a_model_on_a_real_council_from_the_console(tmp_path: Path) -> None:
    from mcpwatch.demo.config import DEMO_TOML

    from wraptools import wrapped_client

    config = tmp_path / "mcpwatch.toml"  # State Sync over the council's admin tools, as the demo sets it
    config.write_text(DEMO_TOML)
    async with wrapped_client(COUNCIL, wrap_args=["--config", str(config), "--name", "models-council"]) as host:
        (entry,) = find_wrapper("models-council")

        async def progress(*_: Any) -> None:  # the council reports each model's answer as progress
            pass

        result = await host.call_tool(
            "consult_council", {"query": "q", "confidence": "quick"}, progress_callback=progress
        )
        assert not result.is_error
        app = ConsoleApp(target=Target(selector="models-council"))
        async with app.run_test(size=MAIN_SIZE) as pilot:
            await ready(pilot)
            await pilot.press("M")
            await until(pilot, lambda: isinstance(app.screen, ModelsScreen) and app.screen.enabled, what="roster")
            screen = app.screen
            assert isinstance(screen, ModelsScreen)
            await until(pilot, lambda: any(s.answers for s in screen.shown), what="answers from the log")
            table = screen.query_one(WindowTable)
            table.focus()
            await pilot.pause(0.5)
            chosen = screen.selected_model()
            assert chosen is not None and chosen.enabled is True
            await pilot.press("x")
            await pilot.pause(0.3)
            await pilot.press("y")
            await until(
                pilot,
                lambda: (screen.enabled or {}).get(chosen.model) is False,
                what="the model disabled",
            )
            async with OperatorClient.for_entry(entry) as op:
                listed = await op.call_upstream("council.models.list")
                assert enabled_from_list(listed["result"])[chosen.model] is False
                with pytest.raises(OperatorRefused, match="name must be a tool name"):
                    await op.call("call_upstream", {"name": ""})

            # Logged as the operator's action (the writer commits it a moment after the answer), and the host was
            # told its cached model list is stale.
            def logged() -> list[Any]:
                with EventReader(entry.log_path) as reader:
                    return list(reader.events(entry.session_id, kinds=["operator_call", "invalidation"]))

            await until(
                pilot,
                lambda: (
                    {"operator_call", "invalidation"}
                    <= {e.kind for e in logged() if e.tool == "council.models.disable"}
                ),
                what="the operator's call and the invalidation in the log",
            )
            calls = logged()
            disable = [e for e in calls if e.kind == "operator_call" and e.tool == "council.models.disable"]
            assert len(disable) == 1 and disable[0].data["ok"] is True
            assert json.loads(disable[0].data["arguments"]) == {"model": chosen.model}
            assert any(e.kind == "invalidation" and e.tool == "council.models.disable" for e in calls)
            # And back: enabled again through the same key.
            await pilot.press("x")
            await pilot.pause(0.3)
            await pilot.press("y")
            await until(
                pilot,
                lambda: (screen.enabled or {}).get(chosen.model) is True,
                what="the model enabled again",
            )


def _visible_through(table: WindowTable, label: str) -> bool:
    """Whether the column `label` ends within the table's visible width (unscrolled)."""
    right = 0
    for column in table.ordered_columns:
        right += column.get_render_width(table)
        if str(column.label) == label:
            return right <= table.scrollable_content_region.width
    raise AssertionError(f"no column {label!r}")


@pytest.mark.anyio
async def test_models_p95_shows_the_other_columns_scroll_sideways_and_x_disables_after_asking(
    logged: tuple[Path, str],
) -> None:
    """Models cut its columns at 80 (p50 and p95 off screen) and still cut p95 at 120, with no way sideways.
    One app: drawn at 120 columns, then the terminal narrowed to 80, then widened to 150 for `x`."""
    controls = CouncilControls()
    app = _live_app(*logged, controls)
    async with app.run_test(size=(120, 40)) as pilot:
        await _models_drawn(pilot)
        table = app.screen.query_one(WindowTable)
        assert _visible_through(table, "p50") and _visible_through(table, "p95")
        await pilot.resize_terminal(80, 24)
        await until(pilot, lambda: app.screen.size.width == 80, what="the screen narrowed")
        await pilot.pause()
        assert _visible_through(table, "p50") and _visible_through(table, "p95")
        await until(pilot, lambda: table.cut, what="columns beyond the edge")
        note = app.screen.query_one("#models-note", Line).plain
        assert "← → scroll to the other columns" in note
        table.focus()
        await pilot.press("right")
        await until(pilot, lambda: table.scroll_x > 0, what="a sideways scroll")
        await pilot.pause()
        first = str(table.get_row_at(0)[0]).strip()
        shown = "".join(segment.text for segment in table.render_line(1))  # the first row, scrolled
        assert first and first[:20] in shown  # the model's name stays; only the other columns scroll
        await pilot.press("left")
        await until(pilot, lambda: table.scroll_x == 0, what="back to the first column")

        # back to 150 columns: x disables the selected model, after asking
        await pilot.resize_terminal(*SIZE)
        await until(pilot, lambda: app.screen.size.width == SIZE[0], what="the screen widened")
        await pilot.pause()
        screen = app.screen
        assert isinstance(screen, ModelsScreen)
        assert ("council.models.list", {}) in controls.calls
        table = screen.query_one(WindowTable)
        table.focus()
        await pilot.press("down")  # anthropic, google, openai: the second row
        await pilot.pause(0.5)
        selected = screen.selected_model()
        assert selected is not None and selected.model == "google/gemini-3-pro"
        await pilot.press("x")
        await pilot.pause(0.2)
        await pilot.press("n")  # no: nothing is sent
        assert not any(name == "council.models.disable" for name, _ in controls.calls)
        await pilot.press("x")
        await pilot.pause(0.2)
        await pilot.press("y")
        await until(pilot, lambda: ("council.models.disable", {"model": "google/gemini-3-pro"}) in controls.calls)
        await until(pilot, lambda: screen.enabled == {**dict.fromkeys(MODELS, True), "google/gemini-3-pro": False})
