"""The reliability core's own settings: the `[deadline]`, `[tombstones]` and `[state_sync]` sections and a
`[[late_results.reuse]]` policy, as the logic here reads them.

They live beside the logic that uses them so the core never imports `mcpwatch.config`; config validates the file
into these (and re-exports them, for callers that think of them as settings).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class DeadlineSettings:
    host_timeout_s: float | None = None  # unset: the detected host's profile decides (else 120 s)
    margin_s: float = 10.0
    explicit_s: float | None = None
    propagate: bool = True  # add params._meta["dev.mcpwatch/deadline_ms"] to each forwarded tools/call
    tools: dict[str, float] = field(default_factory=dict)


@dataclass(frozen=True)
class TombstoneSettings:
    init_timeout_s: float = 10.0
    backoff_max_s: float = 30.0  # also the upstream reconnect backoff ceiling (the TTL must cover it)
    epsilon_s: float = 5.0
    sweep_interval_s: float = 60.0
    cap: int = 100_000


@dataclass(frozen=True)
class StateSyncSettings:
    default_cache_control: str | None = None
    policies: tuple[dict[str, Any], ...] = ()

    @property
    def enabled(self) -> bool:
        return bool(self.policies) or self.default_cache_control is not None


@dataclass(frozen=True)
class ReusePolicy:
    """Tools whose stored late result may answer the next identical call, for `ttl_s` after it arrived."""

    match: str
    ttl_s: float
