"""Host profiles: the clocks each known MCP host runs on a tools/call, so the budget ends before the host gives up.

A host names itself in `clientInfo` (the 2025 era's `initialize`, the 2026 era's request `_meta`). That name picks a
profile; the profile's clocks say when the host would end a call. Some clocks are reset by progress (an idle clock):
while the host gave a progress token the wrapper keeps those alive with heartbeats, so they do not bound the budget.

Built-in profiles live in `host_profiles.toml` beside this module (data, with a source for each value);
`[hosts.<name>]` tables in mcpwatch.toml add profiles or override a built-in one's clocks.
"""

from __future__ import annotations

import tomllib
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from functools import cache
from pathlib import Path
from typing import Any

from mcpwatch.events import HostClock as HostClockBlock
from mcpwatch.reliability.seconds import InvalidValue, check_seconds, fmt_seconds

FRONTS = ("stdio", "http")
CLOCK_KINDS = ("wall", "idle", "cap", "background")
ENDING_KINDS = ("wall", "idle", "cap")  # a "background" clock moves the call aside; the host still takes its answer
NAME_MAX = 200  # a client name longer than this is cut before matching or logging


class HostProfileError(ValueError):
    """A profile table that cannot be used; the message names the table and the key."""


@dataclass(frozen=True)
class HostClock:
    """One way a host ends (or moves aside) a tools/call."""

    kind: str
    seconds: float
    setting: str  # the host's own name for it: shown in the budget's explanation
    change: str = ""  # how a person changes it at the host
    resets_on_progress: bool = False
    fronts: tuple[str, ...] = FRONTS
    uncertain: bool = False
    source: str = ""

    @property
    def ends_call(self) -> bool:
        return self.kind in ENDING_KINDS

    def describe(self) -> str:
        return f"{self.setting} {fmt_seconds(self.seconds)} s"

    def to_dict(self) -> HostClockBlock:
        """The clock as events and the operator status carry it (`events.HostClock`, the one wire shape)."""
        return HostClockBlock(
            kind=self.kind,
            seconds=self.seconds,
            setting=self.setting,
            change=self.change,
            resets_on_progress=self.resets_on_progress,
            fronts=list(self.fronts),
            uncertain=self.uncertain,
            source=self.source,
        )


@dataclass(frozen=True)
class HostProfile:
    key: str
    label: str
    names: tuple[str, ...]
    clocks: tuple[HostClock, ...] = ()
    fronts: tuple[str, ...] = ()  # empty: any front; else the fronts this profile is for (same name, other host)
    source: str = ""
    origin: str = "built-in"  # or the config file that added or changed it

    def clocks_on(self, front: str) -> tuple[HostClock, ...]:
        return tuple(c for c in self.clocks if front in c.fronts)

    def deciding_clock(self, front: str, progress: bool) -> HostClock | None:
        """The earliest clock that would end a call on this front. With a progress token, clocks that progress
        resets are kept alive by heartbeats and do not count."""
        ending = [c for c in self.clocks_on(front) if c.ends_call and not (progress and c.resets_on_progress)]
        return min(ending, key=lambda c: c.seconds, default=None)

    def idle_clock(self, front: str) -> HostClock | None:
        """The shortest clock on this front that progress resets (the one heartbeats must beat), if any."""
        idle = [c for c in self.clocks_on(front) if c.ends_call and c.resets_on_progress]
        return min(idle, key=lambda c: c.seconds, default=None)

    def to_dict(self) -> dict[str, Any]:
        return {
            "key": self.key,
            "label": self.label,
            "names": list(self.names),
            "fronts": list(self.fronts),
            "clocks": [c.to_dict() for c in self.clocks],
            "source": self.source,
            "origin": self.origin,
        }


@dataclass(frozen=True, eq=False)  # compared and hashed by identity: a session keeps one, the budget memo keys on it
class DetectedHost:
    """The host behind one session (or one 2026-era request), and the profile its name picked."""

    name: str | None
    version: str | None
    front: str
    profile: HostProfile | None = None

    @property
    def label(self) -> str:
        if self.profile is not None:
            return self.profile.label
        return f"unknown host {self.name!r}" if self.name else "unknown host (no clientInfo)"

    def deciding_clock(self, progress: bool) -> HostClock | None:
        return None if self.profile is None else self.profile.deciding_clock(self.front, progress)

    def idle_clock(self) -> HostClock | None:
        return None if self.profile is None else self.profile.idle_clock(self.front)

    def to_dict(self) -> dict[str, Any]:
        """For `host_info` events and `status`: who the host is and the clocks its profile gives it."""
        profile = self.profile
        deciding = self.deciding_clock(progress=True)
        return {
            "name": self.name,
            "version": self.version,
            "front": self.front,
            "profile": None if profile is None else profile.key,
            "label": self.label,
            "known": profile is not None,
            "clocks": [] if profile is None else [c.to_dict() for c in profile.clocks_on(self.front)],
            "deciding_clock": None if deciding is None else deciding.to_dict(),
        }


