"""Deterministic event streams: a small realistic session (snapshots, docs) and a flood generator (the benchmark).

Both follow the per-kind data contract in `mcpwatch.events`, so anything that folds them folds real logs too.
"""

from __future__ import annotations

import itertools
import json
from collections.abc import Iterator
from typing import Any

from mcpwatch.events import DeadlineBlock, Event, Kind

SAMPLE_SESSION_ID = "3f2a9c1e-sample"
SAMPLE_ORIGIN_TS = 1_767_225_600.0  # 2026-01-01T00:00:00Z: mono 0 of the sample session
COUNCIL_MODELS = ("openai/gpt-5.1", "anthropic/claude-opus-4.5", "google/gemini-3-pro", "x-ai/grok-4")
COUNCIL_TIERS = {
    "quick": {"total_s": 30, "per_model_s": 20, "models": ["openai/gpt-4o-mini", "anthropic/claude-haiku-4.5"]},
    "balanced": {"total_s": 90, "per_model_s": 45, "models": list(COUNCIL_MODELS[:3])},
    "high": {"total_s": 180, "per_model_s": 90, "models": list(COUNCIL_MODELS)},
    "reasoning": {"total_s": 600, "per_model_s": 300, "models": ["openai/gpt-5.2-pro", "openai/o1"]},
}


class EventFactory:
    """Builds events of one session with increasing `seq` and a fixed wall-clock origin."""

    def __init__(self, session_id: str = SAMPLE_SESSION_ID, origin_ts: float = SAMPLE_ORIGIN_TS) -> None:
        self.session_id = session_id
        self.origin_ts = origin_ts
        self._seq = itertools.count(1)

    def make(
        self,
        kind: str,
        mono: float,
        *,
        request_id: str | None = None,
        tool: str | None = None,
        model: str | None = None,
        data: dict[str, Any] | None = None,
        **fields: Any,
    ) -> Event:
        """One event; `fields` go into `data` (use `data=` for a field named like an event column, e.g. tool)."""
        return Event(
            kind=str(kind),
            session_id=self.session_id,
            ts=self.origin_ts + mono,
            mono=mono,
            seq=next(self._seq),
            request_id=request_id,
            tool=tool,
            model=model,
            data={**(data or {}), **fields},
        )


def deadline_block(host: float = 120.0, margin: float = 10.0, override: float | None = None) -> DeadlineBlock:
    """The deadline block as the wrapper reports it (budget = override, else host − margin)."""
    budget = override if override is not None else max(1.0, host - margin)
    source = "operator" if override is not None else "env"
    explanation = (
        f"operator override {budget:g} s" if override is not None else f"host timeout {host:g} s − margin {margin:g} s"
    )
    return DeadlineBlock(
        host_timeout_s=host,
        margin_s=margin,
        override_s=override,
        budget_s=budget,
        source=source,
        explanation=explanation,
    )


def session_start(f: EventFactory, mono: float = 0.0, name: str = "council") -> Event:
    return f.make(
        Kind.SESSION_START,
        mono,
        name=name,
        pid=41234,
        version="0.1.0",
        front="stdio",
        upstream={"kind": "stdio", "target": "mcpwatch council --scenario fast"},
        config={},
        deadline=deadline_block(),
        tombstone_ttl={
            "request_timeout_s": 110.0,
            "init_timeout_s": 10.0,
            "backoff_max_s": 30.0,
            "epsilon_s": 5.0,
            "total_s": 155.0,
        },
        state_sync={"policies": 2, "overlaps": []},
    )


