"""A bridged extension task's input requests, relayed to its 2026-era host as a multi round-trip question: the host's
waiting call is answered `resultType: "input_required"` with the task's requests and mcpwatch's `requestState`; the
host's call that brings the answers sends them to the task by `tasks/update` and waits for its result. Attacked: a
host that cannot answer, garbage answers, a foreign host's answer, a host that never calls back, a cut answering call,
an upstream that keeps asking. On a manual clock."""

from __future__ import annotations

from typing import Any

from taskrig import Host, TaskRig
from test_tasks_bridge_extension import REFUSAL, calls, discovered, meta, spin, task

from mcpwatch.events import Kind
from mcpwatch.wrapper.tasks.shapes import INPUT_ROUNDS_MAX

CAPS = "io.modelcontextprotocol/clientCapabilities"
ASK = {"method": "elicitation/create", "params": {"mode": "form", "message": "Which topic?", "requestedSchema": {}}}


def host_meta(name: str = "sdk-host", elicitation: bool = True) -> dict[str, Any]:
    base = meta()
    return {
        **base,
        "io.modelcontextprotocol/clientInfo": {"name": name},
        CAPS: {"elicitation": {}} if elicitation else {},
    }


def call(name: str = "sdk-host", elicitation: bool = True, **extra: Any) -> dict[str, Any]:
    return {"name": "crunch", "arguments": {"n": 1}, "_meta": host_meta(name, elicitation), **extra}


def running(loop, elicitation: bool = True, ttl_ms: int = 60_000) -> TaskRig:
    """A bridged extension task t-1 made for the host's call 1."""
    rig = discovered(loop)
    rig.answer(rig.request(1, "tools/call", call(elicitation=elicitation)), error=REFUSAL)
    rig.answer(calls(rig, "tools/call")[-1]["id"], {"resultType": "task", **task("working", ttlMs=ttl_ms)})
    return rig


def poll_answer(rig: TaskRig, loop, status: str, **extra: Any) -> None:
    rig.scheduler.advance(1.0)
    spin(loop)
    rig.answer(calls(rig, "tasks/get")[-1]["id"], {"resultType": "complete", **task(status, **extra)})
    spin(loop)


def question(rig: TaskRig, host_id: Any = 1, host: Any = None) -> dict[str, Any]:
    [reply] = [r for r in rig.replies(host) if r["id"] == host_id]
    assert reply["result"]["resultType"] == "input_required", reply
    return reply["result"]


def test_the_tasks_input_requests_reach_the_host_and_its_answers_the_task(loop) -> None:
    rig = running(loop)
    poll_answer(rig, loop, "input_required", statusMessage="Which topic?", inputRequests={"topic1": ASK})
    asked = question(rig)
    assert asked["inputRequests"] == {"topic1": ASK} and asked["requestState"].startswith("mcpwatch-input-")
    answer = {"topic1": {"action": "accept", "content": {"topic": "tides"}}}
    rig.request(2, "tools/call", call(inputResponses=answer, requestState=asked["requestState"]))
    spin(loop)
    assert len(calls(rig, "tools/call")) == 2  # the answering call is not another task
    [update] = calls(rig, "tasks/update")
    assert update["params"] == {
        "taskId": "t-1",
        "_meta": host_meta() | {CAPS: {"elicitation": {}, "extensions": {"io.modelcontextprotocol/tasks": {}}}},
        "inputResponses": answer,
    }
    rig.answer(update["id"], {"resultType": "complete"})
    poll_answer(rig, loop, "input_required", inputRequests={})  # answered, not taken in yet: nothing to ask
    assert calls(rig, "tasks/cancel") == [] and rig.replies()[-1]["id"] == 1
    poll_answer(rig, loop, "working")
    result = {"content": [{"type": "text", "text": "picked tides"}]}
    poll_answer(rig, loop, "completed", result=result)
    assert rig.replies()[-1] == {"jsonrpc": "2.0", "id": 2, "result": result}
    ends = {e.request_id: e.data for e in rig.events(Kind.REQUEST_END) if e.tool == "crunch"}
    assert (ends["1"]["outcome"], ends["1"]["task_status"]) == ("ok", "input_required")
    assert (ends["2"]["outcome"], ends["2"]["task_id"]) == ("ok", "t-1")
    assert [e.data.get("attached_to") for e in rig.events(Kind.TASK_CREATED)] == [None, "1"]


