"""The pure parts of the wrapper's bounds: a frame's id read from its first bytes, lines and events over the cap
dropped as they stream (reported with size and head), and the outbox that coalesces progress for a slow host."""

from __future__ import annotations

import asyncio
import json
from typing import Any

from mcpwatch.config import Settings
from mcpwatch.events import UpstreamState
from mcpwatch.reliability.deadline import DeadlinePolicy
from mcpwatch.wrapper.calls.recorder import Recorder
from mcpwatch.wrapper.core.oversize import NOT_AN_ANSWER, UNKNOWN, read_id
from mcpwatch.wrapper.core.pressure import Backpressure, Outbox
from mcpwatch.wrapper.core.pump import WrapperCore
from mcpwatch.wrapper.core.session import WAITING_MAX
from mcpwatch.wrapper.framing.lines import LineSplitter
from mcpwatch.wrapper.upstreams.http11 import EventStream


def test_read_id_finds_only_the_top_level_id_of_a_frame_start() -> None:
    assert read_id(b'{"jsonrpc":"2.0","id":7,"result":{"content":[{"text":"xxxx') == 7
    assert read_id(b' {\n "id" : "abc" , "method":"tools/call","params":{"x":"') == "abc"
    assert read_id(b'{"method":"ping","params":{"a":[1,{"id":9}]},"id":3,"x":"') == 3
    assert read_id(b'{"jsonrpc":"2.0","result":{"id":5,"text":"xxxx') is UNKNOWN  # nested, and cut off
    assert read_id(b'{"jsonrpc":"2.0","id":12') is UNKNOWN  # 12 may go on beyond the head: 123...
    assert read_id(b'{"id":null,"x":1}') is UNKNOWN and read_id(b'{"id":true,"x":1}') is UNKNOWN
    assert read_id(b"[1,2,3") is UNKNOWN and read_id(b"not json") is UNKNOWN and read_id(b"") is UNKNOWN
    assert read_id('{"id":"\u00e9t\u00e9","x":1'.encode()) == "\u00e9t\u00e9"


def test_read_id_of_an_answer_refuses_a_request_or_notification_that_shows_its_method_first() -> None:
    """A server request whose id happens to equal one of the wrapper's must not be taken for that call's answer."""
    assert read_id(b'{"jsonrpc":"2.0","method":"sampling/createMessage","id":3,"params":{"x":"', answer=True) is (
        NOT_AN_ANSWER
    )
    assert read_id(b'{"method":"notifications/progress","params":{"x":"', answer=True) is NOT_AN_ANSWER
    assert read_id(b'{"jsonrpc":"2.0","id":3,"result":{"x":"\xff', answer=True) == 3
    assert read_id(b'{"jsonrpc":"2.0","result":{"x":"', answer=True) is UNKNOWN


def test_a_line_over_the_cap_is_dropped_as_it_streams_and_reported_with_its_head() -> None:
    lines: list[bytes] = []
    over: list[tuple[int, bytes]] = []
    splitter = LineSplitter(lines.append, lambda size, head: over.append((size, head)), max_line_bytes=1000)
    start = b'{"jsonrpc":"2.0","id":41,"result":"'
    splitter.feed(start)
    for _ in range(50):
        splitter.feed(b"x" * 100)
        assert len(splitter._buffer) <= 1000  # never more than the cap held
    assert len(over) == 1  # reported the moment it crossed the cap, not at its end (which may never come)
    splitter.feed(b'"}\n{"ok":1}\n')
    assert lines == [b'{"ok":1}'] and len(over) == 1
    assert over[0][0] == len(start) + 1000 and over[0][1].startswith(start)  # the first feed past 1000 bytes
    assert read_id(over[0][1]) == 41


def test_an_event_stream_line_or_event_over_the_cap_is_dropped_and_reported() -> None:
    events: list[bytes] = []
    over: list[tuple[int, bytes]] = []
    stream = EventStream(events.append, lambda size, head: over.append((size, head)), max_event_bytes=1000)
    stream.feed(b'data: {"jsonrpc":"2.0","id":"e1","result":"')
    for _ in range(100):  # one endless line, in chunks without an end
        stream.feed(b"z" * 500)
        assert stream._partial_len <= 1000
    assert len(over) == 1 and stream.dropping  # told at once, while the line goes on
    stream.feed(b'"}\n\ndata: {"small":1}\n\n')
    many = b"".join(b"data: " + b"y" * 300 + b"\n" for _ in range(5))  # many data lines: the event is too big
    stream.feed(b'data: {"id":8,\n' + many + b"\ndata: after\n\n")
    assert events == [b'{"small":1}', b"after"]
    assert [read_id(head) for _, head in over] == ["e1", 8]  # data lines are joined by newlines, as SSE says
    assert 1000 < over[0][0] <= 1500 and 1000 < over[1][0] <= 1500 and not stream.dropping


