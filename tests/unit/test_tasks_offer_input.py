"""An offered extension task whose call the upstream answers with a question (multi round-trip `input_required`):
the task goes `input_required` with the requests, the host answers by `tasks/update`, and the call is made again
upstream with the answers and the upstream's `requestState`. Attacked: garbage and partial answers, a foreign
host's answer, keys reused from round to round, an upstream that keeps asking, a host that never answers, a cancel
while waiting. On a manual clock."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from taskrig import Host, TaskRig
from test_tasks_offer import CALL, offering
from test_tasks_offer_extension import call, poll

from mcpwatch.config import Settings, TasksSettings
from mcpwatch.events import Kind
from mcpwatch.wrapper.tasks.shapes import INPUT_ROUNDS_MAX

ASK = {"method": "elicitation/create", "params": {"mode": "form", "message": "Which topic?", "requestedSchema": {}}}
YES = {"action": "accept", "content": {"topic": "tides"}}


def started(loop, max_s: float = 3600.0) -> tuple[TaskRig, str, int]:
    """An offered extension task; returns the rig, the task id and the call's id upstream."""
    rig = TaskRig(
        loop,
        deadline=replace(Settings().deadline, host_timeout_s=2.0, margin_s=0.0),
        tasks=TasksSettings(offer=("slow",), max_s=max_s),
    )
    rig.host.connection = None
    rig.request(1, "tools/call", call())
    task_id = rig.replies()[-1]["result"]["taskId"]
    up_id = next(m for m in rig.upstream.sent if m.get("method") == "tools/call")["id"]
    return rig, task_id, up_id


def asks(rig: TaskRig, up_id: int, requests: dict[str, Any], state: str | None = "s1") -> None:
    question: dict[str, Any] = {"resultType": "input_required", "inputRequests": requests}
    if state is not None:
        question["requestState"] = state
    rig.answer(up_id, question)


def get(rig: TaskRig, task_id: str, request_id: int, host: Any = None) -> dict[str, Any]:
    rig.scheduler.advance(1.0)
    rig.request(request_id, "tasks/get", poll(task_id), host=host)
    return rig.replies(host)[-1]["result"]


def update(rig: TaskRig, task_id: str, request_id: int, responses: Any, name: str = "ext-host", host: Any = None):
    rig.request(request_id, "tasks/update", poll(task_id, name=name, inputResponses=responses), host=host)
    return rig.replies(host)[-1]


def calls(rig: TaskRig) -> list[dict[str, Any]]:
    return [m for m in rig.upstream.sent if m.get("method") == "tools/call"]


def test_the_upstreams_question_becomes_the_tasks_and_the_answer_goes_with_the_call_again(loop) -> None:
    rig, task_id, up_id = started(loop)
    asks(rig, up_id, {"topic": ASK})
    waiting = get(rig, task_id, 2)
    assert (waiting["status"], waiting["inputRequests"]) == ("input_required", {"topic": ASK})
    assert update(rig, task_id, 3, {"topic": YES})["result"] == {"resultType": "complete"}
    first, again = calls(rig)
    assert again["id"] == up_id and again["params"]["arguments"] == first["params"]["arguments"]
    assert (again["params"]["inputResponses"], again["params"]["requestState"]) == ({"topic": YES}, "s1")
    assert again["params"]["_meta"] == first["params"]["_meta"]  # the same envelope (and progress token)
    assert get(rig, task_id, 4)["status"] == "working"
    rig.answer(up_id, {"content": [{"type": "text", "text": "picked tides"}]})
    done = get(rig, task_id, 5)
    assert done["status"] == "completed" and done["result"]["content"][0]["text"] == "picked tides"
    statuses = [(e.data["status"], "kept" in e.data) for e in rig.events(Kind.TASK_STATUS)]
    assert statuses == [("input_required", False), ("working", False), ("completed", True)]  # only an end is kept
    [end] = [e for e in rig.events(Kind.REQUEST_END) if e.tool == "slow"]
    assert end.data["outcome"] == "ok"  # one call, from the task's creation to its result


