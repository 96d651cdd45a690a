"""The console's view model: a pure fold of events (see `mcpwatch.events`) plus a `now` into plain view dataclasses.

Live mode and replay both drive a `ConsoleModel` and hand its `view(now)` to the same screens, so what replay shows
at session time T is what live showed at T. Nothing here imports Textual or a transport, and nothing reads a clock:
time comes in as `now_mono` (seconds since session start, the events' `mono` axis).

Memory is bounded whatever the stream: finished requests, invalidations, warnings and per-request timelines are
capped (`Limits`); in-flight calls and tombstones are capped too, so a stream that never ends them cannot grow
the model without bound.
"""

from __future__ import annotations

import json
import math
import re
from collections import deque
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from mcpwatch.console.headless import format as fmt
from mcpwatch.console.notable import NotableEvent, NotableLog
from mcpwatch.console.tool_stats import ToolStats, ToolStatView
from mcpwatch.events import (
    ConfigChangeData,
    DeadlineBlock,
    Event,
    HealthCheckData,
    HostInfoData,
    InvalidationData,
    Kind,
    LateResultData,
    LateReuseData,
    ModelStatusData,
    Outcome,
    ProgressData,
    RequestEndData,
    RequestStartData,
    SessionEndData,
    SessionStartData,
    TombstoneAddData,
    TombstoneExpireData,
    TombstoneHitData,
    TtlTermsBlock,
    UnknownResponseData,
    UpstreamStateData,
    WarningData,
)
from mcpwatch.logview.whatif import CallTiming, call_timing
from mcpwatch.operator import Status

COUNCIL_TOOL_HINT = "council"
LATE_TEXT_MAX = 4096  # a late result's text kept per request, like a result preview


@dataclass(frozen=True, slots=True)
class Limits:
    """How much history the model keeps; everything beyond is dropped oldest-first."""

    requests: int = 500  # finished requests kept (list, detail and timeline)
    invalidations: int = 200
    warnings: int = 100
    config_changes: int = 100
    timeline: int = 200  # entries per request
    in_flight: int = 5000
    tombstones: int = 10_000
    latencies: int = 60  # points in the latency sparkline
    health_history: int = 60


# --- view dataclasses (what screens render; plain, immutable, Textual-free) ---------------------------------


@dataclass(frozen=True, slots=True)
class HeaderView:
    name: str | None = None
    pid: int | None = None
    version: str | None = None
    session_id: str | None = None
    front: str | None = None
    upstream_kind: str | None = None
    upstream_target: str | None = None
    upstream_state: str | None = None
    generation: int | None = None
    retry_in_s: float | None = None
    exit_code: int | None = None
    stderr_tail: tuple[str, ...] = ()
    host_name: str | None = None
    host_version: str | None = None
    protocol_version: str | None = None
    host_profile: str | None = None  # the host profile's label ("Codex CLI", "unknown host 'x'")
    host_clock: str | None = None  # the host clock that decides the budget ("tool_timeout_sec 60 s")
    uptime_s: float = 0.0
    ended: str | None = None  # the session_end reason, once the session is over


@dataclass(frozen=True, slots=True)
class DeadlineView:
    host_timeout_s: float | None = None
    margin_s: float | None = None
    override_s: float | None = None
    budget_s: float | None = None  # None: the budget is disabled (the host timeout still applies)
    source: str | None = None
    known: bool = False

    @property
    def limit_s(self) -> float | None:
        """How long a call can run before someone gives up: the budget, or the host timeout when disabled."""
        return self.budget_s if self.budget_s is not None else self.host_timeout_s


@dataclass(frozen=True, slots=True)
class TierView:
    tier: str
    total_s: float | None
    per_model_s: float | None
    models: tuple[str, ...]
    exceeds_budget: bool  # the tier cannot finish before the host (or the wrapper's budget) gives up


@dataclass(frozen=True, slots=True)
class InFlightView:
    request_id: str
    method: str
    tool: str | None
    elapsed_s: float
    budget_s: float | None
    remaining_s: float | None
    fraction: float | None  # elapsed / budget, 0..1+ (None without a budget)
    progress: float | None
    total: float | None
    message: str | None
    has_council: bool
    unfinished: bool = False  # the session ended while it ran: it will never finish (its clock is stopped)
    stage: int | None = None  # a council call's stage
    tier: str | None = None
    tier_total_s: float | None = None  # the tier's total budget (from the health check), to compare with the budget


@dataclass(frozen=True, slots=True)
class ModelView:
    model: str
    status: str
    stage: int | None
    elapsed_s: float | None
    per_model_s: float | None  # the tier's per-model cap, as the council reports it
    latency_ms: int | None
    over_cap: bool  # elapsed past `cap_s`
    cap_s: float | None = None  # the cap that applies to this call: min(per-model cap, the call's budget)


@dataclass(frozen=True, slots=True)
class CouncilView:
    request_id: str
    tool: str | None
    tier: str | None
    per_model_s: float | None
    stage: int | None
    finished: bool
    outcome: str | None
    models: tuple[ModelView, ...]
    budget_s: float | None = None  # the call's own deadline budget (the wrapper's)

    @property
    def cap_s(self) -> float | None:
        """The per-model cap that can actually apply: the tier's, unless the call's budget ends sooner."""
        return _effective_cap(self.per_model_s, self.budget_s)

    @property
    def cap_limited_by_budget(self) -> bool:
        return self.per_model_s is not None and self.budget_s is not None and self.budget_s < self.per_model_s


@dataclass(frozen=True, slots=True)
class TtlTerms:
    request_timeout_s: float | None = None
    init_timeout_s: float | None = None
    backoff_max_s: float | None = None
    epsilon_s: float | None = None
    total_s: float | None = None


@dataclass(frozen=True, slots=True)
class TombstoneView:
    up_id: str
    request_id: str | None
    tool: str | None
    reason: str | None
    ttl_s: float | None
    age_s: float
    expires_in_s: float | None  # ≤ 0: past its TTL, waiting for the sweep
    hits: int


@dataclass(frozen=True, slots=True)
class TombstonesView:
    count: int  # tombstones still inside their TTL
    awaiting_sweep: int
    ttl_s: float | None
    terms: TtlTerms
    late_dropped: int
    items: tuple[TombstoneView, ...]


@dataclass(frozen=True, slots=True)
class InvalidationView:
    mono: float
    ago_s: float
    caused_by: str | None
    patterns: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class RequestView:
    request_id: str
    method: str
    tool: str | None
    started_mono: float
    ended_mono: float | None
    outcome: str | None  # None while in flight
    duration_s: float | None
    partial: bool
    error: str | None
    degraded: str | None = None  # an ok result that says it is not the full answer (a fallback, a partial run)

    @property
    def label(self) -> str:
        return self.tool or self.method


