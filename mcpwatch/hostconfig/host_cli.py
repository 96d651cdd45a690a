"""`--via cli`: change a Claude Code entry through Claude Code's own CLI (`claude mcp remove`, then
`claude mcp add-json` with the whole entry, so nothing of it is lost), for a user who wants the host to write its
own file. The host re-adds the entry at the end of its table and writes the file in its own layout, so an exact
round trip is the in-place edit's (the default); other hosts' CLIs cannot carry every field (Gemini's has no
`cwd`), so their files are always edited in place."""

from __future__ import annotations

import json
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from mcpwatch.hostconfig.entries import ServerEntry
from mcpwatch.hostconfig.formats import CLAUDE_CODE

CALL_TIMEOUT_S = 120.0


class HostCliError(ValueError):
    """The host's CLI refused or failed; one line with its own last words."""


@dataclass(frozen=True)
class Scope:
    name: str  # "user" | "local" | "project", as `claude mcp … -s` takes it
    cwd: Path  # where the CLI must run for that scope


def claude_scope(entry: ServerEntry, home: Path, project: Path) -> Scope | None:
    """The `-s` scope and working directory that make `claude mcp` change exactly this entry, or None."""
    if entry.host is not CLAUDE_CODE:
        return None
    if entry.file == home / ".claude.json":
        if entry.where == ("mcpServers",):
            return Scope("user", project)
        if len(entry.where) == 3 and entry.where[0] == "projects" and Path(entry.where[1]).is_dir():
            return Scope("local", Path(entry.where[1]))
        return None
    if entry.file == project / ".mcp.json" and entry.where == ("mcpServers",):
        return Scope("project", project)
    return None


def find_claude() -> str | None:
    return shutil.which("claude")


def _run(argv: list[str], cwd: Path) -> None:
    try:
        done = subprocess.run(argv, cwd=cwd, capture_output=True, text=True, timeout=CALL_TIMEOUT_S, check=False)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise HostCliError(f"`{' '.join(argv[:4])} …` did not run: {exc}") from None
    if done.returncode != 0:
        said = (done.stderr.strip() or done.stdout.strip()).splitlines()
        raise HostCliError(f"`{' '.join(argv[:4])} …` failed: {said[-1] if said else f'exit {done.returncode}'}")


def replace_entry(claude: str, entry: ServerEntry, scope: Scope, value: dict[str, Any]) -> None:
    """The entry removed and added again as `value`, by Claude Code's own CLI."""
    _run([claude, "mcp", "remove", "-s", scope.name, "--", entry.key], scope.cwd)
    _run([claude, "mcp", "add-json", "-s", scope.name, "--", entry.key, json.dumps(value)], scope.cwd)
