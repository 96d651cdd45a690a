"""The event vocabulary shared by the wrapper, the log, the operator stream and replay (DESIGN.md).

Each kind's `data` has one payload type below (`SessionStartData`, `RequestEndData`, …, listed in `PAYLOADS`): the
contract between the wrapper that emits, the log and its SQL views, the console's view model and the generators
(`console.sample`, `bench.replay`). Replay rebuilds the console from these alone, so anything the console shows must
be derivable from them. `payload_problems` checks one payload against its type; the round-trip tests run every kind
through a real log into the console's model. The operator's `status` answer is `Status`.

On an HTTP front every event caused by a host session (requests, progress, models, ends, tombstones, late frames,
upstream states, host_info, warnings, operator calls) also carries host_session (a short name of the session;
"sessionless" for the upstream 2026-era requests share). Each session has its own upstream and numbers its own
up_ids, so an up_id is named by (host_session, up_id); its request ids are "<host_session>/<host id>".
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field, fields
from enum import StrEnum
from typing import Any, Literal, NotRequired, TypedDict, cast, get_args, get_origin, get_type_hints


class Kind(StrEnum):
    """What happened; each kind's data is its payload type in `PAYLOADS` (below)."""

    SESSION_START = "session_start"
    SESSION_END = "session_end"
    HOST_INFO = "host_info"
    UPSTREAM_STATE = "upstream_state"
    REQUEST_START = "request_start"
    PROGRESS = "progress"
    MODEL_STATUS = "model_status"
    REQUEST_END = "request_end"
    TOMBSTONE_ADD = "tombstone_add"
    TOMBSTONE_HIT = "tombstone_hit"  # a late response (or progress) dropped
    TOMBSTONE_EXPIRE = "tombstone_expire"
    LATE_RESULT = "late_result"  # a cut call's response, kept (bounded)
    CANCEL_ACK = "cancel_ack"  # a cut call's error answer that only acknowledges mcpwatch's cancel
    LATE_ERROR = "late_error"  # a cut call's error answer (e.g. -32000 Connection closed): no result, no duration
    LATE_REUSE = "late_reuse"  # a call answered with a kept late result
    UNKNOWN_RESPONSE = "unknown_response"
    INVALIDATION = "invalidation"
    HEALTH_CHECK = "health_check"
    CONFIG_CHANGE = "config_change"
    WARNING = "warning"
    HEARTBEAT = "heartbeat"  # progress the wrapper sent itself, to keep a host's idle clock alive
    OPERATOR_CALL = "operator_call"  # the operator's own tools/call to the upstream
    TASK_CREATED = "task_created"  # the upstream answered a tools/call with a task: the call lives on as it
    TASK_STATUS = "task_status"  # a task's status (or status message) changed, as a poll or notification showed
    HOST_SESSION_REFUSED = "host_session_refused"  # the HTTP front turned a new host away: every session was busy


class UpstreamState(StrEnum):
    CONNECTING = "connecting"
    READY = "ready"
    BACKOFF = "backoff"
    CLOSED = "closed"


class Outcome(StrEnum):
    OK = "ok"
    TOOL_ERROR = "tool_error"
    ERROR = "error"
    DEADLINE = "deadline"
    CANCELLED = "cancelled"
    UPSTREAM_LOST = "upstream_lost"


KINDS: frozenset[str] = frozenset(k.value for k in Kind)


@dataclass(slots=True)
class Event:
    """One thing that happened. `seq` is monotonic within a session; `id` is assigned by the log."""

    kind: str
    session_id: str
    ts: float
    mono: float
    seq: int = 0
    request_id: str | None = None
    tool: str | None = None
    model: str | None = None
    data: dict[str, Any] = field(default_factory=dict)
    id: int | None = None

    def to_dict(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "seq": self.seq,
            "session_id": self.session_id,
            "ts": self.ts,
            "mono": self.mono,
            "kind": self.kind,
            "request_id": self.request_id,
            "tool": self.tool,
            "model": self.model,
            "data": self.data,
        }

    @classmethod
    def from_dict(cls, raw: dict[str, Any]) -> Event:
        data = raw.get("data") or {}
        if isinstance(data, str):
            data = json.loads(data)
        return cls(
            kind=str(raw["kind"]),
            session_id=str(raw["session_id"]),
            ts=float(raw["ts"]),
            mono=float(raw["mono"]),
            seq=int(raw.get("seq") or 0),
            request_id=None if raw.get("request_id") is None else str(raw["request_id"]),
            tool=raw.get("tool"),
            model=raw.get("model"),
            data=data,
            id=raw.get("id"),
        )


