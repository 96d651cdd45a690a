"""`whatif` figures on a constructed session: answered calls, cut-then-late, cut-never-answered, several tools."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
from clirun import run_cli

from mcpwatch.clock import ManualClock
from mcpwatch.events import Event, Kind
from mcpwatch.logview.late_report import finished_late
from mcpwatch.logview.whatif import (
    budget_to_save,
    calls_from_events,
    effect_line,
    final_deadline,
    hypothetical_budget,
    whatif,
)
from mcpwatch.reliability.cancel_ack import is_cancel_ack, is_cancel_ack_text
from mcpwatch.store.writer import EventWriter

DEADLINE = {"host_timeout_s": 30.0, "margin_s": 10.0, "override_s": None, "budget_s": 20.0, "source": "derived"}


def constructed_session() -> list[Event]:
    """Eight tools/calls under a 20 s budget, plus one answered from a stored late result and one initialize."""
    events: list[Event] = []

    def ev(kind: str, mono: float, rid: str | None = None, tool: str | None = None, **data) -> None:
        events.append(Event(kind, "s", 1000.0 + mono, mono, len(events) + 1, rid, tool, None, data))

    def call(rid: str, tool: str, start: float, duration: float | None, outcome: str | None, **end) -> None:
        ev(Kind.REQUEST_START, start, rid, tool, method="tools/call", up_id=int(rid[1:]), budget_s=20.0)
        if outcome is not None:
            assert duration is not None  # an ended call has lasted
            ev(Kind.REQUEST_END, start + duration, rid, tool, outcome=outcome, duration_s=duration, **end)

    ev(Kind.SESSION_START, 0.0, deadline={**DEADLINE, "margin_s": 5.0, "budget_s": 25.0})
    ev(Kind.CONFIG_CHANGE, 0.5, key="margin_s", old=5.0, new=10.0, source="operator", deadline=DEADLINE)
    ev(Kind.REQUEST_START, 0.6, "r0", None, method="initialize", up_id=0, budget_s=None)
    ev(Kind.REQUEST_END, 0.7, "r0", None, outcome="ok", duration_s=0.1)
    call("r1", "search", 1.0, 5.0, "ok")
    call("r2", "search", 2.0, 18.0, "ok")
    call("r3", "search", 3.0, 20.0, "deadline")
    ev(Kind.LATE_RESULT, 27.0, "r3", "search", delay_s=4.0, cut_after_s=20.0, duration_s=24.0, outcome="ok")
    call("r4", "consult", 4.0, 20.0, "deadline")
    ev(Kind.MODEL_STATUS, 5.0, "r4", "consult", status="ok", tier="high")
    ev(Kind.LATE_RESULT, 34.0, "r4", "consult", delay_s=10.0, cut_after_s=20.0, duration_s=30.0, outcome="ok")
    call("r5", "consult", 5.0, 20.0, "deadline")  # cut, never answered
    call("r6", "consult", 6.0, 12.0, "tool_error")
    call("r7", "search", 7.0, 7.0, "cancelled")  # the host gave up at 7 s
    ev(Kind.REQUEST_START, 40.0, "r8", "consult", method="tools/call", up_id=None, budget_s=None,
       budget_source="late_reuse")  # fmt: skip
    ev(Kind.LATE_REUSE, 40.0, "r8", "consult", from_request_id="r4", delay_s=10.0, age_s=6.0, ttl_s=60.0)
    ev(Kind.REQUEST_END, 40.0, "r8", "consult", outcome="ok", duration_s=0.0, late_reuse=True)
    call("r10", "search", 41.0, None, None)  # still running when the log ends
    return events


def test_calls_are_read_with_their_true_durations() -> None:
    calls = calls_from_events(constructed_session())
    assert [c.request_id for c in calls] == ["r1", "r2", "r3", "r4", "r5", "r6", "r7", "r10"]
    assert {c.request_id: c.true_s for c in calls} == {
        "r1": 5.0, "r2": 18.0, "r3": 24.0, "r4": 30.0, "r5": None, "r6": 12.0, "r7": None, "r10": None,
    }  # fmt: skip
    assert [c.request_id for c in calls if c.cut] == ["r3", "r4", "r5"]
    assert calls[3].tier == "high" and calls[3].late_delay_s == 10.0


def test_whatif_a_larger_budget_saves_the_call_that_finished_late() -> None:
    figures = whatif(calls_from_events(constructed_session()), 25.0)
    assert {k: figures[k] for k in ("budget_s", "calls", "cut_now", "saved", "newly_cut", "unknown")} == {
        "budget_s": 25.0, "calls": 8, "cut_now": 3, "saved": 1, "newly_cut": 0, "unknown": 3,
    }  # fmt: skip
    none = {"degraded": 0, "likely_saved": 0, "likely_cut": 0, "likely_whole": 0}
    assert figures["per_tool"] == {
        "consult": {"calls": 3, "cut_now": 2, "saved": 0, "newly_cut": 0, "unknown": 1, **none},
        "search": {"calls": 5, "cut_now": 1, "saved": 1, "newly_cut": 0, "unknown": 2, **none},
    }
    verdicts = {i["request_id"]: (i["verdict"], i["change"]) for i in figures["items"]}
    assert verdicts == {
        "r1": ("finishes", None),
        "r2": ("finishes", None),
        "r3": ("finishes", "saved"),
        "r4": ("cut", None),
        "r5": ("unknown", None),
        "r6": ("finishes", None),
        "r7": ("unknown", None),
        "r10": ("unknown", None),
    }
    # three cut calls, two with known durations (24 s, 30 s): half need 30 s; 90 % and all are not knowable
    assert figures["budget_to_save"] == {"p50": 30.0, "p90": None, "all": None}


def test_whatif_a_smaller_budget_cuts_more_and_a_never_answered_call_is_cut_below_its_cut() -> None:
    figures = whatif(calls_from_events(constructed_session()), 15.0)
    assert (figures["saved"], figures["newly_cut"], figures["unknown"]) == (0, 1, 2)
    changed = {i["request_id"]: i["change"] for i in figures["items"] if i["change"]}
    assert changed == {"r2": "newly_cut"}
    r5 = next(i for i in figures["items"] if i["request_id"] == "r5")
    assert r5["verdict"] == "cut" and r5["at_least_s"] == 20.0  # it ran 20 s and was still going
    figures = whatif(calls_from_events(constructed_session()), None)  # no budget at all
    assert (figures["saved"], figures["newly_cut"], figures["unknown"]) == (2, 0, 3)


def test_budget_to_save_when_every_cut_call_answered_late() -> None:
    calls = [c for c in calls_from_events(constructed_session()) if c.request_id != "r5"]
    assert budget_to_save(calls) == {"p50": 24.0, "p90": 30.0, "all": 30.0}
    assert budget_to_save([]) == {"p50": None, "p90": None, "all": None}


def test_the_hypothetical_budget_follows_the_session_and_clamps() -> None:
    deadline = final_deadline(constructed_session())
    assert deadline == DEADLINE  # the operator's change, not the start-up block
    assert hypothetical_budget(deadline, budget_s=12.5) == 12.5
    assert hypothetical_budget(deadline, budget_s=0) is None
    assert hypothetical_budget(deadline, margin_s=5.0) == 25.0
    assert hypothetical_budget(deadline, margin_s=5.0, host_timeout_s=60.0) == 55.0
    assert hypothetical_budget(deadline, margin_s=45.0) == 1.0
    with pytest.raises(ValueError, match="host timeout and margin"):
        hypothetical_budget(None, margin_s=5.0)


def test_the_prompt_line_counts_the_recent_calls() -> None:
    calls = calls_from_events(constructed_session())
    assert effect_line(calls, 15.0) == (
        "budget 15 s → of the last 8 calls, 3 cut now; known: 1 newly cut; 2 unknown (never answered: not counted"
        " as saved)"
    )
    assert effect_line(calls, 25.0, last=4) == (
        "budget 25 s → of the last 4 calls, 1 cut now; known: none change; 3 unknown (never answered: not counted"
        " as saved)"
    )
    assert effect_line(calls[:2], 20.0) == "budget 20 s → of the last 2 calls, 0 cut now; known: none change"
    assert effect_line([], 20.0) == "no finished tool call yet to test this budget against"


def test_old_logs_without_late_results_still_work() -> None:
    old = [e for e in constructed_session() if e.kind not in (Kind.LATE_RESULT, Kind.LATE_REUSE)]
    figures = whatif(calls_from_events(old), 25.0)
    # r3 and r4 never answered as far as this log knows: unknown instead of known
    assert (figures["calls"], figures["saved"], figures["unknown"]) == (8, 0, 5)


def write_log(path: Path) -> str:
    writer = EventWriter(path, clock=ManualClock(wall=1_700_000_000.0))
    sid = writer.start_session(name="constructed", upstream="stdio: test", pid=1, config={})
    for event in constructed_session():
        event.session_id = sid
        writer.emit(event)
    writer.end_session(sid, "test")
    writer.close()
    return sid


def run(*args: str) -> subprocess.CompletedProcess[str]:
    return run_cli(*args)


def test_whatif_command_on_a_real_log(tmp_path: Path) -> None:
    path = tmp_path / "events.db"
    sid = write_log(path)
    result = run("whatif", str(path), "--margin", "5", "--json")
    assert result.returncode == 0, result.stderr
    figures = json.loads(result.stdout)
    assert figures["session_id"] == sid and figures["budget_s"] == 25.0
    assert (figures["calls"], figures["saved"], figures["newly_cut"], figures["unknown"]) == (8, 1, 0, 3)
    assert figures["budget_to_save"] == {"p50": 30.0, "p90": None, "all": None}
    text = run("whatif", str(path), "--budget", "15")
    assert text.returncode == 0, text.stderr
    assert "known (true durations): saved 0, newly cut 1; likely" in text.stdout
    assert "r2" in text.stdout and "newly cut" in text.stdout
    assert "p50 30.0s, p90 unknown, all unknown" in text.stdout


def test_whatif_takes_the_host_timeout_the_advice_names_alone(tmp_path: Path) -> None:
    """The advice says "then --host-timeout 103"; whatif refused it without --margin."""
    path = tmp_path / "events.db"
    write_log(path)
    alone = run("whatif", str(path), "--host-timeout", "60", "--json")
    assert alone.returncode == 0, alone.stderr
    with_margin = run("whatif", str(path), "--host-timeout", "60", "--margin", "10", "--json")  # the log's margin
    assert json.loads(alone.stdout)["budget_s"] == json.loads(with_margin.stdout)["budget_s"] == 50.0
    assert json.loads(alone.stdout)["items"] == json.loads(with_margin.stdout)["items"]


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--budget", "nan"], "argument --budget: the value must be finite, got 'nan'"),
        (["--budget", "soon"], "argument --budget: the value must be a number of seconds, got 'soon'"),
        (["--budget", "1e9"], "argument --budget: the value is absurdly large ('1e9' s; at most 604800 s)"),
        (["--margin", "-3"], "must not be negative"),
        (["--budget", "5", "--host-timeout", "60"], "goes with --margin or alone"),
        ([], "say which budget to test: --budget S, --margin S, --host-timeout S or --host NAME"),
    ],
)
def test_whatif_refuses_bad_input_in_one_line(tmp_path: Path, args: list[str], message: str) -> None:
    path = tmp_path / "events.db"
    write_log(path)
    result = run("whatif", str(path), *args)
    assert result.returncode == 2
    assert message in result.stderr and "Traceback" not in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1


TIERS = {"quick": {"total_s": 15}, "balanced": {"total_s": 20}, "high": {"total_s": 40}}


def test_finished_late_section_figures_and_advice() -> None:
    events = constructed_session()
    rows = finished_late(calls_from_events(events), final_deadline(events), TIERS)
    assert [(r["tool"], r["tier"], r["cut"], r["finished_late"], r["p50_delay_s"], r["p95_delay_s"]) for r in rows] == [
        ("consult", None, 2, 1, 10.0, 10.0),
        ("consult", "high", 1, 1, 10.0, 10.0),
        ("search", None, 1, 1, 4.0, 4.0),
    ]
    assert [r["advice"] for r in rows] == [
        # a council (its calls have a tier) keeps 10 % of its deadline back to deliver: 30 s of work needs 33 s
        "consult: 2 calls cut short (2 cut); 1 of 2 cut answered later (within +10 s); they needed up to 30 s (known)"
        " — raise the host's timeout to 43 s (budget 33 s with the 10 s margin; it is the host's own setting, then"
        " --host-timeout 43): saves 1 known of 2, 1 unknown (not counted)",
        "consult (high tier): 1 call cut short (1 cut); 1 of 1 cut answered later (within +10 s); they needed up to"
        " 30 s (known) — raise the host's timeout to 43 s (budget 33 s with the 10 s margin; it is the host's own"
        " setting, then --host-timeout 43): saves 1 known of 1 — or ask for the quick tier (fits the 20 s budget)",
        "search: 1 call cut short (1 cut); 1 of 1 cut answered later (within +4 s); they needed up to 24 s (known)"
        " — lower the margin to 6 s (budget 24 s): saves 1 known of 1",
    ]
    assert rows[2]["suggested_margin_s"] == 6.0 and rows[2]["would_save"] == 1
    assert (rows[0]["suggested_host_timeout_s"], rows[0]["would_save"], rows[0]["unknown"]) == (43.0, 1, 1)
    # an explicit budget is advised as a budget, not a margin
    explicit = {**DEADLINE, "source": "explicit", "budget_s": 20.0}
    (search,) = [r for r in finished_late(calls_from_events(events), explicit) if r["tool"] == "search"]
    assert search["advice"].endswith("give a budget of 24 s instead of 20 s: saves 1 known of 1")


def test_a_margin_leaves_per_tool_and_explicit_budgets_alone() -> None:
    events = constructed_session()
    events.append(
        Event(Kind.REQUEST_START, "s", 1100.0, 100.0, 900, "t1", "slow", None,
              {"method": "tools/call", "up_id": 90, "budget_s": 60.0, "budget_source": "tool"})
    )  # fmt: skip
    events.append(Event(Kind.REQUEST_END, "s", 1150.0, 150.0, 901, "t1", "slow", None, {"outcome": "ok",
                                                                                      "duration_s": 50.0}))  # fmt: skip
    calls = calls_from_events(events)
    as_margin = whatif(calls, 25.0, keep_fixed=True)  # `--margin 5`: the per-tool 60 s budget stays
    assert as_margin["per_tool"]["slow"]["newly_cut"] == 0 and as_margin["kept_own_budget"] == 1
    as_budget = whatif(calls, 25.0)  # `--budget 25`: every call gets 25 s
    assert as_budget["per_tool"]["slow"]["newly_cut"] == 1 and as_budget["kept_own_budget"] == 0
    assert "known: none change" in effect_line(calls[-2:], 25.0, keep_fixed=True)
    assert "known: 1 newly cut" in effect_line(calls[-2:], 25.0)


@pytest.mark.slow
def test_whatif_for_a_host_uses_its_profiles_clock_and_the_sessions_margin(tmp_path: Path) -> None:
    path = tmp_path / "events.db"
    write_log(path)
    for name in ("codex", "codex-mcp-client"):  # a profile's key or a client name it matches
        result = run("whatif", str(path), "--host", name, "--json")
        assert result.returncode == 0, result.stderr
        figures = json.loads(result.stdout)
        assert figures["budget_s"] == 50.0  # Codex CLI's 60 s tool_timeout_sec − the session's 10 s margin
        assert (figures["saved"], figures["newly_cut"], figures["unknown"]) == (2, 0, 3)
        assert figures["host"]["profile"] == "codex" and figures["host"]["clock"]["seconds"] == 60
    config = tmp_path / "mcpwatch.toml"
    config.write_text("[hosts.codex-mcp-client]\nwall_s = 25\n")  # an override of the profile, as the wrapper takes
    figures = json.loads(run("whatif", str(path), "--host", "codex", "--config", str(config), "--json").stdout)
    assert figures["budget_s"] == 15.0 and (figures["saved"], figures["newly_cut"]) == (0, 1)
    text = run("whatif", str(path), "--host", "codex")
    assert "Codex CLI tool_timeout_sec 60 s − the session's margin" in text.stdout
    unknown = run("whatif", str(path), "--host", "nobody")
    assert unknown.returncode == 2 and unknown.stderr.strip() == (
        "mcpwatch: no host profile named 'nobody' (mcpwatch hosts lists them)"
    )


def test_a_new_margin_applies_to_each_calls_own_host_clock(tmp_path: Path) -> None:
    """Two hosts on one wrapper: Codex CLI's calls run on a 60 s clock, another host's on 120 s (margin 10)."""
    events: list[Event] = []

    def ev(kind: str, mono: float, rid: str | None = None, tool: str | None = None, **data) -> None:
        events.append(Event(kind, "s", 1000.0 + mono, mono, len(events) + 1, rid, tool, None, data))

    ev(Kind.SESSION_START, 0.0, deadline={**DEADLINE, "host_timeout_s": 120.0, "budget_s": 110.0})
    for rid, budget, true in (("a", 50.0, 58.0), ("b", 110.0, 113.0)):
        ev(Kind.REQUEST_START, 1.0, rid, "t", method="tools/call", budget_s=budget, budget_source="derived")
        ev(Kind.REQUEST_END, 1.0 + budget, rid, "t", outcome="deadline", duration_s=budget)
        ev(Kind.LATE_RESULT, 1.0 + true, rid, "t", delay_s=true - budget, duration_s=true, outcome="ok")
    calls = calls_from_events(events)
    assert [c.margin_s for c in calls] == [10.0, 10.0]
    per_clock = whatif(calls, 115.0, keep_fixed=True, margin_s=5.0)  # `--margin 5`: 55 s and 115 s
    assert {i["request_id"]: i["change"] for i in per_clock["items"]} == {"a": None, "b": "saved"}
    uniform = whatif(calls, 115.0, keep_fixed=True)  # `--margin 5 --host-timeout 120`: 115 s for both
    assert uniform["saved"] == 2
    path = tmp_path / "events.db"
    writer = EventWriter(path, clock=ManualClock(wall=1_700_000_000.0))
    sid = writer.start_session(name="two hosts", upstream="stdio: test", pid=1, config={})
    for event in events:
        event.session_id = sid
        writer.emit(event)
    writer.close()
    figures = json.loads(run("whatif", str(path), "--margin", "5", "--json").stdout)
    assert figures["saved"] == 1 and figures["budget_s"] == 115.0


def test_an_older_logs_cancel_acknowledgement_is_no_answer() -> None:
    # Logs written before `cancel_ack` hold a FastMCP 2.x acknowledgement as a late_result with outcome error: the
    # call never finished, so it stays unknown and no budget "would have saved" it.
    events = constructed_session()
    ack_text = '{"code":0,"message":"Request cancelled"}'
    data = {"delay_s": 0.01, "cut_after_s": 20.0, "duration_s": 20.01, "outcome": "error", "error": ack_text}
    r5_ack = Event(Kind.LATE_RESULT, "s", 1026.0, 25.01, 99, "r5", "consult", None, data)
    figures = whatif(calls_from_events([*events, r5_ack]), 25.0)
    r5 = next(i for i in figures["items"] if i["request_id"] == "r5")
    assert (r5["verdict"], r5["true_s"], r5["late"]) == ("unknown", None, False)
    assert figures["saved"] == 1  # r3 alone, as without the acknowledgement


@pytest.mark.parametrize(
    ("error", "ack"),
    [
        ({"code": 0, "message": "Request cancelled"}, True),  # MCP SDK 1.x, FastMCP 2.x
        ({"code": -32800, "message": "Request cancelled"}, True),  # MCP SDK 2.x over Streamable HTTP
        ({"code": -32603, "message": "Operation was cancelled by the client"}, True),
        ({"code": -32603, "message": "Internal error"}, False),
        ({"code": -32602, "message": "cancelable must be a boolean"}, False),
        ("Request cancelled", False),  # not an error object
    ],
)
def test_what_counts_as_a_cancel_acknowledgement(error: object, ack: bool) -> None:
    assert is_cancel_ack(error) is ack
    assert is_cancel_ack_text("error", json.dumps(error)) is (ack or error == "Request cancelled")
    assert is_cancel_ack_text("ok", json.dumps(error)) is False
