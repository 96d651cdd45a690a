"""Who may reach a task mcpwatch offers: the connection that made it, never a client name anyone can copy.

Attacked as a second host with the same client name (a second VS Code window, or any local process that copies
it), as a sessionless 2026-era request naming that host, as a holder of another token, and as a reader of a log
that another server's wrapper shares. The model is `wrapper.tasks.owners`; on a manual clock."""

from __future__ import annotations

from typing import Any

from taskrig import Host, TaskRig
from test_tasks_offer import CALL, TASK_HOST, offering

from mcpwatch.wrapper.tasks.owners import LOCAL, Owner, may_reach, parse_owner, token_principal


def same_name_host(rig: TaskRig, connection: str, name: str = "vsc", principal: str = LOCAL) -> Host:
    """Another host connection that initialized with `name` (by default the first host's own)."""
    host = Host(connection=connection)
    host.task_principal = principal  # type: ignore[attr-defined]  # as the HTTP front sets it
    rig.core.attach_link(host)
    init = {"protocolVersion": "2025-11-25", "capabilities": TASK_HOST, "clientInfo": {"name": name}}
    rig.core.host_message(host, {"jsonrpc": "2.0", "id": "init", "method": "initialize", "params": init})
    return host


def made_task(rig: TaskRig, host: Any = None) -> str:
    rig.request("make", "tools/call", CALL, host=host)
    return rig.replies(host)[-1]["result"]["task"]["taskId"]


def error_of(rig: TaskRig, host: Any) -> str:
    return rig.replies(host)[-1]["error"]["message"]


def test_two_hosts_with_the_same_client_name_never_see_or_cancel_each_others_tasks(loop) -> None:
    rig = offering(loop, connection="session a")  # the first host, client name "vsc"
    task_id = made_task(rig)
    twin = same_name_host(rig, "session b")  # a second window of the same host, or a process copying its name
    rig.request(1, "tasks/list", {}, host=twin)
    assert rig.replies(twin)[-1]["result"]["tasks"] == []
    for n, method in enumerate(("tasks/get", "tasks/result", "tasks/cancel")):
        rig.request(10 + n, method, {"taskId": task_id}, host=twin)
        assert error_of(rig, twin) == f"no task {task_id!r} (unknown, expired, or another host's)"
    assert "notifications/cancelled" not in rig.upstream_methods()
    rig.scheduler.advance(1.0)
    rig.request(2, "tasks/get", {"taskId": task_id})
    assert rig.replies()[-1]["result"]["status"] == "working"  # its own host still has it, untouched
    rig.request(3, "tasks/list", {})
    assert [t["taskId"] for t in rig.replies()[-1]["result"]["tasks"]] == [task_id]


def test_a_sessionless_request_naming_the_host_reads_none_of_its_tasks(loop) -> None:
    rig = offering(loop, connection="session a")
    task_id = made_task(rig)
    sessionless = Host(connection=None)
    rig.core.attach_link(sessionless)
    claimed = {"io.modelcontextprotocol/clientInfo": {"name": "vsc", "version": "1"}}
    for n, method in enumerate(("tasks/get", "tasks/result", "tasks/cancel")):
        rig.request(n, method, {"taskId": task_id, "_meta": claimed}, host=sessionless)
        assert error_of(rig, sessionless).startswith(f"no task {task_id!r}")
    rig.request(9, "tasks/list", {"_meta": claimed}, host=sessionless)
    assert rig.replies(sessionless)[-1]["result"]["tasks"] == []


