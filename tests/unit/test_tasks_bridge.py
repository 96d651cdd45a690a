"""A host that cannot use MCP Tasks calling a task-only tool: mcpwatch runs it upstream as a task, relays its status
as progress, answers with its result; at the host's budget the task goes on and an identical call takes its
result (or waits for it) instead of starting it again. On a manual clock, against a recording upstream."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest
from taskrig import TaskRig, spin, task_2025

from mcpwatch.config import Settings, TasksSettings, settings_from_mapping
from mcpwatch.errors import UserError
from mcpwatch.events import Kind
from mcpwatch.wire import PARTIAL_META

UPSTREAM_CAPS: dict[str, Any] = {"tasks": {"list": {}, "cancel": {}, "requests": {"tools": {"call": {}}}}}
RESEARCH = {"name": "research", "inputSchema": {"type": "object"}, "execution": {"taskSupport": "required"}}
QUICK = {"name": "quick", "inputSchema": {"type": "object"}}
CALL = {"name": "research", "arguments": {"topic": "tides"}, "_meta": {"progressToken": "p1"}}
REPORT = {"content": [{"type": "text", "text": "# Report"}], "_meta": {"io.modelcontextprotocol/related-task": {}}}


def connected(loop, capabilities: dict[str, Any] | None = None, **settings: Any) -> TaskRig:
    """A host (with `capabilities`) that initialized and listed the tools through the wrapper."""
    rig = TaskRig(loop, host_timeout_s=30.0, margin_s=0.0, **settings)
    init = {"protocolVersion": "2025-11-25", "capabilities": capabilities or {}, "clientInfo": {"name": "claude-code"}}
    rig.answer(rig.request(0, "initialize", init), {"protocolVersion": "2025-11-25", "capabilities": UPSTREAM_CAPS})
    rig.answer(rig.request("l", "tools/list", {}), {"tools": [RESEARCH, QUICK]})
    return rig


def upstream_request(rig: TaskRig, method: str) -> dict[str, Any]:
    return [m for m in rig.upstream.sent if m.get("method") == method][-1]


def poll_answers(rig: TaskRig, loop, task: dict[str, Any]) -> None:
    """The bridge's poll (the one waiting, else the next to fall due) is answered with `task`."""
    for _ in range(3):
        polls = [m for m in rig.upstream.sent if m.get("method") == "tasks/get" and m["id"] not in rig.answered]
        if polls:
            break
        rig.scheduler.advance(1.0)
        spin(loop)
    rig.answer(polls[-1]["id"], task)
    spin(loop)


def test_a_host_without_tasks_gets_a_task_only_tools_result_with_its_status_as_progress(loop) -> None:
    rig = connected(loop)
    listed = rig.replies()[-1]["result"]["tools"]
    assert listed[0] == {"name": "research", "inputSchema": {"type": "object"}}  # an ordinary tool to this host
    up = rig.request(1, "tools/call", CALL)
    assert upstream_request(rig, "tools/call")["params"]["task"] == {"ttl": 3_600_000}
    rig.answer(up, {"task": task_2025("t-1", message="Gathering sources...")})
    poll_answers(rig, loop, task_2025("t-1", message="Analyzing content..."))
    poll_answers(rig, loop, task_2025("t-1", "completed", "Done"))
    rig.answer(upstream_request(rig, "tasks/result")["id"], REPORT)
    spin(loop)

    progress = [m["params"] for m in rig.host.sent if m.get("method") == "notifications/progress"]
    assert [(p["progressToken"], p["progress"], p["message"]) for p in progress] == [
        ("p1", 1, "working: Gathering sources..."),
        ("p1", 2, "working: Analyzing content..."),
        ("p1", 3, "completed: Done"),
    ]
    answer = rig.replies()[-1]
    assert answer == {"jsonrpc": "2.0", "id": 1, "result": {"content": REPORT["content"]}}  # the host's own call
    ends = [e for e in rig.events(Kind.REQUEST_END) if e.tool == "research"]
    assert [(e.data["outcome"], e.data["duration_s"], e.data["task_id"]) for e in ends] == [("ok", 2.0, "t-1")]
    [created] = rig.events(Kind.TASK_CREATED)
    assert created.data["bridged"] is True
    assert [e.data["method"] for e in rig.events(Kind.REQUEST_START)] == ["initialize", "tools/list", "tools/call"]


def test_a_host_that_declared_tasks_and_ordinary_tools_are_left_alone(loop) -> None:
    rig = connected(loop, {"tasks": {"list": {}, "cancel": {}, "requests": {}}})
    assert rig.replies()[-1]["result"]["tools"][0] == RESEARCH  # it sees what the server said
    rig.request(1, "tools/call", CALL)
    assert "task" not in upstream_request(rig, "tools/call")["params"]
    plain = connected(loop)
    plain.request(2, "tools/call", {"name": "quick", "arguments": {}})
    assert "task" not in upstream_request(plain, "tools/call")["params"]


