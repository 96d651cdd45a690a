"""Scenario files: the council's members plus, for the simulated backend, how each one behaves.

A scenario is a TOML file, shipped in `mcpwatch/council/scenarios/` (`default`, `fast`, `flaky`, `reasoning`) or
given by path. Latencies are seconds at time scale 1. Failures are either probabilities (drawn from the seed, so
a run is reproducible) or a script: one outcome per attempt, the last one repeating, e.g.
`script = ["rate_limited:2", "ok"]` (a 429 with Retry-After 2 s, then an answer). Outcomes: `ok`, `ok:SECONDS`,
`rate_limited`, `rate_limited:RETRY_AFTER`, `auth:401`, `auth:403`, `server:5xx`, `client:4xx`, `network`,
`hang`, `bad_response`.
"""

from __future__ import annotations

import math
import tomllib
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any

from mcpwatch.council.catalog import ModelSpec, display_name, guess_min_tier
from mcpwatch.council.tiers import TIERS, TierOverride
from mcpwatch.errors import UserError

BUILTIN = ("default", "fast", "flaky", "reasoning")
OUTCOME_KINDS = ("ok", "rate_limited", "auth", "server", "client", "network", "hang", "bad_response")


@dataclass(frozen=True)
class Outcome:
    """One simulated attempt's fate."""

    kind: str
    latency_s: float | None = None  # for ok: overrides the drawn latency
    retry_after_s: float | None = None  # for rate_limited: the Retry-After header, if any
    status: int | None = None  # for auth/server/client


@dataclass(frozen=True)
class ModelProfile:
    spec: ModelSpec
    latency_s: float = 5.0
    jitter: float = 0.25
    review_latency_s: float | None = None
    synthesis_latency_s: float | None = None
    p_rate_limit: float = 0.0
    retry_after_s: float = 0.0
    p_server_error: float = 0.0
    p_network_error: float = 0.0
    p_hang: float = 0.0
    script: tuple[Outcome, ...] = ()
    review_script: tuple[Outcome, ...] = ()
    synthesis_script: tuple[Outcome, ...] = ()

    def median_s(self, purpose: str) -> float:
        if purpose == "review":
            return self.review_latency_s if self.review_latency_s is not None else 0.6 * self.latency_s
        if purpose == "synthesis":
            return self.synthesis_latency_s if self.synthesis_latency_s is not None else 0.8 * self.latency_s
        if purpose == "probe":
            return 0.1 * self.latency_s
        return self.latency_s


@dataclass(frozen=True)
class Scenario:
    name: str
    description: str
    source: str
    seed: int
    chairman: str
    models: tuple[ModelProfile, ...]
    tiers: dict[str, TierOverride] = field(default_factory=dict)

    def specs(self) -> list[ModelSpec]:
        return [p.spec for p in self.models]

    def profile(self, model_id: str) -> ModelProfile | None:
        return next((p for p in self.models if p.spec.id == model_id), None)


class _Bad(Exception):
    pass


def parse_outcome(text: Any) -> Outcome:
    """`"rate_limited:2"` → Outcome(kind="rate_limited", retry_after_s=2.0), and so on."""
    if not isinstance(text, str) or not text.strip():
        raise _Bad(f"an outcome must be a string like 'ok' or 'rate_limited:2', got {text!r}")
    kind, _, arg = text.strip().partition(":")
    if kind not in OUTCOME_KINDS:
        raise _Bad(f"unknown outcome {text!r} (kinds: {', '.join(OUTCOME_KINDS)})")
    number: float | None = None
    if arg:
        try:
            number = float(arg)
        except ValueError:
            raise _Bad(f"outcome {text!r}: {arg!r} is not a number") from None
        if not math.isfinite(number) or number < 0:
            raise _Bad(f"outcome {text!r}: {arg!r} must be a number ≥ 0")
    if kind == "ok":
        return Outcome("ok", latency_s=number)
    if kind == "rate_limited":
        return Outcome("rate_limited", retry_after_s=number)
    if kind in ("auth", "server", "client"):
        defaults = {"auth": 401, "server": 500, "client": 400}
        status = int(number) if number is not None else defaults[kind]
        ranges = {"auth": (401, 403), "server": (500, 599), "client": (400, 499)}
        low, high = ranges[kind]
        if not low <= status <= high or (kind == "auth" and status not in (401, 403)):
            raise _Bad(f"outcome {text!r}: status {status} does not fit {kind!r}")
        return Outcome(kind, status=status)
    if arg:
        raise _Bad(f"outcome {text!r}: {kind!r} takes no argument")
    return Outcome(kind)


def _number(table: dict[str, Any], key: str, default: float, *, lo: float = 0.0, hi: float = math.inf) -> float:
    value = table.get(key, default)
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        raise _Bad(f"{key} must be a number, got {value!r}")
    if not lo <= value <= hi:
        raise _Bad(f"{key} must be between {lo:g} and {hi:g}, got {value!r}")
    return float(value)


def _script(table: dict[str, Any], key: str) -> tuple[Outcome, ...]:
    value = table.get(key, [])
    if not isinstance(value, list):
        raise _Bad(f"{key} must be a list of outcomes")
    try:
        return tuple(parse_outcome(v) for v in value)
    except _Bad as exc:
        raise _Bad(f"{key}: {exc}") from None


