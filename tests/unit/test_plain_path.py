"""The plain call's path (`mcpwatch/wrapper/core/plain.py`), tried against what it must not change: what the host,
the upstream and the log see is what the full path gives them (the same calls run twice, once with the plain path
turned off); a call an option touches still gets its feature, also when what the verdict rests on changes after it
was made; operator changes to the budget apply to the next call. On a manual clock, in memory."""

from __future__ import annotations

import asyncio
from dataclasses import replace
from typing import Any

import pytest
from taskrig import TaskRig, spin

from mcpwatch.config import LateResultSettings, TasksSettings
from mcpwatch.events import Event, Kind
from mcpwatch.otel import context
from mcpwatch.reliability.deadline import DeadlinePolicy
from mcpwatch.reliability.settings import ReusePolicy
from mcpwatch.reliability.statesync import StateSync
from mcpwatch.wire import DEADLINE_META, DEFAULT_HEALTH_TOOL
from mcpwatch.wrapper.core.plain import PlainCalls
from mcpwatch.wrapper.core.pump import WrapperCore
from mcpwatch.wrapper.framing import frames

UPSTREAM_TASKS: dict[str, Any] = {"tasks": {"list": {}, "cancel": {}, "requests": {"tools": {"call": {}}}}}


def full_path_only(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(PlainCalls, "request", lambda self, link, message: False)
    monkeypatch.setattr(PlainCalls, "answer", lambda self, message, framed=None: False)


def plain_taken(monkeypatch: pytest.MonkeyPatch) -> list[Any]:
    """The host ids of the calls the plain path forwarded."""
    taken: list[Any] = []
    original = PlainCalls.request

    def spying(self: PlainCalls, link: Any, message: Any) -> bool:
        forwarded = original(self, link, message)
        if forwarded:
            taken.append(message["id"])
        return forwarded

    monkeypatch.setattr(PlainCalls, "request", spying)
    return taken


def seen(rig: TaskRig) -> tuple[list[bytes], list[bytes], list[tuple[Any, ...]]]:
    """What the host was sent (as the front encodes it), what the upstream was sent, and every event as logged."""

    def row(e: Event) -> tuple[Any, ...]:
        return (e.kind, e.ts, e.mono, e.seq, e.request_id, e.tool, e.model, frames.encode(e.data))

    host = [frames.encode(m) for m in rig.host.sent]
    return host, [frames.encode(m) for m in rig.upstream.sent], [row(e) for e in rig.events()]


ODD_ANSWERS: list[bytes] = [
    b'{"jsonrpc":"2.0","id":%d,"result":{"content":[{"type":"text","text":"ok"}]}}',
    b'  {"result" : {"content" : [ ] } ,\n "id" : %d , "jsonrpc" : "2.0" }  ',  # spaces, the result first (TS SDK)
    b'{"jsonrpc":"2.0","id":%d,"result":{"content":[{"type":"text","text":"caf\\u00e9 \\ud83d\\ude00 \\/"}]}}',
    b'{"jsonrpc":"2.0","id":%d,"result":{"content":[{"type":"text","text":"{\\"id\\":7,\\"jsonrpc\\":\\"2.0\\"}"}]}}',
    b'{"jsonrpc":"2.0","id":%d,"result":{"id":"not mine","content":[],"n":12345678901234567890123}}',
    b'{"jsonrpc":"2.0","id":%d,"result":{"content":[{"type":"text","text":"lone \\ud800"}]}}',
    b'{"jsonrpc":"2.0","id":%d,"result":{"content":[],"isError":true}}',
    b'{"jsonrpc":"2.0","id":%d,"error":{"code":-32000,"message":"boom"}}',
    b'{"jsonrpc":"2.0","id":%d,"result":{"content":[],"structuredContent":{"status":"partial"}}}',
    b'{"jsonrpc":"2.0","id":%d,"result":{"content":[{"type":"text","text":"[fallback summary] short"}]}}',
    b'{"jsonrpc":"2.0","id":%d,"result":[1,2]}',
    b'{"jsonrpc":"2.0","id":%d,"result":{"task":{"taskId":"t"}}}',
    b'[{"jsonrpc":"2.0","id":%d,"result":{"content":[]}}]',
]
HOST_IDS: list[Any] = [1, "2", "x-3", 4, "é5", 6, 7, 8, 9, 10, 11, 12, 13]


def odd_answers(loop: asyncio.AbstractEventLoop) -> TaskRig:
    rig = TaskRig(loop, host_timeout_s=30.0, margin_s=5.0)
    for host_id, answer in zip(HOST_IDS, ODD_ANSWERS, strict=True):
        up_id = rig.request(host_id, "tools/call", {"name": "echo", "arguments": {"q": host_id}})
        rig.scheduler.advance(0.25)
        rig.core.upstream_frame(answer % up_id)
    return rig


def test_odd_answers_reach_the_host_and_the_log_as_the_full_path_gives_them(loop, monkeypatch) -> None:
    taken = plain_taken(monkeypatch)
    plain = seen(odd_answers(loop))
    assert taken == HOST_IDS  # every call went the plain way; each answer chose its own path
    monkeypatch.undo()
    full_path_only(monkeypatch)
    assert plain == seen(odd_answers(loop))
    replies = [frames.decode(line) for line in plain[0]]
    assert [r["id"] for r in replies] == HOST_IDS  # each host under its own id, never the upstream's
    assert replies[3]["result"]["content"][0]["text"] == '{"id":7,"jsonrpc":"2.0"}'  # an id inside the text stays


def endings(loop: asyncio.AbstractEventLoop) -> TaskRig:
    """Calls that end every way but an answer: a deadline, the host's cancel, the operator's cancel; each upstream
    answer comes late; and a call answered after a call in the table ended out of order."""
    rig = TaskRig(loop, host_timeout_s=3.0, margin_s=1.0)
    cut = rig.request("cut", "tools/call", {"name": "slow", "arguments": {}})
    dropped = rig.request("dropped", "tools/call", {"name": "slow", "arguments": {"n": 1}})
    operator = rig.request("op", "tools/call", {"name": "slow", "arguments": {"n": 2}})
    quick = rig.request("quick", "tools/call", {"name": "fast"})
    rig.scheduler.advance(0.5)
    rig.core.host_message(
        rig.host, {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": "dropped"}}
    )
    rig.core.cancel("op")
    rig.answer(quick, {"content": []})
    rig.scheduler.advance(2.0)  # the deadline (2 s) cuts the first
    for up_id in (cut, dropped, operator):
        rig.answer(up_id, {"content": [{"type": "text", "text": "late"}]})
    spin(loop)
    return rig


def test_deadlines_cancels_and_late_results_are_what_the_full_path_gives(loop, monkeypatch) -> None:
    taken = plain_taken(monkeypatch)
    plain = seen(endings(loop))
    assert taken == ["cut", "dropped", "op", "quick"]
    monkeypatch.undo()
    full_path_only(monkeypatch)
    assert plain == seen(endings(loop))
    kinds = [row[0] for row in plain[2]]
    assert kinds.count(Kind.REQUEST_END) == 4 and Kind.LATE_RESULT in kinds


def with_state_sync(loop: asyncio.AbstractEventLoop) -> TaskRig:
    rig = TaskRig(loop, host_timeout_s=30.0, margin_s=5.0)
    sync = StateSync([{"match": "notes.write", "invalidates": ["notes.*"]}])
    rig.core = WrapperCore(
        settings=rig.settings,
        deadline=DeadlinePolicy(rig.settings.deadline, environ={}),
        recorder=rig.recorder,
        loop=loop,
        scheduler=rig.scheduler,
        state_sync=sync,
    )
    rig.core.attach_upstream(rig.upstream)
    rig.core.attach_link(rig.host)
    rig.core.session.set_state(rig.core.session.state.READY)
    return rig


def test_state_sync_for_one_tool_still_decorates_it_and_the_others_go_plain(loop, monkeypatch) -> None:
    taken = plain_taken(monkeypatch)
    rig = with_state_sync(loop)
    for host_id, tool in ((1, "notes.read"), (2, "notes.write"), (3, "notes.read"), (4, "notes.write")):
        rig.answer(rig.request(host_id, "tools/call", {"name": tool, "arguments": {}}), {"content": []})
    assert taken == [1, 3]
    writes = [r for r in rig.replies() if r["id"] in (2, 4)]
    assert all("invalidate" in r["result"]["content"][0]["text"].lower() for r in writes), writes
    assert [e.tool for e in rig.events(Kind.INVALIDATION)] == ["notes.write", "notes.write"]


def test_reuse_for_one_tool_still_answers_its_identical_call_from_the_late_result(loop, monkeypatch) -> None:
    taken = plain_taken(monkeypatch)
    reuse = LateResultSettings(reuse=(ReusePolicy("search", 60.0),))
    rig = TaskRig(loop, host_timeout_s=3.0, margin_s=1.0, late_results=reuse)
    up = rig.request(1, "tools/call", {"name": "search", "arguments": {"q": "tides"}})
    rig.answer(rig.request(2, "tools/call", {"name": "other", "arguments": {"q": "tides"}}), {"content": []})
    rig.scheduler.advance(2.0)  # cut
    rig.answer(up, {"content": [{"type": "text", "text": "found late"}]})
    sent = len(rig.upstream.sent)
    rig.request(3, "tools/call", {"name": "search", "arguments": {"q": "tides"}})
    assert len(rig.upstream.sent) == sent  # answered at once, never sent upstream
    assert "found late" in frames.encode(rig.replies()[-1]).decode()
    assert [e.request_id for e in rig.events(Kind.LATE_REUSE)] == ["3"]
    assert taken == [2]  # the tool with no reuse rule went plain; "search" never did


def bridging(loop: asyncio.AbstractEventLoop, first: str) -> TaskRig:
    """A host without tasks, an upstream with them, bridge mode "optional"; `first`: what the first listing says
    of `quick`'s task support."""
    rig = TaskRig(loop, host_timeout_s=30.0, margin_s=0.0, tasks=TasksSettings(bridge="optional"))
    init = {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "claude-code"}}
    rig.answer(rig.request(0, "initialize", init), {"protocolVersion": "2025-11-25", "capabilities": UPSTREAM_TASKS})
    listed = [
        {"name": "research", "inputSchema": {}, "execution": {"taskSupport": "required"}},
        {"name": "quick", "inputSchema": {}, "execution": {"taskSupport": first}},
    ]
    rig.answer(rig.request("l", "tools/list", {}), {"tools": listed})
    return rig


def test_the_bridge_for_one_tool_still_runs_it_as_a_task_and_the_others_go_plain(loop, monkeypatch) -> None:
    taken = plain_taken(monkeypatch)
    rig = bridging(loop, "forbidden")
    rig.request(1, "tools/call", {"name": "research", "arguments": {}})
    rig.request(2, "tools/call", {"name": "quick", "arguments": {}})
    calls = [m for m in rig.upstream.sent if m.get("method") == "tools/call"]
    assert ["task" in m["params"] for m in calls] == [True, False]
    assert taken == [2]


def test_a_tool_listed_again_as_bridgeable_is_bridged_on_its_next_call(loop, monkeypatch) -> None:
    taken = plain_taken(monkeypatch)
    rig = bridging(loop, "forbidden")
    rig.answer(rig.request(1, "tools/call", {"name": "quick", "arguments": {}}), {"content": []})
    listed = [{"name": "quick", "inputSchema": {}, "execution": {"taskSupport": "optional"}}]
    rig.answer(rig.request("l2", "tools/list", {}), {"tools": listed})  # the verdict for quick is made again
    rig.request(2, "tools/call", {"name": "quick", "arguments": {}})
    calls = [m for m in rig.upstream.sent if m.get("method") == "tools/call"]
    assert ["task" in m["params"] for m in calls] == [False, True]
    assert taken == [1]


def test_an_upstream_that_starts_taking_tasks_makes_unknown_tools_list_first(loop, monkeypatch) -> None:
    taken = plain_taken(monkeypatch)
    rig = TaskRig(loop, host_timeout_s=30.0, margin_s=0.0)
    init = {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "claude-code"}}
    rig.answer(rig.request(0, "initialize", init), {"protocolVersion": "2025-11-25", "capabilities": {}})
    rig.answer(rig.request(1, "tools/call", {"name": "research"}), {"content": []})  # no tasks upstream: plain
    rig.answer(rig.request(9, "initialize", init), {"protocolVersion": "2025-11-25", "capabilities": UPSTREAM_TASKS})
    rig.request(2, "tools/call", {"name": "research"})
    spin(loop)
    assert rig.upstream_methods()[-1] == "tools/list"  # its task support is asked before the call goes
    assert taken == [1]


