"""The bridge's bounds, attacked by its upstream and by a host that leaves: a task that never ends (`ttl: null`) is
polled only while someone can use its result, then cancelled upstream; a hostile `pollInterval` (0, negative, huge,
not a number) neither spins nor stalls; the bridge polls sooner when a host needs news; a huge status message reaches
the host once, cut, never past the frame cap. On a manual clock, counting the polls."""

from __future__ import annotations

import itertools
import json
from dataclasses import replace
from typing import Any

from taskrig import TaskRig, spin, task_2025
from test_tasks_bridge import CALL, connected, upstream_request
from test_tasks_bridge_extension import calls
from test_tasks_bridge_input import ASK, call, poll_answer, question, running

from mcpwatch.config import Settings, TasksSettings
from mcpwatch.events import Kind
from mcpwatch.wire import PARTIAL_META
from mcpwatch.wrapper.calls.partial import PEER_TEXT_CHARS
from mcpwatch.wrapper.tasks.bridge_polls import IDLE_POLL_MIN_S, POLL_MAX_S, POLL_MIN_S

FOREVER: dict[str, Any] = {
    "ttl": None,
    "pollInterval": 0,
}  # the hostile upstream: the task never ends, and says poll at once


def bridged(loop, budget_s: float = 2.0, reuse_s: float = 5.0, ttl_s: float = 3600.0) -> TaskRig:
    rig = connected(
        loop,
        deadline=replace(Settings().deadline, host_timeout_s=budget_s, margin_s=0.0),
        tasks=TasksSettings(reuse_s=reuse_s, ttl_s=ttl_s),
    )
    return rig


def start(rig: TaskRig, n: int, **task: Any) -> None:
    """Host call n (its own arguments: its own task `t-n`), answered with a task."""
    up = rig.request(n, "tools/call", {**CALL, "arguments": {"topic": f"t{n}"}})
    rig.answer(up, {"task": task_2025(f"t-{n}", **task)})


def run_upstream(rig: TaskRig, loop, seconds: float, step: float = 0.05, **task: Any) -> list[tuple[float, str]]:
    """Let `seconds` pass as an upstream whose tasks run forever: every poll answered `working` (with `task`), every
    cancel confirmed. Returns (time, task id) of each tasks/get sent meanwhile."""
    polls: list[tuple[float, str]] = []
    seen = len(rig.upstream.sent)
    end = rig.scheduler.time() + seconds
    while rig.scheduler.time() < end - 1e-9:
        rig.scheduler.advance(min(step, end - rig.scheduler.time()))
        spin(loop)
        for message in rig.upstream.sent[seen:]:
            method, task_id = message.get("method"), message.get("params", {}).get("taskId")
            if method == "tasks/get":
                polls.append((rig.scheduler.time(), task_id))
                rig.answer(message["id"], task_2025(task_id, **task))
            elif method == "tasks/cancel":
                rig.answer(message["id"], task_2025(task_id, "cancelled", **task))
        seen = len(rig.upstream.sent)
        spin(loop)
    return polls


def test_abandoned_never_ending_tasks_are_polled_only_until_reuse_s_then_cancelled(loop) -> None:
    rig = bridged(loop, budget_s=2.0, reuse_s=5.0)
    began = rig.scheduler.time()
    for n in range(1, 21):
        start(rig, n, **FOREVER)
    polls = run_upstream(rig, loop, 7.5, **FOREVER)  # each call cut at 2 s, its window over at 7 s
    cancelled = {m["params"]["taskId"] for m in calls(rig, "tasks/cancel")}
    assert cancelled == {f"t-{n}" for n in range(1, 21)}
    per_task = max(sum(1 for _, t in polls if t == f"t-{n}") for n in range(1, 21))
    assert per_task <= 7.0 / POLL_MIN_S + 1  # pollInterval 0 does not make it spin
    assert max(at for at, _ in polls) - began <= 7.0 + 0.05 + 1e-6  # within a step of the clock
    idle = [t for at, t in polls if at - began > 2.0 + 0.05]  # nobody waits: no need for news at once
    assert max(idle.count(f"t-{n}") for n in range(1, 21)) <= 5.0 / IDLE_POLL_MIN_S + 1
    assert run_upstream(rig, loop, 120.0, step=1.0, **FOREVER) == []  # no poll ever again
    warnings = [e.data["message"] for e in rig.events(Kind.WARNING) if "no host call waited" in e.data["message"]]
    assert len(warnings) == 20 and "for 5 s ([tasks] reuse_s)" in warnings[0]
    assert rig.core.bridge._by_task == {} and rig.core.bridge.runs == {}  # nothing kept for them