# --- payloads: one type per kind ------------------------------------------------------------------------------

TombstoneReason = Literal["deadline", "host_cancel", "operator_cancel", "upstream_lost", "shutdown"]
UnknownReason = Literal[
    "unknown_id",
    "stale_generation",
    "expired_tombstone",
    "unknown_progress_token",
    "unknown_subscription",
    "no_host_for_notification",  # a notification on the upstream 2026-era requests share that no one host owns
]
ModelStatusValue = Literal["pending", "ok", "timeout", "rate_limited", "auth_error", "error"]


class DeadlineBlock(TypedDict):
    """`Budget.to_dict()`: the budget for a call with no per-tool entry, and how it was reached."""

    host_timeout_s: float
    margin_s: float
    override_s: float | None
    budget_s: float | None  # None: the budget is disabled
    source: str  # "override" | "explicit" | "tool" | "derived" | "clamped" | "disabled"
    explanation: str
    host: NotRequired[str | None]  # the detected host's profile label, when a host is known
    clock: NotRequired[str | None]  # the host clock that decided the host timeout, e.g. "tool_timeout_sec 60 s"


class TtlTermsBlock(TypedDict):
    """`TtlTerms.to_dict()`: how long a tombstone lives, term by term."""

    request_timeout_s: float
    init_timeout_s: float
    backoff_max_s: float
    epsilon_s: float
    total_s: float


class UpstreamRef(TypedDict):
    kind: Literal["stdio", "http"]
    target: str


class StateSyncSummary(TypedDict):
    policies: int
    overlaps: list[str]


@dataclass
class Counters:
    """Every counter, declared once: the wrapper counts in one (`wrapper.calls.pending`), the console shows one
    (`console.headless.panels.counters`), and `CountersBlock` below is its shape on the wire and in the log."""

    requests: int = 0
    ok: int = 0  # whole answers (degraded ones are counted apart)
    degraded: int = 0  # ok answers that say they are not whole (a fallback summary, a partial run)
    errors: int = 0
    timeouts: int = 0
    cancelled: int = 0
    late_dropped: int = 0
    late_results: int = 0  # late responses to cut tools/calls, logged as late_result
    late_reused: int = 0  # calls answered with a stored late result
    unknown_dropped: int = 0
    invalidations: int = 0
    host_frame_errors: int = 0
    upstream_garbage: int = 0
    progress_coalesced: int = 0  # progress replaced by a newer one for the same token before a slow host read it
    upstream_pauses: int = 0  # times the upstream was not read because hosts had too much unsent

    def to_dict(self) -> CountersBlock:
        # the fields are CountersBlock's keys, in its order (tests/unit/test_one_shape.py holds them together)
        return cast(CountersBlock, dict(self.__dict__))


COUNTER_NAMES: tuple[str, ...] = tuple(f.name for f in fields(Counters))
"""Every counter, in order (the console's tally counts one of each)."""


class CountersBlock(TypedDict):
    """`Counters` on the wire and in the log. A TypedDict a type checker reads cannot be derived from the
    dataclass, and a log written before a counter existed lacks it (`NotRequired`); a test holds the keys to the
    dataclass's fields, in order."""

    requests: int
    ok: int
    degraded: NotRequired[int]  # logs before it: counted in ok
    errors: int
    timeouts: int
    cancelled: int
    late_dropped: int
    late_results: int
    late_reused: int
    unknown_dropped: int
    invalidations: int
    host_frame_errors: int
    upstream_garbage: int
    progress_coalesced: NotRequired[int]
    upstream_pauses: NotRequired[int]