def test_the_hosts_health_check_is_still_logged_as_one(loop, monkeypatch) -> None:
    taken = plain_taken(monkeypatch)
    rig = TaskRig(loop, host_timeout_s=30.0, margin_s=0.0)
    rig.answer(
        rig.request(1, "tools/call", {"name": DEFAULT_HEALTH_TOOL}), {"content": [{"type": "text", "text": "{}"}]}
    )
    rig.answer(rig.request(2, "tools/call", {"name": "echo"}), {"content": []})
    assert [e.data["source"] for e in rig.events(Kind.HEALTH_CHECK)] == ["host"]
    assert taken == [2]


def test_shapes_an_option_can_touch_take_the_full_path(loop, monkeypatch) -> None:
    taken = plain_taken(monkeypatch)
    rig = TaskRig(loop, host_timeout_s=30.0, margin_s=0.0)
    rig.request(1, "tools/call", {"name": "echo", "_meta": {"progressToken": "p"}})  # heartbeats, progress
    rig.request(2, "tools/call", {"name": "echo", "task": {"ttl": 1000}})  # a task asked for
    rig.request(3, "tools/call", {"name": "echo", "requestState": "s"})  # a bridged task's input
    rig.request(True, "tools/call", {"name": "echo"})  # not a valid id
    rig.request(5, "tools/call", {"name": 5})  # not a tool name
    rig.request(6, "tools/call", {"name": "x" * 300})  # a name too long to keep a verdict for
    rig.core.host_message(rig.host, {"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": []})
    rig.core.host_message(rig.host, {"jsonrpc": "1.0", "id": 8, "method": "tools/call", "params": {"name": "e"}})
    rig.request(9, "tools/call", {"name": "echo"})
    assert taken == [9]


