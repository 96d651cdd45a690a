"""`tasks/list` of offered tasks: a connection's own, a page at a time, found without walking everyone's. Attacked
as any local process on the front: a batch of `tasks/list` beside another host's 10,000 finished tasks (a 16 MiB
body holds 300,000 of them; each walked every task, holding the event loop every host shares), and cursors that
are not ours. Counted, never timed; on a manual clock."""

from __future__ import annotations

from typing import Any

from taskrig import TaskRig
from test_tasks_offer import CALL, offering
from test_tasks_offer_owners import same_name_host

from mcpwatch.wrapper.tasks.offer_list import LIST_PAGE


class CountingTasks(dict[str, Any]):
    """The offered tasks, counting walks over all of them."""

    walks = 0

    def values(self) -> Any:
        CountingTasks.walks += 1
        return super().values()

    def __iter__(self) -> Any:
        CountingTasks.walks += 1
        return super().__iter__()


def counting(rig: TaskRig) -> None:
    tasks = CountingTasks(rig.core.offer.tasks)
    object.__setattr__(rig.core.offer.shared, "tasks", tasks)
    rig.core.offer.tasks = tasks
    CountingTasks.walks = 0


def finished_tasks(rig: TaskRig, count: int, host: Any = None) -> list[str]:
    made = []
    for n in range(count):
        up = rig.request(f"m{n}", "tools/call", CALL, host=host)
        made.append(rig.replies(host)[-1]["result"]["task"]["taskId"])
        rig.answer(up, {"content": [{"type": "text", "text": "done"}]})
    return made


def listed(rig: TaskRig, host: Any = None, cursor: Any = None) -> dict[str, Any]:
    rig.request("list", "tasks/list", {} if cursor is None else {"cursor": cursor}, host=host)
    return rig.replies(host)[-1]["result"]


def test_a_strangers_batch_of_lists_walks_none_of_another_hosts_tasks(loop) -> None:
    rig = offering(loop, connection="session a", max_running_per_host=20_000, max_running=20_000)
    finished_tasks(rig, 2_000)
    stranger = same_name_host(rig, "session x", name="anyone")
    counting(rig)
    for n in range(2_000):
        rig.request(n, "tasks/list", {}, host=stranger)
    assert CountingTasks.walks == 0
    assert all(reply["result"] == {"tasks": []} for reply in rig.replies(stranger)[1:])


def test_a_hosts_own_tasks_come_a_page_at_a_time_each_once(loop) -> None:
    rig = offering(loop, connection="session a", max_running_per_host=1_000, max_running=1_000)
    made = finished_tasks(rig, 2 * LIST_PAGE + 50)
    counting(rig)
    pages, cursor = [], None
    while True:
        page = listed(rig, cursor=cursor)
        pages.append([t["taskId"] for t in page["tasks"]])
        cursor = page.get("nextCursor")
        if cursor is None:
            break
    assert [len(p) for p in pages] == [LIST_PAGE, LIST_PAGE, 50]
    assert [i for p in pages for i in p] == made and CountingTasks.walks == 0
    for bogus in ("x", "9" * 5_000, "-1", "٣", 7, None):
        assert [t["taskId"] for t in listed(rig, cursor=bogus)["tasks"]] == made[:LIST_PAGE]  # from the first


def test_a_resumed_task_moves_to_its_new_connections_list(loop) -> None:
    rig = offering(loop, connection="session a")
    made = finished_tasks(rig, 3)
    again = same_name_host(rig, "session b")
    rig.core.detach_link(rig.host)  # its session ended: the host resumes one task by id from a new one
    rig.request(1, "tasks/get", {"taskId": made[1]}, host=again)
    assert [t["taskId"] for t in listed(rig, again)["tasks"]] == [made[1]]
    back = same_name_host(rig, "session c")
    rig.request(2, "tasks/get", {"taskId": made[0]}, host=back)
    assert [t["taskId"] for t in listed(rig, back)["tasks"]] == [made[0]]
    assert [t["taskId"] for t in listed(rig, again)["tasks"]] == [made[1]]


def test_tasks_gone_at_their_ttl_leave_the_list(loop) -> None:
    rig = offering(loop, connection="session a", max_running_per_host=1_000, max_running=1_000)
    finished_tasks(rig, LIST_PAGE + 1)
    rig.scheduler.advance(61.0)  # CALL asks a 60 s TTL
    assert listed(rig) == {"tasks": []}
    made = finished_tasks(rig, 2)
    assert [t["taskId"] for t in listed(rig)["tasks"]] == made


def test_a_task_ending_walks_none_of_the_kept_ones_and_the_oldest_go_first(loop, monkeypatch) -> None:
    """Each end once walked every task to find the finished ones beyond the cap: 10,000 kept made every end cost a
    walk of them all."""
    monkeypatch.setattr("mcpwatch.wrapper.tasks.offer.TASKS_KEPT_MAX", 50)
    rig = offering(loop, connection="session a", max_running_per_host=1_000, max_running=1_000)
    counting(rig)
    made = finished_tasks(rig, 80)
    assert CountingTasks.walks == 0
    assert list(rig.core.offer.tasks) == made[30:]
    rig.request(1, "tasks/get", {"taskId": made[29]})
    assert "error" in rig.replies()[-1]
