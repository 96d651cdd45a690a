"""Tasks offered through the tasks extension (`io.modelcontextprotocol/tasks`, SEP-2663) to a 2026-era request that
declares it: the answer is the task itself, `tasks/get` carries the result once terminal, `tasks/cancel` and
`tasks/update` are acknowledged; the upstream gets an ordinary call that cannot answer with a task of its own."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from taskrig import Host, TaskRig

from mcpwatch.config import Settings, TasksSettings
from mcpwatch.events import Kind

EXTENSION = "io.modelcontextprotocol/tasks"


def meta(name: str = "ext-host", tasks: bool = True) -> dict[str, Any]:
    extensions: dict[str, Any] = {EXTENSION: {}} if tasks else {}
    return {
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientInfo": {"name": name, "version": "1"},
        "io.modelcontextprotocol/clientCapabilities": {"extensions": {**extensions, "other/ext": {}}},
    }


def call(name: str = "ext-host", tasks: bool = True) -> dict[str, Any]:
    return {"name": "slow", "arguments": {"seconds": 6}, "_meta": meta(name, tasks)}


def poll(task_id: str, name: str = "ext-host", **extra: Any) -> dict[str, Any]:
    return {"taskId": task_id, "_meta": meta(name), **extra}


def offering(loop) -> TaskRig:
    rig = TaskRig(
        loop,
        deadline=replace(Settings().deadline, host_timeout_s=2.0, margin_s=0.0),
        tasks=TasksSettings(offer=("slow",)),
    )
    rig.host.connection = None  # a sessionless request: nothing proves which host sent it
    return rig


def test_an_extension_request_gets_a_task_and_tasks_get_carries_the_result(loop) -> None:
    rig = offering(loop)
    rig.request(1, "tools/call", call())
    created = rig.replies()[-1]["result"]
    assert created["resultType"] == "task" and created["taskId"].startswith("mcpwatch-")
    assert (created["status"], created["pollIntervalMs"]) == ("working", 1000) and "ttlMs" in created
    upstream_call = next(m for m in rig.upstream.sent if m.get("method") == "tools/call")
    sent_caps = upstream_call["params"]["_meta"]["io.modelcontextprotocol/clientCapabilities"]
    assert sent_caps == {"extensions": {"other/ext": {}}}  # the upstream cannot answer with a task of its own
    task_id = created["taskId"]
    rig.scheduler.advance(5.0)  # past the 2 s tools/call budget
    rig.request(2, "tasks/get", poll(task_id))
    working = rig.replies()[-1]["result"]
    assert (working["status"], working["resultType"]) == ("working", "complete") and "result" not in working
    rig.answer(upstream_call["id"], {"content": [{"type": "text", "text": "done"}]})
    rig.scheduler.advance(1.0)
    rig.request(3, "tasks/get", poll(task_id))
    done = rig.replies()[-1]["result"]
    assert (done["status"], done["resultType"]) == ("completed", "complete")
    assert done["result"]["content"] == [{"type": "text", "text": "done"}]
    [created_event] = rig.events(Kind.TASK_CREATED)
    assert created_event.data["era"] == "extension" and created_event.data["offered"] is True
    [end] = [e for e in rig.events(Kind.REQUEST_END) if e.tool == "slow"]
    assert (end.data["outcome"], end.data["duration_s"]) == ("ok", 5.0)  # not cut at 2 s


def test_an_extension_task_is_reached_by_its_id_only_by_its_host_and_listed_to_no_one(loop) -> None:
    rig = offering(loop)
    rig.request(1, "tools/call", call())
    task_id = rig.replies()[-1]["result"]["taskId"]
    other = Host(connection=None)  # another sessionless request, another host's name
    rig.core.attach_link(other)
    rig.request(2, "tasks/get", poll(task_id, name="someone-else"), host=other)
    assert rig.replies(other)[-1]["error"]["message"] == (f"no task {task_id!r} (unknown, expired, or another host's)")
    rig.request(3, "tasks/list", {"_meta": meta()}, host=other)
    listed = rig.replies(other)[-1]
    assert task_id not in str(listed)
    rig.request(4, "tasks/result", poll(task_id))
    assert rig.replies()[-1]["error"]["code"] == -32601  # not part of the extension: tasks/get carries it


def test_extension_cancel_and_update_are_acknowledged_and_cancel_reaches_the_upstream(loop) -> None:
    rig = offering(loop)
    rig.request(1, "tools/call", call())
    task_id = rig.replies()[-1]["result"]["taskId"]
    rig.request(2, "tasks/update", poll(task_id, inputResponses={"k1": {"result": {}}}))
    assert rig.replies()[-1]["result"] == {"resultType": "complete"}  # nothing outstanding: ignored
    rig.request(3, "tasks/cancel", poll(task_id))
    assert rig.replies()[-1]["result"] == {"resultType": "complete"}
    assert "notifications/cancelled" in rig.upstream_methods()
    rig.scheduler.advance(1.0)
    rig.request(4, "tasks/get", poll(task_id))
    assert rig.replies()[-1]["result"]["status"] == "cancelled"
    rig.request(5, "tasks/cancel", poll(task_id))  # already ended: still an empty acknowledgement
    assert rig.replies()[-1]["result"] == {"resultType": "complete"}


def test_a_request_without_the_extension_is_an_ordinary_call(loop) -> None:
    rig = offering(loop)
    rig.request(1, "tools/call", call(tasks=False))
    assert rig.replies() == []  # no task: it waits for the upstream's answer
    assert rig.events(Kind.TASK_CREATED) == []