def test_a_key_reused_in_a_later_round_is_shown_under_a_new_one(loop) -> None:
    rig, task_id, up_id = started(loop)
    asks(rig, up_id, {"topic": ASK})
    update(rig, task_id, 2, {"topic": YES})
    asks(rig, up_id, {"topic": ASK}, state="s2")  # the upstream's own key again: unique it must be to the host
    assert get(rig, task_id, 3)["inputRequests"] == {"topic.2": ASK}
    assert update(rig, task_id, 4, {"topic": {"action": "decline"}})["result"] == {"resultType": "complete"}
    assert len(calls(rig)) == 2  # an answer to a request already answered is ignored
    update(rig, task_id, 5, {"topic.2": {"action": "decline"}})
    last = calls(rig)[-1]["params"]
    assert (last["inputResponses"], last["requestState"]) == ({"topic": {"action": "decline"}}, "s2")


def test_garbage_and_partial_answers_leave_the_question_standing(loop) -> None:
    rig, task_id, up_id = started(loop)
    asks(rig, up_id, {"a": ASK, "b": ASK}, state=None)
    refused = update(rig, task_id, 2, "junk")["error"]
    assert (refused["code"], refused["message"]) == (
        -32602,
        "tasks/update needs inputResponses: an object of answers by request key",
    )
    for n, garbage in enumerate([{"a": "junk"}, {"zzz": YES}, {}], start=3):
        assert update(rig, task_id, n, garbage)["result"] == {"resultType": "complete"}  # ignored, as the spec says
    assert get(rig, task_id, 6)["inputRequests"] == {"a": ASK, "b": ASK} and len(calls(rig)) == 1
    update(rig, task_id, 7, {"a": YES})
    assert get(rig, task_id, 8)["inputRequests"] == {"b": ASK} and len(calls(rig)) == 1
    update(rig, task_id, 9, {"b": YES})
    again = calls(rig)[-1]["params"]
    assert again["inputResponses"] == {"a": YES, "b": YES} and "requestState" not in again


def test_a_foreign_hosts_answer_reaches_nothing(loop) -> None:
    rig, task_id, up_id = started(loop)
    asks(rig, up_id, {"topic": ASK})
    other = Host(connection=None)
    rig.core.attach_link(other)
    refused = update(rig, task_id, 2, {"topic": YES}, name="someone-else", host=other)
    assert refused["error"]["message"] == f"no task {task_id!r} (unknown, expired, or another host's)"
    assert len(calls(rig)) == 1 and get(rig, task_id, 3)["status"] == "input_required"


def test_an_upstream_that_keeps_asking_fails_the_task_after_the_bound(loop) -> None:
    rig, task_id, up_id = started(loop)
    for n in range(1, INPUT_ROUNDS_MAX + 1):
        asks(rig, up_id, {f"k{n}": ASK})
        update(rig, task_id, 100 + n, {f"k{n}": YES})
    asks(rig, up_id, {"one-more": ASK})
    failed = get(rig, task_id, 2)
    assert failed["status"] == "failed" and len(calls(rig)) == INPUT_ROUNDS_MAX + 1
    assert failed["error"]["message"] == (
        f"slow asked for input more than {INPUT_ROUNDS_MAX} times inside task {task_id}; mcpwatch relays that many"
        " rounds at most"
    )


def test_a_host_that_never_answers_gets_the_partial_answer_at_max_s(loop) -> None:
    rig, task_id, up_id = started(loop, max_s=60.0)
    asks(rig, up_id, {"topic": ASK})
    rig.scheduler.advance(60.0)  # [tasks] max_s bounds the call, questions and all
    done = get(rig, task_id, 2)
    assert done["status"] == "completed" and done["result"]["isError"] is True
    assert "60 s" in done["result"]["content"][0]["text"]


