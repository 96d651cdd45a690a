"""A plain call's answer forwarded in the upstream's own bytes, only its id replaced (`wrapper/framing/splice.py`),
attacked as an upstream: ids that look alike in bytes, ids and `"id"` keys inside the result, whitespace, escapes in
keys, duplicate members, lone surrogates, line ends inside the frame, huge padding, batches. What the host receives
is the upstream's bytes with its own id (and, for what orjson writes, exactly what the full path sends); anything
the grammar does not prove is sent as the full path sends it; the log is the full path's either way. In memory, on a
manual clock."""

from __future__ import annotations

import asyncio
import os
import sys
from typing import Any

import orjson
import pytest
from taskrig import Host, TaskRig
from test_plain_path import full_path_only

from mcpwatch.events import Event
from mcpwatch.wrapper.core import pump
from mcpwatch.wrapper.framing import frames
from mcpwatch.wrapper.framing.splice import SPLICE_BYTES, read_response
from mcpwatch.wrapper.fronts import front_stdio


@pytest.fixture(autouse=True)
def splice_any_size(monkeypatch: pytest.MonkeyPatch) -> None:
    """The grammar tried on every answer here, however short (the core splices from `SPLICE_BYTES` on)."""
    monkeypatch.setattr(pump, "SPLICE_BYTES", 0)


class RawHost(Host):
    """A host link that takes encoded answers, as the stdio front does; keeps every frame's bytes."""

    def __init__(self) -> None:
        super().__init__()
        self.frames: list[bytes] = []
        self.raw = 0

    def send(self, message: dict[str, Any]) -> bool | None:
        self.frames.append(frames.encode(message))
        return super().send(message)

    def send_raw(self, frame: bytes, message: dict[str, Any]) -> bool | None:
        self.raw += 1
        self.frames.append(frame)
        return super().send(message)


class RawRig(TaskRig):
    """A core whose host takes encoded answers."""

    host: RawHost

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        super().__init__(loop, host_timeout_s=30.0, margin_s=1.0)
        self.core.detach_link(self.host)
        self.host = RawHost()
        self.core.attach_link(self.host)


def log_rows(rig: TaskRig) -> list[tuple[Any, ...]]:
    def row(e: Event) -> tuple[Any, ...]:
        return (e.kind, e.ts, e.mono, e.seq, e.request_id, e.tool, frames.encode(e.data))

    return [row(e) for e in rig.events()]


def answered(loop: asyncio.AbstractEventLoop, answers: list[bytes], host_ids: list[Any]) -> RawRig:
    """Each answer (`%d`: the upstream id) to a plain call of its own, under its host id."""
    rig = RawRig(loop)
    for host_id, answer in zip(host_ids, answers, strict=True):
        up_id = rig.request(host_id, "tools/call", {"name": "echo", "arguments": {"q": str(host_id)}})
        rig.scheduler.advance(0.25)
        rig.core.upstream_frame(answer.replace(b"%d", b"%d" % up_id))
    rig.scheduler.advance(100)  # what no answer ended, its deadline does
    return rig


def full_path(loop: asyncio.AbstractEventLoop, monkeypatch: pytest.MonkeyPatch, *args: Any) -> RawRig:
    with monkeypatch.context() as patched:
        full_path_only(patched)
        return answered(loop, *args)


CANONICAL: list[bytes] = [  # what orjson (and pydantic) write: the host gets what the full path sent, byte for byte
    b'{"jsonrpc":"2.0","id":%d,"result":{"content":[{"type":"text","text":"ok"}]}}',
    b'{"jsonrpc":"2.0","id":%d,"result":{"content":[],"structuredContent":{"id":%d,"n":[1,2.5,null,true]}}}',
    b'{"jsonrpc":"2.0","id":%d,"result":{"content":[{"type":"text","text":"{\\"id\\":%d,\\"result\\":{}}"}]}}',
    b'{"jsonrpc":"2.0","id":%d,"result":{"content":[{"type":"text",'
    b'"text":"caf\xc3\xa9 \xf0\x9f\x98\x80 \xe2\x80\xae"}]}}',
    b'{"jsonrpc":"2.0","id":%d,"result":{"id":"x\\",\\"id\\":%d","content":[]}}',
    b'{"jsonrpc":"2.0","id":%d,"result":{"content":[{"type":"text","text":"' + b"y" * 70000 + b'"}]}}',
]
CANONICAL_IDS: list[Any] = [1, "2", "caf\u00e9-3", 2**63 - 1, -5, 0]


