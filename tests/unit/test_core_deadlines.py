"""Deadlines in the wrapper's core on a manual clock: the budget boundary, the time left stamped as a frame leaves
the queue, the queue's own bound, cancel upstream once, the tombstone and its expiry — exact to the millisecond,
with no real waiting. (tests/integration/test_wrap_deadline.py drives the deadline's stamp through a real process.)"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from typing import Any

import pytest
from taskrig import CoreRig, RawRig

from mcpwatch.clock import ManualClock
from mcpwatch.config import Settings, settings_from_mapping
from mcpwatch.events import Kind, UpstreamState
from mcpwatch.testing.scheduler import ManualScheduler
from mcpwatch.wire import DEADLINE_META, PARTIAL_META
from mcpwatch.wrapper.operator.actions import OperatorActions


class Rig(CoreRig):
    """A core on a manual clock whose upstream becomes ready when the test says."""

    def ready(self) -> None:
        self.core.session.set_state(UpstreamState.READY)
        self.core.session.flush()

    def call(self, request_id: str, tool: str = "slow", progress: bool = False) -> None:
        params: dict[str, Any] = {"name": tool, "arguments": {}}
        if progress:
            params["_meta"] = {"progressToken": f"tok-{request_id}"}
        self.core.host_message(
            self.host, {"jsonrpc": "2.0", "id": request_id, "method": "tools/call", "params": params}
        )

    def events(self, kind: str) -> list[Any]:
        return [e for e in self.recorder.since(0, 10_000) if e.kind == kind]

    def replies(self) -> list[dict[str, Any]]:
        return [m for m in self.host.sent if "id" in m and "method" not in m]


@pytest.fixture
def loop() -> Iterator[asyncio.AbstractEventLoop]:
    loop = asyncio.new_event_loop()
    yield loop
    loop.close()


def test_a_call_is_answered_exactly_at_its_budget_and_its_late_answer_dropped(loop) -> None:
    rig = Rig(loop, host_timeout_s=3.0, margin_s=2.0)  # a budget of 1 s
    rig.ready()
    rig.call("a", progress=True)
    up_id = rig.upstream.sent[0]["id"]
    progress = {"progressToken": up_id, "progress": 3, "total": 8, "message": "step 3"}
    rig.core.upstream_message({"jsonrpc": "2.0", "method": "notifications/progress", "params": progress})
    rig.scheduler.advance(0.999)
    assert rig.replies() == []  # a millisecond before the budget: still waiting
    rig.scheduler.advance(0.001)
    [reply] = rig.replies()
    assert reply["id"] == "a" and reply["result"]["isError"] is True
    text = reply["result"]["content"][0]["text"]
    assert "deadline budget of 1 s" in text and "stopped after 1.0 s" in text and "last progress 3/8 — step 3" in text
    partial = reply["result"]["_meta"][PARTIAL_META]
    assert (
        partial["outcome"] == "deadline"
        and partial["elapsed_s"] == 1.0
        and partial["last_progress"] == {"progress": 3, "total": 8}
    )
    assert partial["progress_messages"] == 1 and "step 3" not in str(partial)  # the message is the text's alone
    [end] = rig.events(Kind.REQUEST_END)
    assert (end.data["outcome"], end.data["duration_s"], end.data["partial"]) == ("deadline", 1.0, True)
    cancels = [m for m in rig.upstream.sent if m.get("method") == "notifications/cancelled"]
    assert cancels == [
        {
            "jsonrpc": "2.0",
            "method": "notifications/cancelled",
            "params": {"requestId": up_id, "reason": "mcpwatch: deadline"},
        }
    ]
    # The stubborn upstream answers anyway: dropped against the tombstone, the host hears nothing more.
    rig.core.upstream_message({"jsonrpc": "2.0", "id": up_id, "result": {"content": []}})
    assert len(rig.replies()) == 1
    [hit] = rig.events(Kind.TOMBSTONE_HIT)
    assert (hit.request_id, hit.data["what"], hit.data["age_s"]) == ("a", "response", 0.0)
    assert rig.core.counters.timeouts == 1 and rig.core.counters.late_dropped == 1


def test_the_tombstone_lives_exactly_its_ttl(loop) -> None:
    rig = Rig(loop, host_timeout_s=3.0, margin_s=2.0)
    rig.ready()
    rig.call("a")
    up_id = rig.upstream.sent[0]["id"]
    rig.scheduler.advance(1.0)
    [added] = rig.events(Kind.TOMBSTONE_ADD)
    assert added.data["ttl_s"] == 1.0 + 10 + 30 + 5  # this call's budget + init + backoff max + epsilon
    rig.scheduler.advance(45.999)
    assert rig.core.sweep_tombstones() == 0
    rig.scheduler.advance(0.001)
    assert rig.core.sweep_tombstones() == 1
    rig.core.upstream_message({"jsonrpc": "2.0", "id": up_id, "result": {}})
    [unknown] = rig.events(Kind.UNKNOWN_RESPONSE)
    assert unknown.data == {"up_id": up_id, "reason": "expired_tombstone"}


def test_the_deadline_sent_upstream_is_the_time_left_when_the_frame_leaves_the_queue(loop) -> None:
    rig = Rig(loop, host_timeout_s=12.0, margin_s=2.0)  # a budget of 10 s
    rig.call("a")  # the upstream is still connecting: the call waits in the queue
    assert rig.upstream.sent == []
    rig.scheduler.advance(2.5)
    rig.ready()
    [forwarded] = rig.upstream.sent
    assert forwarded["params"]["_meta"][DEADLINE_META] == 7500
    rig.scheduler.advance(7.5)  # the budget still counts from the host's request, not from the send
    assert rig.replies()[0]["result"]["_meta"][PARTIAL_META]["outcome"] == "deadline"


def test_a_queued_call_that_runs_out_of_budget_says_the_upstream_was_not_there(loop) -> None:
    rig = Rig(loop, host_timeout_s=3.0, margin_s=2.0)
    rig.call("a")
    rig.scheduler.advance(1.0)
    [reply] = rig.replies()
    text = reply["result"]["content"][0]["text"]
    assert "the upstream MCP server was not available (state: connecting)" in text
    assert not any(m.get("method") == "notifications/cancelled" for m in rig.upstream.sent)  # never sent: no cancel
    assert rig.events(Kind.TOMBSTONE_ADD) == []
    rig.ready()
    assert rig.upstream.sent == []  # answered meanwhile: not sent when the upstream comes


def test_a_queued_request_other_than_a_call_waits_the_handshake_and_backoff_bound(loop) -> None:
    rig = Rig(loop, host_timeout_s=3.0, margin_s=2.0)
    rig.core.host_message(rig.host, {"jsonrpc": "2.0", "id": 7, "method": "tools/list"})
    rig.scheduler.advance(39.999)  # init timeout 10 s + longest backoff 30 s
    assert rig.replies() == []
    rig.scheduler.advance(0.001)
    [reply] = rig.replies()
    assert reply["id"] == 7 and reply["error"]["message"].endswith("(state: connecting) for 40 s")
    [end] = rig.events(Kind.REQUEST_END)
    assert (end.data["outcome"], end.data["duration_s"]) == ("error", 40.0)


def test_an_answer_in_time_stops_the_deadline(loop) -> None:
    rig = Rig(loop, host_timeout_s=3.0, margin_s=2.0)
    rig.ready()
    rig.call("a")
    up_id = rig.upstream.sent[0]["id"]
    rig.scheduler.advance(0.75)
    rig.core.upstream_message({"jsonrpc": "2.0", "id": up_id, "result": {"content": [], "isError": False}})
    assert len(rig.core.deadlines) == 0  # no deadline left to come
    rig.scheduler.advance(10.0)
    [reply] = rig.replies()
    assert reply == {"jsonrpc": "2.0", "id": "a", "result": {"content": [], "isError": False}}
    [end] = rig.events(Kind.REQUEST_END)
    assert (end.data["outcome"], end.data["duration_s"]) == ("ok", 0.75)


def test_the_manual_scheduler_runs_due_timers_in_order_at_their_own_time() -> None:
    scheduler = ManualScheduler(ManualClock(monotonic=0.0))
    seen: list[tuple[str, float]] = []
    scheduler.call_later(2.0, lambda: seen.append(("b", scheduler.time())))
    scheduler.call_later(1.0, lambda: seen.append(("a", scheduler.time())))
    cancelled = scheduler.call_later(1.5, lambda: seen.append(("never", scheduler.time())))
    cancelled.cancel()
    assert scheduler.next_due_in() == 1.0
    assert scheduler.advance(1.9) == 1
    assert seen == [("a", 1.0)] and scheduler.time() == 1.9
    assert scheduler.advance(0.1) == 1
    assert seen == [("a", 1.0), ("b", 2.0)] and scheduler.pending == 0
    with pytest.raises(ValueError):
        scheduler.advance(-1)


# -- The deadline paths a real wrapper's tests drove over pipes (tests/integration/test_wrap_deadline.py), here
# -- against RawUpstream, the raw fixture server's tools in memory, with the settings the environment would give.


def test_deadline_answers_in_budget_with_partial_progress_then_drops_the_late_answer(loop) -> None:
    env = {"MCPWATCH_HOST_TOOLS_CALL_TIMEOUT_SEC": "3", "MCPWATCH_TOOL_CALL_DEADLINE_MARGIN_SEC": "2"}
    rig = RawRig(loop, base=Settings(), environ=env)
    params = {"name": "sleep", "arguments": {"seconds": 2.4, "steps": 8}, "_meta": {"progressToken": "p"}}
    request_id = rig.send("tools/call", params)
    rig.scheduler.advance(1.0)  # a step every 0.3 s: three before the cut
    reply = rig.reply_to(request_id)
    progress = [m["params"]["message"] for m in rig.notifications()]
    assert progress == ["step 1", "step 2", "step 3"]
    assert reply["result"]["isError"] is True
    text = reply["result"]["content"][0]["text"]
    assert "'sleep'" in text and "deadline budget of 1 s" in text
    assert "host timeout 3 s" in text and "margin 2 s" in text and "MCPWATCH_TOOL_CALL_DEADLINE_MARGIN_SEC" in text
    assert "last progress 3/8 — step 3" in text
    assert reply["result"]["_meta"][PARTIAL_META]["last_progress"]["progress"] == 3
    # the stubborn server goes on: five more steps and its answer at 2.4 s, all dropped, none delivered
    rig.scheduler.advance(1.4)
    status = OperatorActions(rig.core).status()
    assert status["counters"]["timeouts"] == 1 and status["counters"]["late_dropped"] == 6
    assert status["tombstones"]["count"] == 1
    assert len(rig.notifications()) == 3 and len([m for m in rig.host.sent if m.get("id") == request_id]) == 1
    assert rig.tool("echo", {"x": 1})["result"]["isError"] is False  # the next call is unaffected
    assert len(rig.upstream.cancelled) == 1
    assert len(rig.events(Kind.TOMBSTONE_ADD)) == 1 and len(rig.events(Kind.TOMBSTONE_HIT)) == 6
    [end] = [e for e in rig.events(Kind.REQUEST_END) if e.tool == "sleep"]
    assert end.data["outcome"] == "deadline"


def test_a_host_cancel_is_forwarded_with_the_upstream_id(loop) -> None:
    rig = RawRig(loop, base=Settings())
    request_id = rig.send("tools/call", {"name": "hang", "arguments": {}})
    [call] = [m for m in rig.upstream.sent if m.get("method") == "tools/call"]
    rig.core.host_message(
        rig.host, {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": request_id}}
    )
    assert rig.upstream.cancelled == [call["id"]] and isinstance(call["id"], int)
    assert [m for m in rig.host.sent if m.get("id") == request_id] == []  # a cancelled call is not answered
    assert rig.tool("echo")["result"]["isError"] is False


def test_a_per_tool_budget_sets_its_own_tombstone_ttl(loop) -> None:
    rig = RawRig(loop, base=settings_from_mapping({"deadline": {"tools": {"sleep": 0.5}}}))
    request_id = rig.send("tools/call", {"name": "sleep", "arguments": {"seconds": 1.5, "steps": 1}})
    rig.scheduler.advance(0.5)
    result = rig.reply_to(request_id)["result"]
    assert (
        result["isError"]
        and "deadline budget of 0.5 s (mcpwatch.toml [deadline.tools] sleep" in result["content"][0]["text"]
    )
    assert OperatorActions(rig.core).status()["tombstones"]["ttl_s"] == 155  # the global formula: 110 + 10 + 30 + 5
    assert [e.data["ttl_s"] for e in rig.events(Kind.TOMBSTONE_ADD)] == [45.5]  # this call's 0.5 s + 10 + 30 + 5