def test_a_host_resumes_its_task_by_id_once_its_old_connection_has_ended(loop) -> None:
    """A reconnecting host (its session ended, expired or was reclaimed) resumes by the id it holds; while the old
    connection is open, the new one is a stranger; another host's new connection is not handed it either."""
    rig = offering(loop, connection="session a")
    task_id = made_task(rig)
    again = same_name_host(rig, "session b")
    other = same_name_host(rig, "session c", name="another-host")
    rig.request(1, "tasks/get", {"taskId": task_id}, host=again)
    assert error_of(rig, again).startswith(f"no task {task_id!r}")  # the first session is still open
    rig.core.detach_link(rig.host)  # its session ended
    rig.request(2, "tasks/get", {"taskId": task_id}, host=other)
    assert error_of(rig, other).startswith(f"no task {task_id!r}")
    rig.request(3, "tasks/get", {"taskId": task_id}, host=again)
    assert rig.replies(again)[-1]["result"]["status"] == "working"
    rig.request(4, "tasks/list", {}, host=again)
    assert [t["taskId"] for t in rig.replies(again)[-1]["result"]["tasks"]] == [task_id]  # now its own
    third = same_name_host(rig, "session d")
    rig.request(5, "tasks/cancel", {"taskId": task_id}, host=third)
    assert error_of(rig, third).startswith(f"no task {task_id!r}")  # the resuming session owns it now


def test_a_holder_of_another_token_never_reaches_a_task(loop) -> None:
    rig = offering(loop, connection="session a", principal=token_principal("first-token-0123456789"))
    task_id = made_task(rig)
    rig.core.detach_link(rig.host)
    other = same_name_host(rig, "session b", principal=token_principal("other-token-0123456789"))
    rig.request(1, "tasks/get", {"taskId": task_id}, host=other)
    assert error_of(rig, other).startswith(f"no task {task_id!r}")


def test_the_owner_model_rules() -> None:
    live = {"session a"}.__contains__
    a, b = Owner(LOCAL, "session a", "vsc"), Owner(LOCAL, "session b", "vsc")
    gone = Owner(LOCAL, "session z", "vsc")
    sessionless = Owner(LOCAL, "", "vsc")
    assert may_reach(a, a, live) and not may_reach(a, b, live)
    assert may_reach(gone, b, live) and not may_reach(gone, Owner(LOCAL, "session b", "x"), live)
    assert not may_reach(a, sessionless, live) and not may_reach(sessionless, a, live)
    assert may_reach(sessionless, sessionless, live)
    assert not may_reach(Owner("token 1", "", "vsc"), sessionless, live)
    assert parse_owner(a.key) == a and parse_owner("vsc") is None and parse_owner(None) is None
    assert parse_owner(Owner(LOCAL, "stdio", "a|b").key) == Owner(LOCAL, "stdio", "a|b")


def test_a_resumed_finished_task_is_not_read_through_the_log_by_a_same_named_stranger(loop) -> None:
    """The log keeps the task's first owner, whose connection has ended: a same-named stranger asking for a task
    this wrapper holds is answered from what it holds (its owner now the host that resumed it), not the log."""
    from mcpwatch.store.kept_tasks import KeptRef, KeptRefs
    from mcpwatch.wrapper.tasks.kept_log import KeptLog

    rig = offering(loop, connection="session a")
    task_id = made_task(rig)
    up_id = [m for m in rig.upstream.sent if m.get("method") == "tools/call"][-1]["id"]
    rig.answer(up_id, {"content": [{"type": "text", "text": "secret"}]})
    [status] = [e for e in rig.events("task_status") if "kept" in e.data]
    logged = status.data["kept"]
    fetched: list[str] = []

    def fetch(ref: KeptRef, wanted: str) -> dict[str, Any]:
        fetched.append(wanted)
        return logged

    rig.core.offer.kept = KeptLog(lambda: KeptRefs({task_id: KeptRef("s", "1")}), fetch, session_id="s")
    twin = same_name_host(rig, "session b")
    rig.core.detach_link(rig.host)
    again = same_name_host(rig, "session c")
    rig.request(1, "tasks/result", {"taskId": task_id}, host=again)
    assert rig.replies(again)[-1]["result"]["content"][0]["text"] == "secret"
    rig.request(2, "tasks/result", {"taskId": task_id}, host=twin)
    assert error_of(rig, twin).startswith(f"no task {task_id!r}") and fetched == []