def test_an_answer_in_orjsons_encoding_reaches_the_host_as_the_full_path_sent_it(loop, monkeypatch) -> None:
    spliced = answered(loop, CANONICAL, CANONICAL_IDS)
    full = full_path(loop, monkeypatch, CANONICAL, CANONICAL_IDS)
    # every one spliced but the two whose strings hold a colon (`frames.decode_line`: the full path's bytes) …
    assert spliced.host.raw == len(CANONICAL) - 2
    assert spliced.host.frames == full.host.frames  # … into exactly the bytes the full path encoded
    assert log_rows(spliced) == log_rows(full)
    assert [orjson.loads(f)["id"] for f in spliced.host.frames] == CANONICAL_IDS


OTHER_ORDERS: list[bytes] = [  # valid, one id, each member once: the upstream's bytes, only the id replaced
    b'{"result":{"content":[{"type":"text","text":"ts"}]},"jsonrpc":"2.0","id":%d}',  # the TS SDK's order
    b'{"id":%d,"jsonrpc":"2.0","result":{"content":[]}}',
    b'{"jsonrpc":"2.0","result":{"content":[]},"id":%d}',
    b'{"id":%d,"result":{"content":[]},"jsonrpc":"2.0"}',
    b' \t{ "jsonrpc" : "2.0" ,\t"id" :  %d , "result" : { "content" : [ ] , "n" : 1E2 } }\t ',
    b'{"result":{"content":[],"structuredContent":{"id":%d}},"jsonrpc":"2.0","id":%d}',  # the same id inside
    b'{"jsonrpc":"2.0","id":%d,"result":{"content":[],"f":1.0e0,"s":"\\u00e9\\/"}}',  # the upstream's escapes
    b'{"jsonrpc":"2.0","id":%d,"result":{"content":[]}' + b" " * 300 + b"}",  # padding: whitespace, kept
    # padding before the end: the tail is matched where it can start (a search from every position near the end
    # was quadratic in the padding: 7 ms for 255 spaces; it also left this answer to the full path)
    b'{"result":{"content":[]},  "jsonrpc":"2.0"' + b"\t" * 100_000 + b',"id":%d' + b" " * 100_000 + b"}  ",
]


def test_an_answer_in_another_order_or_spacing_is_the_upstreams_bytes_with_the_hosts_id(loop, monkeypatch) -> None:
    host_ids: list[Any] = ["a", 2, "\u00e93", 4, "5", 6, "7", 8, 9]
    spliced = answered(loop, OTHER_ORDERS, host_ids)
    full = full_path(loop, monkeypatch, OTHER_ORDERS, host_ids)
    assert spliced.host.raw == len(OTHER_ORDERS)
    ups = [m["id"] for m in spliced.upstream.sent]
    for frame, answer, host_id, up_id in zip(spliced.host.frames, OTHER_ORDERS, host_ids, ups, strict=True):
        upstream_bytes = answer.replace(b"%d", b"%d" % up_id)
        top_level = upstream_bytes.rindex(b"%d" % up_id) if answer.startswith(b'{"result"') else None
        if top_level is None:  # the id is the first "%d": before the result
            top_level = upstream_bytes.index(b"%d" % up_id)
        expected = upstream_bytes[:top_level] + orjson.dumps(host_id) + upstream_bytes[top_level + len(b"%d" % up_id) :]
        assert frame == expected + b"\n"
    # the same answers as values: what a host reads is what the full path sent it
    assert [orjson.loads(f) for f in spliced.host.frames] == [orjson.loads(f) for f in full.host.frames]
    assert log_rows(spliced) == log_rows(full)


