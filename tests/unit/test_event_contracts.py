"""The event contract, kind by kind: a payload of each kind's type goes through the wrapper's recorder into a real
SQLite log, comes back unchanged through the reader, and the console's model folds it into what an operator sees.
The generators (the console's sample, the replay benchmark's session) and the checker itself are held to the same
types."""

from __future__ import annotations

import itertools
import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import replace
from pathlib import Path
from typing import Any, Literal, get_args, get_origin, get_type_hints

import pytest

from mcpwatch.bench.replay import SyntheticSession
from mcpwatch.clock import ManualClock
from mcpwatch.console.headless.council_models import ModelLog
from mcpwatch.console.headless.model import ConsoleModel
from mcpwatch.console.headless.views import ViewState
from mcpwatch.events import (
    PAYLOADS,
    CancelAckData,
    ConfigChangeData,
    CountersBlock,
    DeadlineBlock,
    Event,
    HealthCheckData,
    HeartbeatData,
    HostInfoData,
    HostSessionRefusedData,
    InvalidationData,
    Kind,
    LateErrorData,
    LateResultData,
    LateReuseData,
    ModelStatusData,
    OperatorCallData,
    OutcomeText,
    ProgressData,
    RequestEndData,
    RequestStartData,
    SessionEndData,
    SessionStartData,
    TaskCreatedData,
    TaskStatusData,
    TombstoneAddData,
    TombstoneExpireData,
    TombstoneHitData,
    UnknownResponseData,
    UpstreamStateData,
    WarningData,
    payload_problems,
)
from mcpwatch.logview.ending import crashed_reason, stand_in_end
from mcpwatch.store import EventReader, EventWriter, schema, session_counts
from mcpwatch.store import reader as reader_module
from mcpwatch.testing.sample import EventFactory, flood, sample_session
from mcpwatch.wrapper.calls.recorder import Recorder

DEADLINE = DeadlineBlock(
    host_timeout_s=120.0,
    margin_s=10.0,
    override_s=None,
    budget_s=110.0,
    source="derived",
    explanation="host timeout 120 s − margin 10 s",
)
TTL = {"request_timeout_s": 110.0, "init_timeout_s": 10.0, "backoff_max_s": 30.0, "epsilon_s": 5.0, "total_s": 155.0}
COUNTERS = CountersBlock(
    requests=4,
    ok=2,
    errors=1,
    timeouts=1,
    cancelled=0,
    late_dropped=1,
    late_results=0,
    late_reused=0,
    unknown_dropped=2,
    invalidations=0,
    host_frame_errors=0,
    upstream_garbage=0,
)
START = SessionStartData(
    name="round-trip",
    pid=4242,
    version="0.1.0",
    front="stdio",
    upstream={"kind": "stdio", "target": "mcpwatch council"},
    config={"deadline": {"margin_s": 10.0}},
    deadline=DEADLINE,
    tombstone_ttl=TTL,  # type: ignore[typeddict-item]
    state_sync={"policies": 2, "overlaps": ["a.* and a.b overlap"]},
)
CALL = RequestStartData(method="tools/call", up_id=7, budget_s=110.0, budget_source="derived", arguments='{"q": 1}')
CALL_COLUMNS = {"request_id": "h-1", "tool": "consult_council"}

# kind → (columns, payload, what the console shows for it); every example but session_start follows a session_start,
# and those marked with the call's columns follow the call's request_start.
Check = Callable[[ConsoleModel, ViewState], None]


def _check_start(m: ConsoleModel, v: ViewState) -> None:
    assert (v.header.name, v.header.pid, v.header.front, v.header.upstream_kind) == (
        "round-trip",
        4242,
        "stdio",
        "stdio",
    )
    assert (v.deadline.budget_s, v.deadline.source, v.tombstones.terms.total_s) == (110.0, "derived", 155.0)
    assert v.state_sync_policies == 2


def _check_end(m: ConsoleModel, v: ViewState) -> None:
    assert v.header.ended == "host closed stdin"
    assert (v.counters.requests, v.counters.ok, v.counters.timeouts, v.counters.unknown_dropped) == (4, 2, 1, 2)


def _check_host(m: ConsoleModel, v: ViewState) -> None:
    assert (v.header.host_name, v.header.host_version, v.header.protocol_version) == (
        "claude-code",
        "2.1",
        "2025-11-25",
    )


def _check_upstream(m: ConsoleModel, v: ViewState) -> None:
    assert (v.header.upstream_state, v.header.generation, v.header.exit_code) == ("closed", 3, 1)
    assert v.header.stderr_tail == ("Traceback", "MemoryError")


