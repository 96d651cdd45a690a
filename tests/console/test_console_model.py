"""The view model: each event kind's effect, countdowns at a given now, tier flagging, caps, seeding, checkpoints."""

from __future__ import annotations

import collections
import dataclasses
import itertools
import math
import subprocess
import sys
import types
from typing import Any, Literal, NotRequired, Union, get_args, get_origin, get_type_hints

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mcpwatch.console.headless.model import ConsoleModel
from mcpwatch.console.headless.panels.header import top_bar
from mcpwatch.console.headless.panels.in_flight import time_left
from mcpwatch.console.headless.panels.requests import request_note
from mcpwatch.console.headless.render_base import Palette
from mcpwatch.console.headless.request_filter import filter_requests
from mcpwatch.console.headless.views import CouncilView, Limits, RequestDetail, ViewState
from mcpwatch.events import PAYLOADS, Event, Kind, payload_problems
from mcpwatch.testing.sample import (
    SAMPLE_NOW,
    EventFactory,
    deadline_block,
    flood,
    sample_session,
    session_start,
)


def council_of(view: ViewState) -> CouncilView:
    """The view's council panel, which the test has just made a council call for."""
    assert view.council is not None, "no council call in the view"
    return view.council


def detail_of(model: ConsoleModel, request_id: str, now: float) -> RequestDetail:
    """A request's detail, which the test expects the model to still hold."""
    detail = model.request_detail(request_id, now)
    assert detail is not None, f"no detail for request {request_id}"
    return detail


@pytest.fixture
def f() -> EventFactory:
    return EventFactory(session_id="s1", origin_ts=1000.0)


@pytest.fixture
def model(f: EventFactory) -> ConsoleModel:
    m = ConsoleModel()
    m.apply(session_start(f))
    return m


def start(f: EventFactory, rid: str, mono: float, tool: str = "slow", budget: float | None = 110.0, **extra) -> Event:
    return f.make(
        Kind.REQUEST_START,
        mono,
        request_id=rid,
        tool=tool,
        method="tools/call",
        up_id=f"u{rid}",
        budget_s=budget,
        **extra,
    )


def end(f: EventFactory, rid: str, mono: float, outcome: str = "ok", duration: float | None = 1.0, **extra) -> Event:
    return f.make(Kind.REQUEST_END, mono, request_id=rid, outcome=outcome, duration_s=duration, **extra)


# --- header, deadline, session ------------------------------------------------------------------------------


def test_session_start_fills_header_deadline_and_ttl_terms(model: ConsoleModel) -> None:
    v = model.view(42.0)
    assert v.header.name == "council"
    assert v.header.pid == 41234
    assert v.header.upstream_kind == "stdio"
    assert v.header.upstream_target == "mcpwatch council --scenario fast"
    assert v.header.uptime_s == 42.0
    assert v.deadline.known and v.deadline.budget_s == 110.0 and v.deadline.source == "env"
    assert v.tombstones.terms.total_s == 155.0
    assert v.state_sync_policies == 2


def test_host_info_and_upstream_state(model: ConsoleModel, f: EventFactory) -> None:
    model.apply(f.make(Kind.HOST_INFO, 1.0, name="claude-code", version="2.1", protocol_version="2025-11-25"))
    model.apply(f.make(Kind.UPSTREAM_STATE, 2.0, state="backoff", generation=3, retry_in_s=1.5, exit_code=1))
    h = model.view(3.0).header
    assert (h.host_name, h.host_version, h.protocol_version) == ("claude-code", "2.1", "2025-11-25")
    assert (h.upstream_state, h.generation, h.retry_in_s, h.exit_code) == ("backoff", 3, 1.5, 1)
    model.apply(f.make(Kind.UPSTREAM_STATE, 4.0, state="ready", generation=4))
    h = model.view(5.0).header
    assert (h.upstream_state, h.generation, h.retry_in_s) == ("ready", 4, None)


def test_session_end_freezes_uptime_and_takes_its_counters(model: ConsoleModel, f: EventFactory) -> None:
    model.apply(f.make(Kind.SESSION_END, 50.0, reason="host closed stdin", counters={"requests": 9, "ok": 8}))
    v = model.view(500.0)
    assert v.header.ended == "host closed stdin"
    assert v.header.uptime_s == 50.0
    assert v.counters.requests == 9 and v.counters.ok == 8


def test_config_change_updates_the_deadline_and_ttl_follows_the_budget(model: ConsoleModel, f: EventFactory) -> None:
    model.apply(
        f.make(
            Kind.CONFIG_CHANGE, 5.0, key="margin_s", old=10, new=30, source="operator", deadline=deadline_block(120, 30)
        )
    )
    v = model.view(6.0)
    assert v.deadline.margin_s == 30 and v.deadline.budget_s == 90
    # TTL = request_timeout (the current budget) + init + backoff_max + epsilon
    assert v.tombstones.terms.request_timeout_s == 90
    assert v.tombstones.ttl_s == 90 + 10 + 30 + 5
    assert v.config_changes[0].key == "margin_s" and v.config_changes[0].new == 30


def test_ttl_uses_the_host_timeout_when_the_budget_is_disabled(model: ConsoleModel, f: EventFactory) -> None:
    disabled = {"host_timeout_s": 120.0, "margin_s": 10.0, "override_s": 0, "budget_s": None, "source": "explicit"}
    model.apply(
        f.make(Kind.CONFIG_CHANGE, 5.0, key="explicit_s", old=None, new=0, source="operator", deadline=disabled)
    )
    v = model.view(6.0)
    assert v.deadline.budget_s is None and v.deadline.limit_s == 120.0
    assert v.tombstones.ttl_s == 120 + 10 + 30 + 5


