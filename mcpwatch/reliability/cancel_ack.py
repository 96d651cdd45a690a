"""Telling a server's acknowledgement of a cancel from a real answer.

Servers built on the MCP SDK 1.x (FastMCP 2.x among them) answer a request they cancelled on our
`notifications/cancelled` with an error, `{"code": 0, "message": "Request cancelled"}`; others use -32800 (the
LSP's "request cancelled") or a message saying so. Such an answer says only that the work stopped: the call never
finished, so it has no true duration and must not count as a late result that a longer budget "would have saved".
"""

from __future__ import annotations

import re
from typing import Any

ACK_CODES = frozenset({0, -32800})
_CANCELLED = re.compile(r"\bcancell?ed\b", re.IGNORECASE)  # "cancelled", "canceled"; not "cancel(lation)"
# an old log's late_result holds the error as text: '{"code": 0, "message": "Request cancelled"}'
_CODE_IN_TEXT = re.compile(r'"code"\s*:\s*(-?\d+)')


def is_cancel_ack(error: Any) -> bool:
    """Whether a JSON-RPC error object (the `error` of a response) acknowledges a cancel."""
    if not isinstance(error, dict):
        return False
    code = error.get("code")
    if type(code) is int and code in ACK_CODES:
        return True
    message = error.get("message")
    return isinstance(message, str) and bool(_CANCELLED.search(message))


def is_cancel_ack_text(outcome: Any, error_text: Any) -> bool:
    """The same test on a logged late_result (outcome "error" and the error as text), for logs written before
    mcpwatch told acknowledgements apart."""
    if outcome != "error" or not isinstance(error_text, str):
        return False
    code = _CODE_IN_TEXT.search(error_text)
    if code is not None and int(code.group(1)) in ACK_CODES:
        return True
    return bool(_CANCELLED.search(error_text))