def test_a_decline_is_relayed_as_it_is(loop) -> None:
    rig = running(loop)
    poll_answer(rig, loop, "input_required", inputRequests={"topic1": ASK})
    state = question(rig)["requestState"]
    rig.request(2, "tools/call", call(inputResponses={"topic1": {"action": "decline"}}, requestState=state))
    spin(loop)
    assert calls(rig, "tasks/update")[-1]["params"]["inputResponses"] == {"topic1": {"action": "decline"}}


def test_a_host_without_the_capability_gets_the_clear_ending(loop) -> None:
    rig = running(loop, elicitation=False)
    poll_answer(rig, loop, "input_required", statusMessage="Which topic?", inputRequests={"topic1": ASK})
    cancel = calls(rig, "tasks/cancel")[-1]
    rig.answer(cancel["id"], {"resultType": "complete"})
    spin(loop)
    text = rig.replies()[-1]["result"]["content"][0]["text"]
    assert (
        "task t-1 needs input from the user (its question is the last progress), and the host did not declare " in text
    )
    assert text.count("Which topic?") == 1  # as its last progress
    sampling = {"method": "sampling/createMessage", "params": {}}
    rig = running(loop)  # elicitation declared, sampling not
    poll_answer(rig, loop, "input_required", inputRequests={"s1": sampling})
    rig.answer(calls(rig, "tasks/cancel")[-1]["id"], {"resultType": "complete"})
    spin(loop)
    assert (
        "and the host did not declare sampling; mcpwatch cancelled" in rig.replies()[-1]["result"]["content"][0]["text"]
    )


def test_garbage_answers_get_a_clear_error_and_the_question_stands(loop) -> None:
    rig = running(loop)
    poll_answer(rig, loop, "input_required", inputRequests={"topic1": ASK})
    state = question(rig)["requestState"]
    for n, garbage in enumerate(["junk", {"topic1": "junk"}, {"other": {"action": "accept"}}, None], start=2):
        rig.request(n, "tools/call", call(inputResponses=garbage, requestState=state))
        error = rig.replies()[-1]["error"]
        assert error["code"] == -32602
        assert error["message"] == "inputResponses must answer task t-1's input requests, an object for each of: topic1"
    assert calls(rig, "tasks/update") == [] and len(calls(rig, "tools/call")) == 2
    rig.request(9, "tools/call", call(inputResponses={"topic1": {"action": "what"}}, requestState=state))
    spin(loop)
    update = calls(rig, "tasks/update")[-1]  # an object: the upstream judges it, and refuses it
    rig.answer(update["id"], error={"code": -32602, "message": "invalid ElicitResult"})
    spin(loop)
    assert calls(rig, "tasks/cancel")
    rig.answer(calls(rig, "tasks/cancel")[-1]["id"], {"resultType": "complete"})
    spin(loop)
    text = rig.replies()[-1]["result"]["content"][0]["text"]
    assert rig.replies()[-1]["id"] == 9 and "the upstream refused the host's answer to task t-1" in text
    assert "invalid ElicitResult" in text


def test_a_foreign_hosts_answer_is_refused_and_reaches_nothing(loop) -> None:
    rig = running(loop)
    poll_answer(rig, loop, "input_required", inputRequests={"topic1": ASK})
    state = question(rig)["requestState"]
    answer = {"topic1": {"action": "accept", "content": {"topic": "mine"}}}
    other = Host(connection="other")
    rig.core.attach_link(other)
    rig.request(2, "tools/call", call(inputResponses=answer, requestState=state), host=other)
    rig.request(3, "tools/call", call(name="impostor", inputResponses=answer, requestState=state))
    rig.request(4, "tools/call", call(inputResponses=answer, requestState="mcpwatch-input-guessed"))
    other_call = {**call(inputResponses=answer, requestState=state), "arguments": {"n": 2}}
    rig.request(5, "tools/call", other_call)  # the host's own, but not the call the task was made for
    assert rig.replies()[-1]["error"]["message"] == (
        "this requestState answers task t-1's call of crunch: repeat that call as it was"
    )
    refused = "no task is waiting for this answer: its requestState is unknown, expired, or another host's"
    assert rig.replies(other)[-1]["error"]["message"] == refused
    assert [r["error"]["message"] for r in rig.replies() if r["id"] in (3, 4)] == [refused, refused]
    assert calls(rig, "tasks/update") == [] and len(calls(rig, "tools/call")) == 2


