"""What the main screen shows at one instant (`ViewState`, made of the panels' views, see `panels/`), the detail
screen's `RequestDetail`, and the model's `Limits`."""

from __future__ import annotations

from dataclasses import dataclass

from mcpwatch.console.headless.panels.council import CouncilView
from mcpwatch.console.headless.panels.counters import Counters
from mcpwatch.console.headless.panels.deadline import ConfigChangeView, DeadlineView
from mcpwatch.console.headless.panels.events import NotableEvent
from mcpwatch.console.headless.panels.header import HeaderView
from mcpwatch.console.headless.panels.health import HealthView
from mcpwatch.console.headless.panels.in_flight import InFlightView
from mcpwatch.console.headless.panels.invalidations import InvalidationView
from mcpwatch.console.headless.panels.requests import RequestView
from mcpwatch.console.headless.panels.tiers import TierView
from mcpwatch.console.headless.panels.tombstones import TombstonesView, TombstoneView
from mcpwatch.console.headless.panels.tools import ToolStatView
from mcpwatch.console.headless.panels.warnings import WarningView
from mcpwatch.console.headless.records import LateView, TimelineItem

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
