"""The budget a wrapped server gets, computed by the wrapper's own deadline policy (one definition), and whether
it agrees with the host's setting: a wrapper given `--host-timeout 300` while the host now waits 600 s, or one
without `--host-config` beside a custom host timeout, cuts calls at the wrong moment."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from mcpwatch.hostconfig.timeouts import HostTimeout
from mcpwatch.hostconfig.wrapargs import WrapLine
from mcpwatch.reliability.deadline import ENV_EXPLICIT, ENV_HOST_TIMEOUT, ENV_MARGIN, Budget, DeadlinePolicy
from mcpwatch.reliability.hosts import DetectedHost, HostProfile
from mcpwatch.reliability.seconds import fmt_seconds
from mcpwatch.reliability.settings import DeadlineSettings

_FLAG_VARIABLES = {"--host-timeout": ENV_HOST_TIMEOUT, "--margin": ENV_MARGIN, "--deadline": ENV_EXPLICIT}


@dataclass(frozen=True)
class BudgetCheck:
    budget: Budget  # what the wrapper gives (or, unwrapped, would give once wrapped)
    disagrees: str | None  # why it does not follow the host's setting, one line; None when it does


def wrapper_environ(
    line: WrapLine | None, timeout: HostTimeout | None, environ: Mapping[str, str], follow: bool
) -> dict[str, str]:
    """The budget variables a wrapper would see: the environment, its own flags over them, and (following the host
    config) the host's timeout where neither names one, as `mcpwatch wrap --host-config` sets it at start."""
    env = {name: environ[name] for name in (ENV_HOST_TIMEOUT, ENV_MARGIN, ENV_EXPLICIT) if name in environ}
    for flag, variable in _FLAG_VARIABLES.items():
        if line is not None and flag in line.flags:
            env[variable] = line.flags[flag]
    if follow and timeout is not None and timeout.seconds is not None and timeout.origin != "default":
        env.setdefault(ENV_HOST_TIMEOUT, repr(timeout.seconds))
    return env


def _budget(settings: DeadlineSettings, profile: HostProfile | None, env: Mapping[str, str]) -> Budget:
    policy = DeadlinePolicy(settings, environ=env, on_warning=lambda _message: None)
    detected = None if profile is None else DetectedHost(profile.names[0], None, "stdio", profile)
    return policy.budget(host=detected, progress=True)


def _seconds(budget: Budget) -> str:
    return "no budget" if budget.seconds is None else f"{fmt_seconds(budget.seconds)} s"


def check(
    line: WrapLine | None,
    timeout: HostTimeout,
    profile: HostProfile | None,
    settings: DeadlineSettings,
    environ: Mapping[str, str],
) -> BudgetCheck:
    """The wrapper's budget for this entry, and a one-line disagreement with the host's setting if there is one."""
    follows = line is None or line.host_config is not None  # an unwrapped entry is wrapped with --host-config
    given = _budget(settings, profile, wrapper_environ(line, timeout, environ, follows))
    if line is None:
        return BudgetCheck(given, None)
    right = _budget(settings, profile, wrapper_environ(None, timeout, environ, True))
    if given.seconds == right.seconds:
        return BudgetCheck(given, None)
    flags = [f"{flag} {line.flags[flag]}" for flag in _FLAG_VARIABLES if flag in line.flags]
    why = f" ({', '.join(flags)})" if flags else " (no --host-config)" if not follows else ""
    host_s = "no timeout" if timeout.seconds is None else f"{fmt_seconds(timeout.seconds)} s"
    return BudgetCheck(
        given,
        f"budget {_seconds(given)}{why}, but the host's timeout is {host_s} ({timeout.source}): "
        f"it should be {_seconds(right)}; `mcpwatch hosts wrap` again, or fix the flags",
    )