def test_a_new_session_id_starts_over(model: ConsoleModel, f: EventFactory) -> None:
    model.apply(start(f, "1", 1.0))
    other = EventFactory(session_id="s2", origin_ts=5000.0)
    model.apply(other.make(Kind.WARNING, 3.0, message="hello from s2"))
    v = model.view(4.0)
    assert v.header.session_id == "s2"
    assert v.in_flight == ()
    assert v.header.name is None
    assert [w.message for w in v.warnings] == ["hello from s2"]
    assert model.origin_ts == 5000.0


def test_mono_at_maps_wall_time_onto_session_time(model: ConsoleModel) -> None:
    assert model.mono_at(1000.0 + 12.5) == 12.5


# --- requests, progress, council ------------------------------------------------------------------------------


def test_in_flight_elapsed_against_budget(model: ConsoleModel, f: EventFactory) -> None:
    model.apply(start(f, "7", 10.0, budget=100.0))
    model.apply(f.make(Kind.PROGRESS, 12.0, request_id="7", progress=2, total=5, message="two of five"))
    (row,) = model.view(35.0).in_flight
    assert row.request_id == "7" and row.tool == "slow"
    assert row.elapsed_s == 25.0 and row.remaining_s == 75.0 and row.fraction == 0.25
    assert (row.progress, row.total, row.message) == (2.0, 5.0, "two of five")


def test_a_task_in_flight_shows_the_ttl_it_has_left_not_the_tools_call_budget(
    model: ConsoleModel, f: EventFactory
) -> None:
    model.apply(start(f, "7", 10.0, budget=20.0))
    created: dict[str, Any] = {"task_id": "t-1", "status": "working", "status_message": None, "ttl_ms": 300_000}
    model.apply(f.make(Kind.TASK_CREATED, 10.0, request_id="7", poll_interval_ms=1000, era="2025-11-25", **created))
    (row,) = model.view(70.0).in_flight  # 60 s on: far past the 20 s budget, which no longer applies
    assert row.task and row.remaining_s == 240.0 and row.fraction == 0.2
    assert time_left(row, Palette({})).plain == "TTL 4m00s 80%"
    (row,) = model.view(320.0).in_flight
    assert time_left(row, Palette({})).plain == "TTL passed 10s ago"
    bridged = {**created, "task_id": "t-2", "bridged": True}  # a bridged call is still cut at its host's budget
    model.apply(start(f, "8", 400.0, budget=20.0))
    model.apply(f.make(Kind.TASK_CREATED, 400.5, request_id="8", poll_interval_ms=1000, era="2025-11-25", **bridged))
    row = next(r for r in model.view(405.0).in_flight if r.request_id == "8")
    assert not row.task and time_left(row, Palette({})).plain == "15s 75%"


@pytest.mark.parametrize(
    ("extra", "kind", "reason"),
    [
        ({"offered": True, "offered_by": "offer slow*"}, "offered", " · offer slow*"),
        (
            {"offered": True, "offered_by": "offer_slow: 5 of 6 cut at 20s"},
            "offered",
            " · offer_slow: 5 of 6 cut at 20s",
        ),
        ({"bridged": True}, "bridged", ""),
        ({}, "watched", ""),
    ],
)
def test_a_task_is_marked_as_one_in_flight_and_in_recent_with_its_polls(
    model: ConsoleModel, f: EventFactory, extra: dict[str, object], kind: str, reason: str
) -> None:
    """In flight and Recent showed a task as an ordinary call (`59m43s 100`, `✓ ok 35s`): they say it is a task,
    who runs it, its status, the polls counted to it and why mcpwatch offered it."""
    model.apply(start(f, "7", 10.0, budget=20.0))
    created: dict[str, Any] = {
        "task_id": "t-1",
        "status": "working",
        "status_message": None,
        "ttl_ms": 300_000,
        **extra,
    }
    model.apply(f.make(Kind.TASK_CREATED, 10.0, request_id="7", poll_interval_ms=1000, era="2025-11-25", **created))
    status: dict[str, Any] = {"task_id": "t-1", "status": "working", "status_message": "reading", "elapsed_s": 5.0}
    model.apply(f.make(Kind.TASK_STATUS, 15.0, request_id="7", seen_by="tasks/get", polls=3, **status))
    (row,) = model.view(20.0).in_flight
    assert row.message == f"task {kind} · working · 3 polls{reason} — reading"
    done = {**status, "status": "completed", "status_message": None, "elapsed_s": 30.0}
    model.apply(f.make(Kind.TASK_STATUS, 40.0, request_id="7", seen_by="tasks/get", polls=29, **done))
    model.apply(end(f, "7", 40.0, duration=30.0, task_id="t-1", task_status="completed", polls=30))
    (recent,) = model.view(41.0).requests
    assert request_note(recent) == f"task {kind} · completed · 30 polls{reason}"


