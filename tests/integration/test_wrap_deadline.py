"""Deadlines through a real wrapper process: the budget taken from the environment reaches the upstream as the time
left on the frame. The budget's boundary, the cut with partial progress, cancelling upstream once, the tombstone,
dropping the late answer and a per-tool budget's tombstone are the core's, tested exactly on a manual clock against
the raw fixture server's tools in memory (tests/unit/test_core_deadlines.py)."""

from __future__ import annotations

import json
import sys

import pytest

from wraptools import RAW_SERVER, wrapped_client

pytestmark = pytest.mark.anyio


async def test_deadline_is_propagated_to_the_upstream(isolated_state):
    env = {"MCPWATCH_TOOL_CALL_DEADLINE_SEC": "45"}
    async with wrapped_client([sys.executable, RAW_SERVER], env=env, wrap_args=["--no-log"]) as client:
        result = await client.call_tool("echo", {"a": 1})
        seen = json.loads(result.content[0].text)
        assert 35_000 <= seen["deadline_ms"] <= 45_000  # the time left as the frame leaves, never more
        assert seen["args"] == {"a": 1}
