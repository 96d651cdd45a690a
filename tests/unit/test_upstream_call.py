"""The operator's call_upstream refuses a malformed request in one line, before anything is sent upstream."""

from __future__ import annotations

import pytest

from mcpwatch.wrapper.operator.upstream_call import MAX_ARGUMENTS_BYTES, CallRefused, check_call


def test_a_good_request_gets_defaults() -> None:
    assert check_call("council.models.disable", {"model": "x"}, None) == (
        "council.models.disable",
        {"model": "x"},
        30.0,
    )
    assert check_call("t", None, 5) == ("t", {}, 5.0)


@pytest.mark.parametrize(
    ("name", "arguments", "timeout", "message"),
    [
        ("", {}, None, "name must be a tool name"),
        (None, {}, None, "name must be a tool name"),
        ("x" * 201, {}, None, "name must be a tool name"),
        ("t", ["not", "an", "object"], None, "arguments must be an object"),
        ("t", {"blob": "x" * MAX_ARGUMENTS_BYTES}, None, "arguments must be at most 64 KiB"),
        ("t", {}, float("nan"), "timeout_s must be a number"),
        ("t", {}, True, "timeout_s must be a number"),
        ("t", {}, 0, "more than 0 and at most 300"),
        ("t", {}, 301, "more than 0 and at most 300"),
    ],
)
def test_malformed_requests_are_refused(name: object, arguments: object, timeout: object, message: str) -> None:
    with pytest.raises(CallRefused, match=message):
        check_call(name, arguments, timeout)