def _profile(raw: Any, index: int) -> ModelProfile:
    if not isinstance(raw, dict):
        raise _Bad(f"models[{index}] must be a table")
    known = {
        "id", "name", "min_tier", "latency_s", "jitter", "review_latency_s", "synthesis_latency_s", "p_rate_limit",
        "retry_after_s", "p_server_error", "p_network_error", "p_hang", "script", "review_script", "synthesis_script",
    }  # fmt: skip
    unknown = sorted(set(raw) - known)
    if unknown:
        raise _Bad(f"models[{index}]: unknown key(s) {', '.join(unknown)}")
    model_id = raw.get("id")
    if not isinstance(model_id, str) or not model_id.strip():
        raise _Bad(f"models[{index}].id must be a non-empty string")
    try:
        min_tier = raw.get("min_tier", guess_min_tier(model_id))
        if min_tier not in TIERS:
            raise _Bad(f"min_tier must be one of {', '.join(TIERS)}, got {min_tier!r}")
        name = raw.get("name", display_name(model_id))
        if not isinstance(name, str) or not name.strip():
            raise _Bad("name must be a non-empty string")
        optional = {}
        for key in ("review_latency_s", "synthesis_latency_s"):
            if key in raw:
                optional[key] = _number(raw, key, 0.0, lo=0.0, hi=86400.0)
        return ModelProfile(
            spec=ModelSpec(id=model_id, name=name, min_tier=min_tier),
            latency_s=_number(raw, "latency_s", 5.0, lo=0.0, hi=86400.0),
            jitter=_number(raw, "jitter", 0.25, lo=0.0, hi=3.0),
            p_rate_limit=_number(raw, "p_rate_limit", 0.0, hi=1.0),
            retry_after_s=_number(raw, "retry_after_s", 0.0, hi=3600.0),
            p_server_error=_number(raw, "p_server_error", 0.0, hi=1.0),
            p_network_error=_number(raw, "p_network_error", 0.0, hi=1.0),
            p_hang=_number(raw, "p_hang", 0.0, hi=1.0),
            script=_script(raw, "script"),
            review_script=_script(raw, "review_script"),
            synthesis_script=_script(raw, "synthesis_script"),
            **optional,
        )
    except _Bad as exc:
        raise _Bad(f"models[{index}] ({model_id}): {exc}") from None


def _tiers(raw: Any) -> dict[str, TierOverride]:
    if raw is None:
        return {}
    if not isinstance(raw, dict):
        raise _Bad("[tiers] must be a table")
    out: dict[str, TierOverride] = {}
    for tier, table in raw.items():
        if tier not in TIERS:
            raise _Bad(f"[tiers.{tier}]: no such tier (tiers: {', '.join(TIERS)})")
        if not isinstance(table, dict) or set(table) - {"models", "race"}:
            raise _Bad(f"[tiers.{tier}] may only set models and race")
        models = table.get("models")
        race = table.get("race")
        if race is not None and not isinstance(race, bool):
            raise _Bad(f"[tiers.{tier}].race must be true or false")
        if models == "all":
            out[tier] = TierOverride(all_models=True, race=race)
        elif models is None or (isinstance(models, int) and not isinstance(models, bool) and models >= 1):
            out[tier] = TierOverride(models=models, race=race)
        else:
            raise _Bad(f'[tiers.{tier}].models must be a whole number ≥ 1 or "all"')
    return out


def parse_scenario(data: dict[str, Any], *, name: str, source: str) -> Scenario:
    """Validate a decoded TOML document. Raises UserError naming the source and the problem."""
    try:
        unknown = sorted(set(data) - {"description", "seed", "chairman", "models", "tiers"})
        if unknown:
            raise _Bad(f"unknown key(s) {', '.join(unknown)}")
        raw_models = data.get("models")
        if not isinstance(raw_models, list) or not raw_models:
            raise _Bad("needs at least one [[models]] entry")
        models = tuple(_profile(raw, i) for i, raw in enumerate(raw_models))
        ids = [p.spec.id for p in models]
        duplicates = sorted({i for i in ids if ids.count(i) > 1})
        if duplicates:
            raise _Bad(f"model listed twice: {', '.join(duplicates)}")
        chairman = data.get("chairman", ids[0])
        if chairman not in ids:
            raise _Bad(f"chairman {chairman!r} is not one of the models ({', '.join(ids)})")
        seed = data.get("seed", 0)
        if isinstance(seed, bool) or not isinstance(seed, int):
            raise _Bad(f"seed must be a whole number, got {seed!r}")
        description = data.get("description", "")
        if not isinstance(description, str):
            raise _Bad("description must be a string")
        return Scenario(
            name=name,
            description=description,
            source=source,
            seed=seed,
            chairman=chairman,
            models=models,
            tiers=_tiers(data.get("tiers")),
        )
    except _Bad as exc:
        raise UserError(f"scenario {source}: {exc}") from None


def load_scenario(name_or_path: str) -> Scenario:
    """A shipped scenario by name, or a TOML file by path."""
    text = (name_or_path or "").strip()
    if text in BUILTIN:
        resource = resources.files("mcpwatch.council").joinpath("scenarios", f"{text}.toml")
        return parse_scenario(tomllib.loads(resource.read_text(encoding="utf-8")), name=text, source=f"<{text}>")
    path = Path(text).expanduser()
    looks_like_path = "/" in text or text.endswith(".toml") or path.exists()
    if not looks_like_path:
        raise UserError(f"unknown scenario {text!r}; choose one of {', '.join(BUILTIN)}, or give a .toml file")
    try:
        raw = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise UserError(f"cannot read scenario file {path}: {exc.strerror or exc}") from None
    try:
        data = tomllib.loads(raw)
    except tomllib.TOMLDecodeError as exc:
        raise UserError(f"scenario {path}: not valid TOML ({exc})") from None
    return parse_scenario(data, name=path.stem, source=str(path))