@dataclass(frozen=True, slots=True)
class HealthView:
    ok: bool | None = None
    ping_ms: float | None = None
    tool: str | None = None
    error: str | None = None
    at_mono: float | None = None
    ago_s: float | None = None
    history: tuple[float, ...] = ()
    timeout_multiplier: float | None = None
    latency_ms: float | None = None  # how long the whole check took (a host's call of the health tool has no ping)
    source: str | None = None  # "host" when the host called the health tool itself; else the operator's check

    @property
    def state(self) -> str | None:
        """ "ok", "not_ready" (it answered, but with a problem: e.g. the upstream is not initialised), "failing",
        or None before any check. A check that carries an error is never shown as ok, whatever its flag says."""
        if self.ok is None and self.at_mono is None:
            return None
        if self.ok and not self.error:
            return "ok"
        return "not_ready" if self.ok else "failing"


@dataclass(frozen=True, slots=True)
class Counters:
    requests: int = 0
    ok: int = 0
    errors: int = 0
    timeouts: int = 0
    cancelled: int = 0
    late_dropped: int = 0
    unknown_dropped: int = 0
    invalidations: int = 0
    late_results: int = 0
    late_reused: int = 0


@dataclass(frozen=True, slots=True)
class WarningView:
    mono: float
    message: str


@dataclass(frozen=True, slots=True)
class ConfigChangeView:
    mono: float
    key: str
    old: Any
    new: Any
    source: str | None


@dataclass(frozen=True, slots=True)
class ViewState:
    """Everything the main screen shows, at one instant."""

    now_mono: float
    header: HeaderView
    deadline: DeadlineView
    tiers: tuple[TierView, ...]
    in_flight: tuple[InFlightView, ...]
    council: CouncilView | None
    tombstones: TombstonesView
    invalidations: tuple[InvalidationView, ...]  # newest first
    requests: tuple[RequestView, ...]  # finished, newest first
    latencies: tuple[float, ...]  # durations of the last finished calls, oldest first (sparkline)
    health: HealthView
    counters: Counters
    warnings: tuple[WarningView, ...]  # newest first
    config_changes: tuple[ConfigChangeView, ...]  # newest first
    state_sync_policies: int | None
    events_applied: int
    malformed: int
    has_session: bool
    council_seen: bool = False  # a council call (per-model status) or its tiers were seen: show the council panels
    tools: tuple[ToolStatView, ...] = ()  # per-tool figures, busiest first
    notable: tuple[NotableEvent, ...] = ()  # the Events view, newest first
    notable_total: int = 0  # events ever added (the screen's "seen" count gives the unread ones)


@dataclass(frozen=True, slots=True)
class LateView:
    """A cut call's late answer (late_result), or where a reused call's answer came from (late_reuse)."""

    mono: float
    delay_s: float | None  # after the cut
    duration_s: float | None = None  # the true duration: cut + delay
    outcome: str | None = None
    size_bytes: int | None = None
    result: str | None = None  # the result (or its preview) as text
    truncated: bool = False
    from_request_id: str | None = None  # late_reuse: the cut call whose late result answered this one
    age_s: float | None = None  # late_reuse: how old that result was


@dataclass(frozen=True, slots=True)
class TimelineItem:
    mono: float
    kind: str
    text: str


@dataclass(frozen=True, slots=True)
class RequestDetail:
    """The request detail screen's content: the whole (capped) timeline and what came back."""

    request: RequestView
    up_id: str | None
    budget_s: float | None
    budget_source: str | None
    elapsed_s: float
    arguments: str | None
    result_preview: str | None
    progress: float | None
    total: float | None
    message: str | None
    tombstone: TombstoneView | None
    timeline: tuple[TimelineItem, ...]
    timeline_dropped: int
    council: CouncilView | None
    unfinished: bool = False  # still running when the session ended: it never got an answer
    late: LateView | None = None  # its late result (cut calls) or the stored one it was answered with (reuse)


# --- internal mutable state --------------------------------------------------------------------------------


def _num(value: Any) -> float | None:
    """A finite float, or None for anything else (the stream is data, never trusted)."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    number = float(value)
    return number if math.isfinite(number) else None


def _int(value: Any) -> int | None:
    number = _num(value)
    return None if number is None else int(number)


def _clock_text(clock: Any) -> str | None:
    """A host clock from a host_info event or status, as the header shows it: "tool_timeout_sec 60 s"."""
    if not isinstance(clock, Mapping):
        return None
    setting, seconds = _text(clock.get("setting")), _num(clock.get("seconds"))
    if setting is None or seconds is None:
        return None
    return f"{setting} {seconds:g} s"


def _up_key(data: Mapping[str, Any], field: str = "up_id") -> str | None:
    """An upstream id as the model keys it: each HTTP host session has its own upstream and id space, so its ids
    are qualified by the session (`<host_session>/<up_id>`); the stdio front's are plain."""
    up_id = _text(data.get(field))
    session = _text(data.get("host_session"))
    return up_id if up_id is None or session is None else f"{session}/{up_id}"


def _text(value: Any) -> str | None:
    if value is None:
        return None
    return value if isinstance(value, str) else str(value)


def _strs(value: Any) -> tuple[str, ...]:
    if isinstance(value, list | tuple):
        return tuple(str(v) for v in value)
    return ()


def _effective_cap(per_model_s: float | None, budget_s: float | None) -> float | None:
    """A model cannot run past the call's budget, whatever the tier allows."""
    if per_model_s is None:
        return budget_s
    return per_model_s if budget_s is None else min(per_model_s, budget_s)


@dataclass(slots=True)
class _ModelRun:
    model: str
    status: str
    stage: int | None
    latency_ms: int | None
    per_model_s: float | None
    started_mono: float
    updated_mono: float


@dataclass(slots=True)
class _Tombstone:
    up_id: str
    request_id: str | None
    tool: str | None
    ttl_s: float | None
    reason: str | None
    added_mono: float
    expires_mono: float | None
    hits: int = 0


@dataclass(slots=True)
class _Request:
    request_id: str
    method: str
    tool: str | None
    up_id: str | None
    start_mono: float
    budget_s: float | None
    budget_source: str | None
    arguments: str | None
    timeline: deque[TimelineItem]
    progress: float | None = None
    total: float | None = None
    message: str | None = None
    end_mono: float | None = None
    outcome: str | None = None
    duration_s: float | None = None
    error: str | None = None
    result_preview: str | None = None
    partial: bool = False
    degraded: str | None = None
    timeline_dropped: int = 0
    tombstone: _Tombstone | None = None
    models: dict[str, _ModelRun] = field(default_factory=dict)
    tier: str | None = None
    per_model_s: float | None = None
    stage: int | None = None
    late: LateView | None = None

    def note(self, mono: float, kind: str, text: str) -> None:
        if len(self.timeline) == self.timeline.maxlen:
            self.timeline_dropped += 1
        self.timeline.append(TimelineItem(mono, kind, text))

    def copy(self, tombstones: Mapping[int, _Tombstone] | None = None) -> _Request:
        """A copy whose tombstone is the copied state's own (`tombstones`: id of the original → its copy), so
        a later hit on the state's tombstone still shows on the request, as it does on the original."""
        clone = replace(self, timeline=deque(self.timeline, maxlen=self.timeline.maxlen))
        clone.models = {k: replace(v) for k, v in self.models.items()}
        if self.tombstone is not None:
            shared = None if tombstones is None else tombstones.get(id(self.tombstone))
            clone.tombstone = shared if shared is not None else replace(self.tombstone)
        return clone