def test_a_host_that_never_calls_back_is_not_waited_for(loop) -> None:
    rig = running(loop, ttl_ms=3_600_000)  # the task itself would wait an hour
    poll_answer(rig, loop, "input_required", inputRequests={"topic1": ASK})
    question(rig)
    rig.scheduler.advance(599.0)  # [tasks] reuse_s is 600 s; the polls meanwhile go unanswered
    spin(loop)
    assert calls(rig, "tasks/cancel") == []
    rig.scheduler.advance(1.0)
    spin(loop)
    rig.answer(calls(rig, "tasks/cancel")[-1]["id"], {"resultType": "complete"})
    spin(loop)
    [ended] = [e.data for e in rig.events(Kind.REQUEST_END) if e.request_id == "1"]
    assert ended["task_status"] == "input_required"  # the host's call had its question; nothing else waited
    [warning] = rig.events(Kind.WARNING)
    assert warning.data["message"] == (
        "bridged task t-1 ended: the host did not answer task t-1's input requests (topic1) within 600 s "
        "([tasks] reuse_s); mcpwatch cancelled the task"
    )
    assert rig.core.bridge.input.by_token == {} and rig.core.bridge.runs == {}


def test_a_cut_answering_call_gets_the_partial_and_the_task_goes_on(loop) -> None:
    rig = running(loop)
    poll_answer(rig, loop, "input_required", inputRequests={"topic1": ASK})
    state = question(rig)["requestState"]
    answer = {"topic1": {"action": "accept", "content": {"topic": "tides"}}}
    rig.request(2, "tools/call", call(inputResponses=answer, requestState=state))
    spin(loop)
    rig.answer(calls(rig, "tasks/update")[-1]["id"], {"resultType": "complete"})
    rig.scheduler.advance(30.0)  # the host's budget: the partial answer, and the task goes on
    spin(loop)
    cut = rig.replies()[-1]
    assert cut["id"] == 2 and cut["result"]["isError"] is True and "task t-1" in cut["result"]["content"][0]["text"]
    assert calls(rig, "tasks/cancel") == []
    rig.answer(
        calls(rig, "tasks/get")[-1]["id"], {"resultType": "complete", **task("completed", result={"content": []})}
    )
    spin(loop)
    [late] = rig.events(Kind.LATE_RESULT)
    assert late.request_id == "2"  # the late result is the answering call's, the one that was cut


def test_an_upstream_that_keeps_asking_is_stopped_after_the_bound(loop) -> None:
    rig = running(loop)
    for n in range(1, INPUT_ROUNDS_MAX + 2):
        poll_answer(rig, loop, "input_required", inputRequests={f"topic{n}": ASK})
        if n > INPUT_ROUNDS_MAX:
            break
        state = question(rig, host_id=n)["requestState"]
        rig.request(
            n + 1,
            "tools/call",
            call(inputResponses={f"topic{n}": {"action": "accept", "content": {}}}, requestState=state),
        )
        spin(loop)
        rig.answer(calls(rig, "tasks/update")[-1]["id"], {"resultType": "complete"})
    assert len(calls(rig, "tasks/update")) == INPUT_ROUNDS_MAX
    rig.answer(calls(rig, "tasks/cancel")[-1]["id"], {"resultType": "complete"})
    spin(loop)
    last = rig.replies()[-1]
    assert last["id"] == INPUT_ROUNDS_MAX + 1
    assert f"asked its host for input more than {INPUT_ROUNDS_MAX} times" in last["result"]["content"][0]["text"]


def test_a_partial_answer_is_sent_and_only_the_rest_is_asked_again(loop) -> None:
    rig = running(loop)
    poll_answer(rig, loop, "input_required", inputRequests={"a": ASK, "b": ASK})
    state = question(rig)["requestState"]
    rig.request(2, "tools/call", call(inputResponses={"a": {"action": "accept", "content": {}}}, requestState=state))
    spin(loop)
    assert calls(rig, "tasks/update")[-1]["params"]["inputResponses"] == {"a": {"action": "accept", "content": {}}}
    rig.answer(calls(rig, "tasks/update")[-1]["id"], {"resultType": "complete"})
    poll_answer(rig, loop, "input_required", inputRequests={"a": ASK, "b": ASK})  # not taken in yet: a is answered
    assert question(rig, host_id=2)["inputRequests"] == {"b": ASK}


def test_a_flood_of_input_requests_names_them_in_a_bounded_line(loop) -> None:
    rig = running(loop)
    many = {f"key-{n:05}-{'x' * 40}": ASK for n in range(2000)}
    poll_answer(rig, loop, "input_required", inputRequests=many)
    state = question(rig)["requestState"]
    rig.request(2, "tools/call", call(inputResponses="junk", requestState=state))
    message = rig.replies()[-1]["error"]["message"]
    assert message.startswith("inputResponses must answer task t-1's input requests") and len(message) < 400
