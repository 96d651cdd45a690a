"""Tasks offered by mcpwatch to a host that has them, for a tool that lacks them: mcpwatch answers the task at once,
runs the ordinary call without the tools/call budget, and answers the host's polls itself — with clear errors for
unknown or foreign ids, a TTL beyond the maximum, polls too fast, and a cancel of a finished task."""

from __future__ import annotations

import asyncio
from dataclasses import replace
from typing import Any

from taskrig import Host, TaskRig

from mcpwatch.config import Settings, TasksSettings
from mcpwatch.events import Kind
from mcpwatch.wire import PARTIAL_META
from mcpwatch.wrapper.tasks.owners import LOCAL

SLOW = {"name": "slow", "inputSchema": {"type": "object"}}
TASK_HOST: dict[str, Any] = {"tasks": {"list": {}, "cancel": {}, "requests": {}}}
CALL = {"name": "slow", "arguments": {"seconds": 6}, "task": {"ttl": 60000}}


def offering(
    loop, capabilities: dict[str, Any] | None = None, connection: str = "stdio", principal: str = LOCAL, **tasks: Any
) -> TaskRig:
    """A wrapper offering `slow` as a task (a 2 s tools/call budget), a host (on `connection`, let in as
    `principal`) that initialized and listed tools."""
    rig = TaskRig(
        loop,
        deadline=replace(Settings().deadline, host_timeout_s=2.0, margin_s=0.0),
        tasks=TasksSettings(offer=("slow",), **tasks),
    )
    rig.host.connection = connection
    rig.host.task_principal = principal  # type: ignore[attr-defined]  # as the HTTP front sets it
    init = {
        "protocolVersion": "2025-11-25",
        "capabilities": TASK_HOST if capabilities is None else capabilities,
        "clientInfo": {"name": "vsc"},
    }
    rig.answer(rig.request(0, "initialize", init), {"protocolVersion": "2025-11-25", "capabilities": {"tools": {}}})
    rig.answer(rig.request("l", "tools/list", {}), {"tools": [SLOW]})
    return rig


def other_host(rig: TaskRig, name: str) -> Host:
    host = Host(connection=f"stdio of {name}")
    rig.core.attach_link(host)
    rig.core.offer.host_initialized(host, {"name": name})
    rig.core.bridge.host_initialized(host, TASK_HOST)
    return host


def test_a_task_capable_host_is_offered_the_tool_as_a_task(loop) -> None:
    rig = offering(loop)
    initialized, listed = rig.replies()
    assert initialized["result"]["capabilities"]["tasks"]["requests"] == {"tools": {"call": {}}}
    assert listed["result"]["tools"] == [{**SLOW, "execution": {"taskSupport": "optional"}}]
    plain = offering(loop, capabilities={})  # a host without tasks is told nothing new
    initialized, listed = plain.replies()
    assert "tasks" not in initialized["result"]["capabilities"] and listed["result"]["tools"] == [SLOW]


def test_an_offered_task_runs_past_the_hosts_budget_and_its_result_comes_by_tasks_result(loop) -> None:
    rig = offering(loop)
    rig.request(1, "tools/call", CALL)
    created = rig.replies()[-1]["result"]["task"]
    task_id = created["taskId"]
    assert task_id.startswith("mcpwatch-") and len(task_id) > 30  # unguessable
    assert (created["status"], created["ttl"], created["pollInterval"]) == ("working", 60000, 1000)
    upstream_call = [m for m in rig.upstream.sent if m.get("method") == "tools/call"][-1]
    assert "task" not in upstream_call["params"]  # the upstream gets an ordinary call
    rig.request(2, "tasks/result", {"taskId": task_id})  # blocks, as the spec says, until the task ends
    rig.scheduler.advance(5.0)  # past the 2 s tools/call budget: nothing cut it
    rig.request(3, "tasks/get", {"taskId": task_id})
    assert rig.replies()[-1]["result"]["status"] == "working"
    assert "notifications/cancelled" not in rig.upstream_methods()
    rig.scheduler.advance(1.0)
    rig.answer(upstream_call["id"], {"content": [{"type": "text", "text": "done"}]})
    answered = rig.replies()[-1]
    assert answered["id"] == 2 and answered["result"]["content"] == [{"type": "text", "text": "done"}]
    assert answered["result"]["_meta"]["io.modelcontextprotocol/related-task"] == {"taskId": task_id}
    rig.request(4, "tasks/get", {"taskId": task_id})
    assert rig.replies()[-1]["result"]["status"] == "completed"
    [end] = [e for e in rig.events(Kind.REQUEST_END) if e.tool == "slow"]
    assert (end.data["outcome"], end.data["duration_s"]) == ("ok", 6.0)
    [status] = rig.events(Kind.TASK_STATUS)
    assert (status.data["status"], status.data["seen_by"]) == ("completed", "mcpwatch")
    rig.request(5, "tasks/list", {})
    assert [t["taskId"] for t in rig.replies()[-1]["result"]["tasks"]] == [task_id]