def _check_call(m: ConsoleModel, v: ViewState) -> None:
    (call,) = v.in_flight
    assert (call.request_id, call.tool, call.budget_s) == ("h-1", "consult_council", 110.0)
    detail = m.request_detail("h-1", v.now_mono)
    assert detail is not None
    assert (detail.up_id, detail.budget_source, detail.arguments) == ("7", "derived", '{"q": 1}')


def _check_progress(m: ConsoleModel, v: ViewState) -> None:
    (call,) = v.in_flight
    assert (call.progress, call.total, call.message) == (2, 4, "Stage 2: peer review")
    assert v.council is not None and v.council.stage == 2


def _check_model(m: ConsoleModel, v: ViewState) -> None:
    assert v.council is not None and (v.council.tier, v.council.per_model_s) == ("high", 90.0)
    (model,) = v.council.models
    assert (model.model, model.status, model.latency_ms, model.stage) == ("openai/gpt-5.1", "ok", 38200, 1)


def _check_request_end(m: ConsoleModel, v: ViewState) -> None:
    assert v.in_flight == ()
    (done,) = v.requests
    assert (done.outcome, done.duration_s, done.partial) == ("deadline", 110.0, True)
    assert done.error == "deadline"
    detail = m.request_detail("h-1", v.now_mono)
    assert detail is not None and detail.result_preview == '{"partial": true}'
    assert v.counters.timeouts == 1


def _check_tombstone_add(m: ConsoleModel, v: ViewState) -> None:
    (stone,) = v.tombstones.items
    assert (stone.up_id, stone.request_id, stone.reason, stone.ttl_s) == ("7", "h-1", "deadline", 155.0)
    assert stone.expires_in_s == pytest.approx(155.0 - (v.now_mono - 1.0))


def _check_tombstone_hit(m: ConsoleModel, v: ViewState) -> None:
    assert v.tombstones.late_dropped == 1 and v.counters.late_dropped == 1


def _check_tombstone_expire(m: ConsoleModel, v: ViewState) -> None:
    assert v.tombstones.items == () and v.tombstones.count == 0


def _check_unknown(m: ConsoleModel, v: ViewState) -> None:
    assert v.counters.unknown_dropped == 1


def _check_invalidation(m: ConsoleModel, v: ViewState) -> None:
    (inv,) = v.invalidations
    assert (inv.caused_by, inv.patterns) == ("tasks.update", ("tasks.*", "sprints.*"))
    assert v.counters.invalidations == 1


def _check_health(m: ConsoleModel, v: ViewState) -> None:
    assert (v.health.ok, v.health.ping_ms, v.health.tool, v.health.latency_ms) == (True, 3.5, "council_health", 20.0)
    assert v.health.timeout_multiplier == 1.5
    assert [(t.tier, t.total_s) for t in v.tiers] == [("high", 180.0)]


def _check_config(m: ConsoleModel, v: ViewState) -> None:
    (change,) = v.config_changes
    assert (change.key, change.old, change.new, change.source) == ("margin_s", 10.0, 15.0, "operator")
    assert (v.deadline.margin_s, v.deadline.budget_s) == (15.0, 105.0)


def _check_warning(m: ConsoleModel, v: ViewState) -> None:
    assert v.warnings[0].message == "upstream wrote a frame that is not JSON (#1)"


def _check_late_result(m: ConsoleModel, v: ViewState) -> None:
    assert v.counters.late_results == 1
    detail = m.request_detail("h-1", v.now_mono)
    assert detail is not None and detail.late is not None
    late = detail.late
    assert (late.delay_s, late.duration_s, late.outcome, late.size_bytes) == (12.0, 122.0, "ok", 17)
    assert late.result == '{"answer": 42}' and late.truncated is False


def _check_cancel_ack(m: ConsoleModel, v: ViewState) -> None:
    assert v.counters.late_results == 0  # the call never finished: no late result
    detail = m.request_detail("h-1", v.now_mono)
    assert detail is not None and detail.late is None
    assert detail.timeline[-1].text == "the server acknowledged the cancel 0.0s after the cut: it never finished"


def _check_late_error(m: ConsoleModel, v: ViewState) -> None:
    assert v.counters.late_results == 0  # an error answer is no result: the call never finished
    detail = m.request_detail("h-1", v.now_mono)
    assert detail is not None and detail.late is None
    assert detail.timeline[-1].text.startswith("the server answered with an error 0.3s after the cut (")


