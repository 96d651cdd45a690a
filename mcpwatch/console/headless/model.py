"""The console's view model: a pure fold of events (see `mcpwatch.events`) plus a `now` into plain view dataclasses.

Live mode and replay both drive a `ConsoleModel` and hand its `view(now)` to the same screens, so what replay shows
at session time T is what live showed at T. Nothing here imports Textual or a transport, and nothing reads a clock:
time comes in as `now_mono` (seconds since session start, the events' `mono` axis).

Memory is bounded whatever the stream: finished requests, invalidations, warnings and per-request timelines are
capped (`Limits`); in-flight calls and tombstones are capped too, so a stream that never ends them cannot grow
the model without bound.

The model is split by job: `views` (the view dataclasses), `state` (the mutable state), one mixin per group of
event handlers (`session_events`, `request_events`, `tombstone_events`) and `view_builder` (state → views).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from mcpwatch.console.headless.coerce import as_int, as_num, as_text, clock_text, up_key
from mcpwatch.console.headless.records import TombstoneRecord
from mcpwatch.console.headless.request_events import RequestEvents
from mcpwatch.console.headless.session_events import SessionEvents
from mcpwatch.console.headless.state import _COUNTER_NAMES, _State
from mcpwatch.console.headless.task_events import TaskEvents
from mcpwatch.console.headless.tombstone_events import TombstoneEvents
from mcpwatch.console.headless.view_builder import ViewBuilder
from mcpwatch.console.headless.views import Limits
from mcpwatch.console.headless.wire_text import clean, clean_event
from mcpwatch.events import Event, Kind


@dataclass(frozen=True, slots=True)
class ModelSnapshot:
    """An opaque checkpoint of a model's state (for replay seeking); restore with `ConsoleModel.restore`."""

    _state: _State
    last_seq: int
    last_mono: float


# --- the model ---------------------------------------------------------------------------------------------


class ConsoleModel(SessionEvents, RequestEvents, TaskEvents, TombstoneEvents, ViewBuilder):
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
            Kind.CANCEL_ACK: self._cancel_ack,
            Kind.UNKNOWN_RESPONSE: self._unknown_response,
            Kind.INVALIDATION: self._invalidation,
            Kind.HEALTH_CHECK: self._health_check,
            Kind.CONFIG_CHANGE: self._config_change,
            Kind.WARNING: self._warning,
            Kind.TASK_CREATED: self._task_created,
            Kind.TASK_STATUS: self._task_status,
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
        """Fold one event. Unknown kinds are ignored; malformed data is counted, never raised. Its texts are made safe
        for a terminal first (`wire_text`): every feed, live or replayed, comes in here."""
        event = clean_event(event)
        s = self._s
        if event.session_id and s.session_id is not None and event.session_id != s.session_id:
            self.reset()  # another session (a restarted wrapper): start over rather than mix the two
            s = self._s
        if s.session_id is None and event.session_id:
            s.session_id = event.session_id
        mono = as_num(event.mono)
        if mono is None:
            s.malformed += 1
            return
        if s.origin_ts is None and as_num(event.ts) is not None:
            s.origin_ts = event.ts - mono
        s.last_mono = max(s.last_mono, mono)
        if isinstance(event.seq, int) and event.seq > s.last_seq:
            s.last_seq = event.seq
        s.events_applied += 1
        handler = self._handlers.get(event.kind)  # type: ignore[call-overload]  # any kind may be looked up: unknown kinds get None
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

    def seed(self, status: Mapping[str, Any], now_mono: float) -> None:
        """Fill in what an operator `status()` knows and the folded events do not (attaching mid-session). It is a
        `Status` from the network, so every field is checked as it is read.

        Only used when the event history does not start at `session_start`; anything the events already
        established stays as the events say.
        """
        status = clean(status)
        s = self._s
        wrapper: Mapping[str, Any] = got if isinstance(got := status.get("wrapper"), Mapping) else {}
        log: Mapping[str, Any] = got if isinstance(got := status.get("log"), Mapping) else {}
        if s.session_id is None and as_text(log.get("session_id")):
            s.session_id = as_text(log.get("session_id"))
        header = s.header
        for key in ("name", "version"):
            header.setdefault(key, as_text(wrapper.get(key)))
        header.setdefault("pid", as_int(wrapper.get("pid")))
        upstream: Mapping[str, Any] = got if isinstance(got := wrapper.get("upstream"), Mapping) else {}
        header.setdefault("upstream_kind", as_text(upstream.get("kind")))
        header.setdefault("upstream_target", as_text(upstream.get("target")))
        header.setdefault("upstream_state", as_text(upstream.get("state")))
        header.setdefault("generation", as_int(upstream.get("generation")))
        host = wrapper.get("host")
        if isinstance(host, Mapping):
            header.setdefault("host_name", as_text(host.get("name")))
            header.setdefault("host_version", as_text(host.get("version")))
            header.setdefault("host_profile", as_text(host.get("label")))
            header.setdefault("host_clock", clock_text(host.get("deciding_clock")))
        elif host is not None:
            header.setdefault("host_name", as_text(host))
        deadline = status.get("deadline")
        if isinstance(deadline, Mapping) and not s.deadline:
            self._set_deadline(deadline)
        tomb: Mapping[str, Any] = got if isinstance(got := status.get("tombstones"), Mapping) else {}
        terms = tomb.get("terms")
        if isinstance(terms, Mapping) and not s.ttl_terms:
            self._set_ttl_terms(terms)
        for item in tomb.get("items") or ():
            if not isinstance(item, Mapping):
                continue
            request_id = as_text(item.get("request_id"))
            key = up_key(item, "key") or f"req:{request_id}"  # the up_id, as tombstone events name it
            if key in s.tombstones or any(t.request_id == request_id for t in s.tombstones.values()):
                continue
            age = as_num(item.get("age_s")) or 0.0
            expires_in = as_num(item.get("expires_in_s"))
            ttl = None if expires_in is None else age + expires_in
            s.tombstones[key] = TombstoneRecord(
                key,
                request_id,
                as_text(item.get("tool")),
                ttl if ttl is not None else as_num(tomb.get("ttl_s")),
                as_text(item.get("reason")),
                now_mono - age,
                None if expires_in is None else now_mono + expires_in,
            )
        for item in status.get("in_flight") or ():
            if not isinstance(item, Mapping) or as_text(item.get("request_id")) is None:
                continue
            request_id = str(item["request_id"])
            if request_id in s.in_flight:
                continue
            elapsed = as_num(item.get("elapsed_s")) or 0.0
            request = self._new_request(
                request_id,
                as_text(item.get("method")) or "tools/call",
                as_text(item.get("tool")),
                None,
                now_mono - elapsed,
                as_num(item.get("budget_s")),
                None,
                None,
            )
            request.progress = as_num(item.get("progress"))
            request.total = as_num(item.get("total"))
            request.message = as_text(item.get("message"))
            request.note(now_mono, "seed", f"already running for {elapsed:.1f}s when the console attached")
        counters = status.get("counters")
        if isinstance(counters, Mapping) and not s.session_started:
            for name in _COUNTER_NAMES:  # (a wrapper before `degraded` counted those as ok)
                value = as_int(counters.get(name))
                if value is not None:
                    s.counters[name] = max(s.counters[name], value)
        state_sync = status.get("state_sync")
        if isinstance(state_sync, Mapping) and s.state_sync_policies is None:
            s.state_sync_policies = as_int(state_sync.get("policies"))