def test_request_end_moves_it_to_recent_with_outcome_and_counters(model: ConsoleModel, f: EventFactory) -> None:
    model.apply(start(f, "1", 1.0))
    model.apply(end(f, "1", 3.0, duration=2.0))
    model.apply(start(f, "2", 4.0))
    model.apply(end(f, "2", 5.0, outcome="tool_error", error="nope"))
    model.apply(start(f, "3", 6.0))
    model.apply(end(f, "3", 7.0, outcome="deadline"))
    model.apply(start(f, "4", 8.0))
    model.apply(end(f, "4", 9.0, outcome="cancelled"))
    model.apply(start(f, "5", 10.0))
    model.apply(end(f, "5", 11.0, outcome="upstream_lost"))
    v = model.view(20.0)
    assert v.in_flight == ()
    assert [r.request_id for r in v.requests] == ["5", "4", "3", "2", "1"]
    assert v.requests[3].error == "nope"
    c = v.counters
    assert (c.requests, c.ok, c.errors, c.timeouts, c.cancelled) == (5, 1, 2, 1, 1)
    assert v.latencies == (2.0, 1.0, 1.0, 1.0, 1.0)


def test_progress_for_an_unknown_request_is_ignored(model: ConsoleModel, f: EventFactory) -> None:
    model.apply(f.make(Kind.PROGRESS, 1.0, request_id="nope", progress=1))
    assert model.view(2.0).in_flight == ()
    assert model.view(2.0).malformed == 0


def test_model_status_builds_the_council_panel_with_elapsed_against_per_model(
    model: ConsoleModel, f: EventFactory
) -> None:
    model.apply(start(f, "9", 100.0, tool="consult_council"))
    for m in ("a", "b", "c"):
        model.apply(
            f.make(
                Kind.MODEL_STATUS,
                100.0,
                request_id="9",
                model=m,
                stage=1,
                status="pending",
                per_model_s=20,
                tier="quick",
            )
        )
    model.apply(f.make(Kind.MODEL_STATUS, 104.0, request_id="9", model="a", stage=1, status="ok", latency_ms=4000))
    model.apply(
        f.make(Kind.MODEL_STATUS, 120.0, request_id="9", model="b", stage=1, status="timeout", latency_ms=20000)
    )
    council = model.view(125.0).council
    assert council is not None and council.request_id == "9" and council.tier == "quick"
    by = {m.model: m for m in council.models}
    assert (by["a"].status, by["a"].elapsed_s, by["a"].over_cap) == ("ok", 4.0, False)
    assert (by["b"].status, by["b"].latency_ms) == ("timeout", 20000)
    assert (by["c"].status, by["c"].elapsed_s, by["c"].over_cap) == ("pending", 25.0, True)
    assert model.view(125.0).in_flight[0].has_council


def test_council_panel_follows_the_selection(model: ConsoleModel, f: EventFactory) -> None:
    for rid in ("1", "2"):
        model.apply(start(f, rid, 1.0, tool="consult_council"))
        model.apply(f.make(Kind.MODEL_STATUS, 1.0, request_id=rid, model=f"m{rid}", status="pending"))
    assert council_of(model.view(2.0)).request_id == "2"  # the latest by default
    assert council_of(model.view(2.0, selected="1")).request_id == "1"
    assert council_of(model.view(2.0, selected="unknown")).request_id == "2"


def test_a_pending_model_stops_counting_when_the_request_ends(model: ConsoleModel, f: EventFactory) -> None:
    model.apply(start(f, "1", 0.0, tool="consult_council"))
    model.apply(f.make(Kind.MODEL_STATUS, 0.0, request_id="1", model="slow", status="pending", per_model_s=5))
    model.apply(end(f, "1", 8.0, outcome="deadline"))
    (m,) = council_of(model.view(100.0)).models
    assert m.elapsed_s == 8.0 and m.over_cap


# --- tombstones -----------------------------------------------------------------------------------------------


def test_tombstone_countdown_is_computed_from_now(model: ConsoleModel, f: EventFactory) -> None:
    model.apply(start(f, "1", 0.0))
    model.apply(
        f.make(
            Kind.TOMBSTONE_ADD, 110.0, request_id="1", up_id="u1", ttl_s=155.0, reason="deadline", expires_mono=265.0
        )
    )
    model.apply(end(f, "1", 110.0, outcome="deadline"))
    t = model.view(200.0).tombstones
    assert t.count == 1 and t.items[0].expires_in_s == 65.0 and t.items[0].age_s == 90.0
    assert t.items[0].reason == "deadline" and t.items[0].tool == "slow"
    t = model.view(300.0).tombstones  # past its TTL, not yet swept
    assert t.count == 0 and t.awaiting_sweep == 1 and t.items[0].expires_in_s == -35.0


def test_tombstone_hit_counts_a_late_response_and_expire_removes_it(model: ConsoleModel, f: EventFactory) -> None:
    model.apply(start(f, "1", 0.0))
    model.apply(end(f, "1", 10.0, outcome="cancelled"))
    model.apply(f.make(Kind.TOMBSTONE_ADD, 10.0, up_id="u1", ttl_s=20.0, reason="operator_cancel"))
    model.apply(f.make(Kind.TOMBSTONE_HIT, 12.0, up_id="u1", what="response", age_s=2.0))
    v = model.view(13.0)
    assert v.tombstones.items[0].hits == 1 and v.tombstones.items[0].request_id == "1"
    assert v.counters.late_dropped == 1 and v.tombstones.late_dropped == 1
    assert v.tombstones.items[0].expires_in_s == 17.0  # expires_mono derived from ttl when absent
    detail = detail_of(model, "1", 13.0)
    assert [t.kind for t in detail.timeline][-2:] == ["tombstone_add", "tombstone_hit"]
    model.apply(f.make(Kind.TOMBSTONE_EXPIRE, 30.0, up_id="u1", age_s=20.0))
    assert model.view(31.0).tombstones.items == ()
    assert detail_of(model, "1", 31.0).timeline[-1].kind == "tombstone_expire"