UNPROVEN: list[bytes] = [  # each sent as the full path sends it (or answered as it answers garbage)
    b'{"jsonrpc":"2.0","id":%d,"result":{"content":[]},"id":%d}',  # the id twice (a first-keeper reads another)
    b'{"jsonrpc":"2.0","id":%d,"result":{"content":[]},"id":999}',  # … or another id last
    b'{"jsonrpc":"2.0","id":999,"result":{"content":[]},"id":%d}',  # … or first
    b'{"jsonrpc":"2.0","id":%d,"result":{"content":["first"]},"result":{"content":["last"]}}',
    b'{"jsonrpc":"2.0","jsonrpc":"2.0","id":%d,"result":{"content":[]}}',
    b'{"jsonrpc":"2.0","id":%d.0,"result":{"content":[]}}',  # 1.0
    b'{"jsonrpc":"2.0","id":%de0,"result":{"content":[]}}',  # 1e0
    b'{"jsonrpc":"2.0","id":"%d","result":{"content":[]}}',  # "1"
    b'{"jsonrpc":"2.0","id":0%d,"result":{"content":[]}}',  # a leading zero: not JSON
    b'{"jsonrpc":"2.0","id":+%d,"result":{"content":[]}}',  # what int() reads but JSON does not
    b'{"jsonrpc":"2.0","id":%d_0,"result":{"content":[]}}',
    b'{"jsonrpc":"2.0","id":-%d,"result":{"content":[]}}',  # another id
    b'{"jsonrpc":"2.0","id":%d000000000000000000,"result":{"content":[]}}',  # beyond 64 bits
    b'{"jsonrpc":"2.0","id":,"result":{"content":[]}}',
    b'{"jsonrpc":"2.0","\\u0069d":%d,"result":{"content":[]}}',  # an escape in a key
    b'{"jsonrpc":"2.0","id":%d,"\\u0072esult":{"content":[]}}',
    b'{"jsonrpc":"2.0","id":%d,"result":{"content":[{"type":"text","text":"lone \\ud800"}]}}',
    b'{"jsonrpc":"2.0","id":%d,"result":{"content":[],"n":12345678901234567890123}}',  # beyond 64 bits
    b'{"jsonrpc":"2.0","id":%d,"result":{"content":[],"f":1e400}}',  # beyond a double
    b'{"jsonrpc":"2.0","id":%d,"result":{"content":[],\r"x":1}}',  # a CR: a line's end to some hosts
    b'{"jsonrpc":"2.0","id":%d,"result":{"content":[]}}\r',
    b'{"jsonrpc":"2.0","id":%d,"result":{"content":[],\n"x":1}}',  # an LF (an HTTP upstream's body)
    b'{"jsonrpc":"2.0","id":%d,"result":{"content":[],\x0c"x":1}}',  # a form feed: not JSON's whitespace
    b'{"jsonrpc":"2.0","id":%d,"result":{"content":["\xff\xfe"]}}',  # not UTF-8
    b'{"jsonrpc":"2.0","id":%d,"result":{"content":[]},"extra":{}}',  # another member
    b'{"jsonrpc":"2.0","id":%d,"result":{"content":[]},"error":{"code":1,"message":"m"}}',
    b'{"jsonrpc":"2.0","id":%d,"result":{"content":[]}}}',  # one brace too many
    b'{"jsonrpc":"2.0","id":%d,"result":{"content":[]}',  # one too few
    b'[{"jsonrpc":"2.0","id":%d,"result":{"content":[]}}]',  # a batch
    b'{"jsonrpc":"2.0","id":%d,"result":{"content":[],"isError":true}}',
    b'{"jsonrpc":"2.0","id":%d,"result":{"task":{"taskId":"t"}}}',
    b'{"jsonrpc":"2.0","id":%d,"result":{"content":[],"d":' + b"[" * 255 + b"]" * 255 + b"}}",  # too deep
]


