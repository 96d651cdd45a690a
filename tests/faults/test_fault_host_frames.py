"""A host that sends malformed frames over the wrapper's stdin gets the spec's JSON-RPC errors where a reply is owed,
nothing where none is, and the wrapper keeps serving the calls that follow."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from faultkit import FAULT_SERVER, RAW_SERVER, RawHost, raw_host, registry_of, session_events

from wraptools import Operator

pytestmark = pytest.mark.anyio

PARSE_ERROR = -32700
INVALID_REQUEST = -32600
ECHO_8 = b'{"jsonrpc":"2.0","id":8,"method":"tools/call","params":{"name":"echo","arguments":{"k":8}}}'

# (what is sent, the replies owed: (id, error code) or (id, "result"))
CASES: list[tuple[str, bytes, list[tuple[Any, Any]]]] = [
    ("not JSON", b"this is not json", [(None, PARSE_ERROR)]),
    ("truncated JSON", b'{"jsonrpc": "2.0", "id": 1, "method": "pi', [(None, PARSE_ERROR)]),
    ("not UTF-8", b"\xff\xfe\xfa{}", [(None, PARSE_ERROR)]),
    ("NaN is not JSON", b'{"jsonrpc": "2.0", "id": 2, "method": "ping", "params": {"x": NaN}}', [(None, PARSE_ERROR)]),
    ("JSON that is not JSON-RPC", b'{"foo": 1}', [(None, INVALID_REQUEST)]),
    ("a JSON scalar", b"42", [(None, INVALID_REQUEST)]),
    ("wrong jsonrpc version", b'{"jsonrpc": "1.0", "id": 5, "method": "ping"}', [(5, INVALID_REQUEST)]),
    ("no jsonrpc member", b'{"id": "five", "method": "ping"}', [("five", INVALID_REQUEST)]),
    ("method not a string", b'{"jsonrpc": "2.0", "id": 3, "method": 7}', [(3, INVALID_REQUEST)]),
    (
        "params an array",
        b'{"jsonrpc": "2.0", "id": 6, "method": "tools/call", "params": [1, 2]}',
        [(6, INVALID_REQUEST)],
    ),
    ("params a string", b'{"jsonrpc": "2.0", "id": 7, "method": "tools/list", "params": "x"}', [(7, INVALID_REQUEST)]),
    ("null request id", b'{"jsonrpc": "2.0", "id": null, "method": "ping"}', [(None, INVALID_REQUEST)]),
    ("object request id", b'{"jsonrpc": "2.0", "id": {"a": 1}, "method": "ping"}', [(None, INVALID_REQUEST)]),
    ("fractional request id", b'{"jsonrpc": "2.0", "id": 1.5, "method": "ping"}', [(None, INVALID_REQUEST)]),
    ("response with an object id", b'{"jsonrpc": "2.0", "id": {"a": 1}, "result": {}}', [(None, INVALID_REQUEST)]),
    ("empty batch", b"[]", [(None, INVALID_REQUEST)]),
    (
        "batch of valid and invalid",
        b"[" + ECHO_8 + b', 5, {"jsonrpc": "2.0", "id": 9, "method": 5}, {"jsonrpc": "2.0", "method": "x/y"}]',
        [(8, "result"), (None, INVALID_REQUEST), (9, INVALID_REQUEST)],
    ),
    (
        "cancel naming an unhashable id",
        b'{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":[1]}}',
        [],
    ),
    (
        "cancel of nothing in flight",
        b'{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":77}}',
        [],
    ),
    ("a response to nothing", b'{"jsonrpc": "2.0", "id": 4242, "result": {}}', []),
    ("blank line", b"   ", []),
    (
        "nested past the parser",
        b'{"jsonrpc":"2.0","id":10,"method":"ping","params":{"a":' + b"[" * 5000 + b"]" * 5000 + b"}}",
        [(None, PARSE_ERROR)],
    ),
    (
        "nested past 256 levels",
        b'{"jsonrpc":"2.0","id":12,"method":"ping","params":{"a":' + b"[" * 300 + b"]" * 300 + b"}}",
        [(None, PARSE_ERROR)],
    ),
    (
        "a 17 MiB line (its id is read from its start)",
        b'{"jsonrpc": "2.0", "id": 11, "method": "ping", "params": {"x": "' + b"y" * (17 * 1024 * 1024) + b'"}}',
        [(11, INVALID_REQUEST)],
    ),
    (
        "a 17 MiB line whose id comes after its params",
        b'{"jsonrpc": "2.0", "method": "ping", "params": {"x": "' + b"y" * (17 * 1024 * 1024) + b'"}, "id": 12}',
        [(None, INVALID_REQUEST)],
    ),
]


def shape(message: dict[str, Any]) -> tuple[Any, Any]:
    if "error" in message:
        return (message["id"], message["error"]["code"])
    return (message["id"], "result")


async def exchange(host: RawHost, frame: bytes) -> list[dict[str, Any]]:
    """Send one frame, then a ping as a barrier: what arrives before the ping's answer is the frame's doing."""
    before = len(host.received)
    host.send_bytes(frame + b"\n")
    barrier = host.new_id() + 100_000
    ping = host.request("ping", {}, request_id=barrier)
    await host.wait_until(ping.done, 10, f"the barrier after {frame[:60]!r}")
    found = [r.message for r in host.received[before:] if r.message.get("id") != barrier]
    if any(m.get("id") == 8 for m in found) or b'"id":8' not in frame:
        return found
    await host.next_response(8)  # the batch's echo goes upstream, so its answer can trail the barrier
    return [r.message for r in host.received[before:] if r.message.get("id") != barrier]


async def test_malformed_frames_get_the_spec_errors_and_later_calls_work(tmp_path: Path, isolated_state: Path) -> None:
    log = tmp_path / "events.db"
    async with raw_host(FAULT_SERVER, tmp_path, log=log) as host:
        await host.initialize()
        for name, frame, owed in CASES:
            got = await exchange(host, frame)
            assert sorted(map(shape, got), key=repr) == sorted(owed, key=repr), (name, got)
            for message in got:
                assert message["jsonrpc"] == "2.0"
                if "error" in message:
                    assert isinstance(message["error"]["message"], str) and message["error"]["message"], name
        echo = await host.tool("echo", {"after": "all that"})
        assert '"after": "all that"' in echo["result"]["content"][0]["text"]
        operator = Operator(await registry_of(isolated_state, host.pid))
        status = await operator.tool("status")
        frame_errors = sum(1 for _, _, owed in CASES for _, code in owed if code != "result")
        assert status["counters"]["host_frame_errors"] == frame_errors
        assert status["counters"]["errors"] == 0  # nothing malformed reached the upstream as a call
        assert await host.close() == 0
    host.assert_clean_stderr()
    host.assert_clean_stdout()
    warnings = [e for e in session_events(log, status["log"]["session_id"]) if e.kind == "warning"]
    assert len(warnings) == frame_errors


async def test_a_host_reusing_an_id_can_still_cancel_the_second_call(tmp_path: Path) -> None:
    # Two calls in flight under one host id: the first one's answer must not make the wrapper forget the second.
    cancels = tmp_path / "cancels.jsonl"
    async with raw_host(RAW_SERVER, tmp_path, env={"RAW_SERVER_LOG": str(cancels)}) as host:
        await host.initialize()
        first = host.request("tools/call", {"name": "sleep", "arguments": {"seconds": 0.2}}, request_id=7)
        host.send({"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": {"name": "hang", "arguments": {}}})
        assert "slept" in (await first)["result"]["content"][0]["text"]
        host.cancel(7)
        await host.wait_until(lambda: cancels.exists() and cancels.read_text().strip() != "", 5, "the cancel upstream")
        assert len(cancels.read_text().splitlines()) == 1
        assert await host.close() == 0
    host.assert_clean_stderr()