@dataclass
class HostCatalog:
    """Profiles by client name. Matching is case-insensitive: an exact name first, then a name the client's
    starts with (a "Visual Studio Code - Insiders" build matches "Visual Studio Code")."""

    profiles: tuple[HostProfile, ...]
    _memo: dict[tuple[str, str], HostProfile | None] = field(default_factory=dict, repr=False)

    def match(self, name: str | None, front: str) -> HostProfile | None:
        if not name:
            return None
        key = (name.casefold()[:NAME_MAX], front)
        if key in self._memo:
            return self._memo[key]
        found = self._find(key[0], front)
        if len(self._memo) >= 1024:
            self._memo.clear()
        self._memo[key] = found
        return found

    def _find(self, folded: str, front: str) -> HostProfile | None:
        def fits(profile: HostProfile) -> bool:
            return not profile.fronts or front in profile.fronts

        for exact in (True, False):
            candidates = [
                p
                for p in self.profiles
                if any(folded == n.casefold() if exact else folded.startswith(n.casefold()) for n in p.names)
            ]
            fitting = [p for p in candidates if fits(p)]
            if fitting or candidates:
                return (fitting or candidates)[0]
        return None

    def detect(self, client_info: Any, front: str) -> DetectedHost:
        info = client_info if isinstance(client_info, Mapping) else {}
        name = info.get("name") if isinstance(info.get("name"), str) else None
        version = info.get("version") if isinstance(info.get("version"), str) else None
        name = name[:NAME_MAX] if name else None
        return DetectedHost(name, version[:NAME_MAX] if version else None, front, self.match(name, front))

    def get(self, key: str) -> HostProfile | None:
        return next((p for p in self.profiles if p.key == key), None)


# --- parsing ----------------------------------------------------------------------------------------------


def _seconds(where: str, value: Any) -> float:
    """A clock's seconds by the one rule every layer shares (`reliability.seconds`), above 0; TOML text is not a
    number here."""
    if isinstance(value, str):
        raise HostProfileError(f"{where} must be a number of seconds, got {value!r}")
    try:
        return check_seconds(value, where, allow_zero=False)
    except InvalidValue as exc:
        raise HostProfileError(str(exc)) from None


def _text(where: str, value: Any) -> str:
    if not isinstance(value, str):
        raise HostProfileError(f"{where} must be a string, got {value!r}")
    return value


def _names(where: str, value: Any) -> tuple[str, ...]:
    if isinstance(value, str):
        value = [value]
    if not isinstance(value, list) or not value or not all(isinstance(n, str) and n.strip() for n in value):
        raise HostProfileError(f"{where} must be a client name or a list of them, got {value!r}")
    return tuple(value)


def _fronts(where: str, value: Any) -> tuple[str, ...]:
    if not isinstance(value, list) or not all(f in FRONTS for f in value):
        raise HostProfileError(f"{where} must be a list of {', '.join(FRONTS)}, got {value!r}")
    return tuple(value)


def _bool(where: str, value: Any) -> bool:
    if not isinstance(value, bool):
        raise HostProfileError(f"{where} must be true or false, got {value!r}")
    return value


_CLOCK_KEYS = {"kind", "seconds", "setting", "change", "resets_on_progress", "fronts", "uncertain", "source"}


def _clock(where: str, raw: Any) -> HostClock:
    if not isinstance(raw, Mapping):
        raise HostProfileError(f"{where} must be a table")
    unknown = set(raw) - _CLOCK_KEYS
    if unknown:
        raise HostProfileError(f"{where} has unknown key(s): {', '.join(sorted(unknown))}")
    kind = raw.get("kind")
    if kind not in CLOCK_KINDS:
        raise HostProfileError(f"{where}.kind must be one of {', '.join(CLOCK_KINDS)}, got {kind!r}")
    return HostClock(
        kind=kind,
        seconds=_seconds(f"{where}.seconds", raw.get("seconds")),
        setting=_text(f"{where}.setting", raw.get("setting", kind)),
        change=_text(f"{where}.change", raw.get("change", "")),
        resets_on_progress=_bool(f"{where}.resets_on_progress", raw.get("resets_on_progress", False)),
        fronts=_fronts(f"{where}.fronts", raw.get("fronts", list(FRONTS))),
        uncertain=_bool(f"{where}.uncertain", raw.get("uncertain", False)),
        source=_text(f"{where}.source", raw.get("source", "")),
    )


