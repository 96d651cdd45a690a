"""Deadlines in the wrapper's core on a manual clock: the budget boundary, the time left stamped as a frame leaves
the queue, the queue's own bound, cancel upstream once, the tombstone and its expiry — exact to the millisecond,
with no real waiting. (The end-to-end tests in tests/integration drive the same paths through a real process.)"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from typing import Any

import pytest
from taskrig import CoreRig

from mcpwatch.clock import ManualClock
from mcpwatch.events import Kind, UpstreamState
from mcpwatch.testing.scheduler import ManualScheduler
from mcpwatch.wire import DEADLINE_META, PARTIAL_META


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
    assert rig.scheduler.pending == 0
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
