"""Extension tasks (2026 era) bridged for a host that does not declare the extension: the upstream's `-32021`
refusal of a task-only call makes mcpwatch call again with the extension, poll `tasks/get` with the call's envelope,
relay status changes as progress and answer with the result `tasks/get` carries. On a manual clock."""

from __future__ import annotations

from typing import Any

from taskrig import TaskRig, spin

from mcpwatch.events import Kind

EXTENSION = "io.modelcontextprotocol/tasks"
CAPS = "io.modelcontextprotocol/clientCapabilities"
REFUSAL = {
    "code": -32021,
    "message": "Tool 'crunch' requires the tasks extension",
    "data": {"requiredCapabilities": {"extensions": {EXTENSION: {}}}},
}


def meta(tasks: bool = False) -> dict[str, Any]:
    return {
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientInfo": {"name": "sdk-host", "version": "1"},
        CAPS: {"extensions": {EXTENSION: {}}} if tasks else {},
    }


def task(status: str, **extra: Any) -> dict[str, Any]:
    return {"taskId": "t-1", "status": status, "ttlMs": 60000, "pollIntervalMs": 1000, **extra}


def discovered(loop) -> TaskRig:
    rig = TaskRig(loop, host_timeout_s=30.0, margin_s=0.0)
    answer = {"supportedVersions": ["2026-07-28"], "capabilities": {"tools": {}, "extensions": {EXTENSION: {}}}}
    rig.answer(rig.request(0, "server/discover", {"_meta": meta()}), answer)
    return rig


def calls(rig: TaskRig, method: str) -> list[dict[str, Any]]:
    return [m for m in rig.upstream.sent if m.get("method") == method]


def refused_then_task(rig: TaskRig, loop, tasks: bool = False) -> None:
    params = {"name": "crunch", "arguments": {"n": 1}, "_meta": {**meta(tasks), "progressToken": "p1"}}
    rig.answer(rig.request(1, "tools/call", params), error=REFUSAL)
    if not tasks:
        again = calls(rig, "tools/call")[-1]
        assert EXTENSION in again["params"]["_meta"][CAPS]["extensions"]  # the same call, now as a task
        rig.answer(again["id"], {"resultType": "task", **task("working")})


def next_poll(rig: TaskRig, loop) -> dict[str, Any]:
    rig.scheduler.advance(1.0)
    spin(loop)
    return calls(rig, "tasks/get")[-1]


def test_a_refused_task_only_call_runs_as_a_task_and_its_host_gets_the_result(loop) -> None:
    rig = discovered(loop)
    refused_then_task(rig, loop)
    assert rig.replies()[-1]["id"] == 0  # the host has no answer yet: it waits for the task
    poll = next_poll(rig, loop)
    assert poll["params"] == {"taskId": "t-1", "_meta": meta(tasks=True)}  # the 2026 envelope, the extension declared
    rig.answer(poll["id"], {"resultType": "complete", **task("working", statusMessage="halfway")})
    spin(loop)
    progress = [m for m in rig.host.sent if m.get("method") == "notifications/progress"]
    assert progress[-1]["params"]["message"] == "working: halfway" and progress[-1]["params"]["progressToken"] == "p1"
    poll = next_poll(rig, loop)
    result = {"content": [{"type": "text", "text": "crunched"}]}
    rig.answer(poll["id"], {"resultType": "complete", **task("completed", result=result)})
    spin(loop)
    answer = rig.replies()[-1]
    assert answer["id"] == 1 and answer["result"]["content"] == result["content"]
    [created] = rig.events(Kind.TASK_CREATED)
    assert (created.data["era"], created.data["bridged"]) == ("extension", True)


