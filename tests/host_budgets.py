"""What each known host's calls are budgeted, as the host tests expect it: one table for the core's tests on a
manual clock (tests/unit/test_core_hosts.py) and the real wrapper's (tests/integration/test_wrap_hosts.py)."""

from __future__ import annotations

import json
from typing import Any

MODERN = "2026-07-28"
# clientInfo.name → (the budget on the stdio front, on the HTTP front) for a call without a progress token
BUDGETS = {
    "claude-code": (1790, 290),
    "claude-ai": (50, 50),
    "cursor-vscode": (290, 290),
    "Visual Studio Code": (110, 110),
    "codex-mcp-client": (50, 50),
    "gemini-cli-mcp-client": (590, 590),
    "Windsurf": (110, 110),
    "github-copilot-developer": (50, 50),
    "mcp-inspector": (50, 50),
    "someone-new": (110, 110),
}


def stamped_budget_s(reply: dict[str, Any]) -> float:
    """The budget the upstream was told (ms left when the call left the wrapper), in seconds."""
    return float(json.loads(reply["result"]["content"][0]["text"])["deadline_ms"]) / 1000


def modern_meta(name: str) -> dict[str, Any]:
    """A 2026-era request's `_meta` naming its host."""
    return {"io.modelcontextprotocol/protocolVersion": MODERN, "io.modelcontextprotocol/clientInfo": {"name": name}}