def test_an_identical_call_within_reuse_s_keeps_the_task_alive(loop) -> None:
    rig = bridged(loop, budget_s=2.0, reuse_s=5.0)
    start(rig, 1, **FOREVER)
    run_upstream(rig, loop, 6.0, **FOREVER)  # cut at 2 s; 4 s into its window
    rig.request(2, "tools/call", {**CALL, "arguments": {"topic": "t1"}})  # the retry attaches: a host waits again
    run_upstream(rig, loop, 5.0, **FOREVER)  # past the first window: still polled
    assert calls(rig, "tasks/cancel") == []
    run_upstream(rig, loop, 2.5, **FOREVER)  # the retry is cut at 8 s; a new window ends at 13 s
    assert [m["params"]["taskId"] for m in calls(rig, "tasks/cancel")] == ["t-1"]


def test_an_identical_call_after_the_window_makes_a_task_of_its_own(loop) -> None:
    rig = bridged(loop, budget_s=2.0, reuse_s=5.0)
    start(rig, 1, **FOREVER)
    run_upstream(rig, loop, 6.0, **FOREVER)  # cut at 2 s
    rig.scheduler.advance(1.1)  # the window ends at 7 s: the cancel goes out (the upstream is slow to confirm it)
    spin(loop)
    assert [m["params"]["taskId"] for m in calls(rig, "tasks/cancel")] == ["t-1"]
    rig.request(2, "tools/call", {**CALL, "arguments": {"topic": "t1"}})
    assert len(calls(rig, "tools/call")) == 2  # not attached to the task being cancelled


def test_a_waiting_call_is_answered_when_the_ttl_mcpwatch_asked_for_passes(loop) -> None:
    rig = bridged(loop, budget_s=30.0, ttl_s=10.0)
    start(rig, 1, **FOREVER)
    assert upstream_request(rig, "tools/call")["params"]["task"] == {"ttl": 10_000}
    run_upstream(rig, loop, 10.5, **FOREVER)
    assert [m["params"]["taskId"] for m in calls(rig, "tasks/cancel")] == ["t-1"]
    answer = rig.replies()[-1]
    assert answer["id"] == 1 and answer["result"]["isError"] is True
    assert "the TTL mcpwatch asked for ([tasks] ttl_s)" in answer["result"]["content"][0]["text"]
    assert run_upstream(rig, loop, 60.0, step=1.0, **FOREVER) == []


def test_the_hosts_session_ending_cancels_its_tasks_at_once(loop) -> None:
    rig = bridged(loop, budget_s=2.0, reuse_s=600.0)
    start(rig, 1, **FOREVER)
    run_upstream(rig, loop, 3.0, **FOREVER)  # cut; the task runs on for an identical call
    assert calls(rig, "tasks/cancel") == []
    rig.core.detach_link(rig.host)
    spin(loop)
    [cancel] = calls(rig, "tasks/cancel")
    assert cancel["params"]["taskId"] == "t-1"
    rig.answer(cancel["id"], task_2025("t-1", "cancelled"))
    spin(loop)
    assert run_upstream(rig, loop, 60.0, step=1.0, **FOREVER) == []
    [warning] = [e for e in rig.events(Kind.WARNING) if "session ended" in e.data["message"]]
    assert warning.request_id == "1"