def test_bad_task_requests_get_one_clear_error(loop) -> None:
    rig = offering(loop)
    rig.request(1, "tools/call", CALL)
    task_id = rig.replies()[-1]["result"]["task"]["taskId"]

    rig.request(2, "tasks/get", {"taskId": "mcpwatch-guessed"})
    assert rig.replies()[-1]["error"] == {
        "code": -32602,
        "message": "no task 'mcpwatch-guessed' (unknown, expired, or another host's)",
    }
    stranger = other_host(rig, "someone-else")
    rig.request(3, "tasks/result", {"taskId": task_id}, host=stranger)
    assert rig.replies(stranger)[-1]["error"]["message"].startswith(f"no task '{task_id}'")  # foreign = unknown
    rig.request(4, "tasks/list", {}, host=stranger)
    assert rig.replies(stranger)[-1]["result"]["tasks"] == []

    rig.request(5, "tasks/get", {"taskId": task_id})
    rig.scheduler.advance(0.2)
    rig.request(6, "tasks/get", {"taskId": task_id})
    assert (
        rig.replies()[-1]["error"]["message"] == "polled 200 ms after the last poll; poll every 1000 ms (pollInterval)"
    )
    rig.scheduler.advance(0.5)
    rig.request(7, "tasks/get", {"taskId": task_id})
    assert rig.replies()[-1]["result"]["status"] == "working"

    rig.request(8, "tools/call", {**CALL, "task": {"ttl": 90_000_000}})
    assert rig.replies()[-1]["error"] == {
        "code": -32602,
        "message": "task.ttl 90000000 ms is beyond mcpwatch's maximum of 86400000 ms ([tasks] max_ttl_ms)",
    }

    rig.request(9, "tasks/cancel", {"taskId": task_id})
    assert rig.replies()[-1]["result"]["status"] == "cancelled"
    [cancel] = [m for m in rig.upstream.sent if m.get("method") == "notifications/cancelled"]
    first_call = next(m for m in rig.upstream.sent if m.get("method") == "tools/call")
    assert cancel["params"]["requestId"] == first_call["id"]
    rig.request(10, "tasks/cancel", {"taskId": task_id})
    assert rig.replies()[-1]["error"] == {"code": -32602, "message": f"task {task_id} is already cancelled"}


def test_an_offered_task_is_bounded_by_its_own_maximum(loop) -> None:
    rig = offering(loop, max_s=10.0)
    rig.request(1, "tools/call", CALL)
    task_id = rig.replies()[-1]["result"]["task"]["taskId"]
    rig.scheduler.advance(10.0)
    rig.request(2, "tasks/result", {"taskId": task_id})
    result = rig.replies()[-1]["result"]
    assert result["isError"] is True and result["_meta"][PARTIAL_META]["outcome"] == "deadline"
    assert "max_s" in result["content"][0]["text"]


def test_an_offered_tasks_progress_reaches_the_host_and_is_its_status_message(loop) -> None:
    rig = offering(loop)
    rig.request(1, "tools/call", {**CALL, "_meta": {"progressToken": "tok"}})
    task_id = rig.replies()[-1]["result"]["task"]["taskId"]
    up_id = next(m for m in rig.upstream.sent if m.get("method") == "tools/call")["id"]
    rig.notify("notifications/progress", {"progressToken": up_id, "progress": 1, "total": 3, "message": "stage 1"})
    assert rig.host.sent[-1]["params"] == {"progressToken": "tok", "progress": 1, "total": 3, "message": "stage 1"}
    rig.request(2, "tasks/get", {"taskId": task_id})
    assert rig.replies()[-1]["result"]["statusMessage"] == "stage 1"