def test_unknown_response_is_counted(model: ConsoleModel, f: EventFactory) -> None:
    model.apply(f.make(Kind.UNKNOWN_RESPONSE, 1.0, up_id="99", reason="stale_generation"))
    assert model.view(2.0).counters.unknown_dropped == 1


# --- invalidations, health, tiers, warnings --------------------------------------------------------------------


def test_invalidation_feed_newest_first_with_age(model: ConsoleModel, f: EventFactory) -> None:
    model.apply(f.make(Kind.INVALIDATION, 1.0, tool="tasks.update", caused_by="tasks.update", patterns=["tasks.*"]))
    model.apply(f.make(Kind.INVALIDATION, 4.0, tool="b", caused_by="b", patterns=["x.*", "y.**"]))
    v = model.view(10.0)
    assert [(i.caused_by, i.patterns, i.ago_s) for i in v.invalidations] == [
        ("b", ("x.*", "y.**"), 6.0),
        ("tasks.update", ("tasks.*",), 9.0),
    ]
    assert v.counters.invalidations == 2


def test_health_check_and_tier_flagging_against_the_budget(model: ConsoleModel, f: EventFactory) -> None:
    tiers = {
        "quick": {"total_s": 30, "per_model_s": 20, "models": ["a"]},
        "high": {"total_s": 180, "per_model_s": 90, "models": ["a", "b"]},
        "edge": {"total_s": 110, "per_model_s": 90, "models": []},
    }
    model.apply(
        f.make(
            Kind.HEALTH_CHECK,
            5.0,
            data={"tool": "council_health_check"},
            ok=True,
            ping_ms=4.5,
            result={"tiers": tiers, "timeout_multiplier": 1.5},
        )
    )
    v = model.view(8.0)
    flags = {t.tier: t.exceeds_budget for t in v.tiers}
    assert flags == {"quick": False, "high": True, "edge": False}  # budget 110: equal still finishes
    assert (v.health.ok, v.health.ping_ms, v.health.tool, v.health.ago_s) == (True, 4.5, "council_health_check", 3.0)
    assert v.health.timeout_multiplier == 1.5
    # Raise the budget: the flag follows the current deadline, not the one at the health check.
    model.apply(f.make(Kind.CONFIG_CHANGE, 9.0, key="explicit_s", new=200, deadline=deadline_block(override=200.0)))
    assert all(not t.exceeds_budget for t in model.view(10.0).tiers)


def test_failed_health_check_keeps_tiers_and_shows_the_error(model: ConsoleModel, f: EventFactory) -> None:
    model.apply(f.make(Kind.HEALTH_CHECK, 1.0, ok=True, ping_ms=2.0, result={"tiers": {"q": {"total_s": 5}}}))
    model.apply(f.make(Kind.HEALTH_CHECK, 2.0, ok=False, ping_ms=None, error="upstream not running"))
    v = model.view(3.0)
    assert v.health.ok is False and v.health.error == "upstream not running"
    assert [t.tier for t in v.tiers] == ["q"]
    assert v.health.history == (2.0,)


def test_warnings_newest_first(model: ConsoleModel, f: EventFactory) -> None:
    model.apply(f.make(Kind.WARNING, 1.0, message="one"))
    model.apply(f.make(Kind.WARNING, 2.0, message="two"))
    assert [w.message for w in model.view(3.0).warnings] == ["two", "one"]


def test_state_sync_overlaps_become_warnings(f: EventFactory) -> None:
    m = ConsoleModel()
    ev = session_start(f)
    ev.data["state_sync"] = {"policies": 3, "overlaps": ["tasks.* overlaps tasks.update"]}
    m.apply(ev)
    assert m.view(1.0).warnings[0].message == "state sync overlap: tasks.* overlaps tasks.update"


# --- caps --------------------------------------------------------------------------------------------------------


def test_finished_requests_and_their_timelines_are_capped(f: EventFactory) -> None:
    m = ConsoleModel(Limits(requests=5, timeline=3))
    m.apply(session_start(f))
    for i in range(20):
        m.apply(start(f, str(i), float(i)))
        for p in range(5):
            m.apply(f.make(Kind.PROGRESS, i + 0.1, request_id=str(i), progress=p))
        m.apply(end(f, str(i), i + 0.5))
    v = m.view(30.0)
    assert [r.request_id for r in v.requests] == ["19", "18", "17", "16", "15"]
    assert m.request_detail("3", 30.0) is None  # dropped with its timeline
    detail = detail_of(m, "19", 30.0)
    assert len(detail.timeline) == 3 and detail.timeline_dropped == 4
    assert v.counters.requests == 20


