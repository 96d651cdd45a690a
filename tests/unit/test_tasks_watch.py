"""A task-augmented tools/call is watched as one operation: one request from creation to terminal status, with its
status changes, its true duration, and its polls attributed to it rather than counted as calls; the tools/call
budget never cuts it, and the operator's cancel is a tasks/cancel. Both eras, on a manual clock."""

from __future__ import annotations

import asyncio

import pytest
from taskrig import TaskRig, task_2025

from mcpwatch.events import Kind
from mcpwatch.logview.report import build_report
from mcpwatch.logview.whatif import calls_from_events
from mcpwatch.otel.spans import session_spans

CALL = {"name": "research", "arguments": {"topic": "mcp"}, "task": {"ttl": 60000}}
REPORT = {"content": [{"type": "text", "text": "# Report"}]}


def _started_task(rig: TaskRig, task_id: str = "t-1") -> int:
    up = rig.request(1, "tools/call", CALL)
    rig.answer(up, {"task": task_2025(task_id, message="Gathering sources...")})
    return up


def test_a_task_is_one_request_from_creation_to_terminal_status_and_its_polls_are_not_calls(loop) -> None:
    rig = TaskRig(loop)  # a budget of 2 s: the task runs 5 s
    _started_task(rig)
    [created] = rig.replies()
    assert created["result"]["task"]["taskId"] == "t-1"  # the host gets the task at once, unchanged
    assert rig.events(Kind.REQUEST_END) == []  # … but the call has not ended: it is the task now
    for second, message in enumerate(["Analyzing content...", "Analyzing content...", "Synthesizing..."], start=1):
        rig.scheduler.advance(1.0)
        poll = rig.request(10 + second, "tasks/get", {"taskId": "t-1"})
        rig.answer(poll, task_2025("t-1", message=message))
    rig.scheduler.advance(2.0)  # 5 s in: past the 2 s budget, and nothing cut it
    assert "notifications/cancelled" not in rig.upstream_methods()
    rig.answer(rig.request(20, "tasks/get", {"taskId": "t-1"}), task_2025("t-1", "completed", "Done"))
    rig.scheduler.advance(0.1)
    rig.answer(rig.request(21, "tasks/result", {"taskId": "t-1"}), REPORT)

    assert [r["id"] for r in rig.replies()] == [1, 11, 12, 13, 20, 21]  # every poll answered as the upstream did
    starts = rig.events(Kind.REQUEST_START)
    assert [e.data["method"] for e in starts] == ["tools/call"]  # polls never appear as requests
    statuses = [(e.data["status"], e.data["status_message"], e.data["seen_by"]) for e in rig.events(Kind.TASK_STATUS)]
    assert statuses == [
        ("working", "Analyzing content...", "tasks/get"),  # the repeated message is no change
        ("working", "Synthesizing...", "tasks/get"),
        ("completed", "Done", "tasks/get"),
    ]
    [end] = rig.events(Kind.REQUEST_END)
    assert (end.request_id, end.tool, end.data["outcome"], end.data["duration_s"]) == ("1", "research", "ok", 5.0)
    assert (end.data["task_id"], end.data["task_status"], end.data["polls"]) == ("t-1", "completed", 5)
    assert "# Report" in end.data["result_preview"]
    assert rig.core.counters.requests == 1 and rig.core.counters.ok == 1


def test_a_completed_task_whose_result_is_never_fetched_still_ends(loop) -> None:
    rig = TaskRig(loop)
    _started_task(rig)
    rig.scheduler.advance(3.0)
    rig.notify("notifications/tasks/status", task_2025("t-1", "completed"))
    assert rig.events(Kind.REQUEST_END) == []  # waiting a little for the host's tasks/result
    rig.scheduler.advance(10.0)
    [end] = rig.events(Kind.REQUEST_END)
    assert (end.data["outcome"], end.data["duration_s"], end.data["task_status"]) == ("ok", 3.0, "completed")


def test_a_failed_or_tool_error_task_ends_with_that_outcome(loop) -> None:
    rig = TaskRig(loop)
    _started_task(rig, "t-1")
    rig.answer(rig.request(2, "tasks/get", {"taskId": "t-1"}), task_2025("t-1", "failed", "the index is gone"))
    rig.request(3, "tools/call", CALL)
    rig.answer(rig.upstream.sent[-1]["id"], {"task": task_2025("t-2")})
    rig.answer(rig.request(4, "tasks/result", {"taskId": "t-2"}), {**REPORT, "isError": True})
    ends = {e.request_id: e.data for e in rig.events(Kind.REQUEST_END)}
    assert (ends["1"]["outcome"], ends["1"]["error"]) == ("error", "the index is gone")
    assert ends["3"]["outcome"] == "tool_error" and ends["3"]["task_status"] == "completed"


def test_the_extension_era_task_ends_when_tasks_get_carries_its_result(loop) -> None:
    rig = TaskRig(loop)
    up = rig.request(1, "tools/call", {"name": "research", "arguments": {}})
    seed = {"resultType": "task", "taskId": "x-1", "status": "working", "ttlMs": 60000, "pollIntervalMs": 500}
    rig.answer(up, {**seed, "createdAt": "2026-11-25T10:00:00Z", "lastUpdatedAt": "2026-11-25T10:00:00Z"})
    [created] = rig.events(Kind.TASK_CREATED)
    assert (created.data["era"], created.data["poll_interval_ms"], created.data["ttl_ms"]) == ("extension", 500, 60000)
    rig.scheduler.advance(4.0)
    done = {"resultType": "complete", "taskId": "x-1", "status": "completed", "result": REPORT, "ttlMs": 60000}
    rig.answer(rig.request(2, "tasks/get", {"taskId": "x-1"}), done)
    [end] = rig.events(Kind.REQUEST_END)
    assert (end.data["outcome"], end.data["duration_s"], end.data["polls"]) == ("ok", 4.0, 1)
    assert "# Report" in end.data["result_preview"]


