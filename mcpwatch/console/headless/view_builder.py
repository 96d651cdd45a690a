"""Builds the view dataclasses from the model's state at a given `now` (the screens' content)."""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import replace

from mcpwatch.console.headless.state import ModelCore, _num, _Request, _strs, _Tombstone
from mcpwatch.console.headless.views import (
    CouncilView,
    Counters,
    HeaderView,
    HealthView,
    InFlightView,
    ModelView,
    RequestDetail,
    RequestView,
    TierView,
    TombstonesView,
    TombstoneView,
    ViewState,
    _effective_cap,
)


class ViewBuilder(ModelCore):
    """`view(now)` and `request_detail(id, now)`: state plus a clock into plain view dataclasses."""

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
            bound = r.budget_s if r.ttl_end_mono is None else r.ttl_end_mono - r.start_mono  # a task's is its TTL
            remaining = None if bound is None else bound - elapsed
            fraction = None if not bound else elapsed / bound
            in_flight.append(
                InFlightView(
                    r.request_id,
                    r.method,
                    r.tool,
                    elapsed,
                    bound,
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
                    task=r.ttl_end_mono is not None,
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
