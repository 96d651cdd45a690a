"""Fuzzing the message pump in both directions: arbitrary bytes, JSON values and near-valid JSON-RPC from the host
and from the upstream, interleaved with deadlines, cancellations, upstream losses and stuck writes.

The core runs in-process with fake links. Whatever arrives: no exception escapes `host_frame` / `upstream_frame`,
everything the wrapper writes is strict JSON in valid UTF-8, no host request gets more than one reply, and every
well-formed call ends with exactly one reply (none if the host cancelled it first).
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mcpwatch.config import Settings
from mcpwatch.events import UpstreamState, payload_problems
from mcpwatch.operator import UpstreamDetail
from mcpwatch.reliability.deadline import DeadlinePolicy
from mcpwatch.wrapper.calls.recorder import Recorder
from mcpwatch.wrapper.core.pump import WrapperCore
from mcpwatch.wrapper.framing import frames
from mcpwatch.wrapper.operator.actions import OperatorActions

WELL = "well-"  # ids of the harness's own well-formed calls; fuzzed ids never start with it


def strict_wire(data: bytes) -> Any:
    """What a strict peer would parse: valid UTF-8, JSON without NaN/Infinity, one line."""
    assert data.endswith(b"\n") and b"\n" not in data[:-1], data[:200]

    def reject(constant: str) -> Any:
        raise AssertionError(f"{constant} on the wire: {data[:200]!r}")

    return json.loads(data.decode("utf-8"), parse_constant=reject)


class FakeHost:
    connection = "stdio"
    key_prefix = ""
    send_raw = None

    def __init__(self) -> None:
        self.sent: list[dict[str, Any]] = []

    def send(self, message: dict[str, Any]) -> None:
        self.sent.append(strict_wire(frames.encode(message)))


class FakeUpstream:
    kind = "fake"
    target = "fake upstream"

    def __init__(self) -> None:
        self.sent: list[dict[str, Any]] = []
        self.mode = "sent"

    def send(self, message: dict[str, Any]) -> str:
        wire = frames.encode(message)
        if self.mode == "sent":
            self.sent.append(strict_wire(wire))
        return self.mode

    def describe(self) -> UpstreamDetail:
        return {"unsent_bytes": 0, "stuck": self.mode == "stuck"}

    def pause_reading(self) -> None:
        """Nothing to pause: what the fake upstream answers is never read from a pipe."""

    def resume_reading(self) -> None:
        """As pause_reading."""


def hashable_key(value: Any) -> str | None:
    try:
        return json.dumps(value, sort_keys=True)
    except (TypeError, ValueError):
        return None


class Harness:
    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()
        settings_ = Settings()
        self.core = WrapperCore(
            settings=settings_,
            deadline=DeadlinePolicy(settings_.deadline),
            recorder=Recorder("fuzz", None),
            loop=self.loop,
        )
        self.host = FakeHost()
        self.upstream = FakeUpstream()
        self.core.attach_upstream(self.upstream)
        self.core.attach_link(self.host)
        self.core.session.state = UpstreamState.READY
        self.frames_with_id: dict[str, int] = {}  # id (as JSON) -> host frames that carried it
        self.host_tokens: set[str] = set()
        self.well: list[str] = []  # ids of well-formed calls, in order
        self.cancelled_at: dict[str, int] = {}  # well id -> len(host.sent) when the host cancelled it

    def close(self) -> None:
        self.loop.close()

    # -- host side -----------------------------------------------------------------------------------------

    def _note_host_items(self, data: bytes) -> None:
        try:
            parsed = json.loads(data)
        except (ValueError, RecursionError):
            return
        for item in parsed if isinstance(parsed, list) else [parsed]:
            if isinstance(item, dict) and "id" in item:
                key = hashable_key(item["id"])
                if key is not None:
                    self.frames_with_id[key] = self.frames_with_id.get(key, 0) + 1
            if isinstance(item, dict) and isinstance(item.get("params"), dict):
                meta = item["params"].get("_meta")
                if isinstance(meta, dict) and "progressToken" in meta:
                    key = hashable_key(meta["progressToken"])
                    if key is not None:
                        self.host_tokens.add(key)

    def host_bytes(self, data: bytes) -> None:
        self._note_host_items(data)
        self.core.host_frame(self.host, data)

    def host_message(self, message: Any) -> None:
        self.host_bytes(json.dumps(message).encode())

    def well_call(self, progress: bool, tool: str) -> None:
        request_id = f"{WELL}{len(self.well)}"
        self.well.append(request_id)
        params: dict[str, Any] = {"name": tool, "arguments": {"n": len(self.well)}}
        if progress:
            params["_meta"] = {"progressToken": f"tok-{request_id}"}
        self.host_message({"jsonrpc": "2.0", "id": request_id, "method": "tools/call", "params": params})

    def well_cancel(self, index: int) -> None:
        if not self.well:
            return
        request_id = self.well[index % len(self.well)]
        self.cancelled_at.setdefault(request_id, len(self.host.sent))
        self.host_message({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": request_id}})

    # -- upstream side -------------------------------------------------------------------------------------

    def forwarded_requests(self) -> list[dict[str, Any]]:
        return [m for m in self.upstream.sent if "method" in m and "id" in m]

    def up_answer(self, index: int, shape: str, value: Any) -> None:
        requests = self.forwarded_requests()
        if not requests:
            return
        request = requests[index % len(requests)]
        up_id = request["id"]
        if shape == "result":
            message: dict[str, Any] = {
                "jsonrpc": "2.0",
                "id": up_id,
                "result": {"content": [{"type": "text", "text": "ok"}], "isError": bool(index % 2)},
            }
        elif shape == "odd_result":
            message = {"jsonrpc": "2.0", "id": up_id, "result": value}
        elif shape == "error":
            message = {"jsonrpc": "2.0", "id": up_id, "error": {"code": -1, "message": "no", "data": value}}
        elif shape == "progress":
            meta = {"dev.mcpwatch/council": {"stage": 1, "models": {"m": {"status": value}}}}
            params = {"progressToken": up_id, "progress": value, "total": 3, "message": value, "_meta": meta}
            message = {"jsonrpc": "2.0", "method": "notifications/progress", "params": params}
        else:  # a batch answering it twice
            one = {"jsonrpc": "2.0", "id": up_id, "result": {"content": []}}
            self.core.upstream_frame(json.dumps([one, one]).encode())
            return
        self.core.upstream_frame(json.dumps(message).encode())

    def deadline(self, index: int) -> None:
        pending = list(self.core.table.calls)
        if pending:
            self.core._deadline_hit(pending[index % len(pending)])

    def operator_cancel(self, index: int) -> None:
        pending = list(self.core.table.calls.values())
        if pending:
            self.core.cancel(pending[index % len(pending)].request_key)

    def lost(self) -> None:
        self.core.upstream_lost(reason="exited", exit_code=9, stderr_tail=["gone"])
        self.core.upstream_connecting()
        self.core.session.set_state(UpstreamState.READY, generation=self.core.session.ids.generation)
        self.core.session.flush()

    def set_mode(self, mode: str) -> None:
        self.upstream.mode = mode
        if mode == "sent":
            self.core.session.flush()

    # -- the end -------------------------------------------------------------------------------------------

    def finish(self) -> None:
        self.upstream.mode = "sent"
        self.core.sweep_tombstones()
        OperatorActions(self.core).status()
        self.core.shutdown("fuzz over")
        assert not self.core.table.calls and not self.core.session.waiting

    def check(self) -> None:
        replies: dict[str, int] = {}
        positions: dict[str, list[int]] = {}
        for position, message in enumerate(self.host.sent):
            assert isinstance(message, dict) and message.get("jsonrpc") == "2.0", message
            if "method" in message:
                if message["method"] == "notifications/progress" and "id" not in message:
                    token = hashable_key((message.get("params") or {}).get("progressToken"))
                    assert token in self.host_tokens, f"progress with a token the host never gave: {message}"
                continue
            assert "id" in message and ("result" in message) != ("error" in message), message
            key = hashable_key(message["id"])
            assert key is not None, message  # parsed from JSON, so it serialises again
            replies[key] = replies.get(key, 0) + 1
            positions.setdefault(key, []).append(position)
        for key, count in replies.items():
            if key != "null":
                assert count <= self.frames_with_id.get(key, 0), f"{count} replies to id {key}"
        for request_id in self.well:
            key = hashable_key(request_id)
            assert key is not None, request_id  # a well-formed call's id is JSON
            got = positions.get(key, [])
            if request_id in self.cancelled_at:
                assert len(got) <= 1, (request_id, got)
                assert all(p < self.cancelled_at[request_id] for p in got), f"reply after the host cancelled {key}"
            else:
                assert len(got) == 1, f"{request_id}: {len(got)} replies"
        for event in self.core.recorder.since(0, 1_000_000):  # whatever came in, the log gets the documented shapes
            assert payload_problems(event.kind, event.data) == [], event


json_leaf = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**70), max_value=2**70),
    st.floats(allow_nan=False, allow_infinity=False),
    st.text(max_size=8),
)
json_values = st.recursive(
    json_leaf,
    lambda children: st.lists(children, max_size=3) | st.dictionaries(st.text(max_size=4), children, max_size=3),
    max_leaves=10,
)
fuzz_ids = st.one_of(
    st.integers(min_value=-3, max_value=40),
    st.integers(min_value=2**63, max_value=2**70),
    st.text(max_size=4).filter(lambda s: not s.startswith(WELL)),
    st.none(),
    st.booleans(),
    st.floats(allow_nan=False, allow_infinity=False),
    st.lists(st.integers(), max_size=2),
    st.dictionaries(st.text(max_size=2), st.integers(), max_size=1),
)
methods = st.one_of(
    st.sampled_from(
        [
            "tools/call",
            "tools/list",
            "initialize",
            "ping",
            "notifications/cancelled",
            "notifications/progress",
            "notifications/initialized",
            "sampling/createMessage",
            "",
        ]
    ),
    st.text(max_size=6),
    st.integers(),
    st.none(),
)
meta = st.one_of(
    json_values,
    st.fixed_dictionaries(
        {},
        optional={
            "progressToken": fuzz_ids,
            "io.modelcontextprotocol/protocolVersion": json_values,
            "io.modelcontextprotocol/clientInfo": json_values,
            "dev.mcpwatch/council": json_values,
        },
    ),
)
params = st.one_of(
    json_values,
    st.fixed_dictionaries(
        {},
        optional={
            "name": st.sampled_from(["echo", "delay", "tasks.update"]) | json_values,
            "arguments": json_values,
            "_meta": meta,
            "requestId": fuzz_ids,
            "progressToken": fuzz_ids,
            "progress": json_values,
            "total": json_values,
            "message": json_values,
            "protocolVersion": json_values,
            "clientInfo": json_values,
        },
    ),
)
near_valid = st.fixed_dictionaries(
    {},
    optional={
        "jsonrpc": st.sampled_from(["2.0", "2.0", "2.0", "1.0", 2.0, None]),
        "id": fuzz_ids,
        "method": methods,
        "params": params,
        "result": json_values,
        "error": json_values,
    },
)
RAW_TEXTS = [
    b"NaN",
    b'{"jsonrpc": "2.0", "id": 1, "result": {"x": NaN}}',
    b'{"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "echo", "arguments": {"x": 1e309}}}',
    b'{"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {"name": "\\ud800"}}',
    b'{"jsonrpc": "2.0", "id": "\\udfff", "method": "ping"}',
    b'{"jsonrpc":"2.0","error":null,"id":"\\u00b9"}',  # "¹" is a digit to str.isdigit, not to int()
    b'{"jsonrpc":"2.0","id":"\\u0663","result":{}}',  # "٣": int() reads it as 3; it is no id of ours
    b'{"jsonrpc": "2.0", "method": "notifications/progress", "params": {"progressToken": 1, "message": "\\ud83d"}}',
    b'{"jsonrpc": "2.0", "id": 4, "result": {"t": -Infinity}}',
    b"[]",
    b"[[]]",
    b'[{"jsonrpc": "2.0", "id": 5, "method": "ping"}, 7, {"foo": 1}]',
    b"\xff\xfe\xfd",
    b"",
    b"   ",
    b"{" * 5000,
    b"[" * 100_000,
    b"[" * 300 + b"]" * 300,
    b"[" * 990 + b"]" * 990,
    b'{"jsonrpc": "2.0", "id": 6, "method": "tools/call", "params": {"name": "echo", "arguments": '
    + b'{"a": ' * 250
    + b"1"
    + b"}" * 250
    + b"}}",
    b'{"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": [1]}}',
    b'{"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": {"a": 1}}}',
    b'{"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 1.5}}',
    b'{"jsonrpc": "2.0", "id": {"a": 1}, "result": {}}',
    b'{"jsonrpc": "2.0", "id": [1], "error": {"code": 1, "message": "x"}}',
    b'{"jsonrpc": "2.0", "id": null, "method": "tools/call", "params": {"name": "echo"}}',
    b'{"jsonrpc": "2.0", "id": 7, "method": "sampling/createMessage", "params": {}}',
    b'{"jsonrpc": "2.0", "id": 8, "method": "tools/call", "params": {"name": "echo", "_meta": {"progressToken": {}}}}',
]
raw_texts = st.sampled_from(RAW_TEXTS)
frame_bytes = st.one_of(
    st.binary(max_size=64),
    raw_texts,
    json_values.map(lambda v: json.dumps(v).encode()),
    near_valid.map(lambda v: json.dumps(v).encode()),
    st.lists(near_valid, max_size=3).map(lambda v: json.dumps(v).encode()),
)
actions = st.one_of(
    st.tuples(st.just("host"), frame_bytes),
    st.tuples(st.just("up"), frame_bytes),
    st.tuples(st.just("call"), st.booleans(), st.sampled_from(["echo", "delay"])),
    st.tuples(st.just("cancel"), st.integers(0, 50)),
    st.tuples(
        st.just("answer"),
        st.integers(0, 50),
        st.sampled_from(["result", "result", "odd_result", "error", "progress", "twice"]),
        json_values,
    ),
    st.tuples(st.just("deadline"), st.integers(0, 50)),
    st.tuples(st.just("operator_cancel"), st.integers(0, 50)),
    st.tuples(st.just("lost")),
    st.tuples(st.just("mode"), st.sampled_from(["sent", "sent", "down", "stuck"])),
)


def run(harness: Harness, steps: list[tuple[Any, ...]]) -> None:
    for step in steps:
        kind = step[0]
        if kind == "host":
            harness.host_bytes(step[1])
        elif kind == "up":
            harness.core.upstream_frame(step[1])
        elif kind == "call":
            harness.well_call(step[1], step[2])
        elif kind == "cancel":
            harness.well_cancel(step[1])
        elif kind == "answer":
            harness.up_answer(step[1], step[2], step[3])
        elif kind == "deadline":
            harness.deadline(step[1])
        elif kind == "operator_cancel":
            harness.operator_cancel(step[1])
        elif kind == "lost":
            harness.lost()
        elif kind == "mode":
            harness.set_mode(step[1])
    harness.finish()
    harness.check()


@pytest.mark.slow
@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(steps=st.lists(actions, max_size=40))
def test_the_pump_survives_any_sequence_of_frames(steps: list[tuple[Any, ...]]) -> None:
    harness = Harness()
    try:
        run(harness, steps)
    finally:
        harness.close()


@pytest.mark.slow
@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=frame_bytes, upstream=st.booleans())
def test_one_frame_never_raises(data: bytes, upstream: bool) -> None:
    harness = Harness()
    try:
        if upstream:
            harness.core.upstream_frame(data)
        else:
            harness.host_bytes(data)
        harness.finish()
        harness.check()
    finally:
        harness.close()


def test_the_known_hard_cases_one_by_one() -> None:
    """Each of the raw texts, from each side, after a call is in flight: the call still ends exactly once."""
    for data in RAW_TEXTS:
        for side in ("host", "up"):
            harness = Harness()
            try:
                run(harness, [("call", True, "delay"), (side, data), ("answer", 0, "result", None)])
            finally:
                harness.close()
