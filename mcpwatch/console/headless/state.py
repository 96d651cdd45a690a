"""The view model's internal mutable state, and `ModelCore`, the part every group of event handlers shares."""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field, replace
from typing import Any

from mcpwatch.console.headless.notable import NotableLog
from mcpwatch.console.headless.panels import deadline
from mcpwatch.console.headless.panels.deadline import ConfigChangeView, DeadlineView
from mcpwatch.console.headless.panels.invalidations import InvalidationView
from mcpwatch.console.headless.panels.warnings import WarningView
from mcpwatch.console.headless.records import CallRecord, TombstoneRecord
from mcpwatch.console.headless.tool_stats import ToolStats
from mcpwatch.console.headless.views import Limits
from mcpwatch.events import COUNTER_NAMES, Event, Outcome

# --- internal mutable state --------------------------------------------------------------------------------


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
    requests: dict[str, CallRecord] = field(default_factory=dict)  # in flight and retained finished
    in_flight: dict[str, None] = field(default_factory=dict)  # insertion-ordered set
    finished: deque[str] = field(default_factory=deque)
    by_up_id: dict[str, str] = field(default_factory=dict)  # upstream id -> host request id (retained requests)
    tombstones: dict[str, TombstoneRecord] = field(default_factory=dict)
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

        A request and the tombstones table share one `TombstoneRecord` object; the copy keeps them shared.
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

    def _request(self, event: Event) -> CallRecord | None:
        if event.request_id is None:
            return None
        return self._s.requests.get(str(event.request_id))

    def deadline_view(self) -> DeadlineView:
        return deadline.build(self._s.deadline)
