"""MCP Tasks through `mcpwatch wrap` with peers nobody here wrote: `server-everything`'s task-only tool
`simulate-research-query` (about 4 s through four stages) called by the TypeScript SDK's task-capable client
(`client.experimental.tasks.callToolStream`). The wrapper must watch the task as one call of its true length, with
its status changes, and not count the client's polls as calls."""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import mcp_types
import pytest
from npm_cache import installed_bin, npm_fixture

from mcpwatch.ports import free_port
from mcpwatch.store import EventReader

from checkout import REPO
from waiting import patience, wait_for_port
from wraptools import logged_events, wrapped_client

PACKAGES = ("@modelcontextprotocol/server-everything@2026.8.31", "@modelcontextprotocol/sdk@1.32.2")
TASK_CLIENT = Path(__file__).with_name("task_client.cjs")


@npm_fixture
def npm_bin() -> Path:
    """Its own npm_bin: server-everything with the TypeScript SDK (for the task client)."""
    return installed_bin(*PACKAGES)


def ts_task_client(
    npm_bin: Path,
    tool: str,
    arguments: dict,
    *wrap_args: str,
    upstream: list[str] | None = None,
    url: str = "",
    sampling_reply: str = "",
) -> list[dict]:
    """Run the TypeScript SDK client on `tool` as a task, through the wrapper (to server-everything unless another
    `upstream` is given; at `url`, a wrapper's HTTP front, when given); the messages its stream yields, in order."""
    node = shutil.which("node")
    if node is None:
        pytest.skip("node is not installed: the TypeScript SDK client needs it")
    wrap = [sys.executable, "-m", "mcpwatch", "wrap", "--name", "everything", *wrap_args, "--"]
    server = [url] if url else [*wrap, *(upstream or [str(npm_bin / "mcp-server-everything")])]
    command = [node, str(TASK_CLIENT), tool, json.dumps(arguments), "--", *server]
    env = {**os.environ, "NODE_PATH": str(npm_bin.parent), "SAMPLING_REPLY": sampling_reply}
    run = subprocess.run(command, capture_output=True, text=True, cwd=REPO, env=env, timeout=120)
    assert run.returncode == 0, run.stdout[-2000:] + run.stderr[-2000:]
    return [json.loads(line) for line in run.stdout.splitlines() if line.startswith("{")]


@pytest.mark.slow
def test_the_ts_clients_task_is_watched_as_one_call_of_its_true_length(npm_bin, isolated_state):
    messages = ts_task_client(npm_bin, "simulate-research-query", {"topic": "tides"})
    assert messages[0]["type"] == "taskCreated" and messages[-1]["type"] == "result"
    assert "# Research Report: tides" in messages[-1]["result"]["content"][0]["text"]  # passed through unchanged

    report = subprocess.run(
        [sys.executable, "-m", "mcpwatch", "report", "--json"], capture_output=True, text=True, env=os.environ
    )
    assert report.returncode == 0, report.stderr
    figures = json.loads(report.stdout)
    assert figures["requests"]["by_method"] == {"initialize": 1, "tools/call": 1, "tools/list": 1}  # no polls
    assert figures["requests"]["tasks"] == 1 and figures["requests"]["task_polls"] >= 3
    (tool,) = [t for t in figures["tools"] if t["tool"] == "simulate-research-query"]
    assert tool["calls"] == 1 and tool["ok"] == 1
    assert tool["max_s"] >= 3.0, tool  # the task's life, not the 20 ms CreateTaskResult

    with EventReader(isolated_state / "events.db") as reader:
        (session,) = reader.sessions()
        events = list(reader.events(session.id))
    statuses = [e.data["status_message"] for e in events if e.kind == "task_status"]
    assert "Analyzing content..." in statuses and "Generating report..." in statuses
    (end,) = [e.data for e in events if e.kind == "request_end" and e.tool == "simulate-research-query"]
    assert end["task_status"] == "completed" and "Research Report: tides" in end["result_preview"]