def test_at_the_hosts_budget_the_task_goes_on_and_an_identical_call_takes_its_result_at_once(loop) -> None:
    rig = connected(loop, deadline=replace(Settings().deadline, host_timeout_s=2.0, margin_s=0.0))
    up = rig.request(1, "tools/call", CALL)
    rig.answer(up, {"task": task_2025("t-1", message="Gathering sources...")})
    poll_answers(rig, loop, task_2025("t-1", message="Analyzing content..."))
    rig.scheduler.advance(1.0)  # the 2 s budget
    spin(loop)
    cut = rig.replies()[-1]
    assert cut["id"] == 1 and cut["result"]["isError"] is True
    text = cut["result"]["content"][0]["text"]
    assert "goes on upstream as task t-1" in text and "working: Analyzing content..." in text
    assert cut["result"]["_meta"][PARTIAL_META]["outcome"] == "deadline"
    assert "notifications/cancelled" not in rig.upstream_methods() and "tasks/cancel" not in rig.upstream_methods()

    rig.notify("notifications/tasks/status", task_2025("t-1", "completed", "Done"))
    spin(loop)
    assert all(m.get("method") != "notifications/tasks/status" for m in rig.host.sent)  # not this host's task
    rig.answer(upstream_request(rig, "tasks/result")["id"], REPORT)
    spin(loop)
    [late] = rig.events(Kind.LATE_RESULT)
    assert (late.request_id, late.data["cut_after_s"], late.data["outcome"], late.data["reason"]) == (
        "1",
        2.0,
        "ok",
        "deadline",
    )

    calls_upstream = rig.upstream_methods().count("tools/call")
    rig.request(2, "tools/call", CALL)  # the host retries
    assert rig.replies()[-1] == {"jsonrpc": "2.0", "id": 2, "result": {"content": REPORT["content"]}}
    assert rig.upstream_methods().count("tools/call") == calls_upstream  # not started again
    [reuse] = rig.events(Kind.LATE_REUSE)
    assert reuse.request_id == "2" and reuse.data["from_request_id"] == "1"
    rig.request(3, "tools/call", {**CALL, "arguments": {"topic": "other"}})
    assert rig.upstream_methods().count("tools/call") == calls_upstream + 1  # other arguments: a new task


def test_an_identical_call_while_the_task_runs_waits_for_that_task(loop) -> None:
    rig = connected(loop, deadline=replace(Settings().deadline, host_timeout_s=2.0, margin_s=0.0))
    rig.answer(rig.request(1, "tools/call", CALL), {"task": task_2025("t-1")})
    rig.scheduler.advance(2.0)  # cut; the task runs on
    spin(loop)
    rig.request(2, "tools/call", CALL)
    assert rig.upstream_methods().count("tools/call") == 1
    [attached] = [e for e in rig.events(Kind.TASK_CREATED) if e.request_id == "2"]
    assert attached.data["attached_to"] == "1"
    poll_answers(rig, loop, task_2025("t-1", "completed"))
    rig.answer(upstream_request(rig, "tasks/result")["id"], REPORT)
    spin(loop)
    assert rig.replies()[-1] == {"jsonrpc": "2.0", "id": 2, "result": {"content": REPORT["content"]}}
    ends = {e.request_id: e.data["outcome"] for e in rig.events(Kind.REQUEST_END) if e.tool == "research"}
    assert ends == {"1": "deadline", "2": "ok"}


def test_input_required_for_a_host_without_elicitation_cancels_the_task_and_says_why(loop) -> None:
    rig = connected(loop)
    rig.answer(rig.request(1, "tools/call", CALL), {"task": task_2025("t-1")})
    poll_answers(rig, loop, task_2025("t-1", "input_required", "Which tides?"))
    cancel = upstream_request(rig, "tasks/cancel")
    assert cancel["params"] == {"taskId": "t-1"}
    rig.answer(cancel["id"], task_2025("t-1", "cancelled"))
    spin(loop)
    answer = rig.replies()[-1]
    assert answer["id"] == 1 and answer["result"]["isError"] is True
    assert "did not declare elicitation" in answer["result"]["content"][0]["text"]
    assert "Which tides?" in answer["result"]["content"][0]["text"]


def test_input_required_for_a_host_with_elicitation_reaches_it_through_tasks_result(loop) -> None:
    rig = connected(loop, {"elicitation": {}})
    rig.answer(rig.request(1, "tools/call", CALL), {"task": task_2025("t-1")})
    poll_answers(rig, loop, task_2025("t-1", "input_required", "Which tides?"))
    result_request = upstream_request(rig, "tasks/result")
    elicit = {"jsonrpc": "2.0", "id": 77, "method": "elicitation/create", "params": {"message": "Which tides?"}}
    rig.core.upstream_message(elicit)
    assert rig.host.sent[-1] == elicit  # the host answers it as its own
    rig.core.host_message(rig.host, {"jsonrpc": "2.0", "id": 77, "result": {"action": "accept", "content": {}}})
    assert rig.upstream.sent[-1] == {"jsonrpc": "2.0", "id": 77, "result": {"action": "accept", "content": {}}}
    rig.answer(result_request["id"], REPORT)
    spin(loop)
    assert rig.replies()[-1]["result"] == {"content": REPORT["content"]}


