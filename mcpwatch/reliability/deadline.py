"""The tools/call deadline budget: how long the wrapper lets a call run before it answers the host itself.

Hosts give up on a tools/call after their own timeout; the wrapper must answer first, with whatever partial result
it has. So the default budget is derived from the host's timeout minus a safety margin (seed: Phase 4AC).

Layers, highest first: operator runtime change > environment > mcpwatch.toml > the detected host's profile >
built-in default.

- One order for everything (DESIGN "Budget precedence"): operator deadline > operator host timeout >
  `MCPWATCH_TOOL_CALL_DEADLINE_SEC` > `MCPWATCH_HOST_TOOLS_CALL_TIMEOUT_SEC` > `[deadline.tools]` entry for the tool
  > `deadline.explicit_s` > `deadline.host_timeout_s` > the host's profile > 120 s. An explicit deadline that wins
  is used as given; ≤ 0 disables the budget.
- Otherwise the budget is host timeout − margin (margin default 10 s, must be ≥ 0). The host timeout is the first
  of: the operator's, `MCPWATCH_HOST_TOOLS_CALL_TIMEOUT_SEC`, `deadline.host_timeout_s`, the earliest clock of the
  detected host's profile that would end the call (`reliability.hosts`), 120 s. A derived budget that is not
  positive (or below the 0.05 s floor) is clamped to 1 s.
- A bad value (unparseable, non-finite, out of range) in the environment or settings is reported through
  `on_warning` and skipped in favour of the next layer down. Each distinct (variable, value) is reported once,
  because the environment is re-read on every call; an empty or blank variable is reported once as ignored.
- An explicit budget above 0 but below `BUDGET_FLOOR_S` (0.05 s) is refused as too small, from every layer; a
  derived budget below it is clamped like one that is not positive. Every value is checked by the one rule for
  seconds (`reliability.seconds`), in the same words as mcpwatch.toml, the operator endpoint and the console.
- Operator changes are checked strictly instead: a bad value raises `InvalidValue` and changes nothing.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

from mcpwatch.events import DeadlineBlock
from mcpwatch.reliability.seconds import (
    ABSURD_S,
    BUDGET_FLOOR_S,
    InvalidValue,
    check_seconds,
    fmt_seconds,
    parse_number,
)

if TYPE_CHECKING:
    from mcpwatch.reliability.hosts import DetectedHost
    from mcpwatch.reliability.settings import DeadlineSettings

ENV_HOST_TIMEOUT = "MCPWATCH_HOST_TOOLS_CALL_TIMEOUT_SEC"
ENV_MARGIN = "MCPWATCH_TOOL_CALL_DEADLINE_MARGIN_SEC"
ENV_EXPLICIT = "MCPWATCH_TOOL_CALL_DEADLINE_SEC"
SET_BY_FLAG: dict[str, str] = {}
"""Variables `mcpwatch wrap` set from its own flags (`--deadline` …), so explanations name the flag a person typed."""


def _said(variable: str) -> str:
    return SET_BY_FLAG.get(variable, variable)


DEFAULT_HOST_TIMEOUT_S = 120.0
DEFAULT_MARGIN_S = 10.0
CLAMP_S = 1.0
_WARNED_MAX = 1024  # distinct warnings remembered; beyond this the memory is cleared (bounded, may repeat)
MEMO_TOOL_MAX = 256  # a longer tool name (a host gives it) is not memoised: the memo holds 1,024 keys
# os.environ keeps its variables encoded in `_data`; reading that directly skips encoding the name and decoding the
# value on every call (the memo key only needs to change when a value does). Any other mapping is read as given.
_RAW_ENVIRON: dict[bytes, bytes] | None = getattr(os.environ, "_data", None) if os.name == "posix" else None
_ENV_KEYS = tuple(os.fsencode(name) for name in (ENV_HOST_TIMEOUT, ENV_MARGIN, ENV_EXPLICIT))

log = logging.getLogger(__name__)
_DEFAULT = " (default)"  # a marker: the layer fell through to the built-in default


@dataclass(frozen=True)
class Budget:
    """One call's budget and how it was reached, so an operator can see why a call was cut when it was."""

    seconds: float | None  # None: the budget is disabled
    source: str  # "override" | "explicit" | "tool" | "derived" | "clamped" | "disabled"
    host_timeout_s: float
    margin_s: float
    override_s: float | None
    explanation: str
    host: str | None = None  # the detected host's profile (or "unknown host …"), when a host is known
    clock: str | None = None  # the host clock that decided the host timeout, e.g. "tool_timeout_sec 60 s"

    @property
    def enabled(self) -> bool:
        return self.seconds is not None

    def to_dict(self) -> DeadlineBlock:
        return DeadlineBlock(
            host_timeout_s=self.host_timeout_s,
            margin_s=self.margin_s,
            override_s=self.override_s,
            budget_s=self.seconds,
            source=self.source,
            explanation=self.explanation,
            host=self.host,
            clock=self.clock,
        )


