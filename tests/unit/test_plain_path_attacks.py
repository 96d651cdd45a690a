"""The plain call's path (`mcpwatch/wrapper/core/plain.py`) attacked where its verdicts, kept per host link and
tool, could outlive what they rest on; and where it could answer a host, the upstream or the log otherwise than
the full path. On a manual clock, in memory."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

import pytest
from taskrig import Host, TaskRig, spin
from test_plain_path import bridging, full_path_only, plain_taken, seen

from mcpwatch.events import Kind

INIT = {"protocolVersion": "2025-06-18", "capabilities": {}}


def test_a_tool_the_bridges_own_listing_finds_task_only_is_bridged_next(loop, monkeypatch) -> None:
    """The bridge lists the tools for an unknown one; the listing is read a moment after its answer came (which
    dropped the verdicts): a verdict made in that moment must not keep the tool it finds task-only plain."""
    taken = plain_taken(monkeypatch)
    rig = bridging(loop, "forbidden")
    rig.request(1, "tools/call", {"name": "other", "arguments": {}})  # unknown: the bridge lists the tools first
    spin(loop)
    listing = [m for m in rig.upstream.sent if m.get("method") == "tools/list"][-1]
    listed: list[dict[str, Any]] = [
        {"name": "quick", "inputSchema": {}, "execution": {"taskSupport": "required"}},  # was forbidden
        {"name": "other", "inputSchema": {}, "execution": {"taskSupport": "forbidden"}},
    ]
    rig.answer(listing["id"], {"tools": listed})
    rig.request(2, "tools/call", {"name": "quick", "arguments": {}})  # before the listing is read: as it was known
    spin(loop)
    rig.request(3, "tools/call", {"name": "quick", "arguments": {}})
    calls = [m["params"] for m in rig.upstream.sent if m.get("method") == "tools/call"]
    assert [(p["name"], "task" in p) for p in calls] == [("quick", False), ("other", False), ("quick", True)]
    assert taken == [2]


def two_hosts(loop: asyncio.AbstractEventLoop) -> TaskRig:
    """Two hosts of different kinds (different budgets) on one core calling one tool under the same ids, an id
    reused under its other type while its call is open, the host's cancel naming it, and a host initialize
    mid-call."""
    rig = TaskRig(loop, host_timeout_s=30.0, margin_s=1.0)
    other = Host(key_prefix="s2/")
    rig.core.attach_link(other)
    claude = {**INIT, "clientInfo": {"name": "claude-code", "version": "1"}}
    rig.answer(rig.request(0, "initialize", claude), {"capabilities": {}})
    rig.answer(rig.request(0, "initialize", {**INIT, "clientInfo": {"name": "cursor"}}, host=other), {})
    a = rig.request(1, "tools/call", {"name": "echo"})
    b = rig.request(1, "tools/call", {"name": "echo"}, host=other)
    c = rig.request("1", "tools/call", {"name": "echo"})
    rig.scheduler.advance(0.5)
    cancel = {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 1}}
    rig.core.host_message(rig.host, cancel)
    rig.answer(rig.request(5, "initialize", {**INIT, "clientInfo": {"name": "vscode"}}), {"capabilities": {}})
    d = rig.request(2, "tools/call", {"name": "echo"})
    for up_id in (b, c, a):
        rig.answer(up_id, {"content": []})
    rig.scheduler.advance(100)
    rig.answer(d, {"content": []})
    rig.host.sent.extend(other.sent)
    spin(loop)
    return rig


RAW_ANSWERS: list[bytes] = [
    b'{"jsonrpc":"2.0","id":%d,"result":{"content":[],"_meta":{"x":1}}}',
    b'{"jsonrpc":"2.0","id":%d,"result":{"content":[],"structuredContent":{"a":[1,2,{"b":null}]}}}',
    b'{"jsonrpc":"2.0","id":%d,"result":{"content":[]},"error":{"code":1,"message":"m"}}',  # both
    b'{"jsonrpc":"2.0","id":"%d","result":{"content":[]}}',  # the id as a string
    b'{"jsonrpc":"2.0","id":%d.0,"result":{"content":[]}}',  # the id as a float
    b'{"jsonrpc":"2.0","id":%d,"result":{"content":[]},"result":{"isError":true}}',  # duplicate keys
    b'{"id":%d,"result":{"content":[]}}',  # no jsonrpc
    b'{"jsonrpc":"2.0","id":%d,"result":{"content":[]},"extra":1}',
    b'{"jsonrpc":"2.0","id":%d,"result":null}',
    b'{"jsonrpc":"2.0","id":%d,"result":{"content":[],"n":123456789012345678901234567890}}',
    b'{"jsonrpc":"2.0","id":%d,"result":{"content":[],"isError":"true"}}',
    b'{"jsonrpc":"2.0","id":%d,"result":{"content":[],"resultType":"complete"}}',
    b'{"jsonrpc":"2.0","id":%d,"result":{"content":[{"type":"text","text":"\\u001b[31m\\u0000\\u202e"}]}}',
    b'{"jsonrpc":"2.0","id":%d,"method":"x","result":{"content":[]}}',
    b'{"jsonrpc":"2.0","id":%d,"result":{"content":[], "f": 1e400, "g": -0.0, "h": 1E2}}',
]


def raw_answers(loop: asyncio.AbstractEventLoop) -> TaskRig:
    rig = TaskRig(loop, host_timeout_s=30.0, margin_s=1.0)
    for n, raw in enumerate(RAW_ANSWERS):
        up = rig.request(n, "tools/call", {"name": "echo", "arguments": {"n": n}})
        rig.scheduler.advance(0.1)
        rig.core.upstream_frame(raw % up)
    rig.scheduler.advance(100)  # what no answer ended, the deadline does
    spin(loop)
    return rig


def refused_sends(loop: asyncio.AbstractEventLoop) -> TaskRig:
    """The upstream link refuses the frames: down (queued), stuck, then sent."""
    rig = TaskRig(loop, host_timeout_s=30.0, margin_s=1.0)
    outcomes = iter(["down", "stuck", "sent"])

    def send(message: dict[str, Any]) -> str:
        rig.upstream.sent.append(message)
        return next(outcomes, "sent")

    rig.upstream.send = send  # type: ignore[method-assign]
    for n in range(3):
        rig.request(n, "tools/call", {"name": "echo"})
    rig.scheduler.advance(100)
    spin(loop)
    return rig


def restarted(loop: asyncio.AbstractEventLoop) -> TaskRig:
    """Calls in flight when the upstream exits, one while it restarts (the handshake replayed), one after; the
    restarted upstream answers an old call's id too."""
    rig = TaskRig(loop, host_timeout_s=30.0, margin_s=1.0)
    rig.answer(rig.request(0, "initialize", {**INIT, "clientInfo": {"name": "claude-code"}}), {"capabilities": {}})
    old = rig.request(1, "tools/call", {"name": "echo"})
    rig.request(2, "tools/call", {"name": "echo", "arguments": {"q": 2}})
    rig.core.upstream_lost(reason="exited", exit_code=1)
    rig.core.upstream_connecting()
    rig.upstream.sent.clear()
    rig.request(3, "tools/call", {"name": "echo"})  # waits for the restart
    started = asyncio.ensure_future(rig.core.upstream_started(), loop=loop)
    spin(loop)
    replay = next(m for m in rig.upstream.sent if m.get("method") == "initialize")
    rig.answer(replay["id"], {"capabilities": {}})
    spin(loop)
    assert started.done()
    queued = next(m["id"] for m in rig.upstream.sent if m.get("method") == "tools/call")
    after = rig.request(4, "tools/call", {"name": "echo"})
    rig.core.upstream_frame(b'{"jsonrpc":"2.0","id":%d,"result":{"content":[]}}' % old)
    rig.core.upstream_frame(b'{"jsonrpc":"2.0","id":%d,"result":{"content":[]}}' % after)
    rig.core.upstream_frame(b'{"jsonrpc":"2.0","id":%d,"result":{"content":[]}}' % queued)
    spin(loop)
    return rig


