"""A batch on the stdio front is answered with one line, the array of its answers (JSON-RPC's way). That line was
any size: a batch of many large answers (or of `tasks/result` calls answered from memory) held every answer until
its last and wrote them all in one line past `[limits] max_frame_mb`, the bound on one frame either way. Now the
array is held as its encoded parts up to that bound, and each answer past it is an error saying so."""

from __future__ import annotations

import os
import sys
from typing import Any

import orjson
import pytest
from taskrig import TaskRig

from mcpwatch.wrapper.fronts import front_stdio

CAP = 400  # bytes: the frame limit, shrunk from megabytes for the test


def _batch_line(loop: Any, monkeypatch: pytest.MonkeyPatch, results: list[bytes]) -> bytes:
    """The line the stdio front writes for a batch of `tools/call`s answered with `results`, in order."""
    read, write = os.pipe()
    monkeypatch.setattr(front_stdio.os, "dup", lambda fd: write)
    monkeypatch.setattr(front_stdio.os, "dup2", lambda fd, to: None)
    monkeypatch.setattr(sys, "stdout", sys.stdout)
    rig = TaskRig(loop, host_timeout_s=30.0, margin_s=1.0)
    monkeypatch.setattr(rig.core, "frame_limit", lambda: CAP)
    front = front_stdio.StdioFront(rig.core)
    rig.core.attach_link(front)
    try:
        call = {"jsonrpc": "2.0", "method": "tools/call", "params": {"name": "echo"}}
        front._host_line(orjson.dumps([{**call, "id": n} for n in range(len(results))]))
        ups = [m["id"] for m in rig.upstream.sent if m.get("method") == "tools/call"]
        for up_id, result in zip(ups, results, strict=True):
            rig.core.upstream_frame(b'{"jsonrpc":"2.0","id":%d,"result":%s}' % (up_id, result))
        os.close(write)
        with os.fdopen(read, "rb") as out:
            return out.read()
    finally:
        front.closed = True


def test_a_batchs_answers_past_the_frame_limit_are_errors_and_its_line_stays_under_it(loop, monkeypatch) -> None:
    result = b'{"content":[{"type":"text","text":"' + b"x" * 100 + b'"}]}'
    size = len(b'{"jsonrpc":"2.0","id":0,"result":%s}' % result)  # 171 bytes: two fit in 400 with "[", "]" and ","
    line = _batch_line(loop, monkeypatch, [result] * 5)
    answers = orjson.loads(line)
    fitted = [a for a in answers if "result" in a]
    refused = [a for a in answers if "error" in a]
    assert 2 + 2 * (size + 1) <= CAP < 2 + 3 * (size + 1)
    assert [a["id"] for a in fitted] == [0, 1]
    assert [a["id"] for a in refused] == [2, 3, 4]
    assert all("[limits] max_frame_mb" in a["error"]["message"] for a in refused)
    assert len(line) <= CAP + 3 * len(orjson.dumps(refused[0])) + 1  # the array held no more than the cap


def test_a_batch_under_the_frame_limit_is_the_array_of_its_answers(loop, monkeypatch) -> None:
    line = _batch_line(loop, monkeypatch, [b'{"content":[]}', b'{"content":[1]}'])
    expected = [{"jsonrpc": "2.0", "id": n, "result": {"content": c}} for n, c in ((0, []), (1, [1]))]
    assert line == orjson.dumps(expected) + b"\n"