_COUNTER_NAMES = (
    "requests",
    "ok",
    "errors",
    "timeouts",
    "cancelled",
    "late_dropped",
    "unknown_dropped",
    "invalidations",
    "late_results",
    "late_reused",
)
# Which counter a request_end bumps; every other outcome (tool_error, error, upstream_lost, unknown) is an error.
_OUTCOME_COUNTER = {Outcome.OK: "ok", Outcome.DEADLINE: "timeouts", Outcome.CANCELLED: "cancelled"}


@dataclass(slots=True)
class _State:
    limits: Limits
    session_id: str | None = None
    session_started: bool = False  # a session_start was folded (the history is complete from the start)
    header: dict[str, Any] = field(default_factory=dict)
    ended: str | None = None
    ended_mono: float | None = None
    deadline: dict[str, Any] = field(default_factory=dict)
    ttl_terms: dict[str, float | None] = field(default_factory=dict)
    requests: dict[str, _Request] = field(default_factory=dict)  # in flight and retained finished
    in_flight: dict[str, None] = field(default_factory=dict)  # insertion-ordered set
    finished: deque[str] = field(default_factory=deque)
    by_up_id: dict[str, str] = field(default_factory=dict)  # upstream id -> host request id (retained requests)
    tombstones: dict[str, _Tombstone] = field(default_factory=dict)
    invalidations: deque[InvalidationView] = field(default_factory=deque)
    warnings: deque[WarningView] = field(default_factory=deque)
    config_changes: deque[ConfigChangeView] = field(default_factory=deque)
    latencies: deque[float] = field(default_factory=deque)
    health: dict[str, Any] = field(default_factory=dict)
    health_history: deque[float] = field(default_factory=deque)
    tiers: dict[str, dict[str, Any]] = field(default_factory=dict)
    counters: dict[str, int] = field(default_factory=lambda: dict.fromkeys(_COUNTER_NAMES, 0))
    state_sync_policies: int | None = None
    council_request: str | None = None  # the latest request that reported per-model status
    origin_ts: float | None = None  # wall time of mono 0 (session start)
    last_mono: float = 0.0
    last_seq: int = 0
    events_applied: int = 0
    malformed: int = 0
    notable: NotableLog = field(default_factory=NotableLog)
    tool_stats: ToolStats = field(default_factory=ToolStats)

    @classmethod
    def fresh(cls, limits: Limits) -> _State:
        return cls(
            limits=limits,
            finished=deque(maxlen=limits.requests),
            invalidations=deque(maxlen=limits.invalidations),
            warnings=deque(maxlen=limits.warnings),
            config_changes=deque(maxlen=limits.config_changes),
            latencies=deque(maxlen=limits.latencies),
            health_history=deque(maxlen=limits.health_history),
        )

    def copy(self) -> _State:
        """A deep-enough copy: containers are copied, immutable items (view tuples, strings) shared.

        A request and the tombstones table share one `_Tombstone` object; the copy keeps them shared.
        """
        tombstones = {k: replace(t) for k, t in self.tombstones.items()}
        copied = {id(t): tombstones[k] for k, t in self.tombstones.items()}
        return replace(
            self,
            header=dict(self.header),
            deadline=dict(self.deadline),
            ttl_terms=dict(self.ttl_terms),
            requests={k: r.copy(copied) for k, r in self.requests.items()},
            in_flight=dict(self.in_flight),
            finished=deque(self.finished, maxlen=self.finished.maxlen),
            by_up_id=dict(self.by_up_id),
            tombstones=tombstones,
            invalidations=deque(self.invalidations, maxlen=self.invalidations.maxlen),
            warnings=deque(self.warnings, maxlen=self.warnings.maxlen),
            config_changes=deque(self.config_changes, maxlen=self.config_changes.maxlen),
            latencies=deque(self.latencies, maxlen=self.latencies.maxlen),
            health=dict(self.health),
            health_history=deque(self.health_history, maxlen=self.health_history.maxlen),
            tiers={k: dict(v) for k, v in self.tiers.items()},
            counters=dict(self.counters),
            notable=self.notable.copy(),
            tool_stats=self.tool_stats.copy(),
        )


@dataclass(frozen=True, slots=True)
class ModelSnapshot:
    """An opaque checkpoint of a model's state (for replay seeking); restore with `ConsoleModel.restore`."""

    _state: _State
    last_seq: int
    last_mono: float


# --- the model ---------------------------------------------------------------------------------------------


