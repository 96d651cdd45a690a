"""The console's view model: a pure fold of events (see `mcpwatch.events`) plus a `now` into plain view dataclasses.

Live mode and replay both drive a `ConsoleModel` and hand its `view(now)` to the same screens, so what replay shows
at session time T is what live showed at T. Nothing here imports Textual or a transport, and nothing reads a clock:
time comes in as `now_mono` (seconds since session start, the events' `mono` axis).

Memory is bounded whatever the stream: finished requests, invalidations, warnings and per-request timelines are
capped (`Limits`); in-flight calls and tombstones are capped too, so a stream that never ends them cannot grow
the model without bound.

The model is composed (`parts.ModelParts`): the session part (`session_events`), the calls part
(`request_events`), the cut-calls part (`tombstone_events`) and the tasks part (`task_events`), with the counters
(`tally`) and the Events feed (`notable`) they share. `ConsoleModel` is the small dispatcher: it keeps where the
fold is (`view_builder.Fold`), routes each event kind to the part that handles it, and asks `view_builder` for the
views.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, replace
from typing import Any

from mcpwatch.console.headless.coerce import as_num, as_text
from mcpwatch.console.headless.panels.deadline import DeadlineView
from mcpwatch.console.headless.parts import ModelParts
from mcpwatch.console.headless.view_builder import Fold, build_detail, build_view
from mcpwatch.console.headless.views import Limits, RequestDetail, ViewState
from mcpwatch.console.headless.wire_text import clean, clean_event
from mcpwatch.events import Event, Kind, SessionStartData
from mcpwatch.logview.timing import CallTiming

Handler = Callable[[Event, float, Any], None]


@dataclass(frozen=True, slots=True)
class ModelSnapshot:
    """An opaque checkpoint of a model's state (for replay seeking); restore with `ConsoleModel.restore`."""

    _parts: ModelParts
    _fold: Fold
    last_seq: int
    last_mono: float