@pytest.mark.slow
def test_over_the_http_front_the_task_is_watched_the_same(npm_bin, isolated_state):
    port = free_port()
    front = f"http://127.0.0.1:{port}/mcp"
    wrapper = subprocess.Popen(
        [sys.executable, "-m", "mcpwatch", "wrap", "--listen", front, "--", str(npm_bin / "mcp-server-everything")],
        cwd=REPO,
        stdin=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        wait_for_port(port)
        messages = ts_task_client(npm_bin, "simulate-research-query", {"topic": "tides"}, url=front)
    finally:
        wrapper.terminate()
        wrapper.wait(30)
    assert messages[0]["type"] == "taskCreated" and messages[-1]["type"] == "result"
    with EventReader(isolated_state / "events.db") as reader:
        (session,) = reader.sessions()
        events = list(reader.events(session.id))
    starts = [e.data["method"] for e in events if e.kind == "request_start"]
    assert "tasks/get" not in starts and "tasks/result" not in starts
    (end,) = [e.data for e in events if e.kind == "request_end" and e.tool == "simulate-research-query"]
    assert end["task_status"] == "completed" and end["duration_s"] >= 3.0 and end["polls"] >= 3


@pytest.mark.slow
def test_the_ts_client_runs_an_offered_task_past_the_wrappers_deadline(npm_bin, isolated_state):
    config = isolated_state / "offer.toml"
    config.write_text('[tasks]\noffer = ["slow"]\n')
    noop = [sys.executable, "-m", "mcpwatch.bench.noop_server"]
    wrap = ("--config", str(config), "--deadline", "2")
    messages = ts_task_client(npm_bin, "slow", {"seconds": 6}, *wrap, upstream=noop)
    assert messages[0]["type"] == "taskCreated" and messages[0]["task"]["taskId"].startswith("mcpwatch-")
    assert messages[-1]["type"] == "result" and messages[-1]["result"]["content"] == [{"type": "text", "text": "done"}]
    assert messages[-1]["elapsed_ms"] >= 6000  # the whole call, though every tools/call is cut at 2 s
    with EventReader(isolated_state / "events.db") as reader:
        (session,) = reader.sessions()
        ends = [e.data for e in reader.events(session.id, kinds=["request_end"]) if e.tool == "slow"]
    assert [(e["outcome"], e["duration_s"] >= 6.0) for e in ends] == [("ok", True)]


@pytest.mark.slow
def test_the_council_offered_as_a_task_shows_its_progress_as_the_status_message(npm_bin, isolated_state):
    config = isolated_state / "offer.toml"
    config.write_text('[tasks]\noffer = ["consult_council"]\n')
    # stages long enough that a client polling on a loaded machine sees each one (at 0.05 it missed stage 2)
    council = [sys.executable, "-m", "mcpwatch", "council", "--time-scale", "0.15"]
    query = {"query": "Is the sky blue?", "confidence": "high"}
    messages = ts_task_client(
        npm_bin, "consult_council", query, "--config", str(config), "--deadline", "2", upstream=council
    )
    statuses = [m["task"].get("statusMessage", "") for m in messages if m["type"] == "taskStatus"]
    assert any(s.startswith("Stage 2:") for s in statuses) and any(s.startswith("Stage 3:") for s in statuses)
    assert messages[-1]["type"] == "result" and not messages[-1]["result"].get("isError")
    assert '"synthesis"' in messages[-1]["result"]["content"][0]["text"]  # the whole council, not a 2 s partial


@pytest.mark.slow
@pytest.mark.anyio
async def test_a_python_sdk_client_without_tasks_gets_the_task_only_tools_report_through_the_bridge(npm_bin):
    """...and, without elicitation, is never asked: server-everything's `ambiguous` query would go `input_required`
    for a clarification, but it sees the host's own capabilities and goes on without one."""
    progress: list[str] = []

    async def on_progress(value: float, total: float | None, message: str | None) -> None:
        progress.append(message or "")

    upstream = [str(npm_bin / "mcp-server-everything")]
    async with wrapped_client(upstream, wrap_args=["--no-log"], read_timeout_seconds=60) as client:
        tools = {t.name: t for t in (await client.list_tools()).tools}
        assert tools["simulate-research-query"].execution is None  # an ordinary tool to this host
        result = await client.call_tool("simulate-research-query", {"topic": "tides"}, progress_callback=on_progress)
        ambiguous = await client.call_tool("simulate-research-query", {"topic": "tides", "ambiguous": True})
    assert not result.is_error, result
    assert (
        "# Research Report: tides" in result.content[0].text and "Stage 4: Generating report" in result.content[0].text
    )
    assert "working: Gathering sources..." in progress and "working: Generating report..." in progress
    assert not ambiguous.is_error and "# Research Report: tides\n" in ambiguous.content[0].text


@pytest.mark.slow
@pytest.mark.anyio
async def test_a_retried_call_after_the_hosts_budget_takes_the_finished_tasks_result_at_once(npm_bin, isolated_state):
    log = isolated_state / "events.db"
    async with wrapped_client([str(npm_bin / "mcp-server-everything")], wrap_args=["--deadline", "2"]) as client:
        cut = await client.call_tool("simulate-research-query", {"topic": "tides"})
        assert cut.is_error and "goes on upstream as task" in cut.content[0].text  # cut at the 2 s budget
        await _until_logged(log, "late_result")  # the task finished meanwhile (its result kept)
        again = await client.call_tool("simulate-research-query", {"topic": "tides"})
    assert not again.is_error and "# Research Report: tides" in again.content[0].text
    kinds = [e.kind for e in _events(log)]
    assert kinds.count("late_reuse") == 1 and kinds.count("task_created") == 1  # the finished task's, not a new run


@pytest.mark.slow
@pytest.mark.anyio
async def test_a_bridged_task_nobody_can_use_any_more_is_cancelled_upstream(npm_bin, isolated_state):
    """The host's call is cut at 1 s; with `[tasks] reuse_s = 0.5` nobody can take the result after 1.5 s, so the
    wrapper cancels server-everything's task (about 4 s long) instead of polling it to its end."""
    log = isolated_state / "events.db"
    config = isolated_state / "short.toml"
    config.write_text("[tasks]\nreuse_s = 0.5\n")
    wrap_args = ["--config", str(config), "--deadline", "1"]
    async with wrapped_client([str(npm_bin / "mcp-server-everything")], wrap_args=wrap_args) as client:
        cut = await client.call_tool("simulate-research-query", {"topic": "tides"})
        assert cut.is_error and "goes on upstream as task" in cut.content[0].text
        await _until_logged(log, "warning")
    [warning] = [e.data["message"] for e in _events(log) if e.kind == "warning"]
    assert "no host call waited for bridged task" in warning and "cancelled it upstream" in warning
    assert not any(e.kind == "late_result" for e in _events(log))  # not polled to its end


def _events(log: Path) -> list:
    """The events of the one wrapper's log so far (none before its writer made the schema)."""
    return logged_events(log)


async def _until_logged(log: Path, kind: str, timeout_s: float = 120.0) -> None:
    """Wait for an event of `kind` in the log: what the task does decides when, not the machine's load."""
    deadline = time.monotonic() + patience(timeout_s)
    while not any(e.kind == kind for e in _events(log)):
        assert time.monotonic() < deadline, f"no {kind} event in {log}"
        await asyncio.sleep(0.1)


def test_a_sampling_request_made_during_an_offered_task_is_answered_by_its_host(npm_bin, isolated_state):
    config = isolated_state / "offer.toml"
    config.write_text('[tasks]\noffer = ["trigger-sampling-request"]\n')
    arguments = {"prompt": "tides?", "maxTokens": 5}
    messages = ts_task_client(
        npm_bin, "trigger-sampling-request", arguments, "--config", str(config), sampling_reply="high and low"
    )
    assert messages[0]["type"] == "taskCreated" and messages[0]["task"]["taskId"].startswith("mcpwatch-")
    assert messages[-1]["type"] == "result", messages
    assert "high and low" in messages[-1]["result"]["content"][0]["text"]  # the host's answer reached the server


@pytest.mark.slow
@pytest.mark.anyio
async def test_a_bridged_tasks_elicitation_reaches_a_2025_era_host_that_declared_it(npm_bin):
    """server-everything's `ambiguous` query goes `input_required` and elicits through `tasks/result`: a host without
    tasks but with elicitation answers it through the bridge (a host without elicitation is never asked: above)."""
    asked: list[str] = []

    async def on_elicit(context: Any, params: Any) -> mcp_types.ElicitResult:
        asked.append(params.message)
        return mcp_types.ElicitResult(action="accept", content={"interpretation": "ocean tides"})

    upstream = [str(npm_bin / "mcp-server-everything")]
    async with wrapped_client(
        upstream, wrap_args=["--no-log"], read_timeout_seconds=60, elicitation_callback=on_elicit
    ) as client:
        result = await client.call_tool("simulate-research-query", {"topic": "tides", "ambiguous": True})
    text = result.content[0].text
    assert not result.is_error and "# Research Report: tides (ocean tides)" in text
    assert len(asked) == 1 and "could have multiple interpretations" in asked[0]
