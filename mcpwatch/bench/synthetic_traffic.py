"""The synthetic session's traffic, one generator per event family: each schedules its events on the session.

The families and their rates are in `SyntheticSession.events`; the session keeps the state they share (the random
generator, the deadline settings, the upstream's generation and the id counters), which the generators see through
`Sim`, so this module needs nothing of the session's.
"""

from __future__ import annotations

import json
import random
from typing import Any, Protocol

from mcpwatch.events import DeadlineBlock, HealthCheckData, Kind

MODELS = ("openai/gpt-5.1", "anthropic/claude-opus-4.5", "google/gemini-3-pro", "x-ai/grok-4")
TIERS: dict[str, dict[str, Any]] = {
    "quick": {"total_s": 30, "per_model_s": 20, "models": ["openai/gpt-4o-mini", "anthropic/claude-haiku-4.5"]},
    "balanced": {"total_s": 90, "per_model_s": 45, "models": list(MODELS[:3])},
    "high": {"total_s": 180, "per_model_s": 90, "models": list(MODELS)},
}
QUICK_TOOLS = ("countries.lookup", "tasks.update", "tasks.list", "sprints.get")


class Sim(Protocol):
    """What the generators ask of the simulated session (`bench.replay.SyntheticSession`)."""

    rng: random.Random
    generation: int
    margin: float

    @property
    def budget(self) -> float: ...

    def at(self, mono: float, kind: str, **fields: Any) -> None: ...

    def deadline_block(self) -> DeadlineBlock: ...

    def tombstone_ttl(self) -> float: ...

    def new_call_ids(self) -> tuple[str, int]: ...


def session_opening(sim: Sim) -> None:
    """The session_start, the upstream coming up and the host introducing itself."""
    sim.at(
        0.0,
        Kind.SESSION_START,
        data={
            "name": "council",
            "pid": 40100,
            "version": "0.1.0",
            "front": "stdio",
            "upstream": {"kind": "stdio", "target": "mcpwatch council --scenario default"},
            "config": {},
            "deadline": sim.deadline_block(),
            "tombstone_ttl": {
                "request_timeout_s": sim.budget,
                "init_timeout_s": 10.0,
                "backoff_max_s": 30.0,
                "epsilon_s": 5.0,
                "total_s": sim.tombstone_ttl(),
            },
            "state_sync": {"policies": 2, "overlaps": []},
        },
    )
    sim.at(0.05, Kind.UPSTREAM_STATE, data={"state": "connecting", "generation": 1})
    sim.at(0.4, Kind.UPSTREAM_STATE, data={"state": "ready", "generation": 1})
    sim.at(0.5, Kind.HOST_INFO, data={"name": "claude-code", "version": "2.1.3", "protocol_version": "2025-11-25"})


def health_check(sim: Sim, mono: float) -> None:
    """A periodic health check; about one in fifty fails."""
    ok = sim.rng.random() > 0.02
    ping_ms = round(sim.rng.uniform(1.5, 9.0), 2)
    sim.at(
        mono,
        Kind.HEALTH_CHECK,
        tool="council_health_check",
        data=HealthCheckData(
            ok=ok,
            ping_ms=ping_ms,
            tool="council_health_check",
            result={"tiers": TIERS, "timeout_multiplier": 1.0},
            error=None if ok else "health tool timed out",
            latency_ms=round(ping_ms + 12.5, 2),  # the ping, then the health tool's call
        ),
    )


def quick_call(sim: Sim, mono: float) -> None:
    """A short tool call with some progress, now and then an error, and an invalidation after a task update."""
    rng = sim.rng
    rid, up = sim.new_call_ids()
    tool = rng.choice(QUICK_TOOLS)
    sim.at(
        mono,
        Kind.REQUEST_START,
        request_id=rid,
        tool=tool,
        data={
            "method": "tools/call",
            "up_id": up,
            "budget_s": sim.budget,
            "budget_source": "host_timeout-margin",
            "arguments": json.dumps({"id": rng.randrange(10_000)}),
        },
    )
    took = rng.lognormvariate(0.0, 0.8)
    for step in range(1, rng.randrange(0, 4) + 1):
        sim.at(
            mono + took * step / 4,
            Kind.PROGRESS,
            request_id=rid,
            tool=tool,
            data={"progress": step, "total": 3, "message": f"page {step} of 3"},
        )
    roll = rng.random()
    end = mono + took
    if roll < 0.04:
        data = {"outcome": "tool_error", "duration_s": round(took, 6), "error": "task not found"}
    elif roll < 0.05:
        data = {"outcome": "error", "duration_s": round(took, 6), "error": "-32603: internal error"}
    else:
        data = {"outcome": "ok", "duration_s": round(took, 6), "result_preview": '{"ok": true}'}
    sim.at(end, Kind.REQUEST_END, request_id=rid, tool=tool, data={"method": "tools/call", **data})
    if tool == "tasks.update" and data["outcome"] == "ok":
        sim.at(
            end,
            Kind.INVALIDATION,
            tool=tool,
            data={"caused_by": tool, "patterns": ["tasks.*", "sprints.*"]},
        )