def test_a_host_that_asked_for_no_progress_reads_it_as_the_status_message(loop) -> None:
    rig = offering(loop)
    rig.request(1, "tools/call", CALL)
    task_id = rig.replies()[-1]["result"]["task"]["taskId"]
    upstream_call = next(m for m in rig.upstream.sent if m.get("method") == "tools/call")
    token = upstream_call["params"]["_meta"]["progressToken"]  # mcpwatch asks for progress all the same
    sent = len(rig.host.sent)
    rig.notify("notifications/progress", {"progressToken": token, "progress": 2, "message": "stage 2 of 3"})
    assert len(rig.host.sent) == sent  # nothing the host did not ask for
    rig.request(2, "tasks/get", {"taskId": task_id})
    assert rig.replies()[-1]["result"]["statusMessage"] == "stage 2 of 3"
    [progress] = rig.events(Kind.PROGRESS)
    assert progress.data["message"] == "stage 2 of 3"


def test_a_hosts_cancel_of_the_request_that_made_a_task_cancels_the_task(loop) -> None:
    rig = offering(loop)
    rig.request(1, "tools/call", CALL)
    task_id = rig.replies()[-1]["result"]["task"]["taskId"]
    up_id = next(m for m in rig.upstream.sent if m.get("method") == "tools/call")["id"]
    rig.request(2, "tasks/result", {"taskId": task_id})  # blocked until the task ends
    cancelled = {"requestId": 1, "reason": "the user stopped it"}
    rig.core.host_message(rig.host, {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": cancelled})
    [cancel] = [m for m in rig.upstream.sent if m.get("method") == "notifications/cancelled"]
    assert cancel["params"] == {"requestId": up_id, "reason": "the user stopped it"}
    assert rig.replies()[-1] == {
        "jsonrpc": "2.0",
        "id": 2,
        "error": {"code": -32602, "message": f"task {task_id} was cancelled: it has no result"},
    }
    rig.scheduler.advance(1.0)
    rig.request(3, "tasks/get", {"taskId": task_id})
    assert rig.replies()[-1]["result"]["status"] == "cancelled"
    [status] = rig.events(Kind.TASK_STATUS)
    assert status.data["status"] == "cancelled"
    [end] = [e for e in rig.events(Kind.REQUEST_END) if e.tool == "slow"]
    assert end.data["outcome"] == "cancelled"
    rig.answer(up_id, {"content": [{"type": "text", "text": "done"}]})  # too late: the task stays cancelled
    rig.request(4, "tasks/result", {"taskId": task_id})
    assert rig.replies()[-1]["error"]["message"] == f"task {task_id} was cancelled: it has no result"


def test_a_server_request_during_an_offered_call_goes_to_the_tasks_host_and_only_its_answer_counts(loop) -> None:
    rig = offering(loop)
    rig.request(1, "tools/call", CALL)  # the task's call is the only one in flight
    idle = other_host(rig, "someone-else")  # connected after it, nothing in flight
    sampling = {"jsonrpc": "2.0", "id": "s1", "method": "sampling/createMessage", "params": {"maxTokens": 5}}
    rig.core.upstream_message(sampling)
    assert rig.host.sent[-1] == sampling and sampling not in idle.sent
    answer = {"jsonrpc": "2.0", "id": "s1", "result": {"role": "assistant", "content": {"type": "text", "text": "x"}}}
    rig.core.host_message(idle, {**answer, "result": {"forged": True}})  # another host's answer is ignored
    assert [m for m in rig.upstream.sent if m.get("id") == "s1"] == []
    rig.core.host_message(rig.host, answer)
    assert [m for m in rig.upstream.sent if m.get("id") == "s1"] == [answer]


def test_a_host_that_initialized_cannot_borrow_another_hosts_name_in_a_polls_meta(loop) -> None:
    rig = offering(loop)
    rig.request(1, "tools/call", CALL)
    task_id = rig.replies()[-1]["result"]["task"]["taskId"]
    stranger = other_host(rig, "someone-else")
    claimed = {"io.modelcontextprotocol/clientInfo": {"name": "vsc", "version": "1"}}
    rig.request(2, "tasks/get", {"taskId": task_id, "_meta": claimed}, host=stranger)
    assert rig.replies(stranger)[-1]["error"]["message"].startswith(f"no task '{task_id}'")


def test_sessionless_requests_never_list_each_others_tasks(loop) -> None:
    """A sessionless (2026-era) request names no host: what one such client made, tasks/list shows to none; its id,
    unguessable, still reaches it."""
    rig = offering(loop)
    maker, lister = Host(connection=None), Host(connection=None)
    for host in (maker, lister):
        rig.core.attach_link(host)
    rig.request(1, "tools/call", CALL, host=maker)
    task_id = rig.replies(maker)[-1]["result"]["task"]["taskId"]
    rig.request(2, "tasks/list", {}, host=lister)
    assert rig.replies(lister)[-1]["result"]["tasks"] == []
    rig.request(3, "tasks/get", {"taskId": task_id}, host=maker)
    assert rig.replies(maker)[-1]["result"]["taskId"] == task_id


def test_a_task_looked_up_in_the_log_is_read_off_the_loop(loop) -> None:
    """A task this process does not hold is read back from the log by its place, off the loop (a slow disk must not
    stop every host's calls); an id the log's index does not hold is answered unknown with no read at all."""
    import threading

    from mcpwatch.store.kept_tasks import KeptRef, KeptRefs
    from mcpwatch.wrapper.tasks.kept_log import KeptLog

    rig = offering(loop)
    looked_on: list[threading.Thread] = []
    offer = rig.core.offer
    kept = {
        "owner": "local|stdio|vsc",
        "upstream": offer.shared.upstream,
        "task": {"taskId": "mcpwatch-old", "status": "completed"},
        "reply": {"result": {"x": 1}},
        "expires_ts": offer._wall() + 60,
    }

    def fetch(ref: KeptRef, task_id: str) -> dict[str, Any] | None:
        looked_on.append(threading.current_thread())
        return kept if ref == KeptRef("s0", "7") else None

    offer.kept = KeptLog(lambda: KeptRefs({"mcpwatch-old": KeptRef("s0", "7")}), fetch, session_id="s1")
    offer.kept.start(loop)
    rig.request(1, "tasks/result", {"taskId": "mcpwatch-old"})
    rig.request(2, "tasks/get", {"taskId": "mcpwatch-unknown"})

    async def answered() -> dict[Any, dict[str, Any]]:
        for _ in range(6000):  # the lookups' thread may wait for a core on a loaded machine: 60 s at most
            found = {r["id"]: r for r in rig.replies() if r.get("id") in (1, 2)}
            if len(found) == 2:
                return found
            await asyncio.sleep(0.01)
        raise AssertionError("the tasks/* requests were never answered")

    answers = loop.run_until_complete(answered())
    assert len(looked_on) == 1 and threading.main_thread() not in looked_on
    assert answers[1]["result"] == {"x": 1}
    assert answers[2]["error"]["message"] == "no task 'mcpwatch-unknown' (unknown, expired, or another host's)"
    assert (offer.kept.queries, offer.kept.unknown) == (1, 1)


def test_an_offered_tasks_polls_are_counted_to_it_and_its_reason_is_logged(loop) -> None:
    """The host's polls of an offered task were logged as 0 (a host polled ~30 times): they are counted to the
    task, and its task_created says why mcpwatch offered it (the `[tasks] offer` glob)."""
    rig = offering(loop, poll_ms=1000)
    rig.request(1, "tools/call", CALL)
    task_id = rig.replies()[-1]["result"]["task"]["taskId"]
    upstream_call = [m for m in rig.upstream.sent if m.get("method") == "tools/call"][-1]
    for n in range(3):
        rig.scheduler.advance(1.0)
        rig.request(f"g{n}", "tasks/get", {"taskId": task_id})
    rig.request("r", "tasks/result", {"taskId": task_id})  # blocks until the task ends
    rig.answer(upstream_call["id"], {"content": [{"type": "text", "text": "done"}]})
    [created] = rig.events(Kind.TASK_CREATED)
    assert created.data["offered_by"] == "offer slow"
    [status] = rig.events(Kind.TASK_STATUS)
    assert (status.data["status"], status.data["polls"]) == ("completed", 4)
