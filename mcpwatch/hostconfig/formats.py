"""The hosts whose MCP config files mcpwatch reads and edits: the file's syntax, where its servers are, which keys
hold a URL and headers, and where the host's per-server timeout is set (one row per host, data only)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class HostFormat:
    key: str  # the name `--host` takes
    label: str
    profile: str | None  # the key of the host's profile in host_profiles.toml (its clocks)
    syntax: str  # "json" (comments allowed) | "toml"
    container: str  # the key holding the servers, by name
    url_keys: tuple[str, ...] = ("url",)  # keys that hold a Streamable HTTP URL, the one written back first
    sse_keys: tuple[str, ...] = ()  # keys that hold an SSE URL (mcpwatch wrap --url speaks Streamable HTTP only)
    header_key: str = "headers"
    type_key: str | None = None  # "type": "stdio" | "http" | "sse" where the host has it
    stdio_type: str | None = "stdio"  # the type a wrapped (stdio) entry gets; None: the key is dropped
    timeout_key: str | None = None  # the server's own timeout for a tools/call
    timeout_unit_s: float = 1.0  # seconds per unit of `timeout_key` (0.001: milliseconds)
    timeout_env: str | None = None  # the host's variable for every server's timeout (same unit)
    cli: str | None = None  # the host's own program that edits this file


CLAUDE_CODE = HostFormat(
    "claude-code",
    "Claude Code",
    "claude-code",
    "json",
    "mcpServers",
    sse_keys=(),
    type_key="type",
    timeout_key="timeout",
    timeout_unit_s=0.001,
    timeout_env="MCP_TOOL_TIMEOUT",
    cli="claude",
)
CLAUDE_DESKTOP = HostFormat("claude-desktop", "Claude Desktop", "claude-desktop", "json", "mcpServers")
CODEX = HostFormat(
    "codex",
    "Codex CLI",
    "codex",
    "toml",
    "mcp_servers",
    header_key="http_headers",
    timeout_key="tool_timeout_sec",
)
GEMINI = HostFormat(
    "gemini-cli",
    "Gemini CLI",
    "gemini-cli",
    "json",
    "mcpServers",
    url_keys=("url", "httpUrl"),  # `url` is Streamable HTTP unless `type` is "sse" (0.61); `httpUrl` is older
    type_key="type",
    stdio_type=None,
    timeout_key="timeout",
    timeout_unit_s=0.001,
    cli="gemini",
)
VSCODE = HostFormat("vscode", "VS Code", "vscode", "json", "servers", type_key="type")
CURSOR = HostFormat("cursor", "Cursor", "cursor", "json", "mcpServers", type_key="type")
WINDSURF = HostFormat("windsurf", "Windsurf", "windsurf", "json", "mcpServers", url_keys=("serverUrl", "url"))
GENERIC = HostFormat("mcp-json", "an mcp.json file", None, "json", "mcpServers", type_key="type")

FORMATS: tuple[HostFormat, ...] = (CLAUDE_CODE, CLAUDE_DESKTOP, CODEX, GEMINI, VSCODE, CURSOR, WINDSURF, GENERIC)


def by_key(key: str) -> HostFormat | None:
    return next((f for f in FORMATS if f.key == key), None)