def test_what_the_grammar_does_not_prove_goes_as_the_full_path_sends_it(loop, monkeypatch) -> None:
    host_ids = list(range(1, len(UNPROVEN) + 1))
    spliced = answered(loop, UNPROVEN, host_ids)
    full = full_path(loop, monkeypatch, UNPROVEN, host_ids)
    assert spliced.host.raw == 0
    assert spliced.host.frames == full.host.frames
    assert log_rows(spliced) == log_rows(full)
    for frame in spliced.host.frames:  # and each is one line of JSON
        assert frame.count(b"\n") == 1 and b"\r" not in frame
        frames.decode(frame)


DUPLICATE_KEYS: list[bytes] = [  # a key twice inside the result: the wrapper reads the last, a host may not
    b'{"jsonrpc":"2.0","id":%d,"result":{"content":[],"isError":true,"isError":false}}',  # a first-keeper: an error
    b'{"jsonrpc":"2.0","id":%d,"result":{"content":[{"type":"text","text":"first","text":"last"}]}}',
    b'{"jsonrpc":"2.0","id":%d,"result":{"content":[],"\\u0061":1,"a":2}}',  # the same key, escaped once
    b'{"result":{"content" :[],"a" : 1,"a"\t:2},"jsonrpc":"2.0","id":%d}',  # whitespace before the colon
    b'{"jsonrpc":"2.0","id":%d,"result":{"content":[],"a\\\\":1,"a\\\\":2}}',  # a key ending in a backslash
    b'{"jsonrpc":"2.0","id":%d,"result":{"content":[{"type":"text","text":"at 12:00: \\":"}],"x":1,"x":2}}',
    # more brackets than the depth cap: the depth and the keys are counted in one walk
    b'{"jsonrpc":"2.0","id":%d,"result":{"content":[' + b'{"a":1},' * 300 + b'{"a":1,"a":2}]}}',
]


def test_a_result_with_a_key_twice_goes_as_the_full_path_sends_it(loop, monkeypatch) -> None:
    """The log keeps the last of a duplicate key, as the full path did; the host is sent the same value, each key
    once (a host's parser may keep the first, or refuse the frame: a Rust host's typed result does)."""
    host_ids = list(range(1, len(DUPLICATE_KEYS) + 1))
    spliced = answered(loop, DUPLICATE_KEYS, host_ids)
    full = full_path(loop, monkeypatch, DUPLICATE_KEYS, host_ids)
    assert full.host.raw == 0 and len(full.host.frames) == len(DUPLICATE_KEYS)
    assert spliced.host.raw == 0
    assert spliced.host.frames == full.host.frames
    assert log_rows(spliced) == log_rows(full)


KEYS_ONCE: list[bytes] = [  # each key once; the first two hold colons in strings (then the full path's bytes)
    b'{"jsonrpc":"2.0","id":%d,"result":{"content":[{"type":"text","text":"at 12:00: see http://x:80/"}]}}',
    b'{"jsonrpc":"2.0","id":%d,"result":{"content":[{"type":"text","text":"{\\"a\\":1,\\"a\\": 2}"}]}}',
    b'{"jsonrpc":"2.0","id":%d,"result":{"content":[],"a\\\\":1,"b\\\\\\"":2}}',  # keys `a\` and `b\"`
    b'{"jsonrpc":"2.0", "id": %d, "result": {"content": [{"type": "text", "text": "x"}], "n": 1}}',  # `": "`
    b'{"jsonrpc":"2.0","id":%d,"result":{"content":[' + b'{"a":1},' * 300 + b'{"a":1,"b":2}]}}',
]


