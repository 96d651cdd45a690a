"""The bridge attacked by a hostile upstream: numbers no float can hold where a time is expected, a task whose
`tasks/result` never comes, many retries of one call at once. On a manual clock, in memory."""

from __future__ import annotations

import itertools
import json
from collections.abc import Iterator
from typing import Any

from taskrig import spin, task_2025
from test_tasks_bridge import CALL
from test_tasks_bridge_bounds import bridged, run_upstream, start
from test_tasks_bridge_extension import calls

from mcpwatch.events import Kind
from mcpwatch.wrapper.tasks import bridge as bridge_module
from mcpwatch.wrapper.tasks.bridge_polls import POLL_MAX_S, POLL_MIN_S

HUGE = 10**400  # a legal JSON number of 401 digits: an int in Python, too large for any float


def test_a_poll_interval_or_ttl_too_large_for_a_float_holds_at_the_bound(loop) -> None:
    for task in ({"ttl": None, "pollInterval": HUGE}, {"ttl": HUGE, "pollInterval": 0}):
        rig = bridged(loop, budget_s=1000.0, ttl_s=120.0)
        start(rig, 1, **task)
        times = [at for at, _ in run_upstream(rig, loop, 3 * POLL_MAX_S, step=0.05, **task)]
        gaps = [b - a for a, b in itertools.pairwise(times)]
        assert len(gaps) >= 3, task  # the polls go on after the first answer
        high = POLL_MAX_S if task["pollInterval"] else POLL_MIN_S
        assert abs(gaps[-1] - high) <= 0.051, (task, gaps)
        run_upstream(rig, loop, 120.0, step=1.0, **task)  # the TTL mcpwatch asked for: cancelled, answered
        assert [m["params"]["taskId"] for m in calls(rig, "tasks/cancel")] == ["t-1"], task
        assert rig.replies()[-1]["id"] == 1


def test_a_tasks_result_that_never_comes_is_given_up_with_the_task(loop) -> None:
    rig = bridged(loop, budget_s=2.0, reuse_s=5.0)
    start(rig, 1, ttl=HUGE)  # the server says its task lives for ever
    rig.scheduler.advance(0.2)
    spin(loop)
    poll = calls(rig, "tasks/get")[-1]
    rig.answer(poll["id"], task_2025("t-1", "completed", ttl=HUGE))  # done: its result by tasks/result
    spin(loop)
    [fetch] = calls(rig, "tasks/result")  # never answered
    rig.scheduler.advance(2.0)  # the host's budget: cut
    spin(loop)
    rig.scheduler.advance(5.1)  # reuse_s with no host call waiting: given up
    spin(loop)
    [cancel] = calls(rig, "tasks/cancel")
    rig.answer(cancel["id"], task_2025("t-1", "cancelled"))
    spin(loop)
    assert fetch["id"] not in rig.core.session.internal  # nothing of the bridge's own still waits upstream
    assert not rig.core.bridge._jobs


class CountingList(list[Any]):
    """The waiting calls of a task, counting each one looked at: the work done per call, without a clock."""

    looked = 0

    def __iter__(self) -> Iterator[Any]:
        for item in super().__iter__():
            CountingList.looked += 1
            yield item


def test_many_retries_of_one_call_join_its_task_in_linear_work(loop) -> None:
    rig = bridged(loop, budget_s=1000.0)
    start(rig, 1)
    run = rig.core.bridge._by_task["t-1"]
    run.waiters = CountingList(run.waiters)
    retries = 2_000
    for n in range(retries):
        rig.request(1000 + n, "tools/call", {**CALL, "arguments": {"topic": "t1"}})
    assert len(run.waiters) == retries + 1  # every retry joined the one task
    assert len(calls(rig, "tools/call")) == 1
    assert CountingList.looked <= 10 * retries  # not each retry looking at every other one (2,000² = 4,000,000)
    rig.scheduler.advance(999.6)  # one poll just before all those budgets end, then all are cut at once
    spin(loop)
    rig.scheduler.advance(0.5)
    spin(loop)
    assert len([r for r in rig.replies() if isinstance(r["id"], int) and r["id"] >= 1000]) == retries
    assert CountingList.looked <= 20 * retries


def test_finished_results_kept_for_a_retry_are_bounded_by_bytes(loop, monkeypatch) -> None:
    monkeypatch.setattr(bridge_module, "KEPT_BYTES_MAX", 1_000_000)
    rig = bridged(loop, budget_s=2.0, reuse_s=600.0)
    for n in range(1, 31):  # thirty calls, each with its own arguments and task
        start(rig, n)
    seen = len(rig.upstream.sent)
    rig.scheduler.advance(2.0)  # all cut: their tasks go on, their results will wait for a retry
    spin(loop)
    for _ in range(40):
        rig.scheduler.advance(0.5)
        spin(loop)
        for message in rig.upstream.sent[seen:]:
            method, task_id = message.get("method"), message.get("params", {}).get("taskId")
            if method == "tasks/get":
                rig.answer(message["id"], task_2025(task_id, "completed"))
            elif method == "tasks/result":
                rig.answer(message["id"], {"content": [{"type": "text", "text": task_id + "x" * 100_000}]})
        seen = len(rig.upstream.sent)
        spin(loop)
    bridge = rig.core.bridge
    kept = [run for run in bridge.runs.values() if run.result is not None]
    assert 1 <= len(kept) <= 10  # 100 kB each under a 1 MB bound, not all thirty (3 MB)
    assert bridge.kept_bytes <= 1_000_000
    assert {run.task_id for run in kept} == {f"t-{n}" for n in range(31 - len(kept), 31)}  # the newest kept
    dropped = [e for e in rig.events(Kind.WARNING) if "kept for an identical call" in e.data["message"]]
    assert len(dropped) == 30 - len(kept)
    rig.request(100, "tools/call", {**CALL, "arguments": {"topic": "t30"}})  # the newest: answered at once
    assert rig.replies()[-1]["id"] == 100 and "t-30x" in rig.replies()[-1]["result"]["content"][0]["text"]