class SessionStartData(TypedDict):
    name: str
    pid: int
    version: str
    front: Literal["stdio", "http"]
    upstream: UpstreamRef
    config: dict[str, Any]  # Settings.snapshot()
    deadline: DeadlineBlock
    tombstone_ttl: TtlTermsBlock
    state_sync: StateSyncSummary


class SessionEndData(TypedDict):
    """Logged by the wrapper as it stops, with its counters; a reader stands one in for a wrapper that died without
    it (`logview.ending`), marked crashed and stand_in, without counters."""

    reason: str
    counters: NotRequired[CountersBlock]  # always, when the wrapper wrote it
    crashed: NotRequired[bool]
    stand_in: NotRequired[bool]


class HostClock(TypedDict):
    """One clock of a host's profile (`reliability.hosts`): what ends a call on that host, and when."""

    kind: str
    seconds: float
    setting: str | None
    change: str | None
    resets_on_progress: bool
    fronts: list[str]
    uncertain: bool
    source: str | None


class HostInfoData(TypedDict):
    """The host's clientInfo and protocolVersion from its initialize, as it sent them (None when it did not say),
    and the profile its name picked: its clocks and the one that decides the host timeout."""

    name: Any  # str | None
    version: Any  # str | None
    protocol_version: Any  # str | None
    front: NotRequired[Literal["stdio", "http"]]
    profile: NotRequired[str | None]  # the profile's key (None: an unknown host)
    label: NotRequired[str]
    known: NotRequired[bool]
    clocks: NotRequired[list[HostClock]]
    deciding_clock: NotRequired[HostClock | None]
    host_session: NotRequired[str]  # the HTTP front's host session (its short name), when there is one


class HeartbeatData(TypedDict):
    """Progress the wrapper sent itself to keep the host's idle clock alive (never the upstream's progress)."""

    progress: Any  # the call's last progress, else 0
    total: Any
    message: str
    elapsed_s: float
    interval_s: float


class UpstreamStateData(TypedDict):
    state: Literal["connecting", "ready", "backoff", "closed"]  # UpstreamState
    generation: int
    retry_in_s: NotRequired[float]  # backoff
    reason: NotRequired[str]  # closed: "exited", "closed its stdout", …
    exit_code: NotRequired[int | None]  # closed
    stderr_tail: NotRequired[list[str]]  # closed


class RequestStartData(TypedDict):
    """request_id = the host's id as text; the event's tool column names the tool of a tools/call."""

    method: str
    up_id: int | None  # the id the upstream sees (None: answered from a stored late result, never sent upstream)
    budget_s: float | None  # None: no budget (not a tools/call, or disabled)
    budget_source: NotRequired[str]  # tools/call: DeadlineBlock.source, or "late_reuse"
    arguments: NotRequired[str]  # tools/call: JSON text, truncated to 4 KiB
    host: NotRequired[str | None]  # the call's host: its profile label
    trace_id: NotRequired[str]  # with OpenTelemetry export on: the call's span
    span_id: NotRequired[str]
    parent_span_id: NotRequired[str]  # the host's span, when it sent a traceparent
    # a call mcpwatch made on a host call's behalf (era translation): that call's request_id; readers count the
    # host's call once, and this one's task on it
    made_for: NotRequired[str]


class ProgressData(TypedDict):
    """The upstream's progress notification as it sent it (by the spec: numbers and a text; not checked here)."""

    progress: Any
    total: Any
    message: Any
    stage: NotRequired[Any]  # the council's stage, from _meta["dev.mcpwatch/council"] (an int)


class ModelStatusData(TypedDict):
    """One council model's status changed (the event's model column names it); the values are the council's _meta,
    as it sent them."""

    stage: Any  # int
    status: Any  # ModelStatusValue
    latency_ms: Any  # float | None
    per_model_s: Any  # float | None
    tier: Any  # str | None