def test_the_operators_cancel_of_a_task_is_tasks_cancel_not_notifications_cancelled(loop) -> None:
    rig = TaskRig(loop)
    _started_task(rig)
    rig.scheduler.advance(2.0)
    assert rig.core.cancel("1") is True
    loop.run_until_complete(asyncio.sleep(0))
    [cancel] = [m for m in rig.upstream.sent if m.get("method") == "tasks/cancel"]
    assert cancel["params"] == {"taskId": "t-1"}
    assert "notifications/cancelled" not in rig.upstream_methods()
    rig.answer(cancel["id"], task_2025("t-1", "cancelled", "The task was cancelled by request."))
    loop.run_until_complete(asyncio.sleep(0))
    [end] = rig.events(Kind.REQUEST_END)
    assert (end.data["outcome"], end.data["task_status"], end.data["duration_s"]) == ("cancelled", "cancelled", 2.0)
    assert rig.core.cancel("1") is False  # over: nothing left to cancel


def test_polls_for_tasks_that_are_not_ours_pass_through_unlogged(loop) -> None:
    rig = TaskRig(loop)
    up = rig.request(1, "tasks/get", {"taskId": "someone-elses"})
    error = {"code": -32602, "message": "Task not found"}
    rig.answer(up, error=error)
    assert rig.replies() == [{"jsonrpc": "2.0", "id": 1, "error": error}]  # the upstream's own answer
    assert rig.events(Kind.REQUEST_START, Kind.REQUEST_END, Kind.TASK_STATUS) == []
    assert rig.core.counters.requests == 0


def test_a_lost_upstream_ends_its_tasks(loop) -> None:
    rig = TaskRig(loop)
    _started_task(rig)
    rig.scheduler.advance(1.5)
    rig.core.closing = True  # keep the lost-upstream line off the test's stderr
    rig.core.upstream_lost(reason="exited", exit_code=1)
    [end] = rig.events(Kind.REQUEST_END)
    assert (end.data["outcome"], end.data["duration_s"], end.data["task_status"]) == ("upstream_lost", 1.5, "working")


def test_report_whatif_and_the_otel_span_see_the_task_as_one_call_of_its_true_length(loop) -> None:
    rig = TaskRig(loop)
    _started_task(rig)
    for second in (1, 2, 3):
        rig.scheduler.advance(1.0)
        message = "Done" if second == 3 else f"stage {second}"
        status = "completed" if second == 3 else "working"
        rig.answer(rig.request(10 + second, "tasks/get", {"taskId": "t-1"}), task_2025("t-1", status, message))
    rig.answer(rig.request(20, "tasks/result", {"taskId": "t-1"}), REPORT)
    events = rig.events()

    report = build_report(events)
    assert report["requests"]["by_method"] == {"tools/call": 1}
    assert (report["requests"]["tasks"], report["requests"]["task_polls"]) == (1, 4)
    [tool] = report["tools"]
    assert (tool["tool"], tool["calls"], tool["ok"], tool["max_s"]) == ("research", 1, 1, 3.0)
    [call] = calls_from_events(events)
    assert (call.tool, call.outcome, call.elapsed_s) == ("research", "ok", 3.0)
    [span] = session_spans(events)
    assert (span.end_ns - span.start_ns) / 1e9 == pytest.approx(3.0)
    assert span.attributes["mcpwatch.task.id"] == "t-1"
    names = [(name, attributes.get("mcpwatch.task.status_message")) for name, _ns, attributes in span.events]
    assert names == [
        ("mcpwatch.task_created", "Gathering sources..."),
        ("mcpwatch.task_status", "stage 1"),
        ("mcpwatch.task_status", "stage 2"),
        ("mcpwatch.task_status", "Done"),
    ]


def test_a_task_whose_ttl_passes_unfinished_ends_as_an_error(loop) -> None:
    rig = TaskRig(loop)
    _started_task(rig)  # ttl 300000 ms
    rig.scheduler.advance(299.0)
    assert rig.events(Kind.REQUEST_END) == []
    rig.scheduler.advance(1.0)
    [end] = rig.events(Kind.REQUEST_END)
    assert (end.data["outcome"], end.data["duration_s"]) == ("error", 300.0)
    assert end.data["error"] == "the task's TTL (300000 ms) passed before it ended"


def test_the_reports_tasks_section_reads_the_events_the_core_writes(loop) -> None:
    """The Tasks section folds the wrapper's own task events (not only hand-written ones): a watched task with an
    input round, completed after 5 s and 5 polls."""
    rig = TaskRig(loop)
    _started_task(rig)
    rig.scheduler.advance(1.0)
    rig.answer(rig.request(11, "tasks/get", {"taskId": "t-1"}), task_2025("t-1", "input_required", "Which year?"))
    rig.scheduler.advance(1.0)
    rig.answer(rig.request(12, "tasks/get", {"taskId": "t-1"}), task_2025("t-1", message="Analyzing content..."))
    rig.scheduler.advance(3.0)
    rig.answer(rig.request(20, "tasks/get", {"taskId": "t-1"}), task_2025("t-1", "completed", "Done"))
    rig.answer(rig.request(21, "tasks/result", {"taskId": "t-1"}), REPORT)
    section = build_report(rig.events())["tasks"]
    assert section is not None
    assert (section["created"], section["by_kind"]["watched"], section["completed"]) == (1, 1, 1)
    assert (section["input_rounds"], section["asked_input"], section["polls"], section["max_s"]) == (1, 1, 4, 5.0)
