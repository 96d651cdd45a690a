"""Deadlines end to end: budget from the host timeout, cancel upstream once, tombstone, drop the late answer."""

from __future__ import annotations

import asyncio
import json
import sys
import time

import anyio
import pytest

from mcpwatch.store import EventReader

from wraptools import RAW_SERVER, Operator, registry_entry, wrapped_client

pytestmark = pytest.mark.anyio


@pytest.mark.slow
async def test_deadline_answers_in_budget_with_partial_progress_then_drops_the_late_answer(tmp_path, isolated_state):
    cancel_log = tmp_path / "cancels.jsonl"
    env = {
        "MCPWATCH_HOST_TOOLS_CALL_TIMEOUT_SEC": "3",
        "MCPWATCH_TOOL_CALL_DEADLINE_MARGIN_SEC": "2",
        "RAW_SERVER_LOG": str(cancel_log),
    }
    progress: list[str | None] = []

    async def on_progress(value: float, total: float | None, message: str | None) -> None:
        progress.append(message)

    async with wrapped_client([sys.executable, RAW_SERVER], env=env) as client:
        operator = Operator(registry_entry(isolated_state))
        started = time.monotonic()
        result = await client.call_tool("sleep", {"seconds": 2.4, "steps": 8}, progress_callback=on_progress)
        elapsed = time.monotonic() - started
        assert result.is_error is True
        # the budget's timer never fires early; how late it fires is the machine's load (the exact deadline is
        # tested on a manual clock), and the answer being the deadline's shows it came before the upstream's
        assert elapsed >= 1.0, elapsed
        text = result.content[0].text
        assert "'sleep'" in text and "deadline budget of 1 s" in text
        assert "host timeout 3 s" in text and "margin 2 s" in text and "MCPWATCH_TOOL_CALL_DEADLINE_MARGIN_SEC" in text
        # a step every 0.3 s: about three before the cut, fewer on a busy machine; the answer names the last one
        steps = len(progress)
        assert steps >= 1 and progress == [f"step {n}" for n in range(1, steps + 1)], progress
        assert f"last progress {steps}/8 — step {steps}" in text
        meta = result.meta["dev.mcpwatch/partial"]
        assert meta["last_progress"]["progress"] == steps
        # the stubborn server still answers at 2.4 s, and sends progress: both must be dropped, not delivered
        status = await operator.tool("status")
        with anyio.fail_after(20):
            while status["counters"]["late_dropped"] < 2 or status["counters"]["timeouts"] < 1:
                await asyncio.sleep(0.1)
                status = await operator.tool("status")
        assert status["counters"]["timeouts"] == 1
        assert status["counters"]["late_dropped"] >= 2  # late progress and the late response
        assert status["tombstones"]["count"] == 1
        assert len(progress) == steps  # nothing delivered after the deadline answer
        # the next call on the same connection is unaffected
        echo = await client.call_tool("echo", {"x": 1})
        assert echo.is_error is False
    cancels = [json.loads(line) for line in cancel_log.read_text().splitlines()]
    assert len(cancels) == 1, cancels
    reader = EventReader(registry_log(isolated_state))
    session = reader.latest_session()
    kinds = reader.count_by_kind(session.id)
    assert kinds["tombstone_add"] == 1
    assert kinds["tombstone_hit"] >= 2
    ends = [e for e in reader.events(session.id, kinds=["request_end"]) if e.tool == "sleep"]
    assert ends[0].data["outcome"] == "deadline"


def registry_log(state_dir):
    return state_dir / "events.db"


async def test_deadline_is_propagated_to_the_upstream(isolated_state):
    env = {"MCPWATCH_TOOL_CALL_DEADLINE_SEC": "45"}
    async with wrapped_client([sys.executable, RAW_SERVER], env=env, wrap_args=["--no-log"]) as client:
        result = await client.call_tool("echo", {"a": 1})
        seen = json.loads(result.content[0].text)
        assert 35_000 <= seen["deadline_ms"] <= 45_000  # the time left as the frame leaves, never more
        assert seen["args"] == {"a": 1}


async def test_host_cancel_is_forwarded_with_the_upstream_id(tmp_path):
    cancel_log = tmp_path / "cancels.jsonl"
    env = {"RAW_SERVER_LOG": str(cancel_log)}
    async with wrapped_client([sys.executable, RAW_SERVER], env=env, wrap_args=["--no-log"]) as client:
        with pytest.raises(Exception) as caught:
            await client.call_tool("hang", {}, read_timeout_seconds=0.3)
        assert "timed out" in str(caught.value)
        for _ in range(40):
            if cancel_log.exists():
                break
            await asyncio.sleep(0.05)
        cancels = [json.loads(line) for line in cancel_log.read_text().splitlines()]
        assert len(cancels) == 1
        assert isinstance(cancels[0]["cancelled"], int)
        echo = await client.call_tool("echo", {})
        assert not echo.is_error


async def test_a_per_tool_budget_sets_its_own_tombstone_ttl(tmp_path, isolated_state):
    config = tmp_path / "mcpwatch.toml"
    config.write_text("[deadline.tools]\nsleep = 0.5\n")
    async with wrapped_client([sys.executable, RAW_SERVER], wrap_args=["--config", str(config)]) as client:
        operator = Operator(registry_entry(isolated_state))
        result = await client.call_tool("sleep", {"seconds": 1.5, "steps": 1})
        assert (
            result.is_error
            and "deadline budget of 0.5 s (mcpwatch.toml [deadline.tools] sleep" in result.content[0].text
        )
        status = await operator.tool("status")
        assert status["tombstones"]["ttl_s"] == 155  # the global formula: 110 + 10 + 30 + 5
    reader = EventReader(registry_log(isolated_state))
    added = list(reader.events(reader.latest_session().id, kinds=["tombstone_add"]))
    assert [e.data["ttl_s"] for e in added] == [45.5]  # this call's 0.5 s + 10 + 30 + 5