def test_a_hostile_poll_interval_neither_spins_nor_stalls(loop) -> None:
    for interval, high in [
        (0, POLL_MIN_S),
        (-5, 1.0),  # not usable: the default
        ("soon", 1.0),
        (None, 1.0),
        (1e300, POLL_MAX_S),
        (10**30, POLL_MAX_S),
    ]:
        rig = bridged(loop, budget_s=1000.0)
        task = {"ttl": None, "pollInterval": interval}
        start(rig, 1, **task)
        times = [at for at, _ in run_upstream(rig, loop, 3 * POLL_MAX_S, step=0.05, **task)]
        gaps = [b - a for a, b in itertools.pairwise(times)]
        assert gaps, interval
        assert min(gaps) >= POLL_MIN_S - 0.051 and max(gaps) <= high + 0.051, (interval, gaps)
        assert abs(gaps[-1] - high) <= 0.051 and gaps == sorted(gaps), (interval, gaps)  # a ramp, then the rhythm


def test_a_poll_comes_just_before_the_waiting_calls_budget_ends(loop) -> None:
    rig = bridged(loop, budget_s=3.0)
    began = rig.scheduler.time()
    start(rig, 1, pollInterval=5000)  # the server asks for 5 s: the budget ends first
    polls = run_upstream(rig, loop, 2.45, step=0.01, pollInterval=5000)  # the ramp: 0.2, 0.6, 1.4 s
    ramp = [at - began for at, _ in polls]
    assert len(ramp) == 3 and all(abs(at - want) <= 0.05 for at, want in zip(ramp, [0.2, 0.6, 1.4], strict=True))
    rig.scheduler.advance(0.051)
    spin(loop)
    poll = calls(rig, "tasks/get")[-1]
    assert poll["id"] not in rig.answered  # at 2.5 s, half a second before the budget ends, not at 3.0 s
    rig.answer(poll["id"], task_2025("t-1", "completed", pollInterval=5000))
    spin(loop)
    rig.answer(upstream_request(rig, "tasks/result")["id"], {"content": [{"type": "text", "text": "done"}]})
    spin(loop)
    assert rig.replies()[-1] == {"jsonrpc": "2.0", "id": 1, "result": {"content": [{"type": "text", "text": "done"}]}}


def test_a_retried_call_that_joins_the_task_gets_a_poll_soon(loop) -> None:
    rig = bridged(loop, budget_s=2.0)
    start(rig, 1, pollInterval=30_000)
    rig.scheduler.advance(2.0)  # cut (its lead poll went out at 1.5 s)
    spin(loop)
    before = len(calls(rig, "tasks/get"))
    rig.answer(calls(rig, "tasks/get")[-1]["id"], task_2025("t-1", pollInterval=30_000))
    spin(loop)
    rig.request(2, "tools/call", {**CALL, "arguments": {"topic": "t1"}})
    rig.scheduler.advance(POLL_MIN_S)
    spin(loop)
    assert len(calls(rig, "tasks/get")) == before + 1  # not 30 s later


def test_the_host_answering_input_gets_the_next_poll_at_once_not_at_the_servers_interval(loop) -> None:
    rig = running(loop)
    poll_answer(rig, loop, "input_required", pollIntervalMs=5000, inputRequests={"topic1": ASK})
    asked = question(rig)
    answer = {"topic1": {"action": "accept", "content": {"topic": "tides"}}}
    rig.request(2, "tools/call", call(inputResponses=answer, requestState=asked["requestState"]))
    spin(loop)
    polls = len(calls(rig, "tasks/get"))
    rig.answer(calls(rig, "tasks/update")[-1]["id"], {"resultType": "complete"})
    spin(loop)
    rig.scheduler.advance(POLL_MIN_S)
    spin(loop)
    assert len(calls(rig, "tasks/get")) == polls + 1  # 0.2 s after the answers went upstream, not 5 s


def huge_status(rig: TaskRig, loop, status: str = "working") -> str:
    """The upstream's next poll answer carries a 4 MiB status message (its head marked, to count it)."""
    message = "HEAD-" + "Z" * (4 * 1024 * 1024)
    rig.scheduler.advance(1.0)
    spin(loop)
    rig.answer(calls(rig, "tasks/get")[-1]["id"], task_2025("t-1", status, message))
    spin(loop)
    return message


