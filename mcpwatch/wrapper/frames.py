"""Raw JSON-RPC frames: parse, classify, encode, and the spec's error replies.

The wrapper forwards plain dicts, not SDK models: parsing stays cheap and the wire stays faithful.
"""

from __future__ import annotations

import json
from typing import Any

PARSE_ERROR = -32700
INVALID_REQUEST = -32600
INTERNAL_ERROR = -32603

REQUEST = "request"
NOTIFICATION = "notification"
RESPONSE = "response"
INVALID = "invalid"

_dumps = json.JSONEncoder(separators=(",", ":"), ensure_ascii=False).encode


def encode(message: Any) -> bytes:
    """One frame: compact JSON and a newline (stdio framing)."""
    return _dumps(message).encode("utf-8") + b"\n"


def decode(line: bytes | str) -> Any:
    """Raises ValueError (json.JSONDecodeError or UnicodeDecodeError) on anything that is not JSON."""
    return json.loads(line)


def kind_of(message: Any) -> str:
    """What a parsed JSON value is, as JSON-RPC 2.0 sees it."""
    if not isinstance(message, dict) or message.get("jsonrpc") != "2.0":
        return INVALID
    method = message.get("method")
    if method is not None:
        if not isinstance(method, str):
            return INVALID
        if "id" in message:
            return REQUEST if valid_id(message["id"]) else INVALID
        return NOTIFICATION
    if "id" in message and ("result" in message or "error" in message):
        return RESPONSE
    return INVALID


def valid_id(value: Any) -> bool:
    return (isinstance(value, str | int) and not isinstance(value, bool)) or value is None


def error_response(request_id: Any, code: int, message: str, data: Any = None) -> dict[str, Any]:
    error: dict[str, Any] = {"code": code, "message": message}
    if data is not None:
        error["data"] = data
    return {"jsonrpc": "2.0", "id": request_id, "error": error}


def id_key(value: Any) -> Any:
    """Ids as the SDK matches them: "7" and 7 are the same request."""
    if isinstance(value, str) and value.isdigit():
        return int(value)
    return value


def text_of(value: Any, limit: int = 4096) -> str:
    """A JSON value as text for the log, truncated so one huge argument cannot bloat it."""
    if isinstance(value, bytes | bytearray):
        text = bytes(value[: limit * 4]).decode("utf-8", "replace")
    else:
        text = value if isinstance(value, str) else _dumps(value)
    return text if len(text) <= limit else text[: limit - 1] + "…"