class RequestEndDetail(TypedDict, total=False):
    """What the part that ended a request says about it; `RequestEndData` adds what every ending has."""

    error: str  # what went wrong (a TombstoneReason when the wrapper gave up on the call)
    result_preview: str  # tools/call: the answer the host got, ≤ 4 KiB of text
    partial: bool  # the wrapper answered with the progress seen so far
    late_reuse: bool  # answered at once with a stored late result (see late_reuse)
    degraded: str  # ok, but the answer says it is not whole (e.g. "fallback summary"): its own outcome
    delivered: bool  # False: the host's request was closed, so the answer could not be delivered
    task_id: str  # the call ran as this task: the end is the task's terminal status (see task_created)
    task_status: str  # its last status: completed, failed, cancelled (else why the watch stopped)
    polls: int  # the host's tasks/get, tasks/result, tasks/list for it: attributed, not counted as calls


OutcomeText = Literal["ok", "tool_error", "error", "deadline", "cancelled", "upstream_lost"]  # Outcome's values


class RequestEndData(RequestEndDetail):
    outcome: OutcomeText
    duration_s: float
    method: str


class TombstoneAddData(TypedDict):
    up_id: int
    ttl_s: float
    reason: TombstoneReason
    expires_mono: float


class TombstoneHitData(TypedDict):
    up_id: int
    what: Literal["response", "progress"]
    age_s: float


class TombstoneExpireData(TypedDict):
    up_id: int
    age_s: float


class LateResultData(TypedDict):
    """A cut tools/call's response arrived after all (its tombstone_hit comes first): kept, bounded."""

    up_id: int
    reason: TombstoneReason  # the tombstone's: why the call was cut
    cut_after_s: float  # elapsed when cut
    delay_s: float  # after the cut
    duration_s: float  # the true duration: cut + delay
    outcome: Literal["ok", "tool_error", "error"]
    size_bytes: int
    reuse_ttl_s: float | None  # kept for reuse this long (None: not kept)
    result: NotRequired[Any]  # whole, up to [late_results] keep_bytes
    result_preview: NotRequired[str]  # else text, ≤ 4 KiB, with truncated true
    truncated: NotRequired[bool]
    error: NotRequired[str]  # an error response's text


class CancelAckData(TypedDict):
    """A call mcpwatch cancelled upstream answered with an error that only says so (code 0 or -32800, or a message
    about cancelling; MCP SDK 1.x and FastMCP 2.x servers send `{"code": 0, "message": "Request cancelled"}`). The
    call never finished: its true duration stays unknown, so it is no late result."""

    up_id: int
    reason: TombstoneReason  # the tombstone's: why the call was cut
    cut_after_s: float
    delay_s: float  # after the cut
    code: Any  # the error's code as the server sent it
    error: str  # the error's text, ≤ 1000 characters


class LateErrorData(CancelAckData):
    """A call mcpwatch cut was answered afterwards with a JSON-RPC error that is no cancel acknowledgement (a relay
    closing, `-32000 Connection closed`; a server failing). The call never finished: no late result, and its true
    duration stays unknown, so neither `report` nor `whatif` takes the delay for a known duration. Its fields are
    a cancel acknowledgement's."""


class LateReuseData(TypedDict):
    """A call answered at once with a stored late result (between its request_start and request_end)."""

    from_request_id: str  # the cut call whose late result it was
    delay_s: float
    age_s: float  # since the late result arrived
    ttl_s: float


class UnknownResponseData(TypedDict):
    """A response or progress from the upstream that matches no call: dropped and counted."""

    up_id: Any  # whatever id or progress token the upstream sent (null for a notification)
    reason: UnknownReason
    method: NotRequired[str]  # a dropped notification's method


class InvalidationData(TypedDict):
    caused_by: str  # the tool whose call invalidated the patterns (also the event's tool column)
    patterns: list[str]


class HealthCheckData(TypedDict):
    """An operator's health check (ping, then the health tool), or (source "host") a host calling the health tool.

    result: the health tool's JSON, e.g. the council's with "tiers" {tier: {total_s, per_model_s, models}} and
    "timeout_multiplier".
    """

    ok: bool
    ping_ms: float | None
    result: Any
    error: str | None
    latency_ms: float
    tool: NotRequired[str | None]  # operator checks: the health tool called, if any
    source: NotRequired[Literal["host"]]