def test_a_result_with_each_key_once_is_spliced_unless_a_string_holds_a_colon(loop, monkeypatch) -> None:
    """A colon or bracket in a string cannot be told from a key's or a container's without reading the strings
    (which costs what the splice saves): such an answer is encoded again, as before."""
    host_ids = list(range(1, len(KEYS_ONCE) + 1))
    spliced = answered(loop, KEYS_ONCE, host_ids)
    full = full_path(loop, monkeypatch, KEYS_ONCE, host_ids)
    assert spliced.host.raw == len(KEYS_ONCE) - 2
    assert spliced.host.frames[:2] == full.host.frames[:2]
    assert [orjson.loads(f) for f in spliced.host.frames] == [orjson.loads(f) for f in full.host.frames]
    assert log_rows(spliced) == log_rows(full)


def test_the_deepest_result_the_full_path_takes_is_spliced_and_one_deeper_is_not() -> None:
    for depth, spliceable in ((frames.MAX_DEPTH - 1, True), (frames.MAX_DEPTH, False)):
        line = b'{"jsonrpc":"2.0","id":7,"result":{"a":' + b"[" * (depth - 1) + b"]" * (depth - 1) + b"}}"
        try:
            frames.decode(line)
            decodes = True
        except ValueError:
            decodes = False
        assert decodes is spliceable
        assert (read_response(line) is not None) is spliceable


def test_an_id_beyond_what_orjson_encodes_gets_the_full_paths_bytes(loop, monkeypatch) -> None:
    host_ids: list[Any] = [2**64, "lone \ud800"]
    answers = [b'{"jsonrpc":"2.0","id":%d,"result":{"content":[]}}'] * 2
    spliced = answered(loop, answers, host_ids)
    full = full_path(loop, monkeypatch, answers, host_ids)
    assert spliced.host.raw == 0  # sent as the full path sends them
    assert spliced.host.frames == full.host.frames


def test_a_host_without_a_raw_sender_is_sent_the_message(loop) -> None:
    rig = TaskRig(loop, host_timeout_s=30.0, margin_s=1.0)
    up_id = rig.request("h", "tools/call", {"name": "echo"})
    rig.core.upstream_frame(b'{"result":{"content":[]},"jsonrpc":"2.0","id":%d}' % up_id)
    assert rig.host.sent == [{"jsonrpc": "2.0", "id": "h", "result": {"content": []}}]


def test_a_batchs_plain_calls_are_answered_in_one_array_on_stdio(loop, monkeypatch) -> None:
    """The stdio front holds a batch's answers until the last: a spliced answer that is one of them joins the array
    (as its message), one that is not is written as it came."""
    read, write = os.pipe()
    monkeypatch.setattr(front_stdio.os, "dup", lambda fd: write)
    monkeypatch.setattr(front_stdio.os, "dup2", lambda fd, to: None)
    monkeypatch.setattr(sys, "stdout", sys.stdout)
    rig = TaskRig(loop, host_timeout_s=30.0, margin_s=1.0)
    front = front_stdio.StdioFront(rig.core)
    rig.core.attach_link(front)
    try:
        lone = {"jsonrpc": "2.0", "id": "lone", "method": "tools/call", "params": {"name": "echo"}}
        rig.core.host_message(front, lone)
        batch = [{**lone, "id": 1}, {**lone, "id": 2}]
        front._host_line(orjson.dumps(batch))
        ups = [m["id"] for m in rig.upstream.sent if m.get("method") == "tools/call"]
        for up_id in reversed(ups):
            rig.core.upstream_frame(b'{"result":{"content":[%d]}, "jsonrpc":"2.0","id":%d}' % (up_id, up_id))
        os.close(write)
        with os.fdopen(read, "rb") as out:
            written = out.read().splitlines()
    finally:
        front.closed = True
    answers = [{"jsonrpc": "2.0", "id": n, "result": {"content": [ups[n]]}} for n in (2, 1)]  # as the full path's
    assert written[0] == frames.encode(answers)[:-1]
    assert written[1] == b'{"result":{"content":[%d]}, "jsonrpc":"2.0","id":"lone"}' % ups[0]


