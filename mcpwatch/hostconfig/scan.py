"""`mcpwatch hosts scan`'s data: every configured MCP server on this machine, per host, with its transport, whether
it is wrapped, the host's timeout and where it comes from, and the budget mcpwatch gives it. Textual-free: the
command's table, its JSON and the console's screen all read these rows."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from mcpwatch.hostconfig.budgets import BudgetCheck, check
from mcpwatch.hostconfig.entries import ConfigFile, ServerEntry, display, read_config
from mcpwatch.hostconfig.locate import host_of, known_files
from mcpwatch.hostconfig.timeouts import HostTimeout, host_timeout, profile_for
from mcpwatch.reliability.hosts import HostCatalog
from mcpwatch.reliability.settings import DeadlineSettings


@dataclass(frozen=True)
class ServerRow:
    entry: ServerEntry
    timeout: HostTimeout
    budget: BudgetCheck

    def to_dict(self) -> dict[str, Any]:
        entry = self.entry
        line = entry.wrap
        return {
            "host": entry.host.key,
            "host_label": entry.host.label,
            "scope": entry.scope,
            "file": str(entry.file),
            "server": entry.key,
            "transport": entry.transport,
            "target": entry.target,
            "wrapped": line is not None,
            "host_config": None if line is None else line.host_config,
            "host_timeout": self.timeout.to_dict(),
            "budget_s": self.budget.budget.seconds,
            "budget": self.budget.budget.explanation,
            "disagrees": self.budget.disagrees,
        }


@dataclass(frozen=True)
class Scan:
    files: tuple[ConfigFile, ...]  # every file found (or given), read or with its problem
    rows: tuple[ServerRow, ...]

    def to_dict(self) -> dict[str, Any]:
        return {
            "files": [
                {
                    "file": str(f.path),
                    "host": f.host.key,
                    "scope": f.scope,
                    "servers": len(f.servers),
                    "problem": f.problem,
                }
                for f in self.files
            ],
            "servers": [row.to_dict() for row in self.rows],
        }


def rows_of(
    config: ConfigFile, catalog: HostCatalog, settings: DeadlineSettings, environ: Mapping[str, str]
) -> list[ServerRow]:
    profile = profile_for(config.host, catalog)
    rows = []
    for entry in config.servers:
        timeout = host_timeout(entry, profile, environ)
        rows.append(ServerRow(entry, timeout, check(entry.wrap, timeout, profile, settings, environ)))
    return rows


def scan(
    home: Path,
    project: Path,
    given: Iterable[Path],
    catalog: HostCatalog,
    settings: DeadlineSettings,
    environ: Mapping[str, str],
) -> Scan:
    """The well-known files that exist, then the files given by path (each read once)."""
    found: list[ConfigFile] = []
    seen: set[Path] = set()
    for host, scope, path in known_files(home, project):
        if path.exists() or path.is_symlink():
            seen.add(path.absolute())
            found.append(read_config(path, host, scope))
    for path in given:
        if path.absolute() in seen:
            continue
        seen.add(path.absolute())
        if not path.exists() and not path.is_symlink():
            found.append(ConfigFile(path, host_of(path), "file", problem="no such file"))
            continue
        found.append(read_config(path, host_of(path), "file"))
    rows = [row for config in found for row in rows_of(config, catalog, settings, environ)]
    return Scan(tuple(found), tuple(rows))


def short(path: Path) -> str:
    return display(path)
