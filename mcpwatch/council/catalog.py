"""The council's members: who they are, which tiers they fit, and the live roster the admin tools change.

The compatibility matrix is the seed's table: a model fits a tier when the tier is at least as patient as
the model's `min_tier`. Models the table does not know get a tier from their name, or `high` when unsure.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from mcpwatch.council.tiers import TIERS, compatible, infer_tier

# The seed's model-tier compatibility matrix, by OpenRouter id: the least patient tier each model fits.
KNOWN_MIN_TIER: dict[str, str] = {
    "openai/gpt-4o-mini": "quick",
    "anthropic/claude-3-haiku": "quick",
    "anthropic/claude-3.5-haiku": "quick",
    "anthropic/claude-haiku-4.5": "quick",
    "google/gemini-2.0-flash-001": "quick",
    "google/gemini-2.5-flash": "quick",
    "openai/gpt-4.1-mini": "quick",
    "anthropic/claude-3.5-sonnet": "balanced",
    "anthropic/claude-sonnet-4.5": "balanced",
    "openai/gpt-4o": "balanced",
    "meta-llama/llama-3.1-70b-instruct": "balanced",
    "anthropic/claude-sonnet-4": "balanced",
    "openai/gpt-4.1": "balanced",
    "google/gemini-2.5-pro": "high",
    "x-ai/grok-4": "high",
    "anthropic/claude-opus-4.5": "high",
    "google/gemini-3-pro-preview": "high",
    "google/gemini-3-pro": "high",
    "openai/gpt-5.1": "high",
    "openai/gpt-5.2-pro": "reasoning",
    "openai/o1": "reasoning",
    "openai/o1-preview": "reasoning",
    "openai/o3": "reasoning",
    "deepseek/deepseek-r1": "reasoning",
}
_FAST_HINT = re.compile(r"(mini|haiku|flash|nano|lite|small|8b)\b")
_REASONING_HINT = re.compile(r"(^|/)(o\d)(-|$)|reasoner|thinking|deepseek-r1")


def guess_min_tier(model_id: str) -> str:
    """The matrix entry, else a guess from the name: fast-sounding → quick, reasoning-sounding → reasoning."""
    known = KNOWN_MIN_TIER.get(model_id)
    if known:
        return known
    lowered = model_id.lower()
    if _REASONING_HINT.search(lowered):
        return "reasoning"
    if _FAST_HINT.search(lowered):
        return "quick"
    return "high"


def display_name(model_id: str) -> str:
    """The short form people read in warnings and progress: the part after the vendor prefix."""
    return model_id.rsplit("/", 1)[-1]


@dataclass(frozen=True)
class ModelSpec:
    id: str
    name: str
    min_tier: str

    def tiers(self) -> list[str]:
        return [t for t in TIERS if compatible(self.min_tier, t)]


class UnknownModel(LookupError):
    """Raised with a message that lists the known models."""


class Roster:
    """The configured models in order, which are enabled, and the chairman. Mutated only by the admin tools."""

    def __init__(self, models: list[ModelSpec], chairman: str, enabled: list[str] | None = None) -> None:
        if not models:
            raise ValueError("a council needs at least one model")
        self._models = {m.id: m for m in models}
        self._order = [m.id for m in models]
        self._enabled = set(self._order if enabled is None else enabled)
        self._chairman = self.find(chairman).id

    @property
    def chairman(self) -> ModelSpec:
        return self._models[self._chairman]

    @property
    def acting_chairman(self) -> ModelSpec:
        """The chairman, or while it is disabled the first enabled model: a disabled model is not asked at all."""
        if self._chairman in self._enabled:
            return self.chairman
        return self.enabled()[0]

    def all(self) -> list[ModelSpec]:
        return [self._models[i] for i in self._order]

    def enabled(self) -> list[ModelSpec]:
        return [self._models[i] for i in self._order if i in self._enabled]

    def is_enabled(self, model_id: str) -> bool:
        return model_id in self._enabled

    def find(self, name: str) -> ModelSpec:
        """Look a model up by id, or unambiguously by display name (case-insensitive)."""
        text = (name or "").strip()
        if text in self._models:
            return self._models[text]
        matches = [m for m in self._models.values() if text.lower() in (m.name.lower(), display_name(m.id).lower())]
        if len(matches) == 1:
            return matches[0]
        known = ", ".join(self._order)
        raise UnknownModel(f"unknown model {name!r}; the council has: {known}")

    def enable(self, name: str) -> tuple[ModelSpec, bool]:
        spec = self.find(name)
        changed = spec.id not in self._enabled
        self._enabled.add(spec.id)
        return spec, changed

    def disable(self, name: str) -> tuple[ModelSpec, bool]:
        spec = self.find(name)
        if spec.id in self._enabled and len(self._enabled) == 1:
            raise ValueError(f"cannot disable {spec.id}: it is the last enabled model")
        changed = spec.id in self._enabled
        self._enabled.discard(spec.id)
        return spec, changed

    def set_chairman(self, name: str) -> tuple[ModelSpec, ModelSpec]:
        spec = self.find(name)
        previous = self.chairman
        self._chairman = spec.id
        return spec, previous

    def for_tier(self, tier: str) -> list[ModelSpec]:
        """Enabled models that fit `tier`, in configured order."""
        return [m for m in self.enabled() if compatible(m.min_tier, tier)]

    def inferred_tier(self) -> str:
        return infer_tier(m.min_tier for m in self.enabled())
