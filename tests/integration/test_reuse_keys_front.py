"""Two hosts on a real wrapper's HTTP front, each reusing its own late result under the same host id (8): two calls,
logged under two keys ("<session>/8"), as every other call of a session is. The in-memory twin is
`tests/unit/test_reuse_keys.py`; this one runs the front, its sessions and the log for real."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import httpx2
import pytest
from front_tools import Host, listening_wrapper, rpc

from waiting import eventually
from wraptools import FIXTURES, logged_events

pytestmark = pytest.mark.anyio

TAGGED_SERVER = [sys.executable, str(FIXTURES / "tagged_server.py")]
CONFIG = '[[late_results.reuse]]\nmatch = "lookup"\nttl_s = 60\n'
LATE_META = "dev.mcpwatch/late_result"


def answer_of(response: httpx2.Response) -> dict[str, Any]:
    if response.headers.get("content-type", "").startswith("application/json"):
        return response.json()
    for line in response.text.splitlines():
        if line.startswith("data: ") and "id" in (message := json.loads(line[6:])):
            return message
    raise AssertionError(response.text)


def logged(log: Path, kind: str) -> list[tuple[str, dict[str, Any]]]:
    """The (request key, data) of each `kind` event in the front's log so far (none before its schema is made)."""
    return [(str(e.request_id), e.data) for e in logged_events(log) if e.kind == kind]


async def until_logged(log: Path, kind: str, count: int) -> None:
    """Wait for the log to hold `count` events of `kind` (the writer flushes on its own rhythm)."""
    await eventually(lambda: len(logged(log, kind)) >= count, 20, f"{kind} × {count} logged")


def lookup(tag: str, sleep_s: float) -> dict[str, Any]:
    return {"name": "lookup", "arguments": {"q": "same"}, "_meta": {"test/tag": tag, "test/sleep_s": sleep_s}}


async def test_two_hosts_reusing_under_host_id_8_are_logged_under_two_keys(tmp_path: Path) -> None:
    async with (
        listening_wrapper(tmp_path, "--deadline", "0.25", config=CONFIG, upstream=TAGGED_SERVER) as front,
        Host(front) as a,
        Host(front) as b,
    ):
        for name, host in (("a", a), ("b", b)):  # cut at the deadline, answered late: kept for its own session
            cut = answer_of(await host.post(rpc(1, "tools/call", lookup(f"{name}/1", 0.6))))
            assert cut["result"]["isError"] is True, cut
        await until_logged(front.log, "late_result", 2)
        for name, host in (("a", a), ("b", b)):
            reused = answer_of(await host.post(rpc(8, "tools/call", lookup(f"{name}/8", 0.0))))
            assert reused["id"] == 8 and LATE_META in reused["result"]["_meta"], reused
            assert json.loads(reused["result"]["content"][-1]["text"])["tag"] == f"{name}/1"  # its own, not the other's
        await until_logged(front.log, "late_reuse", 2)
    reuses = [(rid, data["from_request_id"]) for rid, data in logged(front.log, "late_reuse")]
    ends = {rid for rid, data in logged(front.log, "request_end") if data.get("late_reuse")}
    keys = sorted(rid for rid, _ in reuses)
    assert len(set(keys)) == 2 and all(key.endswith("/8") for key in keys), reuses
    assert ends == set(keys)
    for rid, source in reuses:  # each reuse is its session's: its key and its source share the session's prefix
        assert rid.rsplit("/", 1)[0] == source.rsplit("/", 1)[0], reuses
