"""The Hosts screen's data: every MCP server the hosts' config files hold, per host, wrapped or not, with the host's
timeout and the budget mcpwatch gives it (the rows `mcpwatch hosts scan` prints, from the same scan)."""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from mcpwatch.console.headless import format as fmt
from mcpwatch.hostconfig.entries import display
from mcpwatch.hostconfig.scan import Scan, scan
from mcpwatch.reliability.hosts import HostCatalog, catalog
from mcpwatch.reliability.seconds import fmt_seconds
from mcpwatch.reliability.settings import DeadlineSettings
from mcpwatch.terminal import safe

CELL_MAX = 300  # a cell's characters at most: a config file is anyone's to write (a 1 MB server key)
COLUMNS: list[tuple[str, int | None]] = [
    ("host", 14),
    ("server", 16),
    ("wrapped", 8),
    ("budget", 9),
    ("host timeout", 34),
    ("file", None),
]


@dataclass(frozen=True)
class HostRow:
    key: str  # stable across rescans: file, place and server key
    host: str  # the host's key (what `--host` takes)
    cells: tuple[str, ...]  # as COLUMNS, sanitised for the terminal
    wrapped: bool
    trouble: str | None  # the budget disagrees with the host's setting: why


@dataclass(frozen=True)
class HostsView:
    rows: tuple[HostRow, ...]
    summary: str  # one line: counts, and the command that wraps the rest
    problems: tuple[str, ...]  # files that could not be read, one line each


def view_of(found: Scan) -> HostsView:
    rows = []
    for row in found.rows:
        entry = row.entry
        line = entry.wrap
        wrapped = "no" if line is None else ("yes" if line.host_config else "yes*")
        budget = row.budget.budget.seconds
        timeout = row.timeout
        host_s = "none" if timeout.seconds is None else f"{fmt_seconds(timeout.seconds)} s"
        cells = (
            entry.host.label,
            entry.key,
            wrapped,
            "none" if budget is None else f"{fmt_seconds(budget)} s",
            f"{host_s} ({timeout.source})",
            f"{display(entry.file)} ({entry.scope})",
        )
        key = f"{entry.file}|{'/'.join(entry.where)}|{entry.key}"
        shown = tuple(fmt.clip(safe(c[: CELL_MAX * 8]), CELL_MAX) for c in cells)
        rows.append(HostRow(key, entry.host.key, shown, line is not None, row.budget.disagrees))
    wrapped_count = sum(r.wrapped for r in rows)
    files = len([f for f in found.files if f.servers])
    if not rows:
        summary = "No MCP servers found in the hosts' config files (mcpwatch hosts scan FILE reads another)."
    else:
        rest = len(rows) - wrapped_count
        summary = f"{len(rows)} servers in {files} files, {wrapped_count} wrapped" + (
            f"; `mcpwatch hosts wrap --all` wraps the other {rest}" if rest else ""
        )
    problems = tuple(safe(f"{display(f.path)}: {f.problem}") for f in found.files if f.problem)
    return HostsView(tuple(rows), summary, problems)


def load(
    home: Path | None = None,
    project: Path | None = None,
    profiles: HostCatalog | None = None,
    settings: DeadlineSettings | None = None,
    environ: Mapping[str, str] | None = None,
) -> HostsView:
    """Scan the well-known files now (blocking file reads: call it off the UI's thread)."""
    found = scan(
        home or Path.home(),
        project or Path.cwd(),
        (),
        profiles or catalog(),
        settings or DeadlineSettings(),
        os.environ if environ is None else environ,
    )
    return view_of(found)