class ConsoleModel:
    """Folds events into the console's state; `view(now)` renders it. Feed it events in session order."""

    def __init__(self, limits: Limits | None = None) -> None:
        self._limits = limits or Limits()
        self._s = _State.fresh(self._limits)
        self._handlers = {
            Kind.SESSION_START: self._session_start,
            Kind.SESSION_END: self._session_end,
            Kind.HOST_INFO: self._host_info,
            Kind.UPSTREAM_STATE: self._upstream_state,
            Kind.REQUEST_START: self._request_start,
            Kind.PROGRESS: self._progress,
            Kind.MODEL_STATUS: self._model_status,
            Kind.REQUEST_END: self._request_end,
            Kind.TOMBSTONE_ADD: self._tombstone_add,
            Kind.TOMBSTONE_HIT: self._tombstone_hit,
            Kind.TOMBSTONE_EXPIRE: self._tombstone_expire,
            Kind.LATE_RESULT: self._late_result,
            Kind.LATE_REUSE: self._late_reuse,
            Kind.UNKNOWN_RESPONSE: self._unknown_response,
            Kind.INVALIDATION: self._invalidation,
            Kind.HEALTH_CHECK: self._health_check,
            Kind.CONFIG_CHANGE: self._config_change,
            Kind.WARNING: self._warning,
        }

    # -- feeding ------------------------------------------------------------------------------------------

    @property
    def limits(self) -> Limits:
        return self._limits

    @property
    def session_id(self) -> str | None:
        return self._s.session_id

    @property
    def last_seq(self) -> int:
        """The highest `Event.seq` folded so far (where a live feed resumes)."""
        return self._s.last_seq

    @property
    def last_mono(self) -> float:
        return self._s.last_mono

    @property
    def origin_ts(self) -> float | None:
        """Unix time of the session's mono 0, once any event has been seen (maps a wall clock onto `mono`)."""
        return self._s.origin_ts

    @property
    def saw_session_start(self) -> bool:
        return self._s.session_started

    def mono_at(self, wall_ts: float) -> float:
        """Session time at a given unix time: how live mode turns its clock into the `now` that `view` takes."""
        origin = self._s.origin_ts
        return self._s.last_mono if origin is None else wall_ts - origin

    def apply(self, event: Event) -> None:
        """Fold one event. Unknown kinds are ignored; malformed data is counted, never raised."""
        s = self._s
        if event.session_id and s.session_id is not None and event.session_id != s.session_id:
            self.reset()  # another session (a restarted wrapper): start over rather than mix the two
            s = self._s
        if s.session_id is None and event.session_id:
            s.session_id = event.session_id
        mono = _num(event.mono)
        if mono is None:
            s.malformed += 1
            return
        if s.origin_ts is None and _num(event.ts) is not None:
            s.origin_ts = event.ts - mono
        s.last_mono = max(s.last_mono, mono)
        if isinstance(event.seq, int) and event.seq > s.last_seq:
            s.last_seq = event.seq
        s.events_applied += 1
        handler = self._handlers.get(event.kind)  # type: ignore[call-overload]
        if handler is None:
            return
        data = event.data if isinstance(event.data, Mapping) else {}
        try:
            handler(event, mono, data)
        except (TypeError, ValueError, AttributeError, KeyError):
            s.malformed += 1

    def apply_many(self, events: Iterable[Event]) -> int:
        count = 0
        for event in events:
            self.apply(event)
            count += 1
        return count

    def reset(self) -> None:
        self._s = _State.fresh(self._limits)

    def snapshot(self) -> ModelSnapshot:
        """A cheap checkpoint (containers copied, immutable items shared): restore it to seek without refolding."""
        return ModelSnapshot(self._s.copy(), self._s.last_seq, self._s.last_mono)

    @classmethod
    def restore(cls, snapshot: ModelSnapshot) -> ConsoleModel:
        model = cls(snapshot._state.limits)
        model._s = snapshot._state.copy()
        return model

    def load(self, snapshot: ModelSnapshot) -> None:
        """Put this model back in a checkpoint's state (the snapshot stays untouched): how replay seeks in place,
        so the screens that hold this model show the new position without being told."""
        self._limits = snapshot._state.limits
        self._s = snapshot._state.copy()

    def copy(self) -> ConsoleModel:
        return ConsoleModel.restore(self.snapshot())

    def seed(self, status: Status, now_mono: float) -> None:
        """Fill in what an operator `status()` knows and the folded events do not (attaching mid-session).

        Only used when the event history does not start at `session_start`; anything the events already
        established stays as the events say.
        """
        s = self._s
        wrapper = status.get("wrapper") if isinstance(status.get("wrapper"), Mapping) else {}
        log = status.get("log") if isinstance(status.get("log"), Mapping) else {}
        if s.session_id is None and _text(log.get("session_id")):
            s.session_id = _text(log.get("session_id"))
        header = s.header
        for key in ("name", "version"):
            header.setdefault(key, _text(wrapper.get(key)))
        header.setdefault("pid", _int(wrapper.get("pid")))
        upstream = wrapper.get("upstream") if isinstance(wrapper.get("upstream"), Mapping) else {}
        header.setdefault("upstream_kind", _text(upstream.get("kind")))
        header.setdefault("upstream_target", _text(upstream.get("target")))
        header.setdefault("upstream_state", _text(upstream.get("state")))
        header.setdefault("generation", _int(upstream.get("generation")))
        host = wrapper.get("host")
        if isinstance(host, Mapping):
            header.setdefault("host_name", _text(host.get("name")))
            header.setdefault("host_version", _text(host.get("version")))
            header.setdefault("host_profile", _text(host.get("label")))
            header.setdefault("host_clock", _clock_text(host.get("deciding_clock")))
        elif host is not None:
            header.setdefault("host_name", _text(host))
        deadline = status.get("deadline")
        if isinstance(deadline, Mapping) and not s.deadline:
            self._set_deadline(deadline)
        tomb = status.get("tombstones") if isinstance(status.get("tombstones"), Mapping) else {}
        terms = tomb.get("terms")
        if isinstance(terms, Mapping) and not s.ttl_terms:
            self._set_ttl_terms(terms)
        for item in tomb.get("items") or ():
            if not isinstance(item, Mapping):
                continue
            request_id = _text(item.get("request_id"))
            key = _up_key(item, "key") or f"req:{request_id}"  # the up_id, as tombstone events name it
            if key in s.tombstones or any(t.request_id == request_id for t in s.tombstones.values()):
                continue
            age = _num(item.get("age_s")) or 0.0
            expires_in = _num(item.get("expires_in_s"))
            ttl = None if expires_in is None else age + expires_in
            s.tombstones[key] = _Tombstone(
                key,
                request_id,
                _text(item.get("tool")),
                ttl if ttl is not None else _num(tomb.get("ttl_s")),
                _text(item.get("reason")),
                now_mono - age,
                None if expires_in is None else now_mono + expires_in,
            )
        for item in status.get("in_flight") or ():
            if not isinstance(item, Mapping) or _text(item.get("request_id")) is None:
                continue
            request_id = str(item["request_id"])
            if request_id in s.in_flight:
                continue
            elapsed = _num(item.get("elapsed_s")) or 0.0
            request = self._new_request(
                request_id,
                _text(item.get("method")) or "tools/call",
                _text(item.get("tool")),
                None,
                now_mono - elapsed,
                _num(item.get("budget_s")),
                None,
                None,
            )
            request.progress = _num(item.get("progress"))
            request.total = _num(item.get("total"))
            request.message = _text(item.get("message"))
            request.note(now_mono, "seed", f"already running for {elapsed:.1f}s when the console attached")
        counters = status.get("counters")
        if isinstance(counters, Mapping) and not s.session_started:
            for name in _COUNTER_NAMES:
                value = _int(counters.get(name))
                if value is not None:
                    s.counters[name] = max(s.counters[name], value)
        state_sync = status.get("state_sync")
        if isinstance(state_sync, Mapping) and s.state_sync_policies is None:
            s.state_sync_policies = _int(state_sync.get("policies"))

    # -- event handlers -------------------------------------------------------------------------------------

    def _session_start(self, event: Event, mono: float, data: SessionStartData) -> None:
        session_id = self._s.session_id
        origin = self._s.origin_ts
        # The wrapper reports start-up problems (a bad env value…) before its session_start: they belong to
        # this session, so they survive the reset (anything of another session was already reset by `apply`).
        early = list(self._s.warnings) if event.session_id and event.session_id == session_id else []
        self.reset()
        s = self._s
        s.session_id, s.origin_ts, s.session_started = session_id, origin, True
        s.warnings.extend(early)
        s.last_mono, s.last_seq, s.events_applied = mono, event.seq if isinstance(event.seq, int) else 0, 1
        upstream = data.get("upstream") if isinstance(data.get("upstream"), Mapping) else {}
        s.header.update(
            name=_text(data.get("name")),
            pid=_int(data.get("pid")),
            version=_text(data.get("version")),
            front=_text(data.get("front")),
            upstream_kind=_text(upstream.get("kind")),
            upstream_target=_text(upstream.get("target")),
        )
        if isinstance(data.get("deadline"), Mapping):
            self._set_deadline(data["deadline"])
        if isinstance(data.get("tombstone_ttl"), Mapping):
            self._set_ttl_terms(data["tombstone_ttl"])
        state_sync = data.get("state_sync")
        if isinstance(state_sync, Mapping):
            s.state_sync_policies = _int(state_sync.get("policies"))
            for overlap in _strs(state_sync.get("overlaps")):
                s.warnings.append(WarningView(mono, f"state sync overlap: {overlap}"))

    def _session_end(self, event: Event, mono: float, data: SessionEndData) -> None:
        s = self._s
        s.ended = _text(data.get("reason")) or "ended"
        s.ended_mono = mono
        s.header["upstream_state"] = "closed"  # the wrapper is gone, and its upstream with it
        s.header["retry_in_s"] = None
        counters = data.get("counters")
        if isinstance(counters, Mapping):
            for name in _COUNTER_NAMES:
                value = _int(counters.get(name))
                if value is not None:
                    s.counters[name] = value

    def _host_info(self, event: Event, mono: float, data: HostInfoData) -> None:
        self._s.header.update(
            host_name=_text(data.get("name")),
            host_version=_text(data.get("version")),
            protocol_version=_text(data.get("protocol_version")),
            host_profile=_text(data.get("label")),
            host_clock=_clock_text(data.get("deciding_clock")),
        )

    def _upstream_state(self, event: Event, mono: float, data: UpstreamStateData) -> None:
        s = self._s
        before = s.notable.total
        s.notable.upstream_state(mono, data)
        if s.notable.total > before and s.notable.items[-1].kind == "upstream_exit":
            item = s.notable.items[-1]
            last = f" — {item.detail[-1]}" if item.detail else ""
            s.warnings.append(WarningView(mono, item.text + last))
        header = s.header
        header["upstream_state"] = _text(data.get("state"))
        generation = _int(data.get("generation"))
        if generation is not None:
            header["generation"] = generation
        header["retry_in_s"] = _num(data.get("retry_in_s"))
        header["exit_code"] = _int(data.get("exit_code"))
        header["stderr_tail"] = _strs(data.get("stderr_tail"))
        header["state_mono"] = mono

    def _new_request(
        self,
        request_id: str,
        method: str,
        tool: str | None,
        up_id: str | None,
        start: float,
        budget: float | None,
        budget_source: str | None,
        arguments: str | None,
    ) -> _Request:
        s = self._s
        old = s.requests.get(request_id)
        if old is not None:
            # A reused host id: forget the earlier request so the two never mix.
            if old.end_mono is not None and request_id in s.finished:
                s.finished.remove(request_id)
            if old.up_id is not None and s.by_up_id.get(old.up_id) == request_id:
                del s.by_up_id[old.up_id]
        if request_id not in s.in_flight and len(s.in_flight) >= s.limits.in_flight:
            oldest = next(iter(s.in_flight))
            self._forget_in_flight(oldest)
        request = _Request(
            request_id,
            method,
            tool,
            up_id,
            start,
            budget,
            budget_source,
            arguments,
            deque(maxlen=s.limits.timeline),
        )
        s.requests[request_id] = request
        s.in_flight[request_id] = None
        if up_id is not None:
            s.by_up_id[up_id] = request_id
        return request

    def _forget_in_flight(self, request_id: str) -> None:
        s = self._s
        s.in_flight.pop(request_id, None)
        request = s.requests.pop(request_id, None)
        if request is not None and request.up_id is not None:
            s.by_up_id.pop(request.up_id, None)

    def _request_start(self, event: Event, mono: float, data: RequestStartData) -> None:
        if event.request_id is None:
            raise ValueError("request_start without a request id")
        request_id = str(event.request_id)
        method = _text(data.get("method")) or "tools/call"
        budget = _num(data.get("budget_s"))
        source = _text(data.get("budget_source"))
        request = self._new_request(
            request_id,
            method,
            _text(event.tool),
            _up_key(data),
            mono,
            budget,
            source,
            _text(data.get("arguments")),
        )
        self._s.counters["requests"] += 1
        what = f"{method} {event.tool}" if event.tool else method
        budget_text = "no budget" if budget is None else f"budget {budget:g}s" + (f" ({source})" if source else "")
        request.note(mono, "request_start", f"started {what}, {budget_text}")

    def _request(self, event: Event) -> _Request | None:
        if event.request_id is None:
            return None
        return self._s.requests.get(str(event.request_id))

    def _progress(self, event: Event, mono: float, data: ProgressData) -> None:
        request = self._request(event)
        if request is None:
            return
        request.progress = _num(data.get("progress"))
        request.total = _num(data.get("total"))
        request.message = _text(data.get("message"))
        # The stage the council put in the progress's _meta (the wrapper passes it on); a stage never goes back.
        stage = _int(data.get("stage"))
        if stage is not None:
            request.stage = stage if request.stage is None else max(request.stage, stage)
        amount = fmt.progress(request.progress, request.total)
        request.note(mono, "progress", " ".join(p for p in (amount, request.message or "") if p) or "progress")

    def _model_status(self, event: Event, mono: float, data: ModelStatusData) -> None:
        request = self._request(event)
        if request is None or not event.model:
            return
        model = str(event.model)
        status = _text(data.get("status")) or "pending"
        stage = _int(data.get("stage"))
        latency = _int(data.get("latency_ms"))
        per_model = _num(data.get("per_model_s"))
        run = request.models.get(model)
        if run is None or (status == "pending" and run.status != "pending"):
            run = _ModelRun(model, status, stage, latency, per_model, mono, mono)
            request.models[model] = run
        else:
            run.status, run.updated_mono = status, mono
            run.stage = stage if stage is not None else run.stage
            run.latency_ms = latency if latency is not None else run.latency_ms
            run.per_model_s = per_model if per_model is not None else run.per_model_s
        if per_model is not None:
            request.per_model_s = per_model
        if stage is not None:  # stages only move on: a late model_status of stage 1 does not take it back
            request.stage = stage if request.stage is None else max(request.stage, stage)
        tier = _text(data.get("tier"))
        if tier:
            request.tier = tier
        self._s.council_request = request.request_id
        if status != "pending":
            took = "" if latency is None else f" in {latency} ms"
            request.note(mono, "model_status", f"{model}: {status}{took}")

    def _request_end(self, event: Event, mono: float, data: RequestEndData) -> None:
        s = self._s
        outcome = _text(data.get("outcome")) or Outcome.ERROR
        s.counters[_OUTCOME_COUNTER.get(outcome, "errors")] += 1
        request = self._request(event)
        if request is None or request.end_mono is not None:
            return
        duration = _num(data.get("duration_s"))
        request.end_mono = mono
        request.outcome = outcome
        request.duration_s = duration if duration is not None else max(0.0, mono - request.start_mono)
        request.error = _text(data.get("error"))
        request.result_preview = _text(data.get("result_preview"))
        request.partial = bool(data.get("partial"))
        request.degraded = degraded_note(request.result_preview) if outcome == Outcome.OK else None
        detail = f"{outcome} after {request.duration_s:.2f}s"
        if request.partial:
            detail += " (partial result)"
        if request.error:
            detail += f": {request.error}"
        request.note(mono, "request_end", detail)
        s.in_flight.pop(request.request_id, None)
        if request.method == "tools/call":
            s.latencies.append(request.duration_s)
            s.tool_stats.record(request.tool or "?", outcome, request.duration_s)
        if len(s.finished) == s.finished.maxlen:
            evicted = s.finished[0]
            old = s.requests.get(evicted)
            if old is not None and old.end_mono is not None:
                del s.requests[evicted]
                if old.up_id is not None and s.by_up_id.get(old.up_id) == evicted:
                    del s.by_up_id[old.up_id]
        s.finished.append(request.request_id)

    def _tombstone_add(self, event: Event, mono: float, data: TombstoneAddData) -> None:
        s = self._s
        up_id = _up_key(data)
        request_id = _text(event.request_id)
        if request_id is None and up_id is not None:
            request_id = s.by_up_id.get(up_id)
        key = up_id if up_id is not None else f"req:{request_id}"
        request = s.requests.get(request_id) if request_id is not None else None
        ttl = _num(data.get("ttl_s"))
        expires = _num(data.get("expires_mono"))
        if expires is None and ttl is not None:
            expires = mono + ttl
        tomb = _Tombstone(
            key,
            request_id,
            _text(event.tool) or (request.tool if request else None),
            ttl,
            _text(data.get("reason")),
            mono,
            expires,
        )
        if key not in s.tombstones and len(s.tombstones) >= s.limits.tombstones:
            del s.tombstones[next(iter(s.tombstones))]
        s.tombstones[key] = tomb
        if request is not None:
            request.tombstone = tomb
            ttl_text = "" if ttl is None else f", TTL {ttl:g}s"
            request.note(mono, "tombstone_add", f"tombstoned ({tomb.reason or 'no reason given'}{ttl_text})")
            if up_id is not None:
                s.by_up_id[up_id] = request.request_id

    def _tombstone(self, event: Event, data: TombstoneHitData | TombstoneExpireData) -> _Tombstone | None:
        s = self._s
        up_id = _up_key(data)
        if up_id is not None and up_id in s.tombstones:
            return s.tombstones[up_id]
        request_id = _text(event.request_id)
        if request_id is None and up_id is not None:
            request_id = s.by_up_id.get(up_id)
        return None if request_id is None else s.tombstones.get(f"req:{request_id}")

    def _tombstone_hit(self, event: Event, mono: float, data: TombstoneHitData) -> None:
        s = self._s
        s.counters["late_dropped"] += 1
        s.notable.late_answer(mono)
        tomb = self._tombstone(event, data)
        if tomb is None:
            return
        tomb.hits += 1
        request = s.requests.get(tomb.request_id) if tomb.request_id else None
        if request is not None and request.tombstone is tomb:
            age = _num(data.get("age_s"))
            age_text = "" if age is None else f" {age:.1f}s after the tombstone"
            request.note(mono, "tombstone_hit", f"late {_text(data.get('what')) or 'response'} dropped{age_text}")

    def _tombstone_expire(self, event: Event, mono: float, data: TombstoneExpireData) -> None:
        s = self._s
        tomb = self._tombstone(event, data)
        if tomb is None:
            return
        del s.tombstones[tomb.up_id]
        request = s.requests.get(tomb.request_id) if tomb.request_id else None
        if request is not None and request.tombstone is tomb:
            request.note(mono, "tombstone_expire", "tombstone expired")

    def _late_result(self, event: Event, mono: float, data: LateResultData) -> None:
        s = self._s
        s.counters["late_results"] += 1
        s.notable.late_result(mono, _text(event.request_id), _text(event.tool), data)
        request = self._request(event)
        if request is None:
            return
        result = data.get("result")
        text = _text(data.get("result_preview")) or _text(data.get("error"))
        if result is not None:
            text = json.dumps(result, ensure_ascii=False)[:LATE_TEXT_MAX]
        late = LateView(
            mono,
            _num(data.get("delay_s")),
            _num(data.get("duration_s")),
            _text(data.get("outcome")),
            _int(data.get("size_bytes")),
            text,
            data.get("truncated") is True,
        )
        request.late = late
        delay = "" if late.delay_s is None else f" {late.delay_s:.1f}s after the cut"
        took = "" if late.duration_s is None else f" (it took {late.duration_s:.1f}s in all)"
        request.note(mono, "late_result", f"finished late: {late.outcome or '?'}{delay}{took}")

    def _late_reuse(self, event: Event, mono: float, data: LateReuseData) -> None:
        s = self._s
        s.counters["late_reused"] += 1
        s.notable.late_reuse(mono, _text(event.request_id), _text(event.tool), data)
        request = self._request(event)
        if request is None:
            return
        late = LateView(
            mono, _num(data.get("delay_s")), from_request_id=_text(data.get("from_request_id")),
            age_s=_num(data.get("age_s")),
        )  # fmt: skip
        request.late = late
        age = "" if late.age_s is None else f", {late.age_s:.0f}s old"
        request.note(mono, "late_reuse", f"answered with the late result of #{late.from_request_id}{age}")

    def recent_calls(self, last: int = 50) -> list[CallTiming]:
        """The latest finished tools/calls (not those answered from a stored late result), for what-if figures."""
        calls: list[CallTiming] = []
        margin = _num(self._s.deadline.get("margin_s"))  # the margin now (a change in between is rare)
        for request_id in reversed(self._s.finished):
            r = self._s.requests.get(request_id)
            if r is None or r.method != "tools/call" or r.tool is None or r.budget_source == "late_reuse":
                continue
            calls.append(call_timing(r.request_id, r.tool, r.start_mono, r.budget_s, r.outcome, r.duration_s,
                                     r.late.duration_s if r.late else None, r.late.delay_s if r.late else None,
                                     r.tier, r.budget_source, margin))  # fmt: skip
            if len(calls) >= last:
                break
        return calls[::-1]

    def _unknown_response(self, event: Event, mono: float, data: UnknownResponseData) -> None:
        self._s.counters["unknown_dropped"] += 1

    def _invalidation(self, event: Event, mono: float, data: InvalidationData) -> None:
        s = self._s
        s.counters["invalidations"] += 1
        caused_by = _text(data.get("caused_by")) or _text(event.tool)
        s.invalidations.append(InvalidationView(mono, 0.0, caused_by, _strs(data.get("patterns"))))

    def _health_check(self, event: Event, mono: float, data: HealthCheckData) -> None:
        s = self._s
        ping = _num(data.get("ping_ms"))
        ok = data.get("ok")
        s.health = {
            "ok": ok if isinstance(ok, bool) else None,
            "ping_ms": ping,
            "tool": _text(data.get("tool")) or _text(event.tool),
            "error": _text(data.get("error")),
            "at_mono": mono,
            "latency_ms": _num(data.get("latency_ms")),
            "source": _text(data.get("source")),
        }
        if ping is not None:
            s.health_history.append(ping)
        result = data.get("result")
        if isinstance(result, Mapping):
            tiers = result.get("tiers")
            if isinstance(tiers, Mapping):
                s.tiers = {str(name): dict(body) for name, body in tiers.items() if isinstance(body, Mapping)}
                s.notable.tiers(mono, s.tiers, self.deadline_view().limit_s)
            multiplier = _num(result.get("timeout_multiplier"))
            if multiplier is not None:
                s.health["timeout_multiplier"] = multiplier

    def _config_change(self, event: Event, mono: float, data: ConfigChangeData) -> None:
        s = self._s
        if isinstance(data.get("deadline"), Mapping):
            self._set_deadline(data["deadline"])
        if isinstance(data.get("tombstone_ttl"), Mapping):
            self._set_ttl_terms(data["tombstone_ttl"])
        key = _text(data.get("key")) or "?"
        s.notable.config_change(mono, data)
        s.config_changes.append(
            ConfigChangeView(mono, key, data.get("old"), data.get("new"), _text(data.get("source")))
        )

    def _warning(self, event: Event, mono: float, data: WarningData) -> None:
        message = _text(data.get("message")) or "(no message)"
        self._s.warnings.append(WarningView(mono, message))
        self._s.notable.warning(mono, message)

    def _set_deadline(self, block: DeadlineBlock) -> None:
        self._s.deadline = {
            "host_timeout_s": _num(block.get("host_timeout_s")),
            "margin_s": _num(block.get("margin_s")),
            "override_s": _num(block.get("override_s")),
            "budget_s": _num(block.get("budget_s")),
            "source": _text(block.get("source")),
        }

    def _set_ttl_terms(self, terms: TtlTermsBlock) -> None:
        self._s.ttl_terms = {
            name: _num(terms.get(name)) for name in ("init_timeout_s", "backoff_max_s", "epsilon_s", "total_s")
        } | {"request_timeout_s": _num(terms.get("request_timeout_s"))}

    # -- rendering ------------------------------------------------------------------------------------------

    def deadline_view(self) -> DeadlineView:
        d = self._s.deadline
        if not d:
            return DeadlineView()
        return DeadlineView(d["host_timeout_s"], d["margin_s"], d["override_s"], d["budget_s"], d["source"], known=True)

    def ttl_terms(self, deadline: DeadlineView) -> TtlTerms:
        """The TTL formula's terms; request_timeout follows the current budget (DESIGN.md, tombstones)."""
        t = self._s.ttl_terms
        if not t:
            return TtlTerms()
        request_timeout = deadline.limit_s if deadline.known else t.get("request_timeout_s")
        parts = (request_timeout, t.get("init_timeout_s"), t.get("backoff_max_s"), t.get("epsilon_s"))
        total = sum(parts) if all(p is not None for p in parts) else t.get("total_s")  # type: ignore[arg-type]
        return TtlTerms(request_timeout, t.get("init_timeout_s"), t.get("backoff_max_s"), t.get("epsilon_s"), total)

    def _request_view(self, r: _Request) -> RequestView:
        return RequestView(
            r.request_id,
            r.method,
            r.tool,
            r.start_mono,
            r.end_mono,
            r.outcome,
            r.duration_s,
            r.partial,
            r.error,
            r.degraded,
        )

    def _tombstone_view(self, t: _Tombstone, now: float) -> TombstoneView:
        expires_in = None if t.expires_mono is None else t.expires_mono - now
        return TombstoneView(
            t.up_id, t.request_id, t.tool, t.reason, t.ttl_s, max(0.0, now - t.added_mono), expires_in, t.hits
        )

    def _council_view(self, request: _Request, now: float) -> CouncilView:
        models = []
        for run in request.models.values():
            per_model = run.per_model_s if run.per_model_s is not None else request.per_model_s
            cap = _effective_cap(per_model, request.budget_s)
            if run.status == "pending":
                end = request.end_mono if request.end_mono is not None else now
                elapsed: float | None = max(0.0, end - run.started_mono)
            else:
                elapsed = None if run.latency_ms is None else run.latency_ms / 1000.0
                if elapsed is None:
                    elapsed = max(0.0, run.updated_mono - run.started_mono)
            over = cap is not None and elapsed is not None and elapsed > cap
            models.append(ModelView(run.model, run.status, run.stage, elapsed, per_model, run.latency_ms, over, cap))
        return CouncilView(
            request.request_id,
            request.tool,
            request.tier,
            request.per_model_s,
            request.stage,
            request.end_mono is not None,
            request.outcome,
            tuple(models),
            request.budget_s,
        )

    def view(self, now_mono: float, selected: str | None = None) -> ViewState:
        """The screen's content at `now_mono`; `selected` picks whose council run to show (else the latest).

        Once the session has ended, time stops at its end: calls still "in flight" then will never finish, so
        their clocks (and every countdown) stay where the session left them.
        """
        s = self._s
        now = self._clamp(now_mono)
        h = s.header
        end = now
        header = HeaderView(
            name=h.get("name"),
            pid=h.get("pid"),
            version=h.get("version"),
            session_id=s.session_id,
            front=h.get("front"),
            upstream_kind=h.get("upstream_kind"),
            upstream_target=h.get("upstream_target"),
            upstream_state=h.get("upstream_state"),
            generation=h.get("generation"),
            retry_in_s=h.get("retry_in_s"),
            exit_code=h.get("exit_code"),
            stderr_tail=h.get("stderr_tail", ()),
            host_name=h.get("host_name"),
            host_version=h.get("host_version"),
            protocol_version=h.get("protocol_version"),
            host_profile=h.get("host_profile"),
            host_clock=h.get("host_clock"),
            uptime_s=max(0.0, end) if s.origin_ts is not None or s.session_started else 0.0,
            ended=s.ended,
        )
        deadline = self.deadline_view()
        limit = deadline.limit_s
        tiers = tuple(
            TierView(
                name,
                _num(body.get("total_s")),
                _num(body.get("per_model_s")),
                _strs(body.get("models")),
                exceeds_budget=limit is not None and (_num(body.get("total_s")) or 0.0) > limit,
            )
            for name, body in s.tiers.items()
        )
        in_flight = []
        for request_id in s.in_flight:
            r = s.requests[request_id]
            elapsed = max(0.0, now - r.start_mono)
            remaining = None if r.budget_s is None else r.budget_s - elapsed
            fraction = None if not r.budget_s else elapsed / r.budget_s
            in_flight.append(
                InFlightView(
                    r.request_id,
                    r.method,
                    r.tool,
                    elapsed,
                    r.budget_s,
                    remaining,
                    fraction,
                    r.progress,
                    r.total,
                    r.message,
                    bool(r.models),
                    unfinished=s.ended_mono is not None,
                    stage=r.stage,
                    tier=r.tier,
                    tier_total_s=_num(s.tiers.get(r.tier, {}).get("total_s")) if r.tier else None,
                )
            )
        # Next to be cut first: the least time left; calls without a budget last, oldest first.
        in_flight.sort(key=lambda v: (v.remaining_s is None, v.remaining_s if v.remaining_s is not None else 0.0))
        council_request = None
        if selected is not None and selected in s.requests and s.requests[selected].models:
            council_request = s.requests[selected]
        elif s.council_request is not None:
            council_request = s.requests.get(s.council_request)
        tombs = [self._tombstone_view(t, now) for t in s.tombstones.values()]
        live = sum(1 for t in tombs if t.expires_in_s is None or t.expires_in_s > 0)
        # Live ones first, soonest to expire on top; those past their TTL (awaiting the sweep) after them.
        tombs.sort(key=lambda t: (t.expires_in_s is not None and t.expires_in_s <= 0, _expiry_order(t)))
        hv = s.health
        health = HealthView(
            ok=hv.get("ok"),
            ping_ms=hv.get("ping_ms"),
            tool=hv.get("tool"),
            error=hv.get("error"),
            at_mono=hv.get("at_mono"),
            ago_s=None if hv.get("at_mono") is None else max(0.0, now - hv["at_mono"]),
            history=tuple(s.health_history),
            timeout_multiplier=hv.get("timeout_multiplier"),
            latency_ms=hv.get("latency_ms"),
            source=hv.get("source"),
        )
        return ViewState(
            now_mono=now,
            header=header,
            deadline=deadline,
            tiers=tiers,
            in_flight=tuple(in_flight),
            council=None if council_request is None else self._council_view(council_request, now),
            tombstones=TombstonesView(
                count=live,
                awaiting_sweep=len(tombs) - live,
                ttl_s=self.ttl_terms(deadline).total_s,
                terms=self.ttl_terms(deadline),
                late_dropped=s.counters["late_dropped"],
                items=tuple(tombs),
            ),
            invalidations=tuple(replace(i, ago_s=max(0.0, now - i.mono)) for i in reversed(s.invalidations)),
            requests=tuple(self._request_view(s.requests[r]) for r in reversed(s.finished) if r in s.requests),
            latencies=tuple(s.latencies),
            health=health,
            counters=Counters(**s.counters),
            warnings=tuple(reversed(s.warnings)),
            config_changes=tuple(reversed(s.config_changes)),
            state_sync_policies=s.state_sync_policies,
            events_applied=s.events_applied,
            malformed=s.malformed,
            has_session=s.session_id is not None or s.events_applied > 0,
            council_seen=s.council_request is not None or bool(s.tiers),
            tools=s.tool_stats.view(_count_tools(s.requests[r].tool for r in s.in_flight)),
            notable=s.notable.newest_first(),
            notable_total=s.notable.total,
        )

    def request_detail(self, request_id: str, now_mono: float) -> RequestDetail | None:
        """Everything known about one request (in flight or among the retained finished ones)."""
        request = self._s.requests.get(request_id)
        if request is None:
            return None
        now_mono = self._clamp(now_mono)
        end = request.end_mono if request.end_mono is not None else now_mono
        return RequestDetail(
            request=self._request_view(request),
            up_id=request.up_id,
            budget_s=request.budget_s,
            budget_source=request.budget_source,
            elapsed_s=max(0.0, end - request.start_mono),
            arguments=request.arguments,
            result_preview=request.result_preview,
            progress=request.progress,
            total=request.total,
            message=request.message,
            tombstone=None if request.tombstone is None else self._tombstone_view(request.tombstone, now_mono),
            timeline=tuple(request.timeline),
            timeline_dropped=request.timeline_dropped,
            council=self._council_view(request, now_mono) if request.models else None,
            unfinished=request.end_mono is None and self._s.ended_mono is not None,
            late=request.late,
        )

    def _clamp(self, now_mono: float) -> float:
        """`now`, but never past the end of an ended session."""
        ended = self._s.ended_mono
        return now_mono if ended is None else min(now_mono, ended)

    def in_flight_ids(self) -> tuple[str, ...]:
        return tuple(self._s.in_flight)

    def is_in_flight(self, request_id: str) -> bool:
        return request_id in self._s.in_flight