def test_input_required_of_a_bridged_extension_task_cancels_it_and_says_why(loop) -> None:
    rig = discovered(loop)
    refused_then_task(rig, loop)
    poll = next_poll(rig, loop)
    asking = task(
        "input_required", statusMessage="Which tides?", inputRequests={"k1": {"method": "elicitation/create"}}
    )
    rig.answer(poll["id"], {"resultType": "complete", **asking})
    spin(loop)
    cancel = calls(rig, "tasks/cancel")[-1]
    assert cancel["params"] == {"taskId": "t-1", "_meta": meta(tasks=True)}
    rig.answer(cancel["id"], {"resultType": "complete"})
    spin(loop)
    answer = rig.replies()[-1]
    assert answer["id"] == 1 and answer["result"]["isError"] is True
    text = answer["result"]["content"][0]["text"]
    assert "Which tides?" in text and "the host did not declare elicitation; mcpwatch cancelled the task" in text


def test_a_host_that_declares_the_extension_gets_the_refusal_as_it_is(loop) -> None:
    rig = discovered(loop)
    refused_then_task(rig, loop, tasks=True)
    assert len(calls(rig, "tools/call")) == 1
    assert rig.replies()[-1]["error"]["code"] == -32021


def test_the_operators_cancel_of_a_bridged_extension_task_carries_the_envelope(loop) -> None:
    rig = discovered(loop)
    refused_then_task(rig, loop)
    assert rig.core.cancel("1") is True
    spin(loop)
    cancel = calls(rig, "tasks/cancel")[-1]
    assert cancel["params"] == {"taskId": "t-1", "_meta": meta(tasks=True)}  # else the upstream refuses it (-32021)


class SessionlessRequest:
    """One 2026-era POST to the HTTP front: no connection; what it proves is the front's principal."""

    send_raw = None

    def __init__(self, principal: str = "local") -> None:
        self.sent: list[dict[str, Any]] = []
        self.connection = None
        self.key_prefix = "sessionless/"
        self.sessionless_principal = principal

    def send(self, message: dict[str, Any]) -> None:
        self.sent.append(message)


def client_meta(name: str = "sdk-host", version: str = "1") -> dict[str, Any]:
    return {**meta(), "io.modelcontextprotocol/clientInfo": {"name": name, "version": version}}


def cut_sessionless_task(loop) -> TaskRig:
    """A sessionless request's task-only call, bridged, then cut at its host's budget (2 s): the task goes on."""
    rig = TaskRig(loop, host_timeout_s=2.0, margin_s=0.0)
    answer = {"supportedVersions": ["2026-07-28"], "capabilities": {"tools": {}, "extensions": {EXTENSION: {}}}}
    rig.answer(rig.request(0, "server/discover", {"_meta": meta()}, host=SessionlessRequest()), answer)
    first = SessionlessRequest()
    call = {"name": "crunch", "arguments": {"n": 1, "m": [2, 3]}, "_meta": client_meta()}
    rig.answer(rig.request(1, "tools/call", call, host=first), error=REFUSAL)
    rig.answer(calls(rig, "tools/call")[-1]["id"], {"resultType": "task", **task("working")})
    rig.scheduler.advance(2.0)
    spin(loop)
    assert "goes on upstream as task t-1" in first.sent[-1]["result"]["content"][0]["text"]
    return rig


def test_a_retried_sessionless_call_attaches_to_its_running_task(loop) -> None:
    rig = cut_sessionless_task(loop)
    retry = SessionlessRequest()  # a new POST: the same client, the same arguments in another order
    call = {"name": "crunch", "arguments": {"m": [2, 3], "n": 1}, "_meta": client_meta()}
    rig.request(2, "tools/call", call, host=retry)
    assert len(calls(rig, "tools/call")) == 2  # the refused call and its task: no third, no second task
    poll = next_poll(rig, loop)
    result = {"content": [{"type": "text", "text": "crunched"}]}
    rig.answer(poll["id"], {"resultType": "complete", **task("completed", result=result)})
    spin(loop)
    assert retry.sent[-1]["id"] == 2 and retry.sent[-1]["result"]["content"] == result["content"]
    attached = [e.data for e in rig.events(Kind.TASK_CREATED) if e.data.get("attached_to")]
    assert [a["task_id"] for a in attached] == ["t-1"]


