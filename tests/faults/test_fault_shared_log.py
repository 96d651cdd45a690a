"""Eight wrappers log to one file at once, each under load from its own host: no errors, no event lost. Every
session's events in the file are exactly 1..N, N being the seq of its session_end (the recorder's own count of what
it emitted), and the counts per kind match what each host saw."""

from __future__ import annotations

import asyncio
import random
from pathlib import Path
from typing import Any

import pytest
from faultkit import FAULT_SERVER, integrity, raw_host, registry_of, session_events

from mcpwatch.store import EventReader

from wraptools import Operator

pytestmark = pytest.mark.anyio

WRAPPERS = 8
CALLS = 300  # each wrapper writes all through the others' runs; 1,000 calls a wrapper proved nothing more
IN_FLIGHT = 50


async def one_wrapper(index: int, tmp_path: Path, log: Path, state: Path) -> dict[str, Any]:
    rng = random.Random(index)
    async with raw_host(FAULT_SERVER, tmp_path, log=log, name=f"w{index}", wrap_args=["--name", f"w{index}"]) as host:
        await host.initialize()
        operator = Operator(await registry_of(state, host.pid, timeout=60))
        slots = asyncio.Semaphore(IN_FLIGHT)
        progress_calls = 0

        async def one(call: int) -> dict[str, Any]:
            nonlocal progress_calls
            async with slots:
                params: dict[str, Any] = {"name": "delay", "arguments": {"ms": rng.randint(0, 20), "steps": 2}}
                if call % 3 == 0:
                    params["_meta"] = {"progressToken": f"p{call}"}
                    progress_calls += 1
                return await asyncio.wait_for(host.request("tools/call", params), 60)

        replies = await asyncio.gather(*(one(call) for call in range(CALLS)))
        assert all("result" in r and not r["result"].get("isError") for r in replies)
        status = await operator.tool("status")
        assert status["log"]["events_dropped"] == 0
        assert await host.close(timeout=60) == 0
    host.assert_clean_stderr()
    host.assert_clean_stdout()
    return {
        "session_id": status["log"]["session_id"],
        "progress": len(host.notifications),
        "progress_calls": progress_calls,
    }


@pytest.mark.slow
async def test_eight_wrappers_share_one_log_under_load_and_lose_nothing(tmp_path: Path, isolated_state: Path) -> None:
    log = tmp_path / "shared.db"
    results = await asyncio.wait_for(
        asyncio.gather(*(one_wrapper(i, tmp_path, log, isolated_state) for i in range(WRAPPERS))), 240
    )
    assert integrity(log) == "ok"
    with EventReader(log) as reader:
        assert len(reader.sessions()) == WRAPPERS
    for result in results:
        events = session_events(log, result["session_id"])
        end = events[-1]
        assert end.kind == "session_end", end
        assert [e.seq for e in events] == list(range(1, end.seq + 1)), "an event is missing or duplicated"
        kinds = [e.kind for e in events]
        assert "warning" not in kinds, [e.data for e in events if e.kind == "warning"]
        assert kinds.count("request_start") == kinds.count("request_end") == CALLS + 1  # and initialize
        assert result["progress"] == 2 * result["progress_calls"]  # only hosts that asked get progress
        # ... and every call's progress is logged: a call whose host gave no token gets one of the wrapper's own
        assert kinds.count("progress") == 2 * CALLS
        counters = end.data["counters"]
        assert counters["requests"] == counters["ok"] == CALLS + 1
        assert counters["errors"] == counters["timeouts"] == counters["unknown_dropped"] == 0