def test_a_huge_status_message_reaches_a_cut_call_once_and_cut(loop) -> None:
    rig = bridged(loop, budget_s=3.0)
    rig.answer(rig.request(1, "tools/call", CALL), {"task": task_2025("t-1")})
    huge_status(rig, loop)
    rig.scheduler.advance(2.0)
    spin(loop)
    [cut] = [r for r in rig.replies() if r["id"] == 1]
    frame = json.dumps(cut)
    assert len(frame) < 64 * 1024  # was 16,778,113 bytes for this message: four copies, over the 16 MiB cap
    assert frame.count("HEAD-") == 1 and f"cut to {PEER_TEXT_CHARS:,} characters" in frame
    assert cut["result"]["_meta"][PARTIAL_META]["last_progress"] == {"progress": 2, "total": None}
    progress = [m for m in rig.host.sent if m.get("method") == "notifications/progress"][-1]
    assert len(json.dumps(progress)) < 8 * 1024  # the relayed status, cut too


def test_a_huge_message_that_ends_the_task_is_in_its_answer_once(loop) -> None:
    for status in ("input_required", "failed"):  # a host without elicitation; a failure tasks/result cannot tell
        rig = bridged(loop, budget_s=30.0)
        rig.answer(rig.request(1, "tools/call", CALL), {"task": task_2025("t-1")})
        huge_status(rig, loop, status)
        if status == "failed":
            rig.answer(upstream_request(rig, "tasks/result")["id"], error={"code": -32603, "message": "gone"})
        else:
            rig.answer(upstream_request(rig, "tasks/cancel")["id"], task_2025("t-1", "cancelled"))
        spin(loop)
        frame = json.dumps(rig.replies()[-1])
        assert len(frame) < 64 * 1024 and frame.count("HEAD-") <= 1, (status, len(frame), frame.count("HEAD-"))


def test_a_plain_calls_partial_answer_shows_each_progress_text_once_within_bounds(loop) -> None:
    rig = TaskRig(loop, host_timeout_s=3.0, margin_s=0.0)
    init = {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "claude-code"}}
    rig.answer(rig.request(0, "initialize", init), {"protocolVersion": "2025-11-25", "capabilities": {"tools": {}}})
    up = rig.request(1, "tools/call", {"name": "slow", "arguments": {}, "_meta": {"progressToken": "p"}})
    models = {f"model-{i}-" + "M" * 1000: {"status": "S" * 10_000, "latency_ms": i} for i in range(2_000)}
    for step, letter in enumerate("ABCDD", start=1):  # four texts, the last twice
        progress = {
            "progressToken": up,
            "progress": step,
            "total": "T" * 100_000,
            "message": f"<{letter}>" + letter * 2_000_000,
        }
        if step == 1:
            progress["_meta"] = {"dev.mcpwatch/council": {"stage": 1, "models": models}}
        rig.notify("notifications/progress", progress)
    rig.scheduler.advance(3.0)
    spin(loop)
    [cut] = [r for r in rig.replies() if r["id"] == 1]
    frame = json.dumps(cut)
    assert len(frame) < 64 * 1024, len(frame)
    for letter in "ABCD":
        assert frame.count(f"<{letter}>") == 1, letter
    assert "T" * 100 not in frame  # a total that is not a number is not shown
    meta = cut["result"]["_meta"][PARTIAL_META]
    assert len(meta["models"]) == 32 and meta["progress_messages"] == 4
    assert "32 models" in cut["result"]["content"][-1]["text"]
    statuses = rig.events(Kind.MODEL_STATUS)  # 2,000 models, 32 followed: no flood of events either
    assert len(statuses) == 32 and all(len(e.model or "") <= 64 + 30 for e in statuses)
    assert all(len(e.data["status"]) <= 64 + 30 for e in statuses)
