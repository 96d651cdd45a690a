"""Input requests inside tasks, through `mcpwatch wrap`, with peers nobody here wrote: FastMCP 4 with `fastmcp-tasks`
(`.venv-fastmcp-tasks`, made by `.ci/run`) serves `pick`, a task-only tool that asks for a topic once per round (its
task goes `input_required`, answered by `tasks/update`). The Python SDK's `Client` (2026 era, no tasks extension)
calls it: mcpwatch bridges the task and relays each round's elicitation to it as a multi round-trip question, which
the SDK answers through its elicitation callback. And `pick_now`, the same questions asked by an ordinary tool (a
multi round-trip `input_required` answer), offered as a task to FastMCP 4's own client with the extension: the
task goes `input_required`, the client answers by `tasks/update`, and mcpwatch makes the call again with them; and
`settle`, whose answers ask only to be called again (`requestState`), which mcpwatch does itself."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import anyio
import mcp_types
import pytest
from mcp import Client
from test_tasks_fastmcp import fastmcp_tasks_python, run_client
from test_tasks_fastmcp_bridge import SERVER, events, text, wrapped

from mcpwatch.ports import free_port

from checkout import REPO
from waiting import wait_for_port


@contextmanager
def http_front() -> Iterator[str]:
    """`mcpwatch wrap --listen` before the FastMCP 4 server: the URL of its HTTP front."""
    port = free_port()
    url = f"http://127.0.0.1:{port}/mcp"
    wrap = [sys.executable, "-m", "mcpwatch", "wrap", "--listen", url, "--", fastmcp_tasks_python(), str(SERVER)]
    wrapper = subprocess.Popen(wrap, cwd=REPO, stderr=subprocess.DEVNULL)
    try:
        wait_for_port(port)
        yield url
    finally:
        wrapper.terminate()
        wrapper.wait(30)


def call_pick(rounds: int, action: str | None, url: str | None = None, tool: str = "pick") -> tuple[Any, list[str]]:
    """`pick(rounds)` (or `tool`) through the wrapper (over stdio, or its HTTP front at `url`); `action` is what the
    host's user does (None: it cannot be asked)."""
    asked: list[str] = []

    async def on_elicit(context: Any, params: Any) -> mcp_types.ElicitResult:
        asked.append(params.message)
        if action != "accept":
            return mcp_types.ElicitResult(action=action)  # type: ignore[arg-type]
        return mcp_types.ElicitResult(action="accept", content={"topic": f"t{len(asked)}"})

    async def run() -> Any:
        callback = on_elicit if action is not None else None  # None: the client cannot be asked
        async with Client(url or wrapped(), read_timeout_seconds=60, elicitation_callback=callback) as client:
            return await client.call_tool(tool, {"rounds": rounds})

    return anyio.run(run), asked  # each request is bounded by the client's read timeout


@pytest.mark.slow
def test_a_bridged_tasks_input_requests_reach_the_host_round_after_round(isolated_state: Path) -> None:
    result, asked = call_pick(2, "accept")
    assert (text(result), result.is_error) == ("picked t1 t2", False)
    assert asked == ["Which topic (topic1)?", "Which topic (topic2)?"]
    log = events(isolated_state)
    assert len({e.data["task_id"] for e in log if e.kind == "task_created"}) == 1  # one task, every round
    ends = [e.data for e in log if e.kind == "request_end" and e.tool == "pick"]
    assert [e["task_status"] for e in ends] == ["input_required", "input_required", "completed"]


@pytest.mark.slow
def test_over_the_http_front_too(isolated_state: Path) -> None:
    with http_front() as url:
        result, asked = call_pick(2, "accept", url)
    assert (text(result), result.is_error, len(asked)) == ("picked t1 t2", False, 2)


@pytest.mark.slow
def test_a_declined_elicitation_reaches_the_task(isolated_state: Path) -> None:
    result, asked = call_pick(1, "decline")
    assert (text(result), asked) == ("decline", ["Which topic (topic1)?"])


@pytest.mark.slow
def test_a_host_that_cannot_be_asked_gets_the_clear_ending(isolated_state: Path) -> None:
    result, asked = call_pick(1, None)
    assert result.is_error is True and asked == []
    assert "needs input from the user" in text(result) and "the host did not declare elicitation" in text(result)


@pytest.mark.parametrize("http", [False, True], ids=["stdio", "http-sessionless"])
def test_an_offered_tasks_upstream_question_is_answered_by_its_host(isolated_state: Path, http: bool) -> None:
    config = isolated_state / "offer.toml"
    config.write_text('[tasks]\noffer = ["pick_now"]\n')
    upstream = [fastmcp_tasks_python(), str(SERVER)]
    answer = run_client("pick_now", {"rounds": 2}, "--config", str(config), http=http, upstream=upstream)
    assert (answer["text"], answer["is_error"]) == ("picked t1 t2", False)
    assert answer["asked"] == ["Which topic (topic1)?", "Which topic (topic2)?"]
    log = events(isolated_state)
    (created,) = [e.data for e in log if e.kind == "task_created"]
    assert (created["era"], created["offered"]) == ("extension", True)  # a task, not the client's own round-trips
    statuses = [e.data["status"] for e in log if e.kind == "task_status"]
    assert statuses == ["input_required", "working", "input_required", "working", "completed"]


def test_an_offered_tasks_upstream_asking_to_be_called_again_is_called_again(isolated_state: Path) -> None:
    config = isolated_state / "offer.toml"
    config.write_text('[tasks]\noffer = ["settle"]\n')
    upstream = [fastmcp_tasks_python(), str(SERVER)]
    answer = run_client("settle", {"times": 3}, "--config", str(config), upstream=upstream)
    assert (answer["text"], answer["is_error"], answer["asked"]) == ("settled after 3", False, [])
    ends = [e.data for e in events(isolated_state) if e.kind == "request_end" and e.tool == "settle"]
    assert [e["outcome"] for e in ends] == ["ok"]  # one call to the host, called again three times upstream


@pytest.mark.slow
def test_an_upstreams_own_multi_round_trip_passes_through_untouched(isolated_state: Path) -> None:
    """`pick_now` asks by its own `requestState` (sealed by FastMCP): mcpwatch neither takes nor refuses it."""
    result, asked = call_pick(2, "accept", tool="pick_now")
    assert (text(result), result.is_error, len(asked)) == ("picked t1 t2", False, 2)
    ends = [e.data for e in events(isolated_state) if e.kind == "request_end" and e.tool == "pick_now"]
    assert [e["outcome"] for e in ends] == ["ok", "ok", "ok"]  # three calls: two questions, then the answer