def _check_late_reuse(m: ConsoleModel, v: ViewState) -> None:
    assert v.counters.late_reused == 1
    detail = m.request_detail("h-1", v.now_mono)
    assert detail is not None and detail.late is not None
    assert (detail.late.from_request_id, detail.late.delay_s, detail.late.age_s) == ("h-0", 12.0, 30.0)


REFUSED = "a new host session from 127.0.0.1:50000 was refused: every session is busy"


def _check_refused(m: ConsoleModel, v: ViewState) -> None:
    assert v.warnings[0].message == REFUSED  # the operator sees a host turned away


def _check_heartbeat(m: ConsoleModel, v: ViewState) -> None:
    (call,) = v.in_flight  # still running, and the wrapper's own keep-alive is not the upstream's progress
    assert (call.request_id, call.progress, call.message) == ("h-1", None, None)


def _check_task_created(m: ConsoleModel, v: ViewState) -> None:
    (call,) = v.in_flight  # a call answered with a task is still in flight: the task is its life
    assert (call.request_id, call.message) == ("h-1", "task watched · working — Gathering sources...")


def _check_task_status(m: ConsoleModel, v: ViewState) -> None:
    (call,) = v.in_flight
    assert call.message == "task watched · input_required · 2 polls — Which python?"
    detail = m.request_detail("h-1", v.now_mono)
    assert detail is not None and any("created" in item.text for item in detail.timeline)
    assert detail.timeline[-1].text == "task input_required: Which python?"


TASK = TaskCreatedData(
    task_id="t-1",
    status="working",
    status_message="Gathering sources...",
    ttl_ms=300000,
    poll_interval_ms=1000,
    era="2025-11-25",
)


def _check_operator_call(m: ConsoleModel, v: ViewState) -> None:
    assert v.events_applied == 2  # folded (the Models view reads it from the log: see below)


