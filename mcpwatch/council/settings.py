"""Start-up settings for `mcpwatch council`: flags + environment, validated once (a UserError, never a traceback).

Environment: the tier variables (see `tiers`), `OPENROUTER_API_KEY`, `LLM_COUNCIL_BASE_URL`, and for the
`openai` backend `LLM_COUNCIL_MODELS` (comma-separated ids, default: the scenario's) and
`LLM_COUNCIL_CHAIRMAN`.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from urllib.parse import urlparse

from mcpwatch.council.catalog import ModelSpec, display_name, guess_min_tier
from mcpwatch.council.scenarios import Scenario, load_scenario
from mcpwatch.council.tiers import TierTable, load_tier_table
from mcpwatch.errors import UserError

DEFAULT_BASE_URL = "https://openrouter.ai/api/v1"
BACKENDS = ("simulated", "openai")
MAX_TIME_SCALE = 1000.0


@dataclass(frozen=True)
class CouncilSettings:
    scenario: Scenario
    backend: str
    time_scale: float
    seed: int
    tiers: TierTable
    models: tuple[ModelSpec, ...]
    chairman: str
    base_url: str
    api_key: str | None
    http: tuple[str, int] | None = None


def parse_time_scale(raw: str | float) -> float:
    try:
        value = float(raw)
    except (TypeError, ValueError):
        raise UserError(f"--time-scale {raw!r} is not a number (e.g. 0.01 runs a 30 s tier in 0.3 s)") from None
    if not math.isfinite(value) or value <= 0 or value > MAX_TIME_SCALE:
        raise UserError(f"--time-scale {raw!r} must be greater than 0 and at most {MAX_TIME_SCALE:g}")
    return value


def parse_http(raw: str | None) -> tuple[str, int] | None:
    if raw is None:
        return None
    host, sep, port_text = raw.rpartition(":")
    host = host.strip("[]")
    if not sep or not host or not (port_text.isascii() and port_text.isdigit()) or not 1 <= int(port_text) <= 65535:
        raise UserError(f"--http {raw!r}: expected HOST:PORT, e.g. 127.0.0.1:8765")
    return host, int(port_text)


def parse_base_url(raw: str) -> str:
    parsed = urlparse(raw.strip())
    if parsed.scheme not in ("http", "https") or not parsed.netloc:
        raise UserError(f"base URL {raw!r} must be an http(s) URL, e.g. {DEFAULT_BASE_URL}")
    return raw.strip().rstrip("/")


def _env_models(env: Mapping[str, str], scenario: Scenario) -> tuple[tuple[ModelSpec, ...], str]:
    raw = env.get("LLM_COUNCIL_MODELS", "").strip()
    if not raw:
        models = tuple(scenario.specs())
        chairman = scenario.chairman
    else:
        ids = [part.strip() for part in raw.split(",") if part.strip()]
        if not ids or len(set(ids)) != len(ids):
            raise UserError(f"LLM_COUNCIL_MODELS={raw!r} must list distinct model ids separated by commas")
        known = {s.id: s for s in scenario.specs()}
        models = tuple(known.get(i) or ModelSpec(i, display_name(i), guess_min_tier(i)) for i in ids)
        chairman = ids[0]
    wanted = env.get("LLM_COUNCIL_CHAIRMAN", "").strip()
    if wanted:
        if wanted not in {m.id for m in models}:
            models = (*models, ModelSpec(wanted, display_name(wanted), guess_min_tier(wanted)))
        chairman = wanted
    return models, chairman


def load_settings(
    env: Mapping[str, str],
    *,
    scenario: str = "default",
    backend: str = "simulated",
    time_scale: str | float = 1.0,
    seed: int | None = None,
    http: str | None = None,
    base_url: str | None = None,
) -> CouncilSettings:
    if backend not in BACKENDS:
        raise UserError(f"--backend {backend!r}: choose one of {', '.join(BACKENDS)}")
    scale = parse_time_scale(time_scale)
    loaded = load_scenario(scenario)
    tiers = load_tier_table(env, time_scale=scale, overrides=loaded.tiers)
    if backend == "openai":
        models, chairman = _env_models(env, loaded)
    else:
        models, chairman = tuple(loaded.specs()), loaded.chairman
    url = parse_base_url(base_url or env.get("LLM_COUNCIL_BASE_URL", "").strip() or DEFAULT_BASE_URL)
    return CouncilSettings(
        scenario=loaded,
        backend=backend,
        time_scale=scale,
        seed=loaded.seed if seed is None else seed,
        tiers=tiers,
        models=models,
        chairman=chairman,
        base_url=url,
        api_key=env.get("OPENROUTER_API_KEY", "").strip() or None,
        http=parse_http(http),
    )
