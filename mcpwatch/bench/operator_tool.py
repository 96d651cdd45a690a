"""A wrapper's operator tools, called the plain way a benchmark can afford (one urllib POST, no client): its own
view of pending calls, tombstones and log counters while a benchmark drives it."""

from __future__ import annotations

import json
import urllib.request
from pathlib import Path
from typing import Any


def operator_tool(state_dir: Path, pid: int, tool: str = "status", **arguments: Any) -> dict[str, Any] | None:
    """The wrapper's own view (pending calls, tombstones, log counters) through its operator endpoint."""
    try:
        entry = json.loads((state_dir / "wrappers" / f"{pid}.json").read_text())
        params = {"name": tool, "arguments": arguments}
        body = {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": params}
        request = urllib.request.Request(
            entry["operator_url"],
            data=json.dumps(body).encode(),
            headers={
                "Authorization": f"Bearer {entry['token']}",
                "Content-Type": "application/json",
                "Accept": "application/json, text/event-stream",
                "MCP-Protocol-Version": "2025-06-18",
            },
        )
        with urllib.request.urlopen(request, timeout=10) as reply:
            answer = json.loads(reply.read())["result"]["structuredContent"]
        return answer if isinstance(answer, dict) else None
    except (OSError, ValueError, KeyError):
        return None
