"""The pure pieces behind the log commands: report figures, ages, durations, export records."""

from __future__ import annotations

import json
import math

import pytest

from mcpwatch.events import Event
from mcpwatch.logview.export import COLUMNS, csv_row, export_record
from mcpwatch.logview.report import build_report, percentile, tier_fit
from mcpwatch.logview.units import format_duration, parse_age, session_duration


def ev(kind: str, seq: int, *, rid: str | None = None, tool: str | None = None, model: str | None = None, **data):
    return Event(kind, "s", 1000.0 + seq, float(seq), seq, rid, tool, model, data)


def test_percentile_is_nearest_rank() -> None:
    values = [float(v) for v in range(1, 101)]
    assert percentile(values, 0.5) == 50.0
    assert percentile(values, 0.95) == 95.0
    assert percentile(list(reversed(values)), 0.95) == 95.0
    assert percentile([7.0], 0.95) == 7.0
    assert percentile([3.0, 1.0], 0.5) == 1.0
    assert percentile([], 0.5) is None


@pytest.mark.parametrize(
    ("text", "seconds"),
    [
        ("90s", 90.0),
        ("15m", 900.0),
        ("12h", 43200.0),
        ("7d", 604800.0),
        ("1.5h", 5400.0),
        ("2D", 172800.0),
        ("2w", 1209600.0),
    ],
)
def test_parse_age(text: str, seconds: float) -> None:
    assert parse_age(text) == seconds


@pytest.mark.parametrize("text", ["", "d", "7x", "-1d", "1 week", "nan", "inf", "1e999d", "7dd"])
def test_parse_age_refuses(text: str) -> None:
    with pytest.raises(ValueError, match="age"):
        parse_age(text)


@pytest.mark.parametrize(("text", "hint"), [("7", "7d"), (" 90 ", "90d"), ("1.5", "1.5d")])
def test_parse_age_refuses_a_bare_number_and_suggests_a_unit(text: str, hint: str) -> None:
    """`--older-than=7` once meant 7 seconds and pruned everything; a number without a unit is now refused."""
    with pytest.raises(ValueError, match=f"did you mean {hint}") as caught:
        parse_age(text)
    assert "\n" not in str(caught.value)


def test_format_duration() -> None:
    assert [format_duration(v) for v in (0.42, 8.299, 45.25, 185, 7380, 93600)] == [
        "420ms",
        "8.30s",
        "45.2s",
        "3m 05s",
        "2h 03m",
        "1d 02h",
    ]
    assert format_duration(None) == format_duration(math.nan) == "-"


def test_format_duration_below_a_second_is_in_ms_and_rounding_never_crosses_a_unit() -> None:
    """A 3 ms call used to read `0.00s`; and 0.9996 s must not read `1000ms`, nor 59.96 s `60.0s`."""
    cases = {
        0: "0ms",
        0.0004: "0.4ms",
        0.003: "3ms",
        0.9996: "1.00s",
        0.99949: "999ms",
        9.996: "10.0s",
        59.96: "1m 00s",
    }
    assert {v: format_duration(v) for v in cases} == cases


def test_session_duration_is_one_format_for_every_state() -> None:
    assert session_duration(330.0, "ended") == "5m 30s"
    assert session_duration(723.0, "crashed") == "12m 03s (crashed)"
    assert session_duration(0.04, "running") == "running"  # an idle live wrapper is not "40ms long"


def test_requests_are_attributed_to_tools_by_request_id() -> None:
    events = [
        ev("request_start", 1, rid="1", tool="a", method="tools/call", up_id=1),
        ev("request_start", 2, rid="2", tool="b", method="tools/call", up_id=2),
        ev("request_end", 3, rid="2", outcome="error", duration_s=0.5),  # no tool on the end event
        ev("request_end", 4, rid="1", outcome="deadline", duration_s=30.0),
        ev("tombstone_hit", 5, up_id=1, what="response", age_s=1.0),  # found through up_id
        ev("tombstone_hit", 6, up_id="1", what="progress", age_s=1.1),  # ids compared as text
        ev("tombstone_hit", 7, up_id=99, what="response", age_s=1.0),
        ev("request_start", 8, rid="1", tool="a", method="tools/call", up_id=3),  # host id reused
        ev("request_end", 9, rid="1", outcome="ok", duration_s=2.0),
    ]
    report = build_report(events)
    tools = {t["tool"]: t for t in report["tools"]}
    assert (tools["a"]["calls"], tools["a"]["ok"], tools["a"]["deadlines"], tools["a"]["late_drops"]) == (2, 1, 1, 2)
    assert (tools["a"]["p50_s"], tools["a"]["max_s"]) == (2.0, 30.0)
    assert (tools["b"]["errors"], tools["b"]["unfinished"]) == (1, 0)
    assert tools["(unknown)"]["late_drops"] == 1
    assert report["requests"]["unfinished"] == 0


def test_model_statuses_count_final_states_once() -> None:
    events = [
        ev("model_status", 1, rid="1", model="m", stage=1, status="pending", latency_ms=None),
        ev("model_status", 2, rid="1", model="m", stage=1, status="ok", latency_ms=100),
        ev("model_status", 3, rid="1", model="m", stage=1, status="ok", latency_ms=100),  # repeated update
        ev("model_status", 4, rid="1", model="m", stage=2, status="auth_error", latency_ms=5),
        ev("model_status", 5, rid="2", model="m", stage=1, status="weird", latency_ms=7),
    ]
    (m,) = build_report(events)["models"]
    assert (m["calls"], m["ok"], m["auth_errors"], m["errors"]) == (3, 1, 1, 1)
    assert (m["p50_ms"], m["max_ms"]) == (7.0, 100.0)
    assert (m["p50_s"], m["max_s"]) == (0.007, 0.1)  # the same unit as the tools' p50_s, for --json readers