def test_a_call_while_the_upstream_is_not_ready_waits_as_before(loop, monkeypatch) -> None:
    taken = plain_taken(monkeypatch)
    rig = TaskRig(loop, host_timeout_s=30.0, margin_s=0.0)
    rig.core.upstream_lost(reason="exited")
    rig.request(1, "tools/call", {"name": "echo"})
    assert taken == [] and len(rig.core.session.waiting) == 1


def test_operator_changes_to_the_budget_apply_to_the_next_plain_call(loop, monkeypatch) -> None:
    taken = plain_taken(monkeypatch)
    environ: dict[str, str] = {}
    rig = TaskRig(loop, host_timeout_s=30.0, margin_s=0.0)
    rig.core.deadline = DeadlinePolicy(rig.settings.deadline, environ=environ)
    rig.core.plain._budget = rig.core.deadline.budget  # the rig's policy, as the core was built with
    deadline = rig.core.deadline

    def stamped(host_id: str) -> int:
        up = rig.request(host_id, "tools/call", {"name": "echo"})
        return int(next(m for m in rig.upstream.sent if m["id"] == up)["params"]["_meta"][DEADLINE_META])

    assert stamped("a") == 30_000
    deadline.set_margin(10.0)
    assert stamped("b") == 20_000
    deadline.set_host_timeout(12.0)
    assert stamped("c") == 2_000
    deadline.set_deadline(5.0)
    assert stamped("d") == 5_000
    deadline.reset()
    environ["MCPWATCH_TOOL_CALL_DEADLINE_SEC"] = "4"  # a variable changed while the wrapper runs
    assert stamped("e") == 4_000
    assert taken == ["a", "b", "c", "d", "e"]
    starts = {e.request_id: e.data["budget_s"] for e in rig.events(Kind.REQUEST_START)}
    assert starts == {"a": 30.0, "b": 20.0, "c": 2.0, "d": 5.0, "e": 4.0}
    rig.scheduler.advance(2.0)
    rig.scheduler.advance(2.0)
    rig.scheduler.advance(1.0)
    cut = [(e.request_id, e.mono) for e in rig.events(Kind.REQUEST_END)]
    assert cut == [("c", 2.0), ("e", 4.0), ("d", 5.0)]  # each at its own deadline, in order


