"""`[tasks] offer_slow`: a tool the log shows cut at the host's budget is offered as a task by the next wrapper on
the same upstream, with its basis said in `status` and in the log, and a task-capable host then runs it to its end
past that budget. Real processes: `mcpwatch wrap` over the no-op server, a raw 2025-11-25 host with tasks."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from mcpwatch.store import EventReader, log_path

from checkout import REPO
from wraptools import Operator, registry_entry

NOOP = [sys.executable, "-m", "mcpwatch.bench.noop_server"]
TASKS = {"tasks": {"list": {}, "cancel": {}, "requests": {}}}


class RawHost:
    """A 2025-11-25 host with tasks speaking JSON-RPC lines to a `mcpwatch wrap` process over stdio."""

    def __init__(self, config: Path, *extra: str) -> None:
        command = [sys.executable, "-m", "mcpwatch", "wrap", "--config", str(config), *extra, "--", *NOOP]
        self.proc = subprocess.Popen(
            command, cwd=REPO, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE
        )
        self.next_id = 0
        init = {"protocolVersion": "2025-11-25", "capabilities": TASKS, "clientInfo": {"name": "task-host"}}
        self.call("initialize", init)
        self.send({"jsonrpc": "2.0", "method": "notifications/initialized"})

    def send(self, message: dict[str, Any]) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(json.dumps(message).encode() + b"\n")
        self.proc.stdin.flush()

    def call(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        self.next_id += 1
        self.send({"jsonrpc": "2.0", "id": self.next_id, "method": method, "params": params})
        assert self.proc.stdout is not None
        while True:
            line = self.proc.stdout.readline()
            assert line, "the wrapper closed its stdout"
            message = json.loads(line)
            if message.get("id") == self.next_id and "method" not in message:
                return message

    def close(self) -> str:
        """Stop the wrapper; its stderr."""
        assert self.proc.stdin is not None and self.proc.stderr is not None
        self.proc.stdin.close()
        self.proc.wait(timeout=30)
        return self.proc.stderr.read().decode(errors="replace")


def slow_support(host: RawHost) -> str | None:
    tools = host.call("tools/list", {})["result"]["tools"]
    slow = next(tool for tool in tools if tool["name"] == "slow")
    return (slow.get("execution") or {}).get("taskSupport")


def read_status(state: Path) -> dict[str, Any]:
    """The wrapper's `offered_slow` status once its read of the log is done."""
    operator = Operator(registry_entry(state))
    give_up = time.monotonic() + 30
    while (status := asyncio.run(operator.tool("status"))["offered_slow"])["log_read"] == "reading":
        assert time.monotonic() < give_up, "the log was not read in 30 s"
        time.sleep(0.05)
    return status


@pytest.mark.slow
def test_a_tool_cut_in_one_session_is_offered_as_a_task_in_the_next(isolated_state: Path) -> None:
    config = isolated_state / "offer.toml"
    config.write_text("[tasks]\noffer_slow = true\n")
    first = RawHost(config, "--deadline", "1")
    try:
        assert slow_support(first) is None  # nothing in the log yet: nothing offered
        cut = first.call("tools/call", {"name": "slow", "arguments": {"seconds": 3}})
        assert "result" in cut  # the partial answer at the deadline
        assert slow_support(first) == "optional"  # learnt live: this session's cut offers it from now on
    finally:
        first.close()

    second = RawHost(config, "--deadline", "1")
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
    third = RawHost(config, "--deadline", "1")
    try:
        assert slow_support(third) is None
    finally:
        third.close()
