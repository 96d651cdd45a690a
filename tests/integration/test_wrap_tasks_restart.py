"""An offered task's result outlives the wrapper that ran it: a host that comes back (a new `mcpwatch wrap`, as a
restarted stdio host starts one) fetches it by id; another host cannot, and a guessed id gets one clear error."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest

from waiting import patience
from wraptools import StdioTaskHost

EXTENSION = "io.modelcontextprotocol/tasks"


@pytest.mark.slow
def test_a_restarted_wrapper_still_answers_a_finished_offered_task(isolated_state: Path) -> None:
    config = isolated_state / "offer.toml"
    config.write_text('[tasks]\noffer = ["slow"]\n')
    host = StdioTaskHost(config, name="returning-host")
    try:
        created = host.call("tools/call", {"name": "slow", "arguments": {"seconds": 0.3}, "task": {"ttl": 600000}})
        task_id = created["result"]["task"]["taskId"]
        deadline = time.monotonic() + patience(30)
        while host.call("tasks/get", {"taskId": task_id})["result"]["status"] == "working":
            assert time.monotonic() < deadline
            time.sleep(0.6)
    finally:
        host.close()  # the task ended; its host never fetched the result, and the wrapper is gone

    again = StdioTaskHost(config, name="returning-host")
    stranger = StdioTaskHost(config, name="someone-else")
    try:
        result = again.call("tasks/result", {"taskId": task_id})
        assert result["result"]["content"] == [{"type": "text", "text": "done"}]
        assert again.call("tasks/get", {"taskId": task_id})["result"]["status"] == "completed"
        foreign = stranger.call("tasks/result", {"taskId": task_id})
        assert foreign["error"]["code"] == -32602 and "another host's" in foreign["error"]["message"]
        guessed = again.call("tasks/get", {"taskId": "mcpwatch-guessed"})
        assert guessed["error"]["message"] == "no task 'mcpwatch-guessed' (unknown, expired, or another host's)"
    finally:
        again.close()
        stranger.close()


def modern_meta(name: str) -> dict[str, Any]:
    return {
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientInfo": {"name": name, "version": "1"},
        "io.modelcontextprotocol/clientCapabilities": {"extensions": {EXTENSION: {}}},
    }


@pytest.mark.slow
def test_a_restarted_wrapper_still_answers_a_finished_extension_task_with_its_result(isolated_state: Path) -> None:
    config = isolated_state / "offer.toml"
    config.write_text('[tasks]\noffer = ["slow"]\n')
    mine, theirs = modern_meta("returning-host"), modern_meta("someone-else")
    host = StdioTaskHost(config, name="returning-host", modern=True)
    try:
        params = {"name": "slow", "arguments": {"seconds": 0.3}, "_meta": mine}
        created = host.call("tools/call", params)["result"]
        assert created["resultType"] == "task"
        task_id = created["taskId"]
        deadline = time.monotonic() + patience(30)
        while host.call("tasks/get", {"taskId": task_id, "_meta": mine})["result"]["status"] == "working":
            assert time.monotonic() < deadline
            time.sleep(0.3)
    finally:
        host.close()  # the task ended while its host was away; the wrapper that ran it is gone

    again = StdioTaskHost(config, name="returning-host", modern=True)
    stranger = StdioTaskHost(config, name="someone-else", modern=True)
    try:
        got = again.call("tasks/get", {"taskId": task_id, "_meta": mine})
        assert "result" in got, got
        got = got["result"]
        assert (got["taskId"], got["status"], got["resultType"]) == (task_id, "completed", "complete")
        assert got["result"]["content"] == [{"type": "text", "text": "done"}] and "ttlMs" in got
        foreign = stranger.call("tasks/get", {"taskId": task_id, "_meta": theirs})
        assert foreign["error"]["code"] == -32602 and "another host's" in foreign["error"]["message"]
        cancel = again.call("tasks/cancel", {"taskId": task_id, "_meta": mine})
        assert cancel["result"] == {"resultType": "complete"}  # as for a live one: acknowledged, whatever its state
        fetched = again.call("tasks/result", {"taskId": task_id, "_meta": mine})
        assert fetched["error"]["code"] == -32601  # not part of the extension, whether the task is live or kept
    finally:
        again.close()
        stranger.close()