TOMB = TombstoneAddData(up_id=7, ttl_s=155.0, reason="deadline", expires_mono=156.0)
EXAMPLES: dict[Kind, tuple[dict[str, Any], Mapping[str, Any], Check, tuple[Kind, ...]]] = {
    Kind.SESSION_START: ({}, START, _check_start, ()),
    Kind.SESSION_END: ({}, SessionEndData(reason="host closed stdin", counters=COUNTERS), _check_end, ()),
    Kind.HOST_INFO: (
        {},
        HostInfoData(name="claude-code", version="2.1", protocol_version="2025-11-25"),
        _check_host,
        (),
    ),
    Kind.UPSTREAM_STATE: (
        {},
        UpstreamStateData(
            state="closed", generation=3, reason="exited", exit_code=1, stderr_tail=["Traceback", "MemoryError"]
        ),
        _check_upstream,
        (),
    ),
    Kind.REQUEST_START: (CALL_COLUMNS, CALL, _check_call, ()),
    Kind.PROGRESS: (
        CALL_COLUMNS,
        ProgressData(progress=2, total=4, message="Stage 2: peer review", stage=2),
        _check_progress,
        (Kind.REQUEST_START, Kind.MODEL_STATUS),
    ),
    Kind.MODEL_STATUS: (
        {**CALL_COLUMNS, "model": "openai/gpt-5.1"},
        ModelStatusData(stage=1, status="ok", latency_ms=38200, per_model_s=90.0, tier="high"),
        _check_model,
        (Kind.REQUEST_START,),
    ),
    Kind.REQUEST_END: (
        CALL_COLUMNS,
        RequestEndData(
            outcome="deadline",
            duration_s=110.0,
            method="tools/call",
            partial=True,
            error="deadline",
            result_preview='{"partial": true}',
        ),
        _check_request_end,
        (Kind.REQUEST_START,),
    ),
    Kind.TOMBSTONE_ADD: (CALL_COLUMNS, TOMB, _check_tombstone_add, (Kind.REQUEST_START,)),
    Kind.TOMBSTONE_HIT: (
        CALL_COLUMNS,
        TombstoneHitData(up_id=7, what="response", age_s=4.5),
        _check_tombstone_hit,
        (Kind.REQUEST_START, Kind.TOMBSTONE_ADD),
    ),
    Kind.TOMBSTONE_EXPIRE: (
        CALL_COLUMNS,
        TombstoneExpireData(up_id=7, age_s=155.0),
        _check_tombstone_expire,
        (Kind.REQUEST_START, Kind.TOMBSTONE_ADD),
    ),
    Kind.LATE_RESULT: (
        CALL_COLUMNS,
        LateResultData(
            up_id=7,
            reason="deadline",
            cut_after_s=110.0,
            delay_s=12.0,
            duration_s=122.0,
            outcome="ok",
            size_bytes=17,
            reuse_ttl_s=None,
            result={"answer": 42},
        ),
        _check_late_result,
        (Kind.REQUEST_START, Kind.TOMBSTONE_ADD, Kind.REQUEST_END),
    ),
    Kind.CANCEL_ACK: (
        CALL_COLUMNS,
        CancelAckData(
            up_id=7,
            reason="deadline",
            cut_after_s=110.0,
            delay_s=0.004,
            code=0,
            error='{"code":0,"message":"Request cancelled"}',
        ),
        _check_cancel_ack,
        (Kind.REQUEST_START, Kind.TOMBSTONE_ADD, Kind.REQUEST_END),
    ),
    Kind.LATE_ERROR: (
        CALL_COLUMNS,
        LateErrorData(
            up_id=7,
            reason="deadline",
            cut_after_s=110.0,
            delay_s=0.3,
            code=-32000,
            error='{"code":-32000,"message":"Connection closed"}',
        ),
        _check_late_error,
        (Kind.REQUEST_START, Kind.TOMBSTONE_ADD, Kind.REQUEST_END),
    ),
    Kind.LATE_REUSE: (
        CALL_COLUMNS,
        LateReuseData(from_request_id="h-0", delay_s=12.0, age_s=30.0, ttl_s=600.0),
        _check_late_reuse,
        (Kind.REQUEST_START,),
    ),
    Kind.UNKNOWN_RESPONSE: ({}, UnknownResponseData(up_id=99, reason="expired_tombstone"), _check_unknown, ()),
    Kind.INVALIDATION: (
        {"request_id": "h-2", "tool": "tasks.update"},
        InvalidationData(caused_by="tasks.update", patterns=["tasks.*", "sprints.*"]),
        _check_invalidation,
        (),
    ),
    Kind.HEALTH_CHECK: (
        {},
        HealthCheckData(
            ok=True,
            ping_ms=3.5,
            tool="council_health",
            result={
                "tiers": {"high": {"total_s": 180, "per_model_s": 90, "models": ["a", "b"]}},
                "timeout_multiplier": 1.5,
            },
            error=None,
            latency_ms=20.0,
        ),
        _check_health,
        (),
    ),
    Kind.CONFIG_CHANGE: (
        {},
        ConfigChangeData(
            key="margin_s",
            old=10.0,
            new=15.0,
            source="operator",
            deadline={**DEADLINE, "margin_s": 15.0, "budget_s": 105.0},
        ),
        _check_config,
        (),
    ),
    Kind.WARNING: ({}, WarningData(message="upstream wrote a frame that is not JSON (#1)"), _check_warning, ()),
    Kind.OPERATOR_CALL: (
        {"tool": "council.models.disable"},
        OperatorCallData(
            arguments='{"model": "x-ai/grok-4"}',
            ok=True,
            error=None,
            result_preview='{"changed": true}',
            duration_s=0.01,
        ),
        _check_operator_call,
        (),
    ),
    Kind.HEARTBEAT: (
        CALL_COLUMNS,
        HeartbeatData(progress=0, total=None, message="still working (30 s)", elapsed_s=30.0, interval_s=25.0),
        _check_heartbeat,
        (Kind.REQUEST_START,),
    ),
    Kind.TASK_CREATED: (CALL_COLUMNS, TASK, _check_task_created, (Kind.REQUEST_START,)),
    Kind.TASK_STATUS: (
        CALL_COLUMNS,
        TaskStatusData(
            task_id="t-1",
            status="input_required",
            status_message="Which python?",
            elapsed_s=2.0,
            seen_by="tasks/get",
            polls=2,
        ),
        _check_task_status,
        (Kind.REQUEST_START, Kind.TASK_CREATED),
    ),
    Kind.HOST_SESSION_REFUSED: (
        {},
        HostSessionRefusedData(message=REFUSED, open=16, max=16, refused=1),
        _check_refused,
        (),
    ),
}


def test_every_kind_has_a_payload_type_and_an_example() -> None:
    assert set(PAYLOADS) == set(Kind) == set(EXAMPLES)
    for kind, (_columns, payload, _check, _before) in EXAMPLES.items():
        assert payload_problems(kind, payload) == [], kind