_DEGRADED = re.compile(
    r'\\?"(?:status|synthesis_type)\\?"\s*:\s*\\?"(partial|failed|insufficient|degraded)\\?"'
    r'|\\?"synthesized_by\\?"\s*:\s*\\?"(fallback)\\?"'
)


def degraded_note(preview: str | None) -> str | None:
    """Why an ok result is not the whole answer, when it says so itself (a council's fallback summary or a run
    with models missing report `status: partial` / `synthesized_by: fallback`, even inside a content text)."""
    if not preview:
        return None
    found = {m.group(1) or m.group(2) for m in _DEGRADED.finditer(preview)}
    if "fallback" in found:
        return "fallback summary"
    for word in ("failed", "insufficient", "partial", "degraded"):
        if word in found:
            return f"{word} answer"
    return None


def _expiry_order(t: TombstoneView) -> float:
    return math.inf if t.expires_in_s is None else t.expires_in_s


def _count_tools(tools: Iterable[str | None]) -> dict[str, int]:
    counts: dict[str, int] = {}
    for tool in tools:
        if tool:
            counts[tool] = counts.get(tool, 0) + 1
    return counts


def filter_requests(requests: Iterable[RequestView], text: str) -> tuple[RequestView, ...]:
    """Requests whose tool, method, outcome or id contains `text` (case-insensitive); all when `text` is blank."""
    needle = text.strip().lower()
    if not needle:
        return tuple(requests)
    return tuple(
        r
        for r in requests
        if needle in (r.tool or "").lower()
        or needle in r.method.lower()
        or needle in (r.outcome or "in flight").lower()
        or needle in r.request_id.lower()
    )