def test_lists_are_capped(f: EventFactory) -> None:
    m = ConsoleModel(Limits(invalidations=3, warnings=2, latencies=4, health_history=2, config_changes=2))
    for i in range(10):
        m.apply(f.make(Kind.INVALIDATION, i, caused_by=f"t{i}", patterns=["a.*"]))
        m.apply(f.make(Kind.WARNING, i, message=f"w{i}"))
        m.apply(f.make(Kind.HEALTH_CHECK, i, ok=True, ping_ms=float(i)))
        m.apply(f.make(Kind.CONFIG_CHANGE, i, key="margin_s", new=i))
        m.apply(start(f, str(i), i))
        m.apply(end(f, str(i), i, duration=float(i)))
    v = m.view(20.0)
    assert [i.caused_by for i in v.invalidations] == ["t9", "t8", "t7"]
    assert [w.message for w in v.warnings] == ["w9", "w8"]
    assert v.latencies == (6.0, 7.0, 8.0, 9.0)
    assert v.health.history == (8.0, 9.0)
    assert len(v.config_changes) == 2
    assert v.counters.invalidations == 10


def test_in_flight_and_tombstones_are_capped(f: EventFactory) -> None:
    m = ConsoleModel(Limits(in_flight=3, tombstones=2))
    for i in range(6):
        m.apply(start(f, str(i), float(i)))
        m.apply(f.make(Kind.TOMBSTONE_ADD, float(i), up_id=f"x{i}", ttl_s=10.0))
    v = m.view(7.0)
    assert [r.request_id for r in v.in_flight] == ["3", "4", "5"]
    assert sorted(t.up_id for t in v.tombstones.items) == ["x4", "x5"]


def test_a_flood_keeps_memory_bounded() -> None:
    m = ConsoleModel()
    m.apply_many(itertools.islice(flood(EventFactory()), 60_000))
    v = m.view(m.last_mono)
    assert len(v.requests) == 500
    assert len(v.in_flight) <= 1
    assert len(v.tombstones.items) <= 10
    assert v.events_applied == 60_000 and v.malformed == 0


# --- robustness, seeding, checkpoints, replay parity ---------------------------------------------------------


def test_malformed_data_is_counted_not_raised(model: ConsoleModel, f: EventFactory) -> None:
    model.apply(f.make(Kind.REQUEST_START, 1.0, budget_s="soon"))  # no request id
    model.apply(Event(kind="progress", session_id="s1", ts=1.0, mono=float("nan")))
    model.apply(f.make(Kind.HEALTH_CHECK, 2.0, ok="yes", ping_ms=float("inf"), result={"tiers": ["not", "a", "map"]}))
    model.apply(f.make("something_new", 3.0, x=1))
    v = model.view(4.0)
    assert v.malformed == 2
    assert v.health.ok is None and v.health.ping_ms is None


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=5),
    lambda children: st.lists(children, max_size=3) | st.dictionaries(st.text(max_size=5), children, max_size=3),
    max_leaves=8,
)
field_names = st.sampled_from(
    ["outcome", "duration_s", "budget_s", "progress", "total", "message", "status", "latency_ms", "ttl_s", "up_id",
     "expires_mono", "deadline", "tombstone_ttl", "patterns", "result", "counters", "upstream", "state", "stage"]
)  # fmt: skip


@settings(max_examples=100, deadline=None)
@given(
    st.lists(
        st.tuples(
            st.sampled_from(sorted(k.value for k in Kind)),
            st.floats(allow_nan=True),
            st.none() | st.sampled_from(["1", "2"]),
            st.dictionaries(field_names, json_values, max_size=5),
        ),
        max_size=25,
    ),
    st.floats(allow_nan=False, allow_infinity=False, min_value=-1e6, max_value=1e6),
)
@pytest.mark.slow
def test_any_stream_folds_counting_only_broken_events_as_malformed(events, now) -> None:
    m = ConsoleModel(Limits(requests=3, timeline=2))
    for i, (kind, mono, rid, data) in enumerate(events):
        m.apply(Event(kind=kind, session_id="h", ts=1.0, mono=mono, seq=i, request_id=rid, model="m", data=data))
    v = m.view(now)
    timed = [(kind, data) for kind, mono, _rid, data in events if math.isfinite(mono)]
    assert v.events_applied <= len(timed)  # without a usable time an event is refused; a session_start starts over
    broken = sum(1 for kind, data in timed if payload_problems(kind, data))
    assert v.malformed <= broken + (len(events) - len(timed))  # a payload of its kind's type always folds
    assert all(value >= 0 for value in dataclasses.astuple(v.counters))
    assert len(v.requests) <= 3 and {r.request_id for r in v.in_flight} <= {"1", "2"}
    for rid in ("1", "2"):
        m.request_detail(rid, now)


def _strategy(hint: Any) -> st.SearchStrategy[Any]:
    """Values of a payload type's field, as `payload_problems` accepts them."""
    origin, args = get_origin(hint), get_args(hint)
    if origin is NotRequired:
        return _strategy(args[0])
    if hint is Any:
        return json_values
    if origin is Literal:
        return st.sampled_from(args)
    if isinstance(hint, type) and hasattr(hint, "__required_keys__"):
        hints = get_type_hints(hint, include_extras=True)
        required = {k: _strategy(h) for k, h in hints.items() if get_origin(h) is not NotRequired}
        optional = {k: _strategy(h) for k, h in hints.items() if get_origin(h) is NotRequired}
        return st.fixed_dictionaries(required, optional=optional)
    if origin in (types.UnionType, Union):
        return st.one_of(*(_strategy(a) for a in args))
    if origin is list:
        return st.lists(_strategy(args[0]), max_size=3)
    if origin is dict:
        return st.dictionaries(st.text(max_size=5), json_values, max_size=3)
    return {
        type(None): st.none(),
        bool: st.booleans(),
        int: st.integers(0, 50),
        float: st.floats(-1e6, 1e6) | st.integers(0, 50),
        str: st.text(max_size=8),
    }[hint]