def test_a_finished_sessionless_task_answers_a_retry_of_the_same_client_at_once(loop) -> None:
    rig = cut_sessionless_task(loop)
    poll = next_poll(rig, loop)
    result = {"content": [{"type": "text", "text": "crunched"}]}
    rig.answer(poll["id"], {"resultType": "complete", **task("completed", result=result)})
    spin(loop)
    retry = SessionlessRequest()
    rig.request(2, "tools/call", {"name": "crunch", "arguments": {"n": 1, "m": [2, 3]}, "_meta": client_meta()}, retry)
    assert retry.sent[-1]["result"]["content"] == result["content"]
    assert len(rig.events(Kind.LATE_REUSE)) == 1


def test_another_client_or_principal_never_attaches_to_a_sessionless_task(loop) -> None:
    """A sessionless request proves no connection: the client it names (a claim) and the front's principal are
    what keeps two hosts' identical calls apart; a request naming no client attaches to nothing."""
    rig = cut_sessionless_task(loop)
    others = [
        (SessionlessRequest(), client_meta(name="other-host")),
        (SessionlessRequest(), client_meta(version="2")),
        (SessionlessRequest("bearer"), client_meta()),
        (SessionlessRequest(), meta() | {"io.modelcontextprotocol/clientInfo": {}}),
        (SessionlessRequest(None), client_meta()),  # type: ignore[arg-type]  # a link that grants no attach
    ]
    for number, (request, claimed) in enumerate(others, start=2):
        rig.request(
            number, "tools/call", {"name": "crunch", "arguments": {"n": 1, "m": [2, 3]}, "_meta": claimed}, request
        )
    made = [m for m in calls(rig, "tools/call")[2:]]
    assert len(made) == len(others)  # each its own call upstream, none waiting on task t-1
    assert not [e for e in rig.events(Kind.TASK_CREATED) if e.data.get("attached_to")]


def test_a_2025_era_host_is_told_in_one_line_why_an_extension_only_tool_cannot_run(loop) -> None:
    """An extension server over a connection opened with `initialize` lists its task-only tools (`required`) but
    refuses every 2025-era call of them with `-32021`: the host (with or without tasks) gets one line naming the
    tool, the era and what can call it, never the 2026 era's code alone."""
    capabilities: dict[str, Any]
    for capabilities in ({}, {"tasks": {"requests": {"tools": {"call": {}}}}}):
        rig = TaskRig(loop, host_timeout_s=30.0, margin_s=0.0)
        init = {"protocolVersion": "2025-11-25", "capabilities": capabilities, "clientInfo": {"name": "claude-code"}}
        up_caps = {"tools": {"listChanged": True}}  # no `tasks`: it runs them only for 2026-era requests
        rig.answer(rig.request(0, "initialize", init), {"protocolVersion": "2025-11-25", "capabilities": up_caps})
        crunch = {"name": "cr\x1bunch", "inputSchema": {"type": "object"}, "execution": {"taskSupport": "required"}}
        rig.answer(rig.request("l", "tools/list", {}), {"tools": [crunch]})
        params: dict[str, Any] = {"name": "cr\x1bunch", "arguments": {}}
        if capabilities:
            params["task"] = {"ttl": 60000}
        rig.answer(rig.request(1, "tools/call", params), error=REFUSAL)
        error = rig.replies()[-1]["error"]
        assert error["code"] == -32021 and error["data"] == REFUSAL["data"]
        assert error["message"].startswith('mcpwatch: tool "cr\\u001bunch" runs only as a task of the MCP tasks')
        assert "this host connected with initialize (2025 era)" in error["message"] and "\n" not in error["message"]
        assert len(calls(rig, "tools/call")) == 1  # nothing sent again: it cannot run on this connection


def test_a_2026_era_host_that_declares_the_extension_reads_the_upstreams_own_refusal(loop) -> None:
    rig = discovered(loop)
    refused_then_task(rig, loop, tasks=True)
    assert rig.replies()[-1]["error"] == REFUSAL
