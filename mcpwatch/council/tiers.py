"""Confidence tiers: each tier owns its time budget (the seed's "tier-sovereign" timeouts).

The table is built once at start-up from defaults, the scenario and the environment; a bad value is a
`UserError` then, never a crash in the middle of a call. Every budget is multiplied by
`LLM_COUNCIL_TIMEOUT_MULTIPLIER` and by the server's time scale, so tests can run a whole tier in milliseconds.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from mcpwatch.errors import UserError

log = logging.getLogger(__name__)

TIERS = ("quick", "balanced", "high", "reasoning")
DEFAULT_TIER = "high"
AUTO = "auto"  # confidence value that picks the tier from the slowest enabled model

# tier -> (total seconds, per-model cap seconds), from the seed's table
DEFAULT_TIMEOUTS: dict[str, tuple[float, float]] = {
    "quick": (30.0, 20.0),
    "balanced": (90.0, 45.0),
    "high": (180.0, 90.0),
    "reasoning": (600.0, 300.0),
}
# tier -> how many answers it wants (None: every compatible enabled model)
DEFAULT_MODEL_COUNTS: dict[str, int | None] = {"quick": 2, "balanced": 3, "high": None, "reasoning": None}
REASONING_CONCURRENCY = 2
MAX_SECONDS = 24 * 3600.0
MAX_MULTIPLIER = 100.0
_TRUE = {"1", "true", "yes", "on"}
_FALSE = {"0", "false", "no", "off"}


@dataclass(frozen=True)
class TierOverride:
    """What a scenario file may say about a tier (the environment still wins)."""

    models: int | None = None
    all_models: bool = False
    race: bool | None = None


@dataclass(frozen=True)
class TierBudget:
    tier: str
    total_s: float  # effective: after the multiplier and the time scale
    per_model_s: float
    base_total_s: float  # as configured (defaults or environment), before multiplier and time scale
    base_per_model_s: float
    models: int | None  # answers wanted; None = every compatible model
    race: bool  # query every compatible model and stop once `models` answers arrived


@dataclass(frozen=True)
class TierTable:
    tiers: dict[str, TierBudget]
    multiplier: float
    time_scale: float
    warnings: tuple[str, ...] = field(default=())

    def __getitem__(self, tier: str) -> TierBudget:
        return self.tiers[tier]


def tier_rank(tier: str) -> int:
    return TIERS.index(tier)


def compatible(min_tier: str, tier: str) -> bool:
    """A model may sit in `tier` when the tier is at least as patient as the model needs."""
    return tier_rank(min_tier) <= tier_rank(tier)


def infer_tier(min_tiers: Iterable[str]) -> str:
    """The tier the slowest model needs (seed: infer_tier_from_models); the default tier when empty."""
    ranks = [tier_rank(t) for t in min_tiers]
    return TIERS[max(ranks)] if ranks else DEFAULT_TIER


def resolve_confidence(value: str | None) -> tuple[str, bool]:
    """Map the tool's `confidence` argument to a tier name (or `auto`); unknown values fall back to high.

    Returns (tier, recognised).
    """
    text = (value or "").strip().lower()
    if text in TIERS or text == AUTO:
        return text, True
    return DEFAULT_TIER, value is None


def _env_seconds(env: Mapping[str, str], name: str, default: float) -> float:
    raw = env.get(name)
    if raw is None or raw.strip() == "":
        return default
    try:
        value = float(raw.strip())
    except ValueError:
        raise UserError(f"{name}={raw!r} is not a number of seconds (e.g. {default:g})") from None
    if not math.isfinite(value) or value <= 0:
        raise UserError(f"{name}={raw!r} must be a positive number of seconds (e.g. {default:g})")
    if value > MAX_SECONDS:
        raise UserError(f"{name}={raw!r} is absurdly large (at most {MAX_SECONDS:.0f} s)")
    return value


def _env_multiplier(env: Mapping[str, str]) -> float:
    name = "LLM_COUNCIL_TIMEOUT_MULTIPLIER"
    raw = env.get(name)
    if raw is None or raw.strip() == "":
        return 1.0
    try:
        value = float(raw.strip())
    except ValueError:
        raise UserError(f"{name}={raw!r} is not a number (e.g. 1.5)") from None
    if not math.isfinite(value) or value <= 0 or value > MAX_MULTIPLIER:
        raise UserError(f"{name}={raw!r} must be a number greater than 0 and at most {MAX_MULTIPLIER:g}")
    return value


def _env_count(env: Mapping[str, str], name: str, default: int | None) -> int | None:
    raw = env.get(name)
    if raw is None or raw.strip() == "":
        return default
    text = raw.strip().lower()
    if text == "all":
        return None
    if not (text.isascii() and text.isdigit()) or int(text) < 1:
        raise UserError(f"{name}={raw!r} must be a whole number of models ≥ 1, or 'all'")
    return int(text)


def _env_bool(env: Mapping[str, str], name: str, default: bool) -> bool:
    raw = env.get(name)
    if raw is None or raw.strip() == "":
        return default
    text = raw.strip().lower()
    if text in _TRUE:
        return True
    if text in _FALSE:
        return False
    raise UserError(f"{name}={raw!r} must be true or false")


def load_tier_table(
    env: Mapping[str, str],
    *,
    time_scale: float = 1.0,
    overrides: Mapping[str, TierOverride] | None = None,
) -> TierTable:
    """Defaults ← scenario overrides ← environment; then multiplier and time scale. Raises UserError."""
    overrides = overrides or {}
    multiplier = _env_multiplier(env)
    warnings: list[str] = []
    for name in sorted(env):
        for prefix in (
            "LLM_COUNCIL_TIMEOUT_",
            "LLM_COUNCIL_MODEL_TIMEOUT_",
            "LLM_COUNCIL_RACE_",
            "LLM_COUNCIL_MODELS_",
        ):
            suffix = name[len(prefix) :] if name.startswith(prefix) else None
            if suffix and suffix != "MULTIPLIER" and suffix.lower() not in TIERS:
                warnings.append(f"{name} names no tier (tiers: {', '.join(TIERS)}); ignored")
    tiers: dict[str, TierBudget] = {}
    for tier in TIERS:
        upper = tier.upper()
        default_total, default_per_model = DEFAULT_TIMEOUTS[tier]
        total = _env_seconds(env, f"LLM_COUNCIL_TIMEOUT_{upper}", default_total)
        per_model = _env_seconds(env, f"LLM_COUNCIL_MODEL_TIMEOUT_{upper}", default_per_model)
        if per_model > total:
            warnings.append(
                f"LLM_COUNCIL_MODEL_TIMEOUT_{upper} ({per_model:g} s) exceeds the {tier} total ({total:g} s); "
                "using the total as the per-model cap"
            )
            per_model = total
        override = overrides.get(tier, TierOverride())
        models = None if override.all_models else (override.models or DEFAULT_MODEL_COUNTS[tier])
        models = _env_count(env, f"LLM_COUNCIL_MODELS_{upper}", models)
        race = _env_bool(env, f"LLM_COUNCIL_RACE_{upper}", bool(override.race))
        factor = multiplier * time_scale
        tiers[tier] = TierBudget(
            tier=tier,
            total_s=total * factor,
            per_model_s=per_model * factor,
            base_total_s=total,
            base_per_model_s=per_model,
            models=models,
            race=race,
        )
    for warning in warnings:
        log.warning("%s", warning)
    return TierTable(tiers=tiers, multiplier=multiplier, time_scale=time_scale, warnings=tuple(warnings))
