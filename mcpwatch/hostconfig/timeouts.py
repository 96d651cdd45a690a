"""The host's timeout for one server, and where it comes from: the server's own entry (`timeout` ms,
`tool_timeout_sec`), the host's environment (Claude Code's `MCP_TOOL_TIMEOUT`), or the host's default from its
profile. One definition, read by `hosts scan` and by `mcpwatch wrap --host-config` at start, so the budget follows
the host's setting without a copy."""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from mcpwatch.hostconfig.entries import ConfigFile, ServerEntry, display, read_config
from mcpwatch.hostconfig.formats import CLAUDE_CODE, HostFormat
from mcpwatch.hostconfig.locate import host_of
from mcpwatch.reliability.hosts import HostCatalog, HostProfile
from mcpwatch.reliability.seconds import ABSURD_S, fmt_seconds


class HostConfigError(ValueError):
    """A `--host-config` reference that cannot be read; the message is one line naming the file and the fix."""


@dataclass(frozen=True)
class HostTimeout:
    seconds: float | None  # None: no clock of the host ends a call (VS Code), or none known
    origin: str  # "server" | "environment" | "default"
    source: str  # for a person: "~/.codex/config.toml#docs tool_timeout_sec = 300"

    def to_dict(self) -> dict[str, object]:
        return {"seconds": self.seconds, "origin": self.origin, "source": self.source}


def _number(value: object, unit_s: float) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    seconds = float(value) * unit_s
    return seconds if math.isfinite(seconds) and 0 < seconds <= ABSURD_S else None


def _env_number(raw: str | None, unit_s: float) -> float | None:
    if raw is None:
        return None
    try:
        return _number(float(raw.strip()), unit_s)
    except ValueError:
        return None


def _unit(host: HostFormat) -> str:
    return "ms" if host.timeout_unit_s == 0.001 else "s"


def host_timeout(entry: ServerEntry, profile: HostProfile | None, environ: Mapping[str, str]) -> HostTimeout:
    """The host's timeout for a call to this server (with a progress token: heartbeats keep idle clocks alive)."""
    host = entry.host
    if host.timeout_key and host.timeout_key in entry.raw:
        value = entry.raw[host.timeout_key]
        seconds = _number(value, host.timeout_unit_s)
        if seconds is not None:
            unit = " ms" if host.timeout_unit_s == 0.001 else ""
            where = f"{display(entry.file)}#{entry.key}"
            return HostTimeout(seconds, "server", f"{where} {host.timeout_key} = {value}{unit}")
    if host.timeout_env:
        raw = environ.get(host.timeout_env)
        seconds = _env_number(raw, host.timeout_unit_s)
        if seconds is not None:
            return HostTimeout(seconds, "environment", f"{host.timeout_env}={raw} ({_unit(host)}) in the environment")
    clock = None if profile is None else profile.deciding_clock("stdio", progress=True)
    if clock is None:
        label = profile.label if profile is not None else host.label
        return HostTimeout(None, "default", f"{label}: no clock known to end a call")
    return HostTimeout(
        clock.seconds, "default", f"{profile.label if profile else host.label} default, {clock.describe()}"
    )


def profile_for(host: HostFormat, catalog: HostCatalog) -> HostProfile | None:
    return None if host.profile is None else catalog.get(host.profile)


def split_ref(ref: str) -> tuple[Path, str]:
    """`FILE#SERVER` into its parts: the first `#` after which the file exists splits (a path and a key may each
    hold one); when no such file exists, the last `#`."""
    at = ref.find("#")
    while at > 0:
        if Path(ref[:at]).expanduser().is_file() and at + 1 < len(ref):
            return Path(ref[:at]).expanduser(), ref[at + 1 :]
        at = ref.find("#", at + 1)
    file, sep, key = ref.rpartition("#")
    if not sep or not file or not key:
        raise HostConfigError(
            f"--host-config must look like FILE#SERVER (the config file and the server's key), got {ref!r}"
        )
    return Path(file).expanduser(), key


def find_entry(config: ConfigFile, key: str, cwd: Path | None) -> ServerEntry | None:
    """The entry the host itself would use for `key`: in Claude Code's ~/.claude.json the current project's own
    (local scope) entry wins over the user-scope one, as it does in Claude Code."""
    matching = [s for s in config.servers if s.key == key]
    if config.host is CLAUDE_CODE and cwd is not None:
        local = [s for s in matching if s.where[:2] == ("projects", str(cwd))]
        if local:
            return local[0]
    top = [s for s in matching if len(s.where) == 1]
    chosen = top or matching
    return chosen[0] if chosen else None


def read_ref(ref: str, catalog: HostCatalog, environ: Mapping[str, str], cwd: Path | None) -> HostTimeout:
    """The host's timeout for the server a `--host-config FILE#SERVER` names; HostConfigError when the file
    cannot be read or has no such server."""
    path, key = split_ref(ref)
    host = host_of(path)
    config = read_config(path, host, "file")
    if config.problem is not None:
        raise HostConfigError(f"--host-config {ref}: {display(path)} {config.problem}")
    entry = find_entry(config, key, cwd)
    if entry is None:
        names = ", ".join(sorted({s.key for s in config.servers})) or "none"
        raise HostConfigError(f"--host-config {ref}: {display(path)} has no server {key!r} (servers: {names})")
    return host_timeout(entry, profile_for(host, catalog), environ)


def describe(timeout: HostTimeout) -> str:
    seconds = "none" if timeout.seconds is None else f"{fmt_seconds(timeout.seconds)} s"
    return f"{seconds} ({timeout.source})"