def test_settings_with_options_for_no_tool_leave_every_call_plain(loop, monkeypatch) -> None:
    taken = plain_taken(monkeypatch)
    tasks = replace(TasksSettings(), bridge="off", offer=("other.*",))
    rig = TaskRig(loop, host_timeout_s=30.0, margin_s=0.0, tasks=tasks)
    for n in range(3):
        rig.answer(rig.request(n, "tools/call", {"name": "echo"}), {"content": []})
    assert taken == [0, 1, 2]


class CountingBits:
    """`random.getrandbits` made predictable, so two runs draw the same span ids."""

    def __init__(self) -> None:
        self.n = 0

    def getrandbits(self, bits: int) -> int:
        self.n += 1
        return self.n


def traced(loop: asyncio.AbstractEventLoop, monkeypatch: pytest.MonkeyPatch) -> TaskRig:
    """Calls with OpenTelemetry export on: plain ones, one whose host sent its own `traceparent`, one cut. New
    traces take the pairs (n, n) in turn, a span under a host's trace the numbers drawn."""
    monkeypatch.setattr(context, "random", CountingBits())
    monkeypatch.setattr(context, "_ids", iter([(f"{n:032x}", f"{n:016x}") for n in range(1, 10)]))
    rig = TaskRig(loop, host_timeout_s=3.0, margin_s=1.0, trace_requests=True)
    first = rig.request(1, "tools/call", {"name": "echo", "arguments": {"q": 1}})
    parent = {"traceparent": "00-" + "a" * 32 + "-" + "b" * 16 + "-01"}
    joined = rig.request(2, "tools/call", {"name": "echo", "arguments": {}, "_meta": parent})
    cut = rig.request(3, "tools/call", {"name": "slow"})
    rig.answer(first, {"content": []})
    rig.answer(joined, {"content": []})
    rig.scheduler.advance(2.5)
    rig.answer(cut, {"content": []})
    spin(loop)
    return rig