class _Counters:
    progress_coalesced = 0
    upstream_pauses = 0


class _Upstream:
    def __init__(self) -> None:
        self.calls: list[str] = []

    def pause_reading(self) -> None:
        self.calls.append("pause")

    def resume_reading(self) -> None:
        self.calls.append("resume")


def test_the_outbox_keeps_order_and_replaces_waiting_progress_with_the_latest() -> None:
    outbox = Outbox()

    def progress(token: object, step: int) -> dict[str, object]:
        return {
            "jsonrpc": "2.0",
            "method": "notifications/progress",
            "params": {"progressToken": token, "progress": step},
        }

    frames = [progress("a", 1), progress(7, 1), progress("7", 1), {"id": 1, "result": {}}, progress("a", 2)]
    frames += [{"method": "notifications/message", "params": {}}, progress(7, 2), progress("a", 3)]
    coalesced = [outbox.push(f, json.dumps(f).encode()) for f in frames]
    assert coalesced == [False, False, False, False, True, False, True, True]
    assert outbox.bytes == sum(len(json.dumps(f)) for f in [frames[7], frames[6], frames[2], frames[3], frames[5]])
    out = [outbox.pop()[0] for _ in range(len(outbox))]
    assert out == [frames[7], frames[6], frames[2], frames[3], frames[5]]  # "7" and 7 are two tokens
    assert outbox.bytes == 0 and outbox.push(progress("a", 4), b"x") is False  # nothing waits: nothing to replace


def test_backpressure_pauses_above_the_high_mark_and_resumes_below_the_low_one() -> None:
    now = [0.0]
    warnings: list[str] = []
    upstream = _Upstream()
    counters = _Counters()
    gate = Backpressure(clock=lambda: now[0], warn=warnings.append, counters=counters, high_water=100, low_water=20)
    gate.upstream = upstream
    host_a, host_b = object(), object()
    gate.set_unsent(host_a, 60)
    gate.set_unsent(host_b, 50)
    assert gate.paused and upstream.calls == ["pause"] and counters.upstream_pauses == 1
    gate.set_unsent(host_a, 0)
    assert gate.paused  # 50 is not below the low mark
    now[0] = 2.0
    gate.set_unsent(host_b, 10)
    assert not gate.paused and upstream.calls == ["pause", "resume"]
    assert gate.describe()["paused_s"] == 2.0 and gate.describe()["peak_unsent_bytes"] == 110
    gate.set_unsent(host_b, 500)  # a second pause within LOG_EVERY_S: counted, not logged again
    assert counters.upstream_pauses == 2 and len(warnings) == 1 and "paused" in warnings[0]
    gate.note_coalesced()
    now[0] = 30.0
    gate.note_coalesced()  # counted each time, logged once the quiet time is over
    assert counters.progress_coalesced == 2 and len(warnings) == 2
    assert "replaced by the latest" in warnings[1] and "2 pause(s), 2 progress notification(s)" in warnings[1]


def test_frames_held_while_the_upstream_is_away_are_bounded() -> None:
    class Host:
        connection = "stdio"
        key_prefix = ""
        send_raw = None

        def __init__(self) -> None:
            self.sent: list[dict[str, Any]] = []

        def send(self, message: dict[str, object]) -> None:
            self.sent.append(message)

    loop = asyncio.new_event_loop()
    try:
        settings = Settings()
        core = WrapperCore(
            settings=settings, deadline=DeadlinePolicy(settings.deadline), recorder=Recorder("t", None), loop=loop
        )
        core.session.state = UpstreamState.BACKOFF  # no upstream now: frames wait
        host = Host()
        limit = WAITING_MAX
        for n in range(limit):
            notification = {"jsonrpc": "2.0", "method": "notifications/x", "params": {"n": n}}
            core.host_frame(host, json.dumps(notification).encode())
        assert len(core.session.waiting) == limit and host.sent == []
        core.host_frame(host, b'{"jsonrpc":"2.0","id":"one-more","method":"tools/list"}')
        core.host_frame(host, b'{"jsonrpc":"2.0","method":"notifications/y"}')
        assert len(core.session.waiting) == limit  # neither held
        assert [m["id"] for m in host.sent] == ["one-more"]
        assert f"{limit} frames wait for it already" in host.sent[0]["error"]["message"]
    finally:
        loop.close()
