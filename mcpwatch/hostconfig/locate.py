"""Where each host keeps its MCP config: the well-known files under the home directory (every platform's path,
since a home directory synced between machines holds them all) and in the current project, and which host a file
given by path belongs to."""

from __future__ import annotations

from pathlib import Path

from mcpwatch.hostconfig import formats
from mcpwatch.hostconfig.formats import HostFormat

Location = tuple[HostFormat, str, Path]  # host, scope, path


def known_files(home: Path, project: Path) -> list[Location]:
    """Every place a host in the table keeps servers, whether or not the file exists."""
    app_support = home / "Library" / "Application Support"
    roaming = home / "AppData" / "Roaming"
    xdg = home / ".config"
    found: list[Location] = [
        (formats.CLAUDE_CODE, "user", home / ".claude.json"),
        (formats.CLAUDE_CODE, "project", project / ".mcp.json"),
        *(
            (formats.CLAUDE_DESKTOP, "user", base / "Claude" / "claude_desktop_config.json")
            for base in (app_support, roaming, xdg)
        ),
        (formats.CODEX, "user", home / ".codex" / "config.toml"),
        (formats.GEMINI, "user", home / ".gemini" / "settings.json"),
        (formats.GEMINI, "project", project / ".gemini" / "settings.json"),
        *((formats.VSCODE, "user", base / "Code" / "User" / "mcp.json") for base in (app_support, roaming, xdg)),
        (formats.VSCODE, "project", project / ".vscode" / "mcp.json"),
        (formats.CURSOR, "user", home / ".cursor" / "mcp.json"),
        (formats.CURSOR, "project", project / ".cursor" / "mcp.json"),
        (formats.WINDSURF, "user", home / ".codeium" / "windsurf" / "mcp_config.json"),
    ]
    seen: set[Path] = set()
    unique = []
    for host, scope, path in found:
        if path not in seen:  # a project that is the home directory
            seen.add(path)
            unique.append((host, scope, path))
    return unique


def host_of(path: Path) -> HostFormat:
    """The host a file given by path belongs to, from its name and folder; an unknown JSON file is read as a
    generic mcp.json (servers under mcpServers)."""
    name = path.name
    parent = path.parent.name
    if name in (".claude.json", ".mcp.json"):
        return formats.CLAUDE_CODE
    if name == "claude_desktop_config.json":
        return formats.CLAUDE_DESKTOP
    if name.endswith(".toml"):
        return formats.CODEX
    if name == "settings.json" and parent == ".gemini":
        return formats.GEMINI
    if name == "mcp.json" and parent in (".vscode", "User"):
        return formats.VSCODE
    if name == "mcp.json" and parent == ".cursor":
        return formats.CURSOR
    if name == "mcp_config.json":
        return formats.WINDSURF
    return formats.GENERIC