def council_call(sim: Sim, mono: float) -> None:
    """A council run: per-model status and progress; a slow one misses the budget and leaves a tombstone."""
    rng = sim.rng
    rid, up = sim.new_call_ids()
    tool = "consult_council"
    tier = rng.choice(("balanced", "high", "high"))
    models = TIERS[tier]["models"]
    per_model = float(TIERS[tier]["per_model_s"])
    budget = sim.budget
    sim.at(
        mono,
        Kind.REQUEST_START,
        request_id=rid,
        tool=tool,
        data={
            "method": "tools/call",
            "up_id": up,
            "budget_s": budget,
            "budget_source": "host_timeout-margin",
            "arguments": json.dumps({"query": f"question {rid}", "confidence": tier}),
        },
    )
    for model in models:
        sim.at(
            mono + 0.05,
            Kind.MODEL_STATUS,
            request_id=rid,
            tool=tool,
            model=model,
            data={"stage": 1, "status": "pending", "latency_ms": None, "per_model_s": per_model, "tier": tier},
        )
    slow = rng.random() < 0.06  # this run will miss the budget
    latencies = sorted((rng.uniform(4.0, per_model * (1.6 if slow else 0.9)), m) for m in models)
    finished = 0
    last = mono
    for latency, model in latencies:
        at = mono + 0.05 + latency
        if at - mono >= budget:
            break
        finished += 1
        status = "ok" if latency <= per_model else "timeout"
        if status == "ok" and rng.random() < 0.03:
            status = "rate_limited"
        sim.at(
            at,
            Kind.MODEL_STATUS,
            request_id=rid,
            tool=tool,
            model=model,
            data={
                "stage": 1,
                "status": status,
                "latency_ms": int(latency * 1000),
                "per_model_s": per_model,
                "tier": tier,
            },
        )
        waiting = ", ".join(m.split("/")[-1] for _, m in latencies[finished:])
        sim.at(
            at,
            Kind.PROGRESS,
            request_id=rid,
            tool=tool,
            data={
                "progress": finished,
                "total": len(models),
                "message": f"✓ {model.split('/')[-1]} ({finished}/{len(models)}) | waiting: {waiting}",
            },
        )
        last = at
    if finished == len(models) and last - mono + 2.0 < budget:
        end = last + rng.uniform(0.5, 2.0)
        sim.at(
            end,
            Kind.REQUEST_END,
            request_id=rid,
            tool=tool,
            data={
                "method": "tools/call",
                "outcome": "ok",
                "duration_s": round(end - mono, 6),
                "result_preview": '{"synthesis": "…"}',
            },
        )
        return
    end = mono + budget
    ttl = sim.tombstone_ttl()
    sim.at(
        end,
        Kind.TOMBSTONE_ADD,
        request_id=rid,
        tool=tool,
        data={"up_id": up, "ttl_s": ttl, "reason": "deadline", "expires_mono": round(end + ttl, 3)},
    )
    sim.at(
        end,
        Kind.REQUEST_END,
        request_id=rid,
        tool=tool,
        data={
            "method": "tools/call",
            "outcome": "deadline",
            "duration_s": round(budget, 6),
            "partial": finished > 0,
            "error": "deadline",
        },
    )
    if rng.random() < 0.7:  # the upstream ignored the cancel and answered anyway
        late = rng.uniform(2.0, 40.0)
        sim.at(
            end + late,
            Kind.TOMBSTONE_HIT,
            request_id=rid,
            tool=tool,
            data={"up_id": up, "what": "response", "age_s": round(late, 3)},
        )
    sim.at(
        end + ttl + rng.uniform(0.0, 60.0),
        Kind.TOMBSTONE_EXPIRE,
        request_id=rid,
        tool=tool,
        data={"up_id": up, "age_s": round(ttl, 3)},
    )


def margin_change(sim: Sim, mono: float) -> None:
    """An operator changing the deadline margin."""
    old = sim.margin
    sim.margin = sim.rng.choice([m for m in (5.0, 10.0, 15.0, 20.0) if m != old])
    sim.at(
        mono,
        Kind.CONFIG_CHANGE,
        data={
            "key": "margin_s",
            "old": old,
            "new": sim.margin,
            "source": "operator",
            "deadline": sim.deadline_block(),
        },
    )


def upstream_restart(sim: Sim, mono: float) -> None:
    """The upstream dying and coming back as the next generation."""
    sim.generation += 1
    sim.at(
        mono,
        Kind.UPSTREAM_STATE,
        data={"state": "backoff", "generation": sim.generation - 1, "exit_code": 1, "retry_in_s": 0.5,
              "stderr_tail": ["Traceback (most recent call last):", "MemoryError"]},
    )  # fmt: skip
    sim.at(mono + 0.5, Kind.UPSTREAM_STATE, data={"state": "connecting", "generation": sim.generation})
    sim.at(mono + 1.1, Kind.UPSTREAM_STATE, data={"state": "ready", "generation": sim.generation})
    sim.at(mono + 1.2, Kind.WARNING, data={"message": f"upstream restarted (generation {sim.generation})"})