def test_tier_fit_uses_the_host_timeout_when_the_budget_is_disabled() -> None:
    tiers = {"quick": {"total_s": 30}, "high": {"total_s": 180}, "odd": "?"}
    fit = tier_fit(tiers, {"budget_s": None, "host_timeout_s": 120})
    assert fit["budget_s"] == 120 and "host timeout" in fit["basis"]
    assert fit["not_fitting"] == ["high"]
    assert {i["tier"]: i["fits"] for i in fit["items"]} == {"quick": True, "high": False, "odd": None}
    assert tier_fit(tiers, None)["not_fitting"] == []


def test_health_result_as_json_text_and_latest_deadline() -> None:
    tiers = {"balanced": {"total_s": 90, "per_model_s": 45}}
    events = [
        ev("session_start", 1, deadline={"budget_s": 110, "host_timeout_s": 120}),
        ev("health_check", 2, ok=True, result=json.dumps({"tiers": tiers})),
        ev("config_change", 3, key="explicit_s", old=None, new=60, source="operator", deadline={"budget_s": 60}),
        ev("health_check", 4, ok=False, error="timeout"),  # no tiers: the earlier result still stands
    ]
    report = build_report(events)
    assert report["tiers"]["not_fitting"] == ["balanced"]
    assert report["tiers"]["items"][0]["over_by_s"] == 33  # 90 s and the 3 s the council keeps to deliver, over 60
    assert report["deadline"]["initial"]["budget_s"] == 110 and report["deadline"]["final"]["budget_s"] == 60
    assert [c["key"] for c in report["config_changes"]] == ["explicit_s"]


def test_export_record_names_and_csv_row() -> None:
    end = Event("request_end", "sess", 1.0, 0.5, 3, "7", "t", None, {"outcome": "tool_error", "duration_s": 1.0})
    record = export_record(end)
    assert (record["mcp.session.id"], record["jsonrpc.request.id"], record["error.type"]) == ("sess", "7", "tool_error")
    assert record["mcp.method.name"] is None
    start = export_record(Event("request_start", "sess", 1.0, 0.5, 2, "7", "t", None, {"method": "tools/call"}))
    assert start["mcp.method.name"] == "tools/call" and start["error.type"] is None
    row = csv_row(record)
    assert len(row) == len(COLUMNS)
    assert json.loads(row[COLUMNS.index("data")]) == end.data
    assert row[COLUMNS.index("model")] == ""


def test_a_late_results_outcome_is_its_error_type() -> None:
    late = export_record(ev("late_result", 3, rid="9", tool="t", outcome="tool_error", delay_s=2.0))
    assert (late["error.type"], late["jsonrpc.request.id"], late["data"]["delay_s"]) == ("tool_error", "9", 2.0)
    assert export_record(ev("late_result", 4, rid="9", outcome="ok"))["error.type"] is None


def test_report_groups_calls_by_host() -> None:
    codex_clock = {"kind": "wall", "seconds": 60, "setting": "tool_timeout_sec"}
    events = [
        ev("host_info", 1, name="codex-mcp-client", label="Codex CLI", deciding_clock=codex_clock),
        ev("host_info", 2, name="gemini-cli-mcp-client", label="Gemini CLI", deciding_clock=None),
        ev(
            "request_start",
            3,
            rid="1",
            tool="slow",
            method="tools/call",
            budget_s=50,
            budget_source="derived",
            host="Codex CLI",
        ),
        ev("request_start", 4, rid="2", tool="slow", method="tools/call", budget_s=590, host="Gemini CLI"),
        ev(
            "request_start",
            5,
            rid="3",
            tool="slow",
            method="tools/call",
            budget_s=50,
            budget_source="derived",
            host="Codex CLI",
        ),
        ev("request_start", 6, rid="4", method="ping", budget_s=None, host="Codex CLI"),
        ev("request_end", 7, rid="1", tool="slow", outcome="deadline", duration_s=50.0),
        ev("request_end", 8, rid="2", tool="slow", outcome="ok", duration_s=70.0),
        ev("request_end", 9, rid="3", tool="slow", outcome="ok", duration_s=20.0),
        ev("request_end", 10, rid="4", outcome="ok", duration_s=0.01),
        ev("request_start", 11, rid="5", tool="slow", method="tools/call", budget_s=1),  # an old log: no host
    ]
    hosts = {h["host"]: h for h in build_report(events)["hosts"]}
    assert set(hosts) == {"Codex CLI", "Gemini CLI"}
    codex, gemini = hosts["Codex CLI"], hosts["Gemini CLI"]
    assert (codex["calls"], codex["ok"], codex["deadlines"], codex["unfinished"]) == (3, 2, 1, 0)
    assert codex["budgets_s"] == [50.0] and codex["clock"] == "tool_timeout_sec 60 s"
    assert codex["client_names"] == ["codex-mcp-client"] and codex["max_s"] == 50.0
    assert (gemini["calls"], gemini["ok"], gemini["budgets_s"], gemini["clock"]) == (1, 1, [590.0], None)
