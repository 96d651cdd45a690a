"""Export records: one flat record per event, using OpenTelemetry MCP names where they exist (DESIGN.md)."""

from __future__ import annotations

import json
import re
from typing import Any

from mcpwatch.events import Event, Outcome

COLUMNS = (
    "id",
    "seq",
    "ts",
    "mono",
    "kind",
    "mcp.session.id",
    "jsonrpc.request.id",
    "mcp.method.name",
    "tool",
    "model",
    "error.type",
    "data",
)


def export_record(event: Event) -> dict[str, Any]:
    """The event as an export record; `data` stays an object (CSV encodes it as JSON text)."""
    data = event.data if isinstance(event.data, dict) else {}
    method = data.get("method") if event.kind == "request_start" else None
    # a late result's outcome is the error a host would have seen, had it waited
    outcome = data.get("outcome") if event.kind in ("request_end", "late_result") else None
    return {
        "id": event.id,
        "seq": event.seq,
        "ts": event.ts,
        "mono": event.mono,
        "kind": event.kind,
        "mcp.session.id": event.session_id,
        "jsonrpc.request.id": event.request_id,
        "mcp.method.name": method,
        "tool": event.tool,
        "model": event.model,
        "error.type": outcome if outcome not in (None, Outcome.OK.value) else None,
        "data": data,
    }


FORMULA_START = ("=", "+", "-", "@", "\t", "\r")
_PLAIN_NUMBER = re.compile(r"[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?")


def spreadsheet_safe(value: Any) -> Any:
    """A text cell a spreadsheet would run as a formula (`=`, `+`, `-`, `@` first) gets a leading `'`, as OWASP
    advises; numbers, and text that is only a number ("-3"), stay as they are."""
    if isinstance(value, str) and value.startswith(FORMULA_START) and not _PLAIN_NUMBER.fullmatch(value):
        return "'" + value
    return value


def csv_row(record: dict[str, Any]) -> list[Any]:
    """The record's values in COLUMNS order, with `data` as compact JSON, missing values empty and no text cell
    a spreadsheet would take for a formula (names and ids are whatever a peer sent)."""
    row: list[Any] = []
    for column in COLUMNS:
        value = record.get(column)
        if column == "data":
            value = json.dumps(value, separators=(",", ":"), ensure_ascii=False)
        row.append("" if value is None else spreadsheet_safe(value))
    return row
