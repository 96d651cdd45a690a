"""A call answered at once from a kept result is logged under its own host's key, like every other call: two HTTP
front hosts both reusing a late result under the same host id are two calls, two keys, two rows in the console.
In memory, through one core's ports on a manual clock: two links, each with its session's key prefix."""

from __future__ import annotations

import asyncio
from typing import Any

from taskrig import Host, TaskRig

from mcpwatch.config import LateResultSettings, ReusePolicy
from mcpwatch.console.headless.model import ConsoleModel
from mcpwatch.events import Kind
from mcpwatch.wrapper.calls.pending import request_key

SEARCH = {"name": "search", "arguments": {"q": "the same question"}}
FOUND: dict[str, Any] = {"content": [{"type": "text", "text": "found it"}], "isError": False}
REUSE = LateResultSettings(reuse=(ReusePolicy("search", 60.0),))


def two_hosts(loop: asyncio.AbstractEventLoop) -> tuple[TaskRig, Host, Host]:
    """A core with two hosts on it, as an HTTP front's two sessions ("<session>/<host id>" in the log)."""
    rig = TaskRig(loop, late_results=REUSE)
    a, b = Host("session a", key_prefix="a/"), Host("session b", key_prefix="b/")
    for host in (a, b):
        rig.core.attach_link(host)
    return rig, a, b


def cut_then_late(rig: TaskRig, host: Host, host_id: Any) -> None:
    """A call cut at its deadline whose answer arrives afterwards: kept for its host to reuse."""
    up_id = rig.request(host_id, "tools/call", SEARCH, host=host)
    rig.scheduler.advance(10.0)
    assert rig.replies(host)[-1]["result"]["isError"] is True  # cut: the deadline's partial answer
    rig.answer(up_id, FOUND)


def test_two_hosts_reusing_under_one_host_id_are_two_calls_under_two_keys(loop: asyncio.AbstractEventLoop) -> None:
    rig, a, b = two_hosts(loop)
    cut_then_late(rig, a, 1)
    cut_then_late(rig, b, 1)
    sent = len(rig.upstream.sent)
    for host in (a, b):
        assert rig.request(8, "tools/call", SEARCH, host=host) is None  # answered at once, never sent upstream
        reply = rig.replies(host)[-1]
        assert reply["id"] == 8 and reply["result"]["content"][-1] == FOUND["content"][0]
        assert reply["result"]["_meta"]["dev.mcpwatch/late_result"]["request_id"] == host.key_prefix + "1"
    assert len(rig.upstream.sent) == sent
    reuses = rig.events(Kind.LATE_REUSE)
    assert [(e.request_id, e.data["from_request_id"]) for e in reuses] == [("a/8", "a/1"), ("b/8", "b/1")]
    starts = [e.request_id for e in rig.events(Kind.REQUEST_START)]
    ends = [(e.request_id, e.data["outcome"], e.data.get("late_reuse")) for e in rig.events(Kind.REQUEST_END)]
    assert starts == ["a/1", "b/1", "a/8", "b/8"]
    assert ends == [("a/1", "deadline", None), ("b/1", "deadline", None), ("a/8", "ok", True), ("b/8", "ok", True)]
    counters = rig.core.counters
    assert (counters.requests, counters.ok, counters.timeouts, counters.late_reused) == (4, 2, 2, 2)
    model = ConsoleModel()
    model.apply_many(rig.events())
    rows = [row.request_id for row in model.view(rig.scheduler.time()).requests]
    assert sorted(rows) == ["a/1", "a/8", "b/1", "b/8"]  # one row per call


def test_a_reused_answer_the_host_cannot_take_is_logged_as_undelivered(loop: asyncio.AbstractEventLoop) -> None:
    """A reuse ends as every call does: an answer its host's closed request cannot carry is not a plain "ok"."""

    class Closed(Host):
        def send(self, message: dict[str, Any]) -> bool:
            super().send(message)
            return "method" in message  # no response can be delivered any more

    rig = TaskRig(loop, late_results=REUSE)
    host = Closed("session c", key_prefix="c/")
    rig.core.attach_link(host)
    cut_then_late(rig, host, 1)
    rig.request(2, "tools/call", SEARCH, host=host)
    (end,) = [e for e in rig.events(Kind.REQUEST_END) if e.request_id == "c/2"]
    assert end.data["delivered"] is False and end.data["late_reuse"] is True


def test_the_request_key_is_the_links_prefix_and_the_host_id() -> None:
    assert request_key(Host("session a", key_prefix="a/"), 8) == "a/8"
    assert request_key(Host(), "x") == "x"
