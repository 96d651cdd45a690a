"""Which error answers to a call mcpwatch cancelled are the server's acknowledgement of that cancel."""

from __future__ import annotations

import pytest

from mcpwatch.reliability.cancel_ack import is_cancel_ack, is_cancel_ack_text


@pytest.mark.parametrize(
    "error",
    [
        {"code": 0, "message": "Request cancelled"},  # MCP SDK 1.x, FastMCP 2.x
        {"code": -32800, "message": "anything"},  # the LSP's "request cancelled"
        {"code": -32603, "message": "Operation was canceled"},
        {"code": -32000, "message": "CANCELLED by client"},
    ],
)
def test_acknowledgements(error: dict) -> None:
    assert is_cancel_ack(error)
    assert is_cancel_ack_text("error", repr(error).replace("'", '"'))


@pytest.mark.parametrize(
    "error",
    [
        {"code": -32603, "message": "order cancellation failed: card declined"},  # a real answer about a cancel
        {"code": -32603, "message": "cannot cancel a shipped order"},
        {"code": -32602, "message": "unknown tool"},
        {"code": "0", "message": "not an int code"},
        "Request cancelled",  # not an error object
    ],
)
def test_real_answers_are_not_acknowledgements(error: object) -> None:
    assert not is_cancel_ack(error)


def test_a_late_result_logged_as_text_is_an_acknowledgement_only_when_it_says_so() -> None:
    assert not is_cancel_ack_text("error", '{"code": -32603, "message": "order cancellation failed"}')
    assert not is_cancel_ack_text("ok", '{"code": 0, "message": "Request cancelled"}')
