"""`council_health_check`: is the council worth calling right now, and how long would it take?

The seed's fields (key configured, models, chairman, estimated duration per tier, a connectivity probe with
one cheap call, ready + message) plus the tier budgets after multiplier and time scale, so a console can
show them. The probe is a single attempt with a short window; it never retries.
"""

from __future__ import annotations

from typing import Any

import anyio

from mcpwatch.council.calls import AuthGate, CallOutcome, RetryPolicy, call_model
from mcpwatch.council.catalog import ModelSpec
from mcpwatch.council.core import Council, CouncilError
from mcpwatch.council.tiers import DEFAULT_TIER, TIERS

PROBE_WINDOW_S = 10.0  # at time scale 1, as in the seed
PROBE_FLOOR_S = 1.0  # a real connection needs real time, however small the time scale


def _probe_model(council: Council) -> ModelSpec:
    """The cheapest-looking enabled model: the one fitting the least patient tier (reasoning models come last)."""
    return min(council.roster.enabled(), key=lambda m: TIERS.index(m.min_tier))


def estimate_seconds(council: Council, tier: str) -> float | None:
    """Expected duration of a run in `tier`: slowest wanted answer + slowest review + synthesis, capped."""
    try:
        queried, intended = council.members_for(tier)
    except CouncilError:
        return None
    backend = council.backend
    answers = sorted(backend.typical_latency_s(m.id, "answer") for m in queried)
    stage1 = answers[max(0, intended - 1)] if answers else 0.0
    stage2 = max((backend.typical_latency_s(m.id, "review") for m in queried[:intended]), default=0.0)
    stage3 = backend.typical_latency_s(council.roster.acting_chairman.id, "synthesis")
    total = council.tiers[tier].total_s
    return round(min(stage1 + stage2 + stage3, total), 3)


async def health_check(council: Council) -> dict[str, Any]:
    backend = council.backend
    settings = council.settings
    enabled = council.roster.enabled()
    checks: dict[str, Any] = {
        "backend": backend.name,
        "scenario": settings.scenario.name if backend.name == "simulated" else None,
        "api_key_configured": bool(backend.key_configured),
        "api_key_required": backend.requires_key,
        "models_configured": len(enabled),
        "models": [m.id for m in enabled],
        "chairman_model": council.roster.chairman.id,
        # the seed's field is one number: the default tier's; every tier's estimate has a field of its own
        "estimated_duration_seconds": estimate_seconds(council, DEFAULT_TIER),
        "estimated_duration_seconds_by_tier": {tier: estimate_seconds(council, tier) for tier in TIERS},
        "tiers": council.describe_tiers(),
        "timeout_multiplier": council.tiers.multiplier,
        "time_scale": council.tiers.time_scale,
        "default_tier": DEFAULT_TIER,
        "inferred_tier": council.roster.inferred_tier(),
        "warnings": list(council.tiers.warnings),
    }
    if backend.requires_key and not backend.key_configured:
        checks.update(
            api_reachable=False,
            latency_ms=None,
            ready=False,
            message="OPENROUTER_API_KEY is not set: the openai backend cannot call any model",
        )
        return checks
    probe = _probe_model(council)
    outcome = CallOutcome(model=probe.id)
    window = max(PROBE_WINDOW_S * council.tiers.time_scale, PROBE_FLOOR_S)
    await call_model(
        backend,
        outcome,
        messages=[{"role": "user", "content": "ping"}],
        purpose="probe",
        query="ping",
        window_end=anyio.current_time() + window,
        policy=RetryPolicy(time_scale=council.tiers.time_scale, rate_limit_attempts=1, transient_attempts=1),
        gate=AuthGate(),
    )
    reachable = outcome.status in ("ok", "rate_limited", "auth_error")
    checks.update(probe_model=probe.id, api_reachable=reachable, latency_ms=outcome.latency_ms)
    unrunnable = [tier for tier, seconds in checks["estimated_duration_seconds_by_tier"].items() if seconds is None]
    if unrunnable:
        checks["warnings"].append(f"no enabled model fits the {' and '.join(unrunnable)} tier(s); such calls fail")
    if outcome.status == "ok":
        note = f"; not runnable: {', '.join(unrunnable)}" if unrunnable else ""
        checks.update(
            ready=True, message=f"ready: {len(enabled)} model(s) enabled, {probe.name} answered the probe{note}"
        )
    elif outcome.status == "rate_limited":
        checks.update(ready=True, message=f"reachable but rate limited on {probe.name}: expect retries")
    else:
        checks.update(ready=False, message=f"probe to {probe.name} failed: {outcome.status} ({outcome.error})")
        checks["error"] = outcome.error
    return checks