DeadlineKey = Literal["host_timeout_s", "margin_s", "override_s"]  # what an operator may change


class ConfigChangeData(TypedDict):
    key: DeadlineKey
    old: float | None
    new: float | None
    source: Literal["operator", "reset"]
    deadline: DeadlineBlock  # the new block
    tombstone_ttl: NotRequired[TtlTermsBlock]  # the new terms: the budget is one (logs before it lack it)


class WarningData(TypedDict):
    message: str


class HostSessionRefusedData(TypedDict):
    """A host's `initialize` on the HTTP front answered 503: `max_sessions` open, each busy (see front_sessions)."""

    message: str  # one line saying so, with the client's address
    open: int  # host sessions open
    max: int  # [front] max_sessions
    refused: int  # the refusals this event stands for: one event a second at most, the rest counted in it


class OperatorCallData(TypedDict):
    """The operator's own tools/call to the upstream (e.g. the console disabling a council model); the event's tool
    column names the tool."""

    arguments: str  # JSON text, ≤ 4 KiB
    ok: bool
    error: str | None
    result_preview: str  # text, ≤ 4 KiB
    duration_s: float


TaskStatusValue = Literal["working", "input_required", "completed", "failed", "cancelled"]


class TaskCreatedData(TypedDict):
    """A tools/call answered with a task (its request_start came first; its request_end comes at the task's end)."""

    task_id: str
    status: TaskStatusValue
    status_message: str | None
    ttl_ms: int | None  # the receiver's TTL (None: unlimited or not said)
    poll_interval_ms: int | None
    era: Literal["2025-11-25", "extension"]  # params.task and tasks/result, or the io.modelcontextprotocol/tasks one
    bridged: NotRequired[bool]  # mcpwatch made the task itself, for a host that cannot use tasks
    attached_to: NotRequired[str]  # an identical call joined the bridged task this call (its request id) made
    offered: NotRequired[bool]  # mcpwatch is the task's receiver: it runs the tool's ordinary call for the host
    offered_by: NotRequired[str]  # why it was offered: "offer <glob>" ([tasks] offer) or "offer_slow" (its basis)


class KeptTask(TypedDict):
    """An offered task's end, kept in the log for its TTL so a restarted wrapper can still answer its polls."""

    owner: str  # the connection that made it, under its principal (`wrapper.tasks.owners.Owner.key`)
    upstream: str  # the wrapped server's identity (a hash of its command or URL): no other server's wrapper serves it
    task: dict[str, Any]  # the Task object as tasks/get answers it
    reply: dict[str, Any] | None  # {"result": …} or {"error": …}; None: too large to keep ([late_results] keep_bytes)
    expires_ts: float  # wall clock: creation + TTL


class TaskStatusData(TypedDict):
    """A task's status or status message changed (between its task_created and its call's request_end)."""

    task_id: str
    status: TaskStatusValue
    status_message: str | None
    elapsed_s: float  # since the tools/call started
    seen_by: Literal["tasks/get", "tasks/result", "tasks/list", "tasks/cancel", "notification", "bridge", "mcpwatch"]
    # "bridge": mcpwatch's own poll of a task it made for a host without tasks; "mcpwatch": a task it offered
    polls: int  # the host's polls for this task so far
    kept: NotRequired[KeptTask]  # an offered task's terminal status: what its polls are answered with


PAYLOADS: dict[Kind, type] = {
    Kind.SESSION_START: SessionStartData,
    Kind.SESSION_END: SessionEndData,
    Kind.HOST_INFO: HostInfoData,
    Kind.UPSTREAM_STATE: UpstreamStateData,
    Kind.REQUEST_START: RequestStartData,
    Kind.PROGRESS: ProgressData,
    Kind.MODEL_STATUS: ModelStatusData,
    Kind.REQUEST_END: RequestEndData,
    Kind.TOMBSTONE_ADD: TombstoneAddData,
    Kind.TOMBSTONE_HIT: TombstoneHitData,
    Kind.TOMBSTONE_EXPIRE: TombstoneExpireData,
    Kind.LATE_RESULT: LateResultData,
    Kind.LATE_REUSE: LateReuseData,
    Kind.CANCEL_ACK: CancelAckData,
    Kind.LATE_ERROR: LateErrorData,
    Kind.UNKNOWN_RESPONSE: UnknownResponseData,
    Kind.INVALIDATION: InvalidationData,
    Kind.HEALTH_CHECK: HealthCheckData,
    Kind.CONFIG_CHANGE: ConfigChangeData,
    Kind.WARNING: WarningData,
    Kind.HEARTBEAT: HeartbeatData,
    Kind.OPERATOR_CALL: OperatorCallData,
    Kind.TASK_CREATED: TaskCreatedData,
    Kind.TASK_STATUS: TaskStatusData,
    Kind.HOST_SESSION_REFUSED: HostSessionRefusedData,
}