HOSTILE_ANSWERS: list[Any] = [
    {"taskId": "t-1"},  # no status
    {"taskId": "t-1", "status": "exploded"},  # a status the spec does not have
    {"taskId": "someone-else", "status": "completed"},  # another task than the one asked
    {"taskId": "t-1", "status": "working", "statusMessage": "x" * (4 << 20)},  # 4 MiB message
    {"taskId": "t-1", "status": "working", "pollInterval": [1, 2], "ttl": {"ms": 1}},
    None,
    "completed",
]


def test_hostile_tasks_get_answers_neither_break_nor_extend_the_bridge(loop) -> None:
    for hostile in HOSTILE_ANSWERS:
        rig = bridged(loop, budget_s=2.0, reuse_s=5.0)
        start(rig, 1)
        seen = len(rig.upstream.sent)
        polls = 0
        while rig.scheduler.time() < 1000.0 + 20.0:
            rig.scheduler.advance(0.1)
            spin(loop)
            for message in rig.upstream.sent[seen:]:
                if message.get("method") == "tasks/get":
                    polls += 1
                    rig.answer(message["id"], hostile)
                elif message.get("method") == "tasks/cancel":
                    rig.answer(message["id"], task_2025("t-1", "cancelled"))
            seen = len(rig.upstream.sent)
            spin(loop)
        [cut] = [r for r in rig.replies() if r["id"] == 1]
        text = cut["result"]["content"][0]["text"]
        assert "goes on upstream as task t-1" in text and len(json.dumps(cut)) < 64 * 1024, hostile
        assert [m["params"]["taskId"] for m in calls(rig, "tasks/cancel")] == ["t-1"], hostile  # at reuse_s
        assert 3 <= polls <= 7.0 / POLL_MIN_S + 1, (hostile, polls)  # polled on, never spinning, then not at all


def test_a_task_that_flips_from_completed_back_to_working_is_answered_once(loop) -> None:
    rig = bridged(loop, budget_s=30.0)
    start(rig, 1)
    rig.scheduler.advance(0.2)
    spin(loop)
    rig.answer(calls(rig, "tasks/get")[-1]["id"], task_2025("t-1", "completed"))
    spin(loop)
    rig.notify("notifications/tasks/status", task_2025("t-1", "working", "not done after all"))
    spin(loop)
    [fetch] = calls(rig, "tasks/result")
    rig.answer(fetch["id"], {"content": [{"type": "text", "text": "done"}]})
    spin(loop)
    rig.notify("notifications/tasks/status", task_2025("t-1", "working", "again"))
    rig.scheduler.advance(60.0)
    spin(loop)
    answers = [r for r in rig.replies() if r["id"] == 1]
    assert answers == [{"jsonrpc": "2.0", "id": 1, "result": {"content": [{"type": "text", "text": "done"}]}}]
    assert rig.core.bridge._by_task == {}  # nothing polled or kept for it any more
    assert len(calls(rig, "tasks/get")) == 1


def test_abandoned_tasks_polled_at_once_are_bounded_in_number(loop, monkeypatch) -> None:
    monkeypatch.setattr(bridge_module, "IDLE_RUNS_MAX", 5)
    rig = bridged(loop, budget_s=2.0, reuse_s=600.0)
    for n in range(1, 13):  # twelve distinct calls, each cut at its budget: twelve tasks nobody waits for
        start(rig, n, ttl=None)
    polls = run_upstream(rig, loop, 2.5, ttl=None)
    cancelled = [m["params"]["taskId"] for m in calls(rig, "tasks/cancel")]
    assert cancelled == [f"t-{n}" for n in range(1, 8)]  # the oldest beyond five, at once, not 600 s later
    polls = run_upstream(rig, loop, 20.0, ttl=None)
    assert {task for _, task in polls} == {f"t-{n}" for n in range(8, 13)}  # the five newest still wait for a retry
    warnings = [e.data["message"] for e in rig.events(Kind.WARNING) if "nobody waited" in e.data["message"]]
    assert len(warnings) == 7 and "5 such tasks" in warnings[0]
    rig.request(99, "tools/call", {**CALL, "arguments": {"topic": "t12"}})  # a retry still attaches to its task
    assert len(calls(rig, "tools/call")) == 12
