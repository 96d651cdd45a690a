"""What a host's own strings cost the wrapper, by bytes: the JSON-RPC id of a request, a tool name and a client
name are a host's to choose, up to a 16 MiB body each, and are kept past the request (in the ring of recent events
for the operator, in a finished task for its TTL). Attacked as any local process on the front: requests with
ids, tool names and client names of 256 KiB; what stays held afterwards is measured with `tracemalloc`."""

from __future__ import annotations

import gc
import weakref
from collections.abc import Callable
from typing import Any

from heap import bytes_held
from taskrig import Host, TaskRig, Upstream
from test_tasks_offer import CALL, SLOW, TASK_HOST, offering
from test_tasks_offer_owners import same_name_host

from mcpwatch.events import UpstreamState
from mcpwatch.reliability.deadline import DeadlinePolicy
from mcpwatch.wrapper.core.pump import WrapperCore
from mcpwatch.wrapper.framing import frames

BIG = 256 * 1024
META_2026 = {
    "io.modelcontextprotocol/protocolVersion": "2026-06-30",
    "io.modelcontextprotocol/clientCapabilities": {"extensions": {"io.modelcontextprotocol/tasks": {}}},
}


def held_after(rig: TaskRig, run: Callable[[int], None], times: int) -> int:
    """Bytes still held once `run` ran `times` times and what was sent on each side was read."""

    def runs() -> None:
        for n in range(times):
            run(n)
        rig.host.sent.clear()
        rig.upstream.sent.clear()

    return bytes_held(runs)


def test_huge_request_ids_and_tool_names_are_not_held_whole_in_the_events(loop) -> None:
    """The ring of recent events holds 10,000 of them: a host's 16 MiB ids and tool names must not be held whole
    there (160 GB), nor in the log; the host is still answered with its own id."""
    rig = offering(loop)

    def ping_and_call(n: int) -> None:
        rig.answer(rig.request(f"{n}" + "i" * BIG, "ping", {}), {})
        up = rig.request(n, "tools/call", {"name": f"{n}" + "t" * BIG, "arguments": {}})
        rig.answer(up, {"content": []})

    held = held_after(rig, ping_and_call, 20)
    assert held < 20 * BIG // 8, f"{held} bytes held for 20 requests"
    ids = {e.request_id for e in rig.events() if e.request_id}
    assert ids and max(len(i) for i in ids) <= frames.KEY_MAX + 32
    assert max(len(e.tool) for e in rig.events() if e.tool) <= frames.KEY_MAX + 32
    rig.answer(rig.request("j" * BIG, "ping", {}), {})
    assert rig.replies()[-1]["id"] == "j" * BIG  # answered under its own id, whole


def test_finished_tasks_hold_no_huge_id_or_client_name_for_their_ttl(loop) -> None:
    """10,000 finished tasks are kept for their TTL (up to a day): each holds its routing, not the host's 16 MiB
    request id or the client name a sessionless request gave."""
    rig = offering(loop)

    def made_and_finished(n: int) -> None:
        host = Host(connection=None)
        rig.core.attach_link(host)
        meta = {**META_2026, "io.modelcontextprotocol/clientInfo": {"name": f"{n}" + "n" * BIG}}
        up = rig.request(f"{n}" + "i" * BIG, "tools/call", {"name": "slow", "arguments": {}, "_meta": meta}, host)
        rig.answer(up, {"content": [{"type": "text", "text": "done"}]})
        rig.core.detach_link(host)
        host.sent.clear()  # what the host was sent: read

    def made_finished_and_logged(n: int) -> None:
        made_and_finished(n)
        rig.recorder._ring.clear()  # what was logged: read

    held = held_after(rig, made_finished_and_logged, 20)
    tasks = list(rig.core.offer.tasks.values())
    assert len(tasks) == 20 and all(t.status == "completed" for t in tasks)
    assert held < 20 * BIG // 8, f"{held} bytes held by 20 finished tasks"


def test_a_long_client_name_still_resumes_its_own_task_and_no_other(loop) -> None:
    """The name kept for a long client name is its digest: the same name resumes, another of the same start not."""
    rig = offering(loop)
    name = "n" * BIG

    def sessionless(client: str) -> Host:
        host = Host(connection=None)
        rig.core.attach_link(host)
        host.meta = {**META_2026, "io.modelcontextprotocol/clientInfo": {"name": client}}  # type: ignore[attr-defined]
        return host

    maker = sessionless(name)
    up = rig.request("m", "tools/call", {"name": "slow", "arguments": {}, "_meta": maker.meta}, maker)  # type: ignore[attr-defined]
    task_id = rig.replies(maker)[-1]["result"]["taskId"]
    rig.answer(up, {"content": [{"type": "text", "text": "done"}]})
    for client, reached in ((name, True), (name + "x", False), (name[:-1], False)):
        asker = sessionless(client)
        rig.request("g", "tasks/get", {"taskId": task_id, "_meta": asker.meta}, asker)  # type: ignore[attr-defined]
        reply: dict[str, Any] = rig.replies(asker)[-1]
        assert ("result" in reply) is reached, (len(client), reply)


def test_a_finished_task_holds_nothing_of_the_session_core_it_ran_in(loop) -> None:
    """Over HTTP each host session has its own core (and upstream); a finished task is kept for its TTL (10,000 of
    them), so if it held its core, every ended session whose task finished stayed in memory, upstream and all.
    The host resumes the task from a new session, answered by that session's core."""
    rig = offering(loop, connection="session a")
    session = WrapperCore(
        settings=rig.settings,
        deadline=DeadlinePolicy(rig.settings.deadline, environ={}),
        recorder=rig.recorder,
        loop=loop,
        scheduler=rig.scheduler,
        offers=rig.core.offer.shared,
    )
    session.session.set_state(UpstreamState.READY)
    upstream = Upstream()
    session.attach_upstream(upstream)
    host = Host(connection="session b")
    session.attach_link(host)
    init = {"protocolVersion": "2025-11-25", "capabilities": TASK_HOST, "clientInfo": {"name": "vsc"}}
    session.host_message(host, {"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": init})
    result = {"protocolVersion": "2025-11-25", "capabilities": {"tools": {}}}
    session.upstream_message({"jsonrpc": "2.0", "id": upstream.sent[-1]["id"], "result": result})
    session.host_message(host, {"jsonrpc": "2.0", "id": 1, "method": "tools/list"})
    session.upstream_message({"jsonrpc": "2.0", "id": upstream.sent[-1]["id"], "result": {"tools": [SLOW]}})
    session.host_message(host, {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": CALL})
    task_id = host.sent[-1]["result"]["task"]["taskId"]
    up = next(m for m in upstream.sent if m.get("method") == "tools/call")["id"]
    session.upstream_message({"jsonrpc": "2.0", "id": up, "result": {"content": [{"type": "text", "text": "done"}]}})
    session.detach_link(host)  # the session ends
    gone = [weakref.ref(part) for part in (session, session.offer, session.table, upstream)]
    del session, upstream
    gc.collect()
    assert [ref() for ref in gone] == [None] * 4
    again = same_name_host(rig, "session c")
    rig.request(3, "tasks/result", {"taskId": task_id}, host=again)
    assert rig.replies(again)[-1]["result"]["content"][0]["text"] == "done"