def sample_session() -> list[Event]:
    """About five minutes of one wrapper's life, ending with a council run in flight at mono ≈ 300."""
    f = EventFactory()
    ev: list[Event] = [
        session_start(f),
        f.make(Kind.UPSTREAM_STATE, 0.1, state="connecting", generation=1),
        f.make(Kind.UPSTREAM_STATE, 0.4, state="ready", generation=1),
        f.make(Kind.HOST_INFO, 0.5, name="claude-code", version="2.1.3", protocol_version="2025-11-25"),
        f.make(Kind.REQUEST_START, 0.6, request_id="1", method="tools/list", up_id=1, budget_s=None),
        f.make(Kind.REQUEST_END, 0.62, request_id="1", outcome="ok", duration_s=0.02, method="tools/list"),
        f.make(
            Kind.HEALTH_CHECK,
            2.0,
            data={"tool": "council_health_check"},
            ok=True,
            ping_ms=3.4,
            result={"tiers": COUNCIL_TIERS, "timeout_multiplier": 1.0, "api_key_configured": True},
            error=None,
            latency_ms=9.8,
        ),
    ]
    mono = 5.0
    # A handful of quick calls with mixed outcomes, so the list and the sparkline have something to show.
    outcomes = [("ok", 1.2), ("ok", 2.8), ("tool_error", 0.4), ("ok", 4.1), ("ok", 0.9), ("ok", 6.3), ("ok", 3.3)]
    for i, (outcome, duration) in enumerate(outcomes, start=2):
        rid = str(i)
        tool = "tasks.update" if i % 3 == 0 else "countries.lookup"
        ev.append(
            f.make(
                Kind.REQUEST_START,
                mono,
                request_id=rid,
                tool=tool,
                method="tools/call",
                up_id=i,
                budget_s=110.0,
                budget_source="env",
                arguments=json.dumps({"id": i}),
            )
        )
        extra: dict[str, Any] = {"error": "task not found"} if outcome == "tool_error" else {}
        if outcome == "ok":
            extra["result_preview"] = '{"ok": true}'
        ev.append(
            f.make(
                Kind.REQUEST_END,
                mono + duration,
                request_id=rid,
                tool=tool,
                outcome=outcome,
                duration_s=duration,
                method="tools/call",
                **extra,
            )
        )
        if tool == "tasks.update" and outcome == "ok":
            ev.append(
                f.make(
                    Kind.INVALIDATION,
                    mono + duration,
                    request_id=rid,
                    tool=tool,
                    caused_by=tool,
                    patterns=["tasks.*", "sprints.*"],
                )
            )
        mono += duration + 7.0
    # A council run that hit the deadline: partial result, tombstone, a late response dropped.
    ev += _council_run(f, "20", start=60.0, finish={"openai/gpt-5.1": 38_200, "google/gemini-3-pro": 51_900})
    ev += [
        f.make(
            Kind.REQUEST_END,
            170.0,
            request_id="20",
            tool="consult_council",
            outcome="deadline",
            duration_s=110.0,
            method="tools/call",
            partial=True,
            error="consult_council exceeded its 110s budget (host 120s − margin 10s); last progress 2/4",
            result_preview='{"synthesis": "partial: 2 of 4 models", "models": {"openai/gpt-5.1": "ok"}}',
        ),
        f.make(
            Kind.TOMBSTONE_ADD,
            170.0,
            request_id="20",
            tool="consult_council",
            up_id=20,
            ttl_s=155.0,
            reason="deadline",
            expires_mono=325.0,
        ),
        f.make(Kind.TOMBSTONE_HIT, 184.5, up_id=20, what="response", age_s=14.5),
        f.make(Kind.UNKNOWN_RESPONSE, 190.0, up_id=7, reason="stale_generation"),
        f.make(Kind.WARNING, 200.0, message="upstream wrote 212 bytes of non-JSON to stdout (ignored)"),
        f.make(Kind.UPSTREAM_STATE, 205.0, state="backoff", generation=1, exit_code=1, retry_in_s=0.5),
        f.make(Kind.UPSTREAM_STATE, 206.0, state="ready", generation=2),
    ]
    # An operator cancel: tombstoned with its own reason.
    ev += [
        f.make(
            Kind.REQUEST_START,
            220.0,
            request_id="21",
            tool="countries.lookup",
            method="tools/call",
            up_id=22,
            budget_s=110.0,
            budget_source="env",
            arguments='{"id": 99}',
        ),
        f.make(
            Kind.TOMBSTONE_ADD,
            231.0,
            request_id="21",
            up_id=22,
            ttl_s=155.0,
            reason="operator_cancel",
            expires_mono=386.0,
        ),
        f.make(Kind.REQUEST_END, 231.0, request_id="21", outcome="cancelled", duration_s=11.0, method="tools/call"),
        f.make(
            Kind.CONFIG_CHANGE,
            240.0,
            key="margin_s",
            old=10.0,
            new=15.0,
            source="operator",
            deadline=deadline_block(margin=15.0),
        ),
    ]
    # Still running at the end: a council run with two models back, and a plain slow call.
    ev += _council_run(f, "23", start=262.0, finish={"anthropic/claude-opus-4.5": 21_400, "x-ai/grok-4": 30_050})
    ev += [
        f.make(
            Kind.REQUEST_START,
            281.0,
            request_id="24",
            tool="tasks.export",
            method="tools/call",
            up_id=25,
            budget_s=105.0,
            budget_source="env",
            arguments='{"format": "csv"}',
        ),
        f.make(Kind.PROGRESS, 290.0, request_id="24", progress=40, total=100, message="exported 4,000 rows"),
    ]
    return ev