def test_the_operators_cancel_of_a_bridged_call_cancels_its_task(loop) -> None:
    rig = connected(loop)
    rig.answer(rig.request(1, "tools/call", CALL), {"task": task_2025("t-1")})
    assert rig.core.cancel("1") is True
    spin(loop)
    cancel = upstream_request(rig, "tasks/cancel")
    rig.answer(cancel["id"], task_2025("t-1", "cancelled", "cancelled by request"))
    spin(loop)
    answer = rig.replies()[-1]
    assert answer["id"] == 1 and answer["result"]["isError"] is True
    [end] = [e for e in rig.events(Kind.REQUEST_END) if e.tool == "research"]
    assert (end.data["outcome"], end.data["task_status"]) == ("cancelled", "cancelled")


def test_bridge_settings_are_checked() -> None:
    parsed = settings_from_mapping({"tasks": {"bridge": "optional", "reuse_s": 60}})
    assert parsed.tasks == TasksSettings(bridge="optional", reuse_s=60.0)
    with pytest.raises(UserError, match=r"tasks.bridge must be one of 'required', 'optional', 'off', got 'always'"):
        settings_from_mapping({"tasks": {"bridge": "always"}})
    with pytest.raises(UserError, match=r"tasks.ttl_s"):
        settings_from_mapping({"tasks": {"ttl_s": 0}})


def test_a_call_to_a_tool_never_listed_through_the_wrapper_lists_the_tools_first(loop) -> None:
    rig = TaskRig(loop, host_timeout_s=30.0, margin_s=0.0)
    init = {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "claude-code"}}
    rig.answer(rig.request(0, "initialize", init), {"protocolVersion": "2025-11-25", "capabilities": UPSTREAM_CAPS})
    rig.request(1, "tools/call", CALL)
    spin(loop)
    assert rig.upstream_methods()[-1] == "tools/list"  # the wrapper asks first: is it a task-only tool?
    rig.answer(rig.upstream.sent[-1]["id"], {"tools": [QUICK], "nextCursor": "2"})
    spin(loop)
    assert rig.upstream.sent[-1]["params"] == {"cursor": "2"}
    rig.answer(rig.upstream.sent[-1]["id"], {"tools": [RESEARCH]})
    spin(loop)
    assert upstream_request(rig, "tools/call")["params"]["task"] == {"ttl": 3_600_000}
    rig.request(2, "tools/call", {"name": "quick", "arguments": {}})  # known now: no second listing
    assert rig.upstream_methods().count("tools/list") == 2
    assert "task" not in upstream_request(rig, "tools/call")["params"]


def test_the_hosts_own_cancel_of_a_bridged_call_leaves_the_task_running_for_a_retry(loop) -> None:
    rig = connected(loop)
    rig.answer(rig.request(1, "tools/call", CALL), {"task": task_2025("t-1")})
    rig.core.host_message(rig.host, {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 1}})
    assert rig.replies()[-1]["id"] == "l"  # a host that cancelled is owed nothing
    assert "notifications/cancelled" not in rig.upstream_methods() and "tasks/cancel" not in rig.upstream_methods()
    rig.request(2, "tools/call", CALL)  # its retry joins the task
    poll_answers(rig, loop, task_2025("t-1", "completed"))
    rig.answer(upstream_request(rig, "tasks/result")["id"], REPORT)
    spin(loop)
    assert rig.replies()[-1] == {"jsonrpc": "2.0", "id": 2, "result": {"content": REPORT["content"]}}
    [late] = rig.events(Kind.LATE_RESULT)
    assert late.data["reason"] == "host_cancel"


def test_a_sessionless_requests_task_is_never_taken_by_another_request(loop) -> None:
    rig = connected(loop, deadline=replace(Settings().deadline, host_timeout_s=2.0, margin_s=0.0))
    rig.host.connection = None  # a 2026-era sessionless request: any host's
    rig.answer(rig.request(1, "tools/call", CALL), {"task": task_2025("t-1")})
    rig.scheduler.advance(2.0)
    spin(loop)
    poll_answers(rig, loop, task_2025("t-1", "completed"))
    rig.answer(upstream_request(rig, "tasks/result")["id"], REPORT)
    spin(loop)
    rig.request(2, "tools/call", CALL)
    assert rig.upstream_methods().count("tools/call") == 2  # a task of its own, not the other request's result
    assert rig.events(Kind.LATE_REUSE) == []