def _log_warning(message: str) -> None:
    log.warning("%s", message)


Rules = dict[str, bool]  # keyword arguments of `check_seconds`
_HOST_RULES: Rules = {"allow_zero": False}
_MARGIN_RULES: Rules = {}
# An explicit deadline ≤ 0 disables the budget; a positive one below the floor would cut every call at once.
_EXPLICIT_RULES: Rules = {"allow_negative": True, "budget": True}

__all__ = ["ABSURD_S", "BUDGET_FLOOR_S", "Budget", "DeadlinePolicy", "InvalidValue", "fmt_seconds", "parse_number"]


class DeadlinePolicy:
    """Computes the budget for each tools/call from the live environment, the settings and operator overrides."""

    def __init__(
        self,
        settings: DeadlineSettings,
        *,
        environ: Mapping[str, str] | None = None,
        on_warning: Callable[[str], None] | None = None,
    ) -> None:
        self._settings = settings
        self._environ = environ
        self._on_warning = on_warning or _log_warning
        self._warned: set[tuple[str, str]] = set()
        # (host_timeout_s, margin_s, deadline_s), replaced as a whole so a reader never sees half an update.
        self._ops: tuple[float | None, float | None, float | None] = (None, None, None)
        # The budget is a pure function of (the three variables' raw text, operator overrides, tool): memoised on
        # exactly that key, so reading the environment on every call stays cheap on the wrapper's hot path.
        self._memo: dict[tuple[object, ...], Budget] = {}

    # --- operator layer -----------------------------------------------------------------------------------

    @property
    def overrides(self) -> dict[str, float | None]:
        host, margin, deadline = self._ops
        return {"host_timeout_s": host, "margin_s": margin, "deadline_s": deadline}

    def set_margin(self, seconds: object) -> Budget:
        margin = check_seconds(seconds, "margin")
        host, _, deadline = self._ops
        self._ops = (host, margin, deadline)
        return self.budget()

    def set_host_timeout(self, seconds: object) -> Budget:
        host = check_seconds(seconds, "host timeout", allow_zero=False)
        _, margin, deadline = self._ops
        self._ops = (host, margin, deadline)
        return self.budget()

    def set_deadline(self, seconds: object | None) -> Budget:
        """Set (or, with None, clear) the explicit deadline; a value ≤ 0 disables the budget."""
        deadline = None if seconds is None else check_seconds(seconds, "deadline", **_EXPLICIT_RULES)
        host, margin, _ = self._ops
        self._ops = (host, margin, deadline)
        return self.budget()

    def reset(self) -> Budget:
        self._ops = (None, None, None)
        return self.budget()

    # --- the budget ---------------------------------------------------------------------------------------

    def budget(self, tool: str | None = None, host: DetectedHost | None = None, progress: bool = False) -> Budget:
        """The budget for one call, reading the environment afresh so a changed variable applies at once.

        `host` is the call's host (its profile's clocks come below every value a person set); `progress` says the
        host gave a progress token, so clocks that progress resets are kept alive by heartbeats instead."""
        env = os.environ if self._environ is None else self._environ
        host_raw: str | bytes | None  # the memo key holds the raw values, bytes when read from the raw environ
        margin: str | bytes | None
        explicit: str | bytes | None
        if env is os.environ and _RAW_ENVIRON is not None:
            get = _RAW_ENVIRON.get
            host_raw, margin, explicit = get(_ENV_KEYS[0]), get(_ENV_KEYS[1]), get(_ENV_KEYS[2])
        else:
            host_raw, margin, explicit = env.get(ENV_HOST_TIMEOUT), env.get(ENV_MARGIN), env.get(ENV_EXPLICIT)
        if tool is not None and len(tool) > MEMO_TOOL_MAX:  # a host names the tool: 1,024 of 16 MiB would be 16 GB
            return self._compute(env, tool, host, progress)
        key = (host_raw, margin, explicit, self._ops, tool, host, progress)
        budget = self._memo.get(key)
        if budget is None:
            if len(self._memo) >= 1024:
                self._memo.clear()
            budget = self._memo[key] = self._compute(env, tool, host, progress)
        return budget

    def _compute(
        self, env: Mapping[str, str], tool: str | None, detected: DetectedHost | None, progress: bool
    ) -> Budget:
        op_host, op_margin, op_deadline = self._ops
        clock = detected.deciding_clock(progress) if detected is not None else None
        profile_value = (
            None if clock is None or detected is None else (clock.seconds, f"{detected.label} {clock.describe()}")
        )
        label = None if detected is None else detected.label
        host, host_from = self._layer(
            "host timeout",
            op_host,
            env,
            ENV_HOST_TIMEOUT,
            "deadline.host_timeout_s",
            self._settings.host_timeout_s,
            DEFAULT_HOST_TIMEOUT_S,
            _HOST_RULES,
            profile_value,
        )
        margin, margin_from = self._layer(
            "margin",
            op_margin,
            env,
            ENV_MARGIN,
            "deadline.margin_s",
            self._settings.margin_s,
            DEFAULT_MARGIN_S,
            _MARGIN_RULES,
        )

        explicit = self._explicit(op_deadline, env, tool, host_from)
        if explicit is not None:
            seconds, source, text = explicit
            if seconds <= 0:
                return Budget(None, "disabled", host, margin, op_deadline, f"{text} disables the budget", label)
            return Budget(seconds, source, host, margin, op_deadline, text, label)

        person_set = host_from or self._setting("deadline.host_timeout_s", self._settings.host_timeout_s, _HOST_RULES)
        decided = profile_value is not None and host_from == profile_value[1]
        if decided:
            host_text = host_from
        elif person_set or detected is None:
            host_text = f"host timeout {fmt_seconds(host)} s{host_from}"
        elif detected.profile is None:
            host_text = f"host timeout {fmt_seconds(host)} s (default; {label})"
        else:
            host_text = f"host timeout {fmt_seconds(host)} s (default; no {label} clock ends the call)"
        clock_text = clock.describe() if decided and clock is not None else None
        margin_text = f"margin {fmt_seconds(margin)} s{margin_from}"
        derived = host - margin
        if derived < BUDGET_FLOOR_S:
            problem = "is not positive" if derived <= 0 else f"is below {fmt_seconds(BUDGET_FLOOR_S)} s"
            self._warn(
                ("derived budget", f"{host!r}/{margin!r}"),
                f"deadline budget {host_text} − {margin_text} = {fmt_seconds(derived)} s {problem}; "
                f"clamped to {fmt_seconds(CLAMP_S)} s",
            )
            text = f"{host_text} − {margin_text} = {fmt_seconds(derived)} s, clamped to {fmt_seconds(CLAMP_S)} s"
            return Budget(CLAMP_S, "clamped", host, margin, op_deadline, text, label, clock_text)
        return Budget(derived, "derived", host, margin, op_deadline, f"{host_text} − {margin_text}", label, clock_text)

    # --- internals ----------------------------------------------------------------------------------------

    def _warn(self, key: tuple[str, str], message: str) -> None:
        if key in self._warned:
            return
        if len(self._warned) >= _WARNED_MAX:
            self._warned.clear()
        self._warned.add(key)
        self._on_warning(message)

    def _env_number(
        self, env: Mapping[str, str], name: str, consequence: str, rules: Rules
    ) -> tuple[float, str] | None:
        """The variable as usable seconds, or None (unset, or bad or blank: those are warned about once)."""
        raw = env.get(name)
        if raw is None:
            return None
        text = raw.strip()
        if not text:
            self._warn((name, raw), f"{name}={raw!r} is blank; {consequence}")
            return None
        try:
            number = check_seconds(text, name, **rules)
        except InvalidValue as exc:
            self._warn((name, raw), f"{exc}; {consequence}")
            return None
        return number, text

    def _setting(self, key: str, value: object, rules: Rules) -> float | None:
        """A settings value that is usable seconds, else None (warned): settings built in code skip config.py."""
        if value is None:
            return None
        try:
            if isinstance(value, str):
                raise InvalidValue(f"{key} must be a number of seconds, got {value!r}")
            return check_seconds(value, key, **rules)
        except InvalidValue as exc:
            self._warn((key, repr(value)), f"{exc}; ignoring it")
            return None

    def _layer(
        self,
        what: str,
        operator: float | None,
        env: Mapping[str, str],
        env_name: str,
        setting_key: str,
        setting: object,
        default: float,
        rules: Rules,
        profile: tuple[float, str] | None = None,
    ) -> tuple[float, str]:
        """One of host timeout / margin through its layers; returns the value and a note on where it came from (for
        a value from the host's profile, the note is the profile's own text, e.g. "Codex CLI tool_timeout_sec 60 s")."""
        if operator is not None:
            return operator, " (operator)"
        fallback = self._setting(setting_key, setting, rules)
        note = ""
        if fallback is None and profile is not None:
            fallback, note = profile
        elif fallback is None:
            fallback, note = default, _DEFAULT
        parsed = self._env_number(env, env_name, f"using {what} {fmt_seconds(fallback)} s", rules)
        if parsed is not None:
            return parsed[0], f" ({_said(env_name)})"
        return fallback, "" if note is _DEFAULT else note

    def _explicit(
        self, operator: float | None, env: Mapping[str, str], tool: str | None, host_from: str
    ) -> tuple[float, str, str] | None:
        """The explicit deadline (seconds, source, explanation) from the highest layer that has one, or None.

        One order for both kinds of value: operator deadline › operator host timeout › the explicit variable › the
        host timeout variable › mcpwatch.toml's explicit values; a host timeout above the explicit layers wins."""
        if operator is not None:
            return operator, "override", f"operator override {fmt_seconds(operator)} s"
        if host_from == " (operator)":
            return None
        parsed = self._env_number(env, ENV_EXPLICIT, "ignoring it", _EXPLICIT_RULES)
        if parsed is not None:
            number, text = parsed
            return number, "explicit", f"{_said(ENV_EXPLICIT)}={text}"
        if host_from == f" ({_said(ENV_HOST_TIMEOUT)})":
            return None
        tools = self._settings.tools
        if tool is not None and tool in tools:
            key = f"deadline.tools.{tool}"
            setting = self._setting(key, tools[tool], _EXPLICIT_RULES)
            if setting is not None:
                return setting, "tool", f"mcpwatch.toml [deadline.tools] {tool} = {fmt_seconds(setting)} s"
        setting = self._setting("deadline.explicit_s", self._settings.explicit_s, _EXPLICIT_RULES)
        if setting is not None:
            return setting, "explicit", f"mcpwatch.toml deadline.explicit_s = {fmt_seconds(setting)} s"
        return None
