"""The bridge attacked by a hostile upstream: numbers no float can hold where a time is expected, a task whose
`tasks/result` never comes, many retries of one call at once. On a manual clock, in memory."""

from __future__ import annotations

import itertools

from taskrig import spin, task_2025
from test_tasks_bridge import CALL
from test_tasks_bridge_bounds import bridged, run_upstream, start
from test_tasks_bridge_extension import calls

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

