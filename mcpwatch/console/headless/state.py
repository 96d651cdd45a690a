"""The view model's internal mutable state, and `ModelCore`, the part every group of event handlers shares.

Event payloads are data, never trusted: the coercions here (`_num`, `_text`…) turn anything odd into None.
"""

from __future__ import annotations

import math
from collections import deque
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from mcpwatch.console.headless.notable import NotableLog
from mcpwatch.console.headless.tool_stats import ToolStats
from mcpwatch.console.headless.views import (
    ConfigChangeView,
    DeadlineView,
    InvalidationView,
    LateView,
    Limits,
    TimelineItem,
    TtlTerms,
    WarningView,
)
from mcpwatch.events import COUNTER_NAMES, Event, Outcome

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
    cancel_acked: bool = False  # the server answered the cancel with an error saying so: it never finished
    ttl_end_mono: float | None = None  # a task's: when its TTL passes (its receiver may then drop it)

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


_COUNTER_NAMES = COUNTER_NAMES  # the wrapper's counters, all of them (views.Counters has a field for each)
# Which counter a request_end bumps; every other outcome (tool_error, error, upstream_lost, unknown) is an error.
_OUTCOME_COUNTER: dict[str, str] = {Outcome.OK: "ok", Outcome.DEADLINE: "timeouts", Outcome.CANCELLED: "cancelled"}


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
    tier_estimates: dict[str, float] = field(default_factory=dict)  # the council's own, from its health check
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


class ModelCore:
    """The state every handler group folds into, and the lookups they share."""

    _limits: Limits
    _s: _State

    def reset(self) -> None:
        self._s = _State.fresh(self._limits)

    def _request(self, event: Event) -> _Request | None:
        if event.request_id is None:
            return None
        return self._s.requests.get(str(event.request_id))

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
        total = sum(parts) if all(p is not None for p in parts) else t.get("total_s")  # type: ignore[arg-type]  # all parts are numbers here
        return TtlTerms(request_timeout, t.get("init_timeout_s"), t.get("backoff_max_s"), t.get("epsilon_s"), total)