# One session: a session_start starts the model over, a session_end sets the counters as the wrapper kept them.
conforming_events = st.sampled_from([k for k in Kind if k not in (Kind.SESSION_START, Kind.SESSION_END)]).flatmap(
    lambda kind: st.tuples(st.just(kind), _strategy(PAYLOADS[kind]))
)


@settings(max_examples=100, deadline=None)
@given(
    st.lists(
        st.tuples(conforming_events, st.floats(0, 1e6), st.sampled_from(["1", "2"])),  # with the call's id
        max_size=25,
    )
)
@pytest.mark.slow
def test_a_stream_of_well_typed_events_folds_without_a_malformed_one_and_counts_each(events) -> None:
    m = ConsoleModel(Limits(requests=3, timeline=2))
    for i, ((kind, data), mono, rid) in enumerate(events):
        assert payload_problems(kind, data) == []
        m.apply(Event(kind=kind, session_id="h", ts=1.0, mono=mono, seq=i, request_id=rid, model="m", data=data))
    v = m.view(1e6)
    assert v.malformed == 0 and v.events_applied == len(events)
    count = collections.Counter(kind for (kind, _data), _mono, _rid in events)
    c = v.counters
    assert (c.requests, c.late_dropped, c.unknown_dropped, c.invalidations) == (
        count[Kind.REQUEST_START],
        count[Kind.TOMBSTONE_HIT],
        count[Kind.UNKNOWN_RESPONSE],
        count[Kind.INVALIDATION],
    )
    assert c.ok + c.degraded + c.errors + c.timeouts + c.cancelled == count[Kind.REQUEST_END]


def test_seed_fills_what_the_events_do_not_know(f: EventFactory) -> None:
    m = ConsoleModel()
    # Attached mid-session: the feed's history starts after session_start.
    m.apply(f.make(Kind.WARNING, 100.0, message="late attach"))
    status = {
        "wrapper": {
            "name": "w1",
            "pid": 77,
            "version": "0.1.0",
            "upstream": {"kind": "http", "target": "http://x", "state": "ready", "generation": 2},
            "host": {"name": "inspector", "version": "0.9"},
        },
        "deadline": deadline_block(90, 5),
        "tombstones": {
            "count": 1,
            "ttl_s": 140.0,
            "terms": {"request_timeout_s": 85, "init_timeout_s": 10, "backoff_max_s": 40, "epsilon_s": 5},
            "late_dropped": 3,
            "items": [{"request_id": "5", "tool": "t", "age_s": 10.0, "expires_in_s": 130.0}],
        },
        "in_flight": [{"request_id": "8", "method": "tools/call", "tool": "slow", "elapsed_s": 12.0, "budget_s": 85.0}],
        "counters": {"requests": 40, "ok": 30, "late_dropped": 3},
        "log": {"session_id": "s1"},
    }
    m.seed(status, now_mono=101.0)
    v = m.view(111.0)
    assert v.header.name == "w1" and v.header.generation == 2 and v.header.host_name == "inspector"
    assert v.deadline.budget_s == 85.0
    assert v.tombstones.terms.total_s == 85 + 10 + 40 + 5
    assert v.tombstones.items[0].expires_in_s == 120.0
    assert v.in_flight[0].request_id == "8" and v.in_flight[0].elapsed_s == 22.0
    assert v.counters.requests == 40
    # Events after the seed carry on from it; the seeded call ends normally.
    m.apply(end(f, "8", 112.0))
    v = m.view(113.0)
    assert v.in_flight == () and v.requests[0].request_id == "8" and v.counters.ok == 31


def test_seed_does_not_override_what_events_established(model: ConsoleModel, f: EventFactory) -> None:
    model.apply(start(f, "1", 1.0, budget=50.0))
    model.seed({"deadline": deadline_block(999, 1), "in_flight": [{"request_id": "1", "elapsed_s": 0.0}]}, 2.0)
    v = model.view(3.0)
    assert v.deadline.host_timeout_s == 120.0
    assert v.in_flight[0].budget_s == 50.0 and v.in_flight[0].elapsed_s == 2.0


def test_session_start_discards_an_earlier_seed(f: EventFactory) -> None:
    m = ConsoleModel()
    m.seed({"in_flight": [{"request_id": "x", "elapsed_s": 1.0}], "counters": {"requests": 99}}, 0.0)
    m.apply(session_start(f))
    v = m.view(1.0)
    assert v.in_flight == () and v.counters.requests == 0


def test_snapshot_restore_is_independent_and_equivalent() -> None:
    events = sample_session()
    m = ConsoleModel()
    m.apply_many(events[:30])
    snap = m.snapshot()
    m.apply_many(events[30:])
    restored = ConsoleModel.restore(snap)
    restored.apply_many(events[30:])
    assert restored.view(SAMPLE_NOW) == m.view(SAMPLE_NOW)
    # The checkpoint itself was not touched by folding more events into either model.
    again = ConsoleModel.restore(snap)
    assert again.last_seq == events[29].seq
    assert again.view(SAMPLE_NOW) != m.view(SAMPLE_NOW)


