"""`[tasks] offer_slow` with a host nobody here wrote: the TypeScript SDK 1.32 client calls the no-op server's
`slow` through a wrapper with a 1 s budget and is cut; started again on the same log, the wrapper offers `slow` as a
task, and the same client (which runs a tool as a task when its listing says it may) gets `done` past the budget."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from test_tasks_peers import npm_bin, ts_task_client

from mcpwatch.store import EventReader

__all__ = ["npm_bin"]  # the fixture, shared with the other task peers' tests
NOOP = [sys.executable, "-m", "mcpwatch.bench.noop_server"]


@pytest.mark.slow
def test_the_ts_client_is_offered_a_task_for_the_tool_it_saw_cut(npm_bin: Path, isolated_state: Path) -> None:
    config = isolated_state / "offer.toml"
    config.write_text("[tasks]\noffer_slow = true\n")
    wrap = ("--config", str(config), "--deadline", "1")
    first = ts_task_client(npm_bin, "slow", {"seconds": 3}, *wrap, upstream=NOOP)
    assert [m["type"] for m in first] == ["result"]  # not offered yet: an ordinary call, cut at the budget
    assert first[0]["result"]["content"] != [{"type": "text", "text": "done"}]

    again = ts_task_client(npm_bin, "slow", {"seconds": 3}, *wrap, upstream=NOOP)
    assert again[0]["type"] == "taskCreated" and again[0]["task"]["taskId"].startswith("mcpwatch-")
    assert again[-1]["type"] == "result" and again[-1]["result"]["content"] == [{"type": "text", "text": "done"}]
    assert again[-1]["elapsed_ms"] >= 3000  # the whole call, past the 1 s budget
    with EventReader(isolated_state / "events.db") as reader:
        _, second = reader.sessions()
        said = [e.data["message"] for e in reader.events(second.id, kinds=["warning"])]
        ends = [e.data for e in reader.events(second.id, kinds=["request_end"]) if e.tool == "slow"]
    assert any("slow is offered as a task" in text and "cut at the deadline 1× in the log" in text for text in said)
    assert [(e["outcome"], e["duration_s"] >= 3.0) for e in ends] == [("ok", True)]  # one call, its whole length