def payload_problems(kind: str, data: Any) -> list[str]:
    """What in `data` breaks the payload type of `kind`: missing or unknown keys, a value outside a Literal or of
    the wrong plain type, recursively into nested blocks. Empty when it conforms."""
    payload = PAYLOADS.get(kind)  # type: ignore[call-overload]  # any value may be looked up: unknown kinds get None
    if payload is None:
        return [f"{kind!r} is not an event kind"]
    if isinstance(data, dict) and "host_session" in data and "host_session" not in get_type_hints(payload):
        # an HTTP front's host session, on every kind it causes (see the module's docstring)
        session = data["host_session"]
        data = {k: v for k, v in data.items() if k != "host_session"}
        if not isinstance(session, str):
            return [f"{kind}.host_session: expected str, got {session!r}", *typed_dict_problems(payload, data, kind)]
    return typed_dict_problems(payload, data, kind)


def typed_dict_problems(payload: type, data: Any, where: str, *, strict: bool = True) -> list[str]:
    """What in `data` breaks the TypedDict `payload`; `strict`: keys it does not declare are problems too."""
    if not isinstance(data, dict):
        return [f"{where}: expected an object, got {type(data).__name__}"]
    hints = get_type_hints(payload, include_extras=True)
    declared_required = getattr(payload, "__required_keys__", frozenset(hints))  # a total=False base's are not
    required = [k for k, hint in hints.items() if k in declared_required and get_origin(hint) is not NotRequired]
    problems = [f"{where}: missing {k}" for k in required if k not in data]
    if strict:
        problems += [f"{where}: unknown field {k}" for k in sorted(set(data) - set(hints))]
    for key, hint in hints.items():
        if key in data:
            problems += _value_problems(hint, data[key], f"{where}.{key}", strict)
    return problems


def _value_problems(hint: Any, value: Any, where: str, strict: bool = True) -> list[str]:
    origin = get_origin(hint)
    if origin is NotRequired:
        return _value_problems(get_args(hint)[0], value, where, strict)
    if hint is Any:
        return []
    if origin is Literal:
        return [] if value in get_args(hint) else [f"{where}: {value!r} is not one of {get_args(hint)}"]
    if isinstance(hint, type) and hasattr(hint, "__required_keys__"):
        return typed_dict_problems(hint, value, where, strict=strict)
    options = get_args(hint) if origin is not None and origin not in (list, dict) else (hint,)
    if origin is not None and origin not in (list, dict) and len(options) > 1:  # a union: any option will do
        for option in options:
            if not _value_problems(option, value, where, strict):
                return []
        return [f"{where}: {value!r} does not fit {hint}"]
    plain = get_origin(hint) or hint
    if plain is type(None):
        return [] if value is None else [f"{where}: expected null, got {value!r}"]
    if plain is float:
        ok = isinstance(value, int | float) and not isinstance(value, bool)
    elif plain is int:
        ok = isinstance(value, int) and not isinstance(value, bool)
    else:
        ok = isinstance(value, plain)
    if not ok:
        return [f"{where}: expected {getattr(plain, '__name__', plain)}, got {value!r}"]
    if plain is list and get_args(hint):
        item_hint = get_args(hint)[0]
        return [p for i, item in enumerate(value) for p in _value_problems(item_hint, item, f"{where}[{i}]", strict)]
    return []