def test_a_task_waiting_for_input_can_be_cancelled(loop) -> None:
    rig, task_id, up_id = started(loop)
    asks(rig, up_id, {"topic": ASK})
    rig.request(2, "tasks/cancel", poll(task_id))
    assert rig.replies()[-1]["result"] == {"resultType": "complete"}
    assert get(rig, task_id, 3)["status"] == "cancelled"
    assert update(rig, task_id, 4, {"topic": YES})["result"] == {"resultType": "complete"}
    assert len(calls(rig)) == 1  # nothing is sent again for a cancelled task


def test_a_question_with_only_a_state_is_answered_by_calling_again(loop) -> None:
    rig, task_id, up_id = started(loop)
    rig.answer(up_id, {"resultType": "input_required", "requestState": "busy-1"})  # "call again" (load shedding)
    assert get(rig, task_id, 2)["status"] == "working" and len(calls(rig)) == 2  # after 1 s: called again
    again = calls(rig)[-1]["params"]
    assert again["requestState"] == "busy-1" and "inputResponses" not in again
    rig.answer(up_id, {"resultType": "input_required", "inputRequests": "junk", "requestState": "busy-2"})
    failed = get(rig, task_id, 3)
    assert failed["status"] == "failed" and len(calls(rig)) == 2
    assert "without any input request mcpwatch can relay" in failed["error"]["message"]


def test_a_task_cancelled_before_its_call_is_made_again_stays_cancelled(loop) -> None:
    rig, task_id, up_id = started(loop)
    rig.answer(up_id, {"resultType": "input_required", "requestState": "busy-1"})
    rig.request(2, "tasks/cancel", poll(task_id))
    rig.scheduler.advance(1.0)
    assert len(calls(rig)) == 1 and get(rig, task_id, 3)["status"] == "cancelled"


def test_a_2025_era_offered_task_cannot_take_answers_and_fails_saying_so(loop) -> None:
    rig = offering(loop)
    rig.request(1, "tools/call", CALL)
    task_id = rig.replies()[-1]["result"]["task"]["taskId"]
    asks(rig, calls(rig)[-1]["id"], {"topic": ASK})  # its host has no tasks/update to answer with
    rig.request(2, "tasks/result", {"taskId": task_id})
    error = rig.replies()[-1]["error"]["message"]
    assert error.startswith(f"slow asked for input (resultType input_required) inside task {task_id}")
    assert error.endswith("call slow without a task to answer them")


def test_ten_thousand_answers_in_one_update_cost_linear_work(loop, monkeypatch) -> None:
    """K input requests answered in one `tasks/update` (a hostile host's, or an honest bulk form): each answer is
    one set lookup, not a walk of every request of the round (K = 10,000 took 30 CPU-seconds, holding the loop and
    every other host's ping). Counted, not timed: the round's requests are walked a constant number of times."""
    from mcpwatch.wrapper.tasks import offer_input

    rig, task_id, up_id = started(loop)
    k = 10_000
    asks(rig, up_id, {f"q{i}": ASK for i in range(k)})
    walks = 0
    real = offer_input.OfferedInput.outstanding

    def counted(state: offer_input.OfferedInput) -> dict[str, Any]:
        nonlocal walks
        walks += 1
        return real(state)

    monkeypatch.setattr(offer_input.OfferedInput, "outstanding", counted)
    assert update(rig, task_id, 2, {f"q{i}": YES for i in range(k)})["result"] == {"resultType": "complete"}
    assert walks <= 1
    assert len(calls(rig)[-1]["params"]["inputResponses"]) == k
    other = Host(connection="stdio of another")
    rig.core.attach_link(other)
    rig.request(3, "ping", {}, host=other)  # the other host's ping went upstream at once, after the update
    assert rig.upstream_methods()[-1] == "ping"