class ConsoleModel:
    """Folds events into the console's state; `view(now)` renders it. Feed it events in session order."""

    def __init__(self, limits: Limits | None = None) -> None:
        self._limits = limits or Limits()
        self._fold = Fold()
        self._use(ModelParts.fresh(self._limits))

    def _use(self, parts: ModelParts) -> None:
        """Fold into `parts` from now on: the route of each event kind to the part that handles it."""
        self._parts = parts
        session, calls, tombstones, tasks = parts.session, parts.calls, parts.tombstones, parts.tasks
        self._routes: dict[str, Handler] = {
            Kind.SESSION_START: self._session_start,
            Kind.SESSION_END: session.end,
            Kind.HOST_INFO: session.host_info,
            Kind.UPSTREAM_STATE: session.upstream_state,
            Kind.UNKNOWN_RESPONSE: session.unknown_response,
            Kind.INVALIDATION: session.invalidation,
            Kind.HEALTH_CHECK: session.health_check,
            Kind.CONFIG_CHANGE: session.config_change,
            Kind.WARNING: session.warning,
            Kind.HOST_SESSION_REFUSED: session.host_session_refused,  # a warning, and the front's counts
            Kind.REQUEST_START: calls.request_start,
            Kind.PROGRESS: calls.progress,
            Kind.MODEL_STATUS: calls.model_status,
            Kind.REQUEST_END: calls.request_end,
            Kind.TOMBSTONE_ADD: tombstones.add,
            Kind.TOMBSTONE_HIT: tombstones.hit,
            Kind.TOMBSTONE_EXPIRE: tombstones.expire,
            Kind.LATE_RESULT: tombstones.late_result,
            Kind.LATE_REUSE: tombstones.late_reuse,
            Kind.CANCEL_ACK: tombstones.cancel_ack,
            Kind.LATE_ERROR: tombstones.late_error,
            Kind.TASK_CREATED: tasks.created,
            Kind.TASK_STATUS: tasks.status,
        }

    # -- feeding ------------------------------------------------------------------------------------------

    @property
    def limits(self) -> Limits:
        return self._limits

    @property
    def session_id(self) -> str | None:
        return self._fold.session_id

    @property
    def last_seq(self) -> int:
        """The highest `Event.seq` folded so far (where a live feed resumes)."""
        return self._fold.last_seq

    @property
    def last_mono(self) -> float:
        return self._fold.last_mono

    @property
    def origin_ts(self) -> float | None:
        """Unix time of the session's mono 0, once any event has been seen (maps a wall clock onto `mono`)."""
        return self._fold.origin_ts

    @property
    def saw_session_start(self) -> bool:
        return self._fold.session_started

    def mono_at(self, wall_ts: float) -> float:
        """Session time at a given unix time: how live mode turns its clock into the `now` that `view` takes."""
        origin = self._fold.origin_ts
        return self._fold.last_mono if origin is None else wall_ts - origin

    def reset(self) -> None:
        self._fold = Fold()
        self._use(ModelParts.fresh(self._limits))

    def apply(self, event: Event) -> None:
        """Fold one event. Unknown kinds are ignored; malformed data is counted, never raised. Its texts are made safe
        for a terminal first (`wire_text`): every feed, live or replayed, comes in here."""
        event = clean_event(event)
        fold = self._fold
        if event.session_id and fold.session_id is not None and event.session_id != fold.session_id:
            self.reset()  # another session (a restarted wrapper): start over rather than mix the two
            fold = self._fold
        if fold.session_id is None and event.session_id:
            fold.session_id = event.session_id
        mono = as_num(event.mono)
        if mono is None:
            fold.malformed += 1
            return
        if fold.origin_ts is None and as_num(event.ts) is not None:
            fold.origin_ts = event.ts - mono
        fold.last_mono = max(fold.last_mono, mono)
        if isinstance(event.seq, int) and event.seq > fold.last_seq:
            fold.last_seq = event.seq
        fold.events_applied += 1
        handler = self._routes.get(event.kind)
        if handler is None:
            return
        data = event.data if isinstance(event.data, Mapping) else {}
        try:
            handler(event, mono, data)
        except (TypeError, ValueError, AttributeError, KeyError):
            self._fold.malformed += 1

    def _session_start(self, event: Event, mono: float, data: SessionStartData) -> None:
        """Every part starts over; the wrapper reports start-up problems (a bad env value…) before its
        session_start, so those belong to this session and survive (anything of another session was already reset
        by `apply`)."""
        fold = self._fold
        same = bool(event.session_id) and event.session_id == fold.session_id
        early = list(self._parts.session.warnings) if same else []
        self._fold = Fold(
            fold.session_id, True, fold.origin_ts, mono, event.seq if isinstance(event.seq, int) else 0, 1
        )
        self._use(ModelParts.fresh(self._limits))
        self._parts.session.warnings.extend(early)
        self._parts.session.start(event, mono, data)

    def apply_many(self, events: Iterable[Event]) -> int:
        count = 0
        for event in events:
            self.apply(event)
            count += 1
        return count

    def snapshot(self) -> ModelSnapshot:
        """A cheap checkpoint (containers copied, immutable items shared): restore it to seek without refolding."""
        fold = replace(self._fold)
        return ModelSnapshot(self._parts.copy(), fold, fold.last_seq, fold.last_mono)

    @classmethod
    def restore(cls, snapshot: ModelSnapshot) -> ConsoleModel:
        model = cls(snapshot._parts.limits)
        model.load(snapshot)
        return model

    def load(self, snapshot: ModelSnapshot) -> None:
        """Put this model back in a checkpoint's state (the snapshot stays untouched): how replay seeks in place,
        so the screens that hold this model show the new position without being told."""
        self._limits = snapshot._parts.limits
        self._fold = replace(snapshot._fold)
        self._use(snapshot._parts.copy())

    def adopt(self, snapshot: ModelSnapshot) -> None:
        """`load` without the copy, for a snapshot nobody else holds (one just unpickled from a replay checkpoint):
        this model takes its state over, so the snapshot must not be used again. Copying a freshly unpickled state
        would be an eighth of a seek's time spent for nothing."""
        self._limits = snapshot._parts.limits
        self._fold = snapshot._fold
        self._use(snapshot._parts)

    def copy(self) -> ConsoleModel:
        return ConsoleModel.restore(self.snapshot())

    def seed(self, status: Mapping[str, Any], now_mono: float) -> None:
        """Fill in what an operator `status()` knows and the folded events do not (attaching mid-session). It is a
        `Status` from the network, so every field is checked as it is read.

        Only used when the event history does not start at `session_start`; anything the events already
        established stays as the events say.
        """
        status = clean(status)
        log: Mapping[str, Any] = got if isinstance(got := status.get("log"), Mapping) else {}
        if self._fold.session_id is None and as_text(log.get("session_id")):
            self._fold.session_id = as_text(log.get("session_id"))
        parts = self._parts
        parts.session.seed(status)
        tomb: Mapping[str, Any] = got if isinstance(got := status.get("tombstones"), Mapping) else {}
        parts.tombstones.seed(tomb, now_mono)
        parts.calls.seed(status.get("in_flight"), now_mono)
        counters = status.get("counters")
        if isinstance(counters, Mapping) and not self._fold.session_started:
            parts.tally.seed(counters)

    def note_status(self, status: Mapping[str, Any]) -> None:
        """What a live `status()` says that no event carries: an HTTP front's host sessions (open, reclaimed,
        refused). The live feed asks for it every few seconds."""
        self._parts.session.host_sessions(clean(status))

    # -- what the screens ask -----------------------------------------------------------------------------

    def view(self, now_mono: float, selected: str | None = None) -> ViewState:
        """The screen's content at `now_mono` (see `view_builder.build_view`)."""
        return build_view(self._parts, self._fold, now_mono, selected)

    def request_detail(self, request_id: str, now_mono: float) -> RequestDetail | None:
        """Everything known about one request (in flight or among the retained finished ones)."""
        return build_detail(self._parts, request_id, now_mono)

    def deadline_view(self) -> DeadlineView:
        return self._parts.session.deadline_view()

    def in_flight_ids(self) -> tuple[str, ...]:
        return tuple(self._parts.calls.in_flight)

    def is_in_flight(self, request_id: str) -> bool:
        return request_id in self._parts.calls.in_flight

    def tier_estimates(self) -> dict[str, float]:
        """The council's own per-tier duration estimates, from the latest health check (a basis for advice)."""
        return dict(self._parts.session.tier_estimates)

    def recent_calls(self, last: int = 50) -> list[CallTiming]:
        """The latest finished tools/calls (not those answered from a stored late result), for what-if figures."""
        margin = as_num(self._parts.session.deadline.get("margin_s"))  # the margin now (a change in between is rare)
        return self._parts.calls.recent_calls(margin, last)