def test_replay_parity_batches_do_not_matter() -> None:
    """What replay shows at T is what live showed at T: the fold does not depend on how events were batched."""
    events = sample_session()
    one = ConsoleModel()
    one.apply_many(events)
    other = ConsoleModel()
    for chunk in (events[i : i + 7] for i in range(0, len(events), 7)):
        other.apply_many(chunk)
        other.view(chunk[-1].mono)  # rendering in between changes nothing
    assert one.view(SAMPLE_NOW) == other.view(SAMPLE_NOW)
    assert one.request_detail("20", SAMPLE_NOW) == other.request_detail("20", SAMPLE_NOW)


def test_sample_session_view() -> None:
    m = ConsoleModel()
    m.apply_many(sample_session())
    v = m.view(SAMPLE_NOW)
    assert [r.request_id for r in v.in_flight] == ["23", "24"]
    assert council_of(v).request_id == "23"
    assert {t.tier for t in v.tiers if t.exceeds_budget} == {"high", "reasoning"}
    assert v.tombstones.count == 2
    assert v.header.generation == 2 and v.deadline.margin_s == 15.0


def test_filter_requests_by_tool_outcome_or_id() -> None:
    m = ConsoleModel()
    m.apply_many(sample_session())
    rows = m.view(SAMPLE_NOW).requests
    assert {r.tool for r in filter_requests(rows, "COUNCIL")} == {"consult_council"}
    assert {r.outcome for r in filter_requests(rows, "tool_err")} == {"tool_error"}
    assert [r.request_id for r in filter_requests(rows, "21")] == ["21"]
    assert filter_requests(rows, "  ") == rows


