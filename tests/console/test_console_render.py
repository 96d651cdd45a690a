"""The panels' renderables at a given width, as plain text: what an operator reads (pure Rich, no app)."""

from __future__ import annotations

import io
import json

from rich.console import Console, RenderableType

from mcpwatch.console.headless import render_detail
from mcpwatch.console.headless.model import ConsoleModel
from mcpwatch.console.headless.panels.council import council_panel
from mcpwatch.console.headless.panels.counters import Counters, counters_panel
from mcpwatch.console.headless.panels.deadline import DeadlineView
from mcpwatch.console.headless.panels.header import top_bar
from mcpwatch.console.headless.panels.health import HealthView, health_panel
from mcpwatch.console.headless.panels.invalidations import InvalidationView, invalidations_panel
from mcpwatch.console.headless.panels.requests import RequestView, request_row
from mcpwatch.console.headless.panels.tiers import TierView, tiers_panel
from mcpwatch.console.headless.render_base import Palette
from mcpwatch.events import Kind
from mcpwatch.replay.timeline import Position, status_line
from mcpwatch.testing.sample import EventFactory, session_start

P = Palette({})


def text(renderable: RenderableType, width: int) -> str:
    out = io.StringIO()
    Console(file=out, width=width, color_system=None, legacy_windows=False).print(renderable)
    return out.getvalue()


def test_narrow_tier_panel_keeps_totals_and_flags() -> None:
    tiers = (
        TierView("balanced", 90.0, 45.0, (), False),
        TierView("reasoning", 600.0, 300.0, (), True),
    )
    shown = text(tiers_panel(tiers, DeadlineView(known=True, budget_s=50.0), P), 18)
    assert "90s" in shown and "600s" in shown and "⚠" in shown and "✓" in shown


def test_narrow_counters_keep_every_number() -> None:
    counters = Counters(requests=1234, ok=1100, errors=12, timeouts=7, cancelled=3, late_dropped=5)
    shown = text(counters_panel(counters, P), 18)
    for number in ("1,234", "1,100", "12", "7", "3", "5"):
        assert number in shown, (number, shown)


def test_invalidation_patterns_wrap_rather_than_being_cut() -> None:
    item = InvalidationView(1.0, 0.0, "council.models.enable", ("council.models.*", "council.chairman.*", "tiers.*"))
    shown = text(invalidations_panel((item,), None, P), 60)
    assert "council.chairman.*" in shown and "tiers.*" in shown


def test_a_long_tool_name_is_cut_with_an_ellipsis() -> None:
    row = RequestView("7", "tools/call", "council.models.enable", 0.0, 1.0, "ok", 1.0, False, None)
    cells = request_row(row, None, P, tool_width=20)
    assert cells[2].plain == "council.models.enab…"
    assert request_row(row, None, P, tool_width=30)[2].plain == "council.models.enable"


def test_a_disconnected_top_bar_does_not_vouch_for_the_upstream() -> None:
    f = EventFactory()
    model = ConsoleModel()
    model.apply(session_start(f))
    model.apply(f.make(Kind.UPSTREAM_STATE, 0.4, state="ready", generation=1))
    header = model.view(1.0).header
    assert "● ready" in top_bar(header, "live", True, False, P).plain
    lost = top_bar(header, "disconnected", False, False, P).plain
    assert "● ready" not in lost and "ready? (last known)" in lost


def test_health_panel_says_not_ready_and_shows_a_host_checks_time() -> None:
    not_ready = HealthView(ok=True, ping_ms=2.9, error="the upstream has not been initialised", at_mono=1.0)
    shown = text(health_panel(not_ready, P), 70)
    assert "not ready" in shown and "✓ ok" not in shown
    host = HealthView(ok=True, ping_ms=None, latency_ms=2900.0, source="host", at_mono=1.0, tool="council_health")
    shown = text(health_panel(host, P), 70)
    assert "2.9s" in shown and "host" in shown and "ping" not in shown


def test_council_rows_are_against_the_effective_cap() -> None:
    f = EventFactory()
    model = ConsoleModel()
    model.apply(session_start(f))
    model.apply(f.make(Kind.REQUEST_START, 1.0, request_id="13", tool="consult_council", budget_s=25.0))
    mini = "openai/gpt-4o-mini"
    model.apply(f.make(Kind.MODEL_STATUS, 1.0, request_id="13", model=mini, status="pending", per_model_s=120))
    model.apply(f.make(Kind.MODEL_STATUS, 3.9, request_id="13", model=mini, status="ok", latency_ms=2900))
    shown = text(council_panel(model.view(5.0).council, P), 80)
    assert "2.9s/25s" in shown and "2.9s/120s" not in shown
    assert "per-model cap 120s" in shown and "25s budget" in shown


def test_a_result_whose_text_is_json_is_shown_parsed() -> None:
    inner = {"synthesis": "Shard by tenant.\nThen by month.", "models": {"a": "ok"}}
    preview = json.dumps({"content": [{"type": "text", "text": json.dumps(inner)}], "isError": False})
    shown = text(render_detail.result_panel(preview, P), 80)
    # A string's line breaks are shown as line breaks, never as a literal \n.
    assert '"synthesis": "Shard by tenant.\n     Then by month."' in shown
    assert "\\n" not in shown
    assert '  "models": {' in shown  # indented
    assert '\\"' not in shown and '{"content"' not in shown


def test_a_plain_text_result_is_shown_as_text() -> None:
    preview = json.dumps({"content": [{"type": "text", "text": "line one\nline two"}]})
    assert text(render_detail.result_panel(preview, P), 80).splitlines()[:2] == ["line one", "line two"]


def test_the_answer_mcpwatch_sent_for_a_deadline_is_shown_as_its_text() -> None:
    reply = {
        "jsonrpc": "2.0",
        "id": 4,
        "result": {"content": [{"type": "text", "text": "consult_council ran out of its 25s budget"}], "isError": True},
    }
    shown = text(render_detail.result_panel(json.dumps(reply), P), 80)
    assert "consult_council ran out of its 25s budget" in shown and "isError" in shown and "jsonrpc" not in shown


def test_a_result_cut_at_4_kib_still_shows_its_beginning_as_text() -> None:
    full = json.dumps({"content": [{"type": "text", "text": 'first line\nsecond "quoted" line ' + "x" * 5000}]})
    cut = full[:4095] + "…"
    shown = text(render_detail.result_panel(cut, P), 200)
    assert shown.startswith('first line\nsecond "quoted" line') and "cut: the log keeps 4 KiB" in shown


def test_the_compact_replay_status_line_keeps_the_counts() -> None:
    pos = Position(164.5, 236.4, False, 1.0, 2015, 3000, None)
    counts = {"deadline": 2, "late_drop": 1, "error": 13, "config": 3}
    line = status_line(pos, counts, P, compact=True)
    assert line.cell_len <= 60
    for part in ("◷2", "↩1", "✗13", "◆3", "#2,015"):
        assert part in line.plain
