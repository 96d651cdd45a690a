"""Era translation attacked by the hosts whose calls it makes again in the 2026 era: a host session that ends while
its translated call runs (its task, which nobody else may take, is cancelled upstream at once, not after `[tasks]
reuse_s`), another session that tries to cancel or take a translated call, and many sessions at once."""

from __future__ import annotations

from taskrig import spin
from test_era_translate import RESULT, Front, Session, replies

from mcpwatch.events import Kind
from mcpwatch.logview.report import build_report


def test_a_session_that_ends_mid_call_has_its_translated_task_cancelled_at_once(loop) -> None:
    front = Front(loop, budget_s=30.0)
    host, other = Session("a1"), Session("b2")
    core, _ = front.session(host)
    other_core, _ = front.session(other)
    front.call(core, host, 1)
    front.discover()
    front.task_made()
    front.call(other_core, other, 1)  # the same call of another session: a task of its own, that goes on
    again = front.shared_sent("tools/call")[-1]
    task = {"resultType": "task", "taskId": "t-2", "status": "working", "ttlMs": 60000, "pollIntervalMs": 1000}
    front.answer(front.shared, again["id"], task)
    core.detach_link(host)  # the host's session ends (DELETE, idle expiry) while its call waits
    spin(loop)
    cancels = [m["params"]["taskId"] for m in front.shared_sent("tasks/cancel")]
    assert cancels == ["t-1"]  # at once, not reuse_s (600 s) later; the other session's task untouched
    cancelled = {"resultType": "complete", "taskId": "t-1", "status": "cancelled", "ttlMs": 60000}
    front.answer(front.shared, front.shared_sent("tasks/cancel")[-1]["id"], cancelled)
    warnings = [e.data["message"] for e in front.recorder.since(0, 1000) if e.kind == Kind.WARNING]
    assert any("session ended" in w and "t-1" in w for w in warnings)
    front.scheduler.advance(1.0)
    spin(loop)
    polled = {m["params"]["taskId"] for m in front.shared_sent("tasks/get")[-2:]}
    assert polled == {"t-2"}  # the ended session's task is polled no more


def test_a_session_that_ends_before_its_translated_call_became_a_task_cancels_that_call(loop) -> None:
    front = Front(loop, budget_s=30.0)
    host = Session("a1")
    core, _ = front.session(host)
    front.call(core, host, 1)
    front.discover()
    (call,) = front.shared_sent("tools/call")  # made in the 2026 era, not answered yet
    core.detach_link(host)
    spin(loop)
    cancelled = [m for m in front.shared_up.sent if m.get("method") == "notifications/cancelled"]
    assert [m["params"]["requestId"] for m in cancelled] == [call["id"]]
    assert front.shared.table.calls == {}  # nothing of that session's is left waiting in the shared core


def test_a_finished_translated_result_is_dropped_when_its_session_ends(loop) -> None:
    front = Front(loop, budget_s=2.0)
    host = Session("a1")
    core, _ = front.session(host)
    front.call(core, host, 1)
    front.discover()
    front.task_made()
    front.scheduler.advance(2.0)  # cut: the task goes on
    spin(loop)
    front.poll("completed", result=RESULT)  # it ends: its result waits reuse_s for the same session's retry
    assert front.shared.bridge.runs
    core.detach_link(host)
    spin(loop)
    assert front.shared.bridge.runs == {}  # the session is gone: nobody may take it any more
    assert replies(host)[-1]["id"] == 1


def test_a_translated_call_is_one_call_in_the_report(loop) -> None:
    front = Front(loop)
    host = Session("a1")
    core, _ = front.session(host)
    front.call(core, host, 1)
    front.discover()
    front.task_made()
    front.poll("completed", result=RESULT)
    assert replies(host)[-1] == {"jsonrpc": "2.0", "id": 1, "result": RESULT}
    events = front.recorder.since(0, 1000)
    starts = [e for e in events if e.kind == Kind.REQUEST_START and e.tool == "crunch"]
    assert {e.request_id: e.data.get("made_for") for e in starts} == {"a1/1": None, "a1/2026:1": "a1/1"}
    report = build_report(events)
    [crunch] = [row for row in report["tools"] if row["tool"] == "crunch"]
    assert crunch["calls"] == 1 and report["requests"]["by_method"]["tools/call"] == 1
    assert report["requests"]["tasks"] == 1 and report["requests"]["unfinished"] == 0
    assert report["requests"]["by_outcome"]["ok"] == 3  # initialize, tools/list and the one call