def test_the_model_does_not_import_textual() -> None:
    code = (
        "import sys; from mcpwatch.console.headless import format, model; from mcpwatch.testing import sample;"
        "bad = sorted(m for m in sys.modules if m.split('.')[0] in ('textual', 'mcp', 'httpx2'));"
        "print(bad); sys.exit(1 if bad else 0)"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stdout + result.stderr


# --- fixes from the console audit ----------------------------------------------------------------------------


def test_warnings_before_session_start_survive_it(f: EventFactory) -> None:
    """The wrapper reports a bad env value before its session_start: the reset must not wipe it."""
    m = ConsoleModel()
    m.apply(f.make(Kind.WARNING, 0.0, message="MCPWATCH_TOOL_CALL_DEADLINE_MARGIN_SEC='abc' is not a number"))
    m.apply(session_start(f, 0.01))
    assert [w.message for w in m.view(1.0).warnings] == ["MCPWATCH_TOOL_CALL_DEADLINE_MARGIN_SEC='abc' is not a number"]
    # ...but a warning of another session still goes with the reset.
    other = EventFactory(session_id="s2", origin_ts=2000.0)
    m.apply(other.make(Kind.WARNING, 0.0, message="of s2"))
    m.apply(session_start(f, 5.0))  # back to s1: a fresh start, s2's warning is not carried over
    assert [w.message for w in m.view(6.0).warnings] == []


def test_council_stage_follows_the_stage_the_progress_carries(model: ConsoleModel, f: EventFactory) -> None:
    """model_status events come only when a model's own status changes (stage 1): stages 2 and 3 come with the
    progress (the council's _meta stage, passed on by the wrapper), and a stage never goes back. The message text
    is not read for it."""
    model.apply(start(f, "13", 0.0, tool="consult_council", budget=25.0))
    model.apply(f.make(Kind.MODEL_STATUS, 0.1, request_id="13", model="a", stage=1, status="pending", tier="quick"))
    model.apply(f.make(Kind.PROGRESS, 1.0, request_id="13", progress=1, total=5, message="✓ a (1/1)", stage=1))
    assert council_of(model.view(1.0)).stage == 1
    model.apply(f.make(Kind.PROGRESS, 1.5, request_id="13", progress=1.5, total=5, message="Stage 2: peer review"))
    assert council_of(model.view(1.5)).stage == 1  # a message that names a stage, without the stage itself: no change
    model.apply(f.make(Kind.PROGRESS, 2.0, request_id="13", progress=2, total=5, message="reviewing", stage=2))
    assert council_of(model.view(2.0)).stage == 2
    model.apply(f.make(Kind.MODEL_STATUS, 2.5, request_id="13", model="a", stage=1, status="ok", latency_ms=2500))
    assert council_of(model.view(2.5)).stage == 2  # a late stage-1 status does not take it back
    model.apply(f.make(Kind.PROGRESS, 2.8, request_id="13", progress=3, total=5, message="…", stage=1))
    assert council_of(model.view(2.8)).stage == 2  # nor does a progress of an earlier stage
    model.apply(f.make(Kind.PROGRESS, 3.0, request_id="13", progress=4, total=5, message="chairman", stage=3))
    assert council_of(model.view(3.0)).stage == 3


def test_per_model_cap_is_the_effective_one_under_a_short_budget(model: ConsoleModel, f: EventFactory) -> None:
    """A 120 s per-model cap under a 25 s call budget: the model really has 25 s."""
    model.apply(start(f, "13", 0.0, tool="consult_council", budget=25.0))
    for name in ("fast", "slow"):
        model.apply(
            f.make(Kind.MODEL_STATUS, 0.0, request_id="13", model=name, status="pending", per_model_s=120, tier="q")
        )
    model.apply(f.make(Kind.MODEL_STATUS, 2.9, request_id="13", model="fast", status="ok", latency_ms=2900))
    council = council_of(model.view(30.0))
    by = {m.model: m for m in council.models}
    assert (by["fast"].per_model_s, by["fast"].cap_s, by["fast"].over_cap) == (120, 25.0, False)
    assert (by["slow"].cap_s, by["slow"].over_cap) == (25.0, True)  # 30 s against 25 s, not against 120 s
    assert council.cap_s == 25.0 and council.cap_limited_by_budget


def test_a_health_check_with_an_error_is_never_ok(model: ConsoleModel, f: EventFactory) -> None:
    model.apply(
        f.make(
            Kind.HEALTH_CHECK,
            1.0,
            ok=True,
            ping_ms=2.9,
            error="the upstream has not been initialised by a host yet; health tool not called",
        )
    )
    assert model.view(2.0).health.state == "not_ready"
    model.apply(f.make(Kind.HEALTH_CHECK, 3.0, ok=True, ping_ms=2.0, data={"tool": "council_health_check"}))
    assert model.view(4.0).health.state == "ok"
    model.apply(f.make(Kind.HEALTH_CHECK, 5.0, ok=False, ping_ms=None, error="no answer"))
    assert model.view(6.0).health.state == "failing"


def test_a_host_health_check_keeps_its_latency(model: ConsoleModel, f: EventFactory) -> None:
    model.apply(
        f.make(
            Kind.HEALTH_CHECK,
            1.0,
            ok=True,
            ping_ms=None,
            latency_ms=2900.5,
            source="host",
            data={"tool": "council_health_check"},
        )
    )
    health = model.view(2.0).health
    assert (health.ping_ms, health.latency_ms, health.source, health.state) == (None, 2900.5, "host", "ok")


def test_session_end_closes_the_upstream_and_stops_every_clock(model: ConsoleModel, f: EventFactory) -> None:
    model.apply(f.make(Kind.UPSTREAM_STATE, 0.5, state="ready", generation=1))
    model.apply(start(f, "1", 10.0, tool="consult_council"))
    model.apply(f.make(Kind.MODEL_STATUS, 10.0, request_id="1", model="m", status="pending", per_model_s=90))
    model.apply(f.make(Kind.SESSION_END, 40.0, reason="received SIGTERM"))
    v = model.view(500.0)
    assert v.header.upstream_state == "closed" and v.header.ended == "received SIGTERM"
    (r,) = v.in_flight
    assert r.unfinished and r.elapsed_s == 30.0  # not 490 s and counting
    assert council_of(v).models[0].elapsed_s == 30.0
    detail = detail_of(model, "1", 500.0)
    assert detail.unfinished and detail.elapsed_s == 30.0


def test_host_info_with_a_profile_shows_the_host_and_the_clock_that_decides(
    model: ConsoleModel, f: EventFactory
) -> None:
    from mcpwatch.console.headless.render_base import Palette

    clock = {"kind": "wall", "seconds": 60.0, "setting": "tool_timeout_sec", "resets_on_progress": False}
    info: dict[str, Any] = {
        "name": "codex-mcp-client",
        "version": "0.154.0",
        "label": "Codex CLI",
        "deciding_clock": clock,
    }
    model.apply(f.make(Kind.HOST_INFO, 1.0, **info, protocol_version="2025-06-18"))
    h = model.view(2.0).header
    assert (h.host_profile, h.host_clock) == ("Codex CLI", "tool_timeout_sec 60 s")
    line = top_bar(h, "live", True, False, Palette({})).plain
    # The host (and its profile) come before the upstream's command line, which is what a narrow bar cuts.
    host = "host codex-mcp-client 0.154.0 (Codex CLI, budget from tool_timeout_sec 60 s)  │  stdio "
    assert host in line
    model.apply(f.make(Kind.HOST_INFO, 3.0, name="x", label="unknown host 'x'", deciding_clock=None))
    assert (
        "host x (unknown host 'x')  │  stdio "
        in top_bar(model.view(4.0).header, "live", True, False, Palette({})).plain
    )


def test_two_host_sessions_with_equal_upstream_ids_stay_apart(model: ConsoleModel, f: EventFactory) -> None:
    """An HTTP front numbers each host session's upstream ids on its own: the same up_id in two sessions is two
    calls and two tombstones, each late response counted on its own call."""
    for tag in ("aaaa", "bbbb"):
        model.apply(
            f.make(
                Kind.REQUEST_START,
                0.0,
                request_id=f"{tag}/1",
                tool="slow",
                method="tools/call",
                up_id=5,
                budget_s=110.0,
                host_session=tag,
            )
        )
    for tag in ("aaaa", "bbbb"):
        model.apply(end(f, f"{tag}/1", 10.0, outcome="deadline", host_session=tag))
        model.apply(f.make(Kind.TOMBSTONE_ADD, 10.0, up_id=5, ttl_s=20.0, reason="deadline", host_session=tag))
    model.apply(f.make(Kind.TOMBSTONE_HIT, 12.0, up_id=5, what="response", age_s=2.0, host_session="bbbb"))
    items = {item.request_id: item for item in model.view(13.0).tombstones.items}
    assert set(items) == {"aaaa/1", "bbbb/1"}
    assert items["aaaa/1"].hits == 0 and items["bbbb/1"].hits == 1
    assert detail_of(model, "bbbb/1", 13.0).timeline[-1].kind == "tombstone_hit"
    assert detail_of(model, "aaaa/1", 13.0).timeline[-1].kind == "tombstone_add"