@pytest.mark.parametrize("width", [1, 2, 3, 4])
def test_the_logs_preview_of_a_long_result_decodes_only_its_start_and_is_what_it_was(width: int) -> None:
    """`text_of` decodes only the bytes the preview keeps (at most 4 per character): the same text as the whole
    decoded and cut, whatever the characters' widths and wherever one is cut."""
    wide = {1: "x", 2: "\u00e9", 3: "\u20ac", 4: "\U0001f600"}[width]
    for lead in range(4):
        for limit in (10, 4096):
            value = {"t": "a" * lead + wide * (limit + 50)}
            whole = orjson.dumps(value).decode()
            assert frames.text_of(value, limit) == whole[: limit - 1] + "…"


def test_a_short_answer_is_encoded_again_and_a_long_one_spliced(loop, monkeypatch) -> None:
    """Below `SPLICE_BYTES` reading the shape costs more than the encoding it saves: the full path's bytes."""
    monkeypatch.setattr(pump, "SPLICE_BYTES", SPLICE_BYTES)
    head = b'{"result":{"content":[{"type":"text","text":"'
    tail = b'"}]},"jsonrpc":"2.0","id":%d}'
    short = head + b"s" * (SPLICE_BYTES - len(head) - len(tail) - 2) + tail  # just short of it
    answers = [short, head + b"l" * SPLICE_BYTES + tail]
    rig = answered(loop, answers, ["short", "long"])
    assert rig.host.raw == 1
    assert rig.host.frames[0] == frames.encode(rig.host.sent[0])  # encoded again: orjson's order
    assert rig.host.frames[1].endswith(b',"jsonrpc":"2.0","id":"long"}\n')  # the upstream's order


LONG = b'{"jsonrpc":"2.0","id":%d,"result":{"content":[{"type":"text","text":"' + b"z" * SPLICE_BYTES + b'"}]}}'


def _race(loop: asyncio.AbstractEventLoop, scenario: str) -> RawRig:
    """A host's calls and the upstream's long answers in the order `scenario` names."""
    rig = RawRig(loop)

    def call(host_id: Any) -> int:
        return rig.request(host_id, "tools/call", {"name": "echo", "arguments": {}})

    def answer(up_id: int) -> None:
        rig.core.upstream_frame(LONG.replace(b"%d", b"%d" % up_id))

    if scenario == "after its deadline":
        up_id = call(1)
        rig.scheduler.advance(100)
        answer(up_id)
    elif scenario == "twice":
        up_id = call(1)
        answer(up_id)
        answer(up_id)
    elif scenario == "after a cancel":
        up_id = call(1)
        cancel = {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 1}}
        rig.core.host_message(rig.host, cancel)
        answer(up_id)
    elif scenario == "id reused after a cut":
        first = call(1)
        rig.scheduler.advance(100)
        second = call(1)
        answer(first)
        answer(second)
    elif scenario == "ids of every shape":
        for up_id in reversed([call(h) for h in ["x", 1.5, 0, -7, "\u2028", None, 10**30]]):
            if up_id is not None:
                answer(up_id)
    elif scenario == "no such call":
        answer(12345)
    rig.scheduler.advance(100)
    return rig


@pytest.mark.parametrize(
    "scenario",
    ["after its deadline", "twice", "after a cancel", "id reused after a cut", "ids of every shape", "no such call"],
)
def test_a_long_answer_racing_the_host_gets_what_the_full_path_sent(loop, monkeypatch, scenario: str) -> None:
    monkeypatch.setattr(pump, "SPLICE_BYTES", SPLICE_BYTES)
    spliced = _race(loop, scenario)
    with monkeypatch.context() as patched:
        full_path_only(patched)
        full = _race(loop, scenario)
    assert spliced.host.frames == full.host.frames
    assert log_rows(spliced) == log_rows(full)