def _emit(recorder: Recorder, kind: Kind) -> Event:
    columns, payload, _check, _before = EXAMPLES[kind]
    return recorder.emit(kind, **columns, **payload)


@pytest.mark.parametrize("kind", list(Kind))
def test_each_kind_round_trips_through_the_log_into_the_console(tmp_path: Path, kind: Kind) -> None:
    path = tmp_path / "events.db"
    clock = ManualClock()
    writer = EventWriter(path, clock=clock)
    sid = writer.start_session(name="round-trip", upstream="stdio: x", pid=4242, config={})
    recorder = Recorder(sid, writer, clock=clock)
    emitted = [] if kind == Kind.SESSION_START else [_emit(recorder, Kind.SESSION_START)]
    for earlier in EXAMPLES[kind][3]:
        clock.advance(1.0)
        emitted.append(_emit(recorder, earlier))
    clock.advance(1.0)
    emitted.append(_emit(recorder, kind))
    writer.close()

    with EventReader(path) as reader:
        read = list(reader.events(sid))
    assert [(e.kind, e.seq, e.request_id, e.tool, e.model, e.data) for e in read] == [
        (e.kind, e.seq, e.request_id, e.tool, e.model, e.data) for e in emitted
    ]
    assert all(payload_problems(e.kind, e.data) == [] for e in read)

    model = ConsoleModel()
    model.apply_many(read)
    view = model.view(read[-1].mono + 1.0)
    assert view.malformed == 0
    EXAMPLES[kind][2](model, view)


def test_the_checker_names_what_breaks_a_payload() -> None:
    assert payload_problems(Kind.UNKNOWN_RESPONSE, {"up_id": 3, "reason": "gone"}) == [
        "unknown_response.reason: 'gone' is not one of ('unknown_id', 'stale_generation', 'expired_tombstone', "
        "'unknown_progress_token', 'unknown_subscription', 'no_host_for_notification')"
    ]
    # an HTTP front's host session may ride on any kind, as text
    assert payload_problems(Kind.UNKNOWN_RESPONSE, {"up_id": 3, "reason": "unknown_id", "host_session": "ab12"}) == []
    assert payload_problems(Kind.UNKNOWN_RESPONSE, {"up_id": 3, "reason": "unknown_id", "host_session": 7}) == [
        "unknown_response.host_session: expected str, got 7"
    ]
    assert payload_problems(Kind.REQUEST_START, {"method": "ping", "up_id": "1", "extra": 1}) == [
        "request_start: missing budget_s",
        "request_start: unknown field extra",
        "request_start.up_id: '1' does not fit int | None",
    ]
    assert payload_problems(Kind.SESSION_END, {"reason": "x", "counters": {**COUNTERS, "ok": True}}) == [
        "session_end.counters.ok: expected int, got True"
    ]
    assert payload_problems("nonsense", {}) == ["'nonsense' is not an event kind"]


def test_a_crashed_sessions_stand_in_end_follows_the_contract() -> None:
    last = Event(Kind.WARNING, "s", 1.0, 5.0, 9, data={"message": "x"})
    end = stand_in_end("s", last, crashed_reason(last.ts))
    assert payload_problems(end.kind, end.data) == []


def _literal_strings(hint: Any, seen: set[int] | None = None) -> set[str]:
    """Every string a `Literal` inside `hint` allows, through unions, lists and nested payload blocks."""
    seen = set() if seen is None else seen
    if id(hint) in seen:
        return set()
    seen.add(id(hint))
    if get_origin(hint) is Literal:
        return {value for value in get_args(hint) if isinstance(value, str)}
    found: set[str] = set()
    if isinstance(hint, type) and hasattr(hint, "__required_keys__"):
        for field in get_type_hints(hint, include_extras=True).values():
            found |= _literal_strings(field, seen)
    for arg in get_args(hint):
        found |= _literal_strings(arg, seen)
    return found


OUTCOMES = get_args(OutcomeText)
LITERAL_STRINGS = frozenset(s for payload in PAYLOADS.values() for s in _literal_strings(payload))


def _shape(value: Any) -> Any:
    """What `payload_problems` can tell apart in a value: keys, plain types, and the strings some `Literal` allows
    (every other string fails a `Literal` alike). Two payloads of one shape get the same verdict."""
    if isinstance(value, dict):
        return tuple(sorted((key, _shape(item)) for key, item in value.items()))
    if isinstance(value, list):
        return ("list", frozenset(_shape(item) for item in value))
    if isinstance(value, str):
        return ("str", value if value in LITERAL_STRINGS else None)
    return type(value).__name__


