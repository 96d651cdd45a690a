"""JSON-RPC batches through real wrappers: every request answered, over HTTP as one array, and a log that agrees."""

from __future__ import annotations

import asyncio
import json
import sqlite3
import subprocess
import sys

import pytest
from front_tools import Host, listening_wrapper, rpc

from checkout import REPO, mcpwatch_cmd
from waiting import patience
from wraptools import RAW_SERVER

pytestmark = pytest.mark.anyio


def ended(log, method: str) -> list[dict]:
    """The request_end events of `method` in the log, with their data (none while the log has no schema yet)."""
    try:
        with sqlite3.connect(f"file:{log}?mode=ro", uri=True) as db:  # never creates the file the wrapper will
            rows = db.execute("SELECT request_id, data FROM events WHERE kind = 'request_end'").fetchall()
    except sqlite3.OperationalError:  # not there yet, or its schema not written yet
        return []
    ends = [{"request_id": rid, **json.loads(data)} for rid, data in rows]
    return [e for e in ends if e.get("method") == method]


async def wait_logged(log, method: str, count: int) -> list[dict]:
    deadline = asyncio.get_running_loop().time() + patience(10)
    while asyncio.get_running_loop().time() < deadline:
        ends = ended(log, method)
        if len(ends) >= count:
            return ends
        await asyncio.sleep(0.1)
    return ended(log, method)


async def test_600_batched_pings_are_all_answered_as_arrays_and_logged_as_delivered(tmp_path):
    sizes = [1, 2, 3, 5, 10, 29, 50, 100, 400]  # 600 in all
    assert sum(sizes) == 600
    async with listening_wrapper(tmp_path) as front, Host(front) as host:
        batches = []
        start = 0
        for size in sizes:
            batches.append([rpc(f"b{start + i}", "ping") for i in range(size)])
            start += size
        # one after another, then all at once: the answers of a batch often all arrive before its POST looks
        replies = [await host.post(batch) for batch in batches]
        replies += await asyncio.gather(*(host.post(batch) for batch in batches))
        for batch, reply in zip(batches * 2, replies, strict=True):
            assert reply.status_code == 200 and reply.headers["content-type"] == "application/json"
            answers = reply.json()
            assert isinstance(answers, list)
            assert sorted(a["id"] for a in answers) == sorted(r["id"] for r in batch)
            assert all(a["result"] == {} for a in answers)
        # a batch mixing a notification with requests: an array of the requests' answers only
        mixed = [rpc("m1", "ping"), {"jsonrpc": "2.0", "method": "notifications/roots/list_changed"}, rpc("m2", "ping")]
        answers = (await host.post(mixed)).json()
        assert sorted(a["id"] for a in answers) == ["m1", "m2"]
        ends = await wait_logged(front.log, "ping", 1202)
    assert len(ends) == 1202
    assert all(e["outcome"] == "ok" and e.get("delivered", True) for e in ends)
    assert "Traceback" not in front.stderr


async def test_an_answer_that_cannot_be_delivered_is_logged_as_not_delivered(tmp_path):
    # A 2026-era request is answered on its own POST; a host that closes the POST first cannot receive the answer.
    meta = {"io.modelcontextprotocol/protocolVersion": "2026-07-28"}
    async with listening_wrapper(tmp_path) as front:
        import httpx2

        call = rpc(1, "tools/call", {"name": "sleep", "arguments": {"seconds": 0.5}, "_meta": meta})
        async with httpx2.AsyncClient(timeout=0.2) as http:
            with pytest.raises(httpx2.TimeoutException):
                await http.post(front.url, json=call, headers={"Accept": "application/json, text/event-stream"})
        ends = await wait_logged(front.log, "tools/call", 1)
    # the closed POST cancels the call upstream (the 2026 rule), so it is not answered as "ok" to no one
    assert len(ends) == 1 and not (ends[0]["outcome"] == "ok" and ends[0].get("delivered", True)), ends


async def test_a_2025_host_that_closes_its_post_early_is_not_logged_as_answered(tmp_path):
    # 2025 era: closing the POST does not cancel the call (the host would send notifications/cancelled), but its
    # answer has nowhere to go: request_end says delivered: false, and a warning says why.
    async with listening_wrapper(tmp_path) as front, Host(front) as host:
        import httpx2

        call = rpc("slow", "tools/call", {"name": "sleep", "arguments": {"seconds": 0.6}})
        async with httpx2.AsyncClient(timeout=0.2) as impatient:
            with pytest.raises(httpx2.TimeoutException):
                await impatient.post(front.url, json=call, headers=host.headers)
        await host.ping()  # the session itself is fine
        ends = await wait_logged(front.log, "tools/call", 1)
        with sqlite3.connect(front.log) as db:
            warnings = [json.loads(d)["message"] for (d,) in db.execute("SELECT data FROM events WHERE kind='warning'")]
    assert len(ends) == 1 and ends[0]["outcome"] == "ok" and ends[0]["delivered"] is False, ends
    assert any("not delivered" in w for w in warnings), warnings


async def test_a_stdio_batch_is_answered_with_one_batch(tmp_path):
    process = subprocess.Popen(
        mcpwatch_cmd("wrap", "--no-log", "--", sys.executable, RAW_SERVER),
        cwd=REPO,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    try:
        assert process.stdin is not None and process.stdout is not None

        def send(message) -> None:
            process.stdin.write(json.dumps(message).encode() + b"\n")
            process.stdin.flush()

        send(rpc(0, "initialize", {"protocolVersion": "2025-03-26", "capabilities": {}, "clientInfo": {"name": "t"}}))
        assert json.loads(process.stdout.readline())["id"] == 0
        send({"jsonrpc": "2.0", "method": "notifications/initialized"})
        batch = [rpc(i, "ping") for i in range(1, 51)]
        batch.insert(7, {"jsonrpc": "2.0", "method": "notifications/roots/list_changed"})
        batch.append(rpc(99, "tools/call", {"name": "echo", "arguments": {"x": 1}}))
        batch.append({"jsonrpc": "2.0", "id": 100})  # invalid: answered in the batch with an error
        send(batch)
        answers = json.loads(process.stdout.readline())
        assert isinstance(answers, list) and len(answers) == 52
        assert sorted(a["id"] for a in answers) == [*range(1, 51), 99, 100]
        by_id = {a["id"]: a for a in answers}
        assert by_id[99]["result"]["isError"] is False and by_id[100]["error"]["code"] == -32600
        send(rpc(200, "ping"))  # a lone request is still answered alone
        assert json.loads(process.stdout.readline()) == {"jsonrpc": "2.0", "id": 200, "result": {}}
    finally:
        process.stdin.close()
        process.wait(10)
    assert b"Traceback" not in process.stderr.read()