@pytest.mark.parametrize("scenario", [two_hosts, raw_answers, refused_sends, restarted])
def test_the_plain_path_gives_what_the_full_path_gives(
    loop, monkeypatch, scenario: Callable[[asyncio.AbstractEventLoop], TaskRig]
) -> None:
    taken = plain_taken(monkeypatch)
    rig = scenario(loop)
    plain, counters = seen(rig), repr(rig.core.counters)
    assert taken  # the plain path was taken
    monkeypatch.undo()
    full_path_only(monkeypatch)
    rig = scenario(loop)
    assert (plain, counters) == (seen(rig), repr(rig.core.counters))


def test_a_host_that_acts_on_a_deadline_inside_the_sweep_gets_one_end_per_call(loop) -> None:
    """Told of one call's deadline, the host cancels another due at the same moment and makes a new call, all
    inside the sweep: the cancelled one ends as the host's cancel, the new one at its own deadline, each once."""
    rig = TaskRig(loop, host_timeout_s=3.0, margin_s=1.0)
    sent = rig.host.send

    def reacting(message: dict[str, Any]) -> None:
        sent(message)
        if message.get("id") == "a":  # its deadline's answer
            cancel = {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": "b"}}
            rig.core.host_message(rig.host, cancel)
            rig.request("c", "tools/call", {"name": "echo"})

    rig.host.send = reacting  # type: ignore[method-assign]
    rig.request("a", "tools/call", {"name": "echo"})
    rig.request("b", "tools/call", {"name": "echo"})
    start = rig.scheduler.time()
    rig.scheduler.advance(2.0)
    rig.scheduler.advance(2.0)
    ends = [(e.request_id, e.data["outcome"], e.data["duration_s"]) for e in rig.events(Kind.REQUEST_END)]
    # b ends inside the sending of a's answer, before a's end is written: the order the full path writes too
    assert sorted(ends) == [("a", "deadline", 2.0), ("b", "cancelled", 2.0), ("c", "deadline", 2.0)]
    assert rig.scheduler.time() - start == 4.0 and len(rig.core.deadlines) == 0