def profiles_from_tables(tables: Mapping[str, Any], origin: str) -> tuple[HostProfile, ...]:
    """Built-in profile tables (host_profiles.toml's form) into profiles; HostProfileError on any problem."""
    profiles = []
    for key, body in tables.items():
        where = f"[{key}]"
        if not isinstance(body, Mapping):
            raise HostProfileError(f"{where} must be a table")
        clocks = body.get("clocks", [])
        if not isinstance(clocks, list):
            raise HostProfileError(f"{where}.clocks must be an array of tables")
        profiles.append(
            HostProfile(
                key=key,
                label=_text(f"{where}.label", body.get("label", key)),
                names=_names(f"{where}.names", body.get("names", [key])),
                clocks=tuple(_clock(f"{where}.clocks[{i}]", c) for i, c in enumerate(clocks)),
                fronts=_fronts(f"{where}.fronts", body.get("fronts", [])),
                source=_text(f"{where}.source", body.get("source", "")),
                origin=origin,
            )
        )
    return tuple(profiles)


# `[hosts.<name>]` in mcpwatch.toml: the short form a person writes.
OVERRIDE_CLOCK_KEYS = {"wall_s": "wall", "idle_s": "idle", "cap_s": "cap", "background_s": "background"}
OVERRIDE_KEYS = {"label", "names", "setting", "fronts", *OVERRIDE_CLOCK_KEYS}


def check_override_tables(raw: Any) -> dict[str, dict[str, Any]]:
    """Validate `[hosts.*]` tables as parsed from TOML; HostProfileError names `hosts.<name>.<key>`."""
    if not isinstance(raw, Mapping):
        raise HostProfileError("[hosts] must be a table of [hosts.<client name>] tables")
    checked: dict[str, dict[str, Any]] = {}
    for name, body in raw.items():
        where = f"hosts.{name}"
        if not isinstance(body, Mapping):
            raise HostProfileError(f"[{where}] must be a table (for example wall_s = 300)")
        unknown = set(body) - OVERRIDE_KEYS
        if unknown:
            known = ", ".join(sorted(OVERRIDE_KEYS))
            raise HostProfileError(f"{where} has unknown key(s): {', '.join(sorted(unknown))} (known: {known})")
        for key in OVERRIDE_CLOCK_KEYS:
            if key in body:
                _seconds(f"{where}.{key}", body[key])
        for key in ("label", "setting"):
            if key in body:
                _text(f"{where}.{key}", body[key])
        if "names" in body:
            _names(f"{where}.names", body["names"])
        if "fronts" in body:
            _fronts(f"{where}.fronts", body["fronts"])
        checked[str(name)] = dict(body)
    return checked


def _override(base: HostProfile, name: str, body: Mapping[str, Any], origin: str) -> HostProfile:
    clocks = list(base.clocks)
    for key, kind in OVERRIDE_CLOCK_KEYS.items():
        if key in body:
            # the host's own knob keeps its name (a person mirrors tool_timeout_sec here, say)
            same = [c.setting for c in clocks if c.kind == kind]
            setting = body.get("setting") or (same[0] if same else f"mcpwatch.toml [hosts.{name}] {key}")
            clocks = [c for c in clocks if c.kind != kind]
            clocks.append(
                HostClock(
                    kind=kind,
                    seconds=float(body[key]),
                    setting=setting,
                    resets_on_progress=kind == "idle",
                    source=origin,
                )
            )
    return replace(
        base,
        label=body.get("label", base.label),
        names=_names("names", body["names"]) if "names" in body else base.names,
        fronts=tuple(body["fronts"]) if "fronts" in body else base.fronts,
        clocks=tuple(clocks),
        origin=origin,
    )


def apply_overrides(
    builtin: Iterable[HostProfile], overrides: Mapping[str, Mapping[str, Any]], origin: str = "mcpwatch.toml"
) -> tuple[HostProfile, ...]:
    """Built-in profiles with `[hosts.<name>]` applied. A table whose name is a profile's key or one of its client
    names changes that profile (each clock given replaces the profile's clocks of that kind); any other table adds
    a profile matched on its name (or its `names`). Added and changed profiles are matched first."""
    profiles = list(builtin)
    changed: list[HostProfile] = []
    for name, body in check_override_tables(overrides).items():
        folded = name.casefold()
        matching = [p for p in profiles if p.key == name or folded in (n.casefold() for n in p.names)]
        for base in matching or [HostProfile(key=name, label=name, names=(name,))]:
            if base in profiles:
                profiles.remove(base)
            changed.append(_override(base, name, body, origin))
    return (*changed, *profiles)


@cache
def builtin_profiles() -> tuple[HostProfile, ...]:
    """The profiles shipped with mcpwatch (read once), from the file beside this module (importlib.resources would
    import zipfile and its readers at every wrapper's start for it)."""
    text = Path(__file__).with_name("host_profiles.toml").read_text(encoding="utf-8")
    return profiles_from_tables(tomllib.loads(text), "built-in")


def catalog(overrides: Mapping[str, Mapping[str, Any]] | None = None, origin: str = "mcpwatch.toml") -> HostCatalog:
    return HostCatalog(apply_overrides(builtin_profiles(), overrides or {}, origin))
