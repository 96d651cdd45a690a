"""Builds the view dataclasses from the model's parts at a given `now` (the screens' content): each panel's view
by its own module (`panels/`), assembled into one `ViewState`."""

from __future__ import annotations

from dataclasses import dataclass

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
from mcpwatch.console.headless.parts import ModelParts
from mcpwatch.console.headless.views import RequestDetail, ViewState


@dataclass(slots=True)
class Fold:
    """Where the fold is: which session, how far (the model's own bookkeeping, beside its parts)."""

    session_id: str | None = None
    session_started: bool = False  # a session_start was folded (the history is complete from the start)
    origin_ts: float | None = None  # wall time of mono 0 (session start)
    last_mono: float = 0.0
    last_seq: int = 0
    events_applied: int = 0
    malformed: int = 0


def clamp(parts: ModelParts, now_mono: float) -> float:
    """`now`, but never past the end of an ended session."""
    ended = parts.session.ended_mono
    return now_mono if ended is None else min(now_mono, ended)


def build_view(parts: ModelParts, fold: Fold, now_mono: float, selected: str | None = None) -> ViewState:
    """The screen's content at `now_mono`; `selected` picks whose council run to show (else the latest).

    Once the session has ended, time stops at its end: calls still "in flight" then will never finish, so
    their clocks (and every countdown) stay where the session left them.
    """
    session, calls, counts = parts.session, parts.calls, parts.tally.counts
    now = clamp(parts, now_mono)
    uptime = max(0.0, now) if fold.origin_ts is not None or fold.session_started else 0.0
    limits = session.deadline_view()
    council_request = None
    if selected is not None and selected in calls.requests and calls.requests[selected].models:
        council_request = calls.requests[selected]
    elif calls.council_request is not None:
        council_request = calls.requests.get(calls.council_request)
    running = [calls.requests[r] for r in calls.in_flight]
    return ViewState(
        now_mono=now,
        header=header.build(session.header, fold.session_id, uptime, session.ended),
        deadline=limits,
        tiers=tiers.build(session.tiers, limits.limit_s),
        in_flight=in_flight.build(running, session.tiers, session.ended_mono is not None, now),
        council=None if council_request is None else council.build(council_request, now),
        tombstones=tombstones.build(
            parts.tombstones.records.values(),
            tombstones.ttl_terms(session.ttl_terms, limits),
            counts["late_dropped"],
            now,
        ),
        invalidations=invalidations.build(session.invalidations, now),
        requests=requests.newest_first(calls.requests, calls.finished),
        latencies=tuple(calls.latencies),
        health=health.build(session.health, session.health_history, now),
        counters=counters.build(counts),
        warnings=warnings.build(session.warnings),
        config_changes=tuple(reversed(session.config_changes)),
        state_sync_policies=session.state_sync_policies,
        events_applied=fold.events_applied,
        malformed=fold.malformed,
        has_session=fold.session_id is not None or fold.events_applied > 0,
        council_seen=calls.council_request is not None or bool(session.tiers),
        tools=calls.tool_stats.view(tools.running(r.tool for r in running)),
        notable=parts.notable.newest_first(),
        notable_total=parts.notable.total,
    )


def build_detail(parts: ModelParts, request_id: str, now_mono: float) -> RequestDetail | None:
    """Everything known about one request (in flight or among the retained finished ones)."""
    request = parts.calls.requests.get(request_id)
    if request is None:
        return None
    now_mono = clamp(parts, now_mono)
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
        unfinished=request.end_mono is None and parts.session.ended_mono is not None,
        late=request.late,
    )
