"""Builds the view dataclasses from the model's state at a given `now` (the screens' content)."""

from __future__ import annotations

from mcpwatch.console.headless.panels import (
    council,
    counters,
    header,
    health,
    in_flight,
    invalidations,
    requests,
    tiers,
    tombstones,
    tools,
    warnings,
)
from mcpwatch.console.headless.state import ModelCore
from mcpwatch.console.headless.views import RequestDetail, ViewState


class ViewBuilder(ModelCore):
    """`view(now)` and `request_detail(id, now)`: state plus a clock into plain view dataclasses, each panel's view
    built by its own module (`panels/`)."""

    def view(self, now_mono: float, selected: str | None = None) -> ViewState:
        """The screen's content at `now_mono`; `selected` picks whose council run to show (else the latest).

        Once the session has ended, time stops at its end: calls still "in flight" then will never finish, so
        their clocks (and every countdown) stay where the session left them.
        """
        s = self._s
        now = self._clamp(now_mono)
        uptime = max(0.0, now) if s.origin_ts is not None or s.session_started else 0.0
        limits = self.deadline_view()
        council_request = None
        if selected is not None and selected in s.requests and s.requests[selected].models:
            council_request = s.requests[selected]
        elif s.council_request is not None:
            council_request = s.requests.get(s.council_request)
        running = [s.requests[r] for r in s.in_flight]
        return ViewState(
            now_mono=now,
            header=header.build(s.header, s.session_id, uptime, s.ended),
            deadline=limits,
            tiers=tiers.build(s.tiers, limits.limit_s),
            in_flight=in_flight.build(running, s.tiers, s.ended_mono is not None, now),
            council=None if council_request is None else council.build(council_request, now),
            tombstones=tombstones.build(
                s.tombstones.values(), tombstones.ttl_terms(s.ttl_terms, limits), s.counters["late_dropped"], now
            ),
            invalidations=invalidations.build(s.invalidations, now),
            requests=requests.newest_first(s.requests, s.finished),
            latencies=tuple(s.latencies),
            health=health.build(s.health, s.health_history, now),
            counters=counters.build(s.counters),
            warnings=warnings.build(s.warnings),
            config_changes=tuple(reversed(s.config_changes)),
            state_sync_policies=s.state_sync_policies,
            events_applied=s.events_applied,
            malformed=s.malformed,
            has_session=s.session_id is not None or s.events_applied > 0,
            council_seen=s.council_request is not None or bool(s.tiers),
            tools=s.tool_stats.view(tools.running(r.tool for r in running)),
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
            request=requests.build(request),
            up_id=request.up_id,
            budget_s=request.budget_s,
            budget_source=request.budget_source,
            elapsed_s=max(0.0, end - request.start_mono),
            arguments=request.arguments,
            result_preview=request.result_preview,
            progress=request.progress,
            total=request.total,
            message=request.message,
            tombstone=None if request.tombstone is None else tombstones.tombstone_view(request.tombstone, now_mono),
            timeline=tuple(request.timeline),
            timeline_dropped=request.timeline_dropped,
            council=council.build(request, now_mono) if request.models else None,
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
