"""The reliability core's own settings: the `[deadline]`, `[tombstones]` and `[state_sync]` sections and a
`[[late_results.reuse]]` policy, as the logic here reads them.

They live beside the logic that uses them so the core never imports `mcpwatch.config`; config validates the file
into these (and re-exports them, for callers that think of them as settings). Each field says how its value is
checked (`setting_checks.setting`): the keys and their checks are this one declaration.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from mcpwatch.reliability.setting_checks import (
    flag,
    one_of,
    seconds,
    seconds_by_name,
    setting,
    setting_table,
    tables,
    whole,
)

CACHE_DIRECTIVES = ("no-store", "immutable")  # what a State Sync policy (and its default) may say


@dataclass(frozen=True)
class DeadlineSettings:
    # unset: the detected host's profile decides (else 120 s)
    host_timeout_s: float | None = setting(None, seconds(allow_zero=False))
    margin_s: float = setting(10.0, seconds())
    explicit_s: float | None = setting(None, seconds(allow_negative=True, budget=True))  # ≤ 0 disables the budget
    # add params._meta["dev.mcpwatch/deadline_ms"] to each forwarded tools/call
    propagate: bool = setting(True, flag)
    tools: dict[str, float] = setting_table(dict, seconds_by_name(allow_zero=False, budget=True))  # name = seconds


@dataclass(frozen=True)
class TombstoneSettings:
    init_timeout_s: float = setting(10.0, seconds())
    backoff_max_s: float = setting(30.0, seconds())  # also the upstream reconnect backoff ceiling (the TTL covers it)
    epsilon_s: float = setting(5.0, seconds())
    sweep_interval_s: float = setting(60.0, seconds(allow_zero=False))
    cap: int = setting(100_000, whole(1, 100_000_000))


@dataclass(frozen=True)
class StateSyncSettings:
    default_cache_control: str | None = setting(None, one_of(CACHE_DIRECTIVES, quoted=False))
    policies: tuple[dict[str, Any], ...] = setting(
        (), tables("state_sync.policies", ("match", "cache_control", "invalidates"))
    )  # checked whole by the State Sync core (`validate_config`), which names the policy

    @property
    def enabled(self) -> bool:
        return bool(self.policies) or self.default_cache_control is not None


@dataclass(frozen=True)
class ReusePolicy:
    """Tools whose stored late result may answer the next identical call, for `ttl_s` after it arrived."""

    match: str
    ttl_s: float
