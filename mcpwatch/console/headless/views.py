"""The console's view dataclasses: what screens render (plain, immutable, Textual-free), and the model's `Limits`."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from mcpwatch.console.headless.notable import NotableEvent
from mcpwatch.console.headless.tool_stats import ToolStatView

COUNCIL_TOOL_HINT = "council"
LATE_TEXT_MAX = 4096  # a late result's text kept per request, like a result preview


def _effective_cap(per_model_s: float | None, budget_s: float | None) -> float | None:
    """A model cannot run past the call's budget, whatever the tier allows."""
    if per_model_s is None:
        return budget_s
    return per_model_s if budget_s is None else min(per_model_s, budget_s)


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
    task: bool = False  # a call run as a task: no tools/call budget cuts it; its bound (`budget_s`) is its TTL


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
    degraded: int = 0  # ok answers that say they are not whole: their own outcome
    errors: int = 0
    timeouts: int = 0
    cancelled: int = 0
    late_dropped: int = 0
    late_results: int = 0
    late_reused: int = 0
    unknown_dropped: int = 0
    invalidations: int = 0
    host_frame_errors: int = 0
    upstream_garbage: int = 0
    progress_coalesced: int = 0
    upstream_pauses: int = 0


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
