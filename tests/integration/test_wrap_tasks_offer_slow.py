"""`[tasks] offer_slow`: a tool the log shows cut at the host's budget is offered as a task by the next wrapper on
the same upstream, with its basis said in `status` and in the log, and a task-capable host then runs it to its end
past that budget. Real processes: `mcpwatch wrap` over the no-op server, a raw 2025-11-25 host with tasks."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path
from typing import Any

import pytest

from mcpwatch.store import EventReader, log_path

from waiting import patience
from wraptools import Operator, StdioTaskHost, registry_entry


def slow_support(host: StdioTaskHost) -> str | None:
    tools = host.call("tools/list", {})["result"]["tools"]
    slow = next(tool for tool in tools if tool["name"] == "slow")
    return (slow.get("execution") or {}).get("taskSupport")


def read_status(state: Path) -> dict[str, Any]:
    """The wrapper's `offered_slow` status once its read of the log is done."""
    operator = Operator(registry_entry(state))
    give_up = time.monotonic() + patience(30)
    while (status := asyncio.run(operator.tool("status"))["offered_slow"])["log_read"] == "reading":
        assert time.monotonic() < give_up, "the log was not read in 30 s"
        time.sleep(0.05)
    return status


@pytest.mark.slow
def test_a_tool_cut_in_one_session_is_offered_as_a_task_in_the_next(isolated_state: Path) -> None:
    config = isolated_state / "offer.toml"
    config.write_text("[tasks]\noffer_slow = true\n")
    first = StdioTaskHost(config, "--deadline", "1")
    try:
        assert slow_support(first) is None  # nothing in the log yet: nothing offered
        cut = first.call("tools/call", {"name": "slow", "arguments": {"seconds": 3}})
        assert "result" in cut  # the partial answer at the deadline
        assert slow_support(first) == "optional"  # learnt live: this session's cut offers it from now on
    finally:
        first.close()

    second = StdioTaskHost(config, "--deadline", "1")
    try:
        status = read_status(isolated_state)  # the log is read in a thread while the host is served
        assert slow_support(second) == "optional"  # from the log, at start
        assert status["tools"] == [{"tool": "slow", "basis": "seen cut at the deadline 1× in the log"}]
        assert (status["log_read"], status["log_sessions_read"], status["log_problem"]) == ("read", 1, None)
        call = {"name": "slow", "arguments": {"seconds": 3}, "task": {"ttl": 60000}}
        task_id = second.call("tools/call", call)["result"]["task"]["taskId"]
        result = second.call("tasks/result", {"taskId": task_id})  # blocks until the task ends, past the 1 s budget
        assert result["result"]["content"] == [{"type": "text", "text": "done"}]
        assert second.call("tasks/get", {"taskId": task_id})["result"]["status"] == "completed"
    finally:
        stderr = second.close()
    assert "slow is offered as a task to hosts with tasks: seen cut at the deadline 1× in the log" in stderr

    with EventReader(log_path(isolated_state / "events.db")) as reader:
        sessions = reader.sessions()
        said = [e.data["message"] for e in reader.events(sessions[-1].id, kinds=["warning"])]
    assert any("slow is offered as a task" in text and "cut at the deadline 1×" in text for text in said), said

    config.write_text("[tasks]\n")  # the setting off: the same log offers nothing
    third = StdioTaskHost(config, "--deadline", "1")
    try:
        assert slow_support(third) is None
    finally:
        third.close()