def contract_problems(events: Iterable[Event]) -> set[str]:
    """The contract problems of a stream, each distinct event shape (kind, keys, value types) checked once."""
    shapes = {(e.kind, _shape(e.data)): e for e in events}
    return {p for e in shapes.values() for p in payload_problems(e.kind, e.data)}


def test_an_event_shape_tells_apart_what_the_contract_checks() -> None:
    """Beside a conforming event of its kind, an outcome outside its Literal or a float given as text is checked."""
    end = next(e for e in sample_session() if e.kind == Kind.REQUEST_END)
    assert contract_problems([end, replace(end, request_id="other")]) == set()
    outcome = replace(end, data={**end.data, "outcome": "okay"})
    assert contract_problems([end, outcome]) == {"request_end.outcome: 'okay' is not one of " + repr(OUTCOMES)}
    duration = replace(end, data={**end.data, "duration_s": "0.5"})
    assert contract_problems([end, duration]) == {"request_end.duration_s: expected float, got '0.5'"}


def test_the_generators_follow_the_contract() -> None:
    streams = {
        "sample": sample_session(),
        "flood": itertools.islice(flood(EventFactory()), 30_000),
        "replay bench": SyntheticSession("s", 0.0, rare_every_s=60.0).events(30_000),
    }
    for name, stream in streams.items():
        events = list(stream)
        assert contract_problems(events) == set(), name
        assert {e.kind for e in events} >= {Kind.REQUEST_START, Kind.REQUEST_END, Kind.PROGRESS}, name


def test_a_tombstone_seeded_from_status_is_the_one_its_expire_event_removes() -> None:
    """`status` names a tombstone's up_id `key`; the console attached mid-session matches it to the later events."""
    f = EventFactory()
    model = ConsoleModel()
    model.apply(f.make(Kind.WARNING, 100.0, message="attached late"))
    item = {"key": 7, "request_id": "h-1", "tool": "t", "reason": "deadline", "age_s": 5.0, "expires_in_s": 150.0}
    model.seed({"tombstones": {"items": [item], "ttl_s": 155.0}}, 100.0)
    (stone,) = model.view(100.0).tombstones.items
    assert (stone.up_id, stone.reason) == ("7", "deadline")
    model.apply(f.make(Kind.TOMBSTONE_EXPIRE, 250.0, request_id="h-1", up_id=7, age_s=155.0))
    assert model.view(250.0).tombstones.items == ()


@pytest.mark.parametrize(
    ("sql", "payloads"),
    [
        (schema.REQUESTS_VIEW, (RequestStartData, RequestEndData)),
        (schema.TOMBSTONES_VIEW, (TombstoneAddData, TombstoneHitData, TombstoneExpireData)),
        (schema.INVALIDATIONS_VIEW, (InvalidationData,)),
        (schema.LATE_RESULTS_VIEW, (LateResultData, RequestEndData)),
        (schema.LATE_REUSES_VIEW, (LateReuseData,)),
        (reader_module._MARKERS, (RequestEndData, LateResultData, ConfigChangeData)),
        (session_counts.AGGREGATE, (RequestEndData,)),
    ],
)
def test_the_sql_reads_only_fields_the_payload_types_declare(sql: str, payloads: tuple[type, ...]) -> None:
    fields = set(re.findall(r"'\$\.(\w+)'", sql))
    assert fields, "the query reads no event field: the pattern is out of date"
    declared = {name for payload in payloads for name in payload.__annotations__}
    assert fields <= declared


def test_an_operator_call_reaches_the_models_view_with_its_tool(tmp_path: Path) -> None:
    """The tool is the event's column, not a data field: the Models view still learns which model was disabled."""
    path = tmp_path / "events.db"
    writer = EventWriter(path)
    sid = writer.start_session(name="models", upstream="stdio: x", pid=1, config={})
    recorder = Recorder(sid, writer)
    status = ModelStatusData(stage=1, status="ok", latency_ms=900, per_model_s=90.0, tier="high")
    recorder.emit(Kind.MODEL_STATUS, request_id="1", tool="consult_council", model="x-ai/grok-4", **status)
    _emit(recorder, Kind.OPERATOR_CALL)
    writer.close()
    log = ModelLog(str(path), sid)
    with EventReader(path) as reader:
        log.update(reader)
    (grok,) = log.stats(float("inf"))
    assert grok.enabled is False  # the operator's switch, read back from the log