def test_with_trace_context_plain_calls_stay_plain_and_carry_the_same_span(loop, monkeypatch) -> None:
    taken = plain_taken(monkeypatch)
    plain = seen(traced(loop, monkeypatch))
    assert taken == [1, 3]  # the host's own traceparent is in `_meta`: the full path
    monkeypatch.undo()
    full_path_only(monkeypatch)
    assert plain == seen(traced(loop, monkeypatch))
    sent = [frames.decode(line) for line in plain[1]]
    parents = [m["params"]["_meta"].get("traceparent") for m in sent if m.get("method") == "tools/call"]
    assert parents[0] == f"00-{1:032x}-{1:016x}-01"  # a new trace (128 bits) and the wrapper's span (64), at once
    assert parents[1] == f"00-{'a' * 32}-{1:016x}-01"  # the host's trace, the wrapper's span under the host's
    assert parents[2] == f"00-{2:032x}-{2:016x}-01"
    starts = [frames.decode(row[-1]) for row in plain[2] if row[0] == Kind.REQUEST_START]
    assert (starts[0]["trace_id"], starts[0]["span_id"]) == (f"{1:032x}", f"{1:016x}")


def test_an_answer_the_host_cannot_take_is_logged_as_the_full_path_logs_it(loop, monkeypatch) -> None:
    """A host link that takes no more answers (an HTTP host whose request is closed: `send` gives False): the plain
    path writes the same warning and the same `request_end`, `delivered` false, as the full path."""

    def run() -> list[tuple[Any, ...]]:
        rig = TaskRig(loop, host_timeout_s=30.0, margin_s=5.0)
        monkeypatch.setattr(rig.host, "send", lambda message: False)
        for host_id in (1, "two"):
            up_id = rig.request(host_id, "tools/call", {"name": "echo", "arguments": {}})
            rig.scheduler.advance(0.25)
            rig.core.upstream_frame(b'{"jsonrpc":"2.0","id":%d,"result":{"content":[]}}' % up_id)
        return seen(rig)[2]

    taken = plain_taken(monkeypatch)
    plain = run()
    assert taken == [1, "two"]
    ends = [frames.decode(row[-1]) for row in plain if row[0] == Kind.REQUEST_END]
    assert [end.get("delivered") for end in ends] == [False, False]
    assert [row[0] for row in plain].count(Kind.WARNING) == 2
    full_path_only(monkeypatch)
    assert run() == plain