SAMPLE_NOW = 300.0  # the sample session's "now": mono of the last event plus a little


def _council_run(f: EventFactory, rid: str, start: float, finish: dict[str, int]) -> list[Event]:
    tool = "consult_council"
    out = [
        f.make(
            Kind.REQUEST_START,
            start,
            request_id=rid,
            tool=tool,
            method="tools/call",
            up_id=int(rid),
            budget_s=110.0 if start < 240 else 105.0,
            budget_source="env",
            arguments='{"query": "Should we shard the events table?", "confidence": "high"}',
        )
    ]
    for model in COUNCIL_MODELS:
        out.append(
            f.make(
                Kind.MODEL_STATUS,
                start + 0.1,
                request_id=rid,
                tool=tool,
                model=model,
                stage=1,
                status="pending",
                latency_ms=None,
                per_model_s=90.0,
                tier="high",
            )
        )
    done: list[str] = []
    for model, latency in sorted(finish.items(), key=lambda kv: kv[1]):
        at = start + 0.1 + latency / 1000
        done.append(model)
        out.append(
            f.make(
                Kind.MODEL_STATUS,
                at,
                request_id=rid,
                tool=tool,
                model=model,
                stage=1,
                status="ok",
                latency_ms=latency,
                per_model_s=90.0,
                tier="high",
            )
        )
        waiting = ", ".join(m.split("/")[-1] for m in COUNCIL_MODELS if m not in done)
        out.append(
            f.make(
                Kind.PROGRESS,
                at,
                request_id=rid,
                tool=tool,
                progress=len(done),
                total=len(COUNCIL_MODELS),
                message=f"✓ {model.split('/')[-1]} ({len(done)}/{len(COUNCIL_MODELS)}) | waiting: {waiting}",
            )
        )
    return out


def flood(factory: EventFactory, start_mono: float = 0.0, rate: float = 5000.0) -> Iterator[Event]:
    """An endless realistic mix (starts, progress, ends, a few tombstones and invalidations) at `rate` events/s.

    Each call's ten events follow one another and tombstones expire again, so in-flight calls and tombstones
    stay bounded the way a real wrapper's do; only the finished history keeps growing (and is capped).
    """
    step = 1.0 / rate
    mono = start_mono
    for n in itertools.count(1):
        rid = f"f{n}"
        tool = ("consult_council", "countries.lookup", "tasks.update")[n % 3]
        cycle: list[tuple[str, dict[str, Any]]] = [
            (Kind.REQUEST_START, {"method": "tools/call", "up_id": n, "budget_s": 110.0, "budget_source": "env"})
        ]
        cycle += [(Kind.PROGRESS, {"progress": i, "total": 6, "message": f"step {i}/6"}) for i in range(1, 7)]
        if n % 50 == 0:
            expires = round(mono + 155.0, 3)
            cycle.append(
                (Kind.TOMBSTONE_ADD, {"up_id": n, "ttl_s": 155.0, "reason": "deadline", "expires_mono": expires})
            )
            cycle.append(
                (
                    Kind.REQUEST_END,
                    {"outcome": "deadline", "duration_s": 110.0, "method": "tools/call", "partial": True},
                )
            )
            if n > 500:
                cycle.append((Kind.TOMBSTONE_EXPIRE, {"up_id": n - 500, "age_s": 155.0}))
        else:
            cycle.append((Kind.INVALIDATION, {"caused_by": tool, "patterns": ["tasks.*"]}))
            outcome = "ok" if n % 7 else "tool_error"
            cycle.append((Kind.REQUEST_END, {"outcome": outcome, "duration_s": 0.4 + n % 5, "method": "tools/call"}))
        cycle.append((Kind.WARNING, {"message": f"flood marker {n}"}) if n % 100 == 0 else (Kind.HOST_INFO, {}))
        for kind, data in cycle:
            if kind == Kind.HOST_INFO:
                data = {"name": "bench-host", "version": "1.0", "protocol_version": "2025-11-25"}
            yield factory.make(kind, mono, request_id=rid if kind != Kind.HOST_INFO else None, tool=tool, **data)
            mono += step
