"""Extension tasks bridged for a 2026-era host without them, against a server nobody here wrote: FastMCP 4 with
`fastmcp-tasks` (its own interpreter, `.venv-fastmcp-tasks` made by `.ci/run`) serves `crunch`, a tool it runs only
as a task (it refuses a call that does not declare the tasks extension with `-32021`). The Python SDK's `Client`
(2026 era, no tasks extension) calls it through `mcpwatch wrap`: mcpwatch calls it again as a task, polls the
extension's `tasks/get` and answers the host with the result; cut at the host's budget, the task goes on and an
identical call from the same host takes its result."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client, MCPError, StdioServerParameters
from test_tasks_fastmcp import fastmcp_tasks_python

from mcpwatch.ports import free_port, wait_for_port
from mcpwatch.store import EventReader

from checkout import REPO

SERVER = Path(__file__).with_name("fastmcp_tasks_server.py")


def wrapped(*wrap_args: str) -> StdioServerParameters:
    upstream = [fastmcp_tasks_python(), str(SERVER)]
    args = ["-m", "mcpwatch", "wrap", *wrap_args, "--", *upstream]
    return StdioServerParameters(command=sys.executable, args=args, env=dict(os.environ), cwd=REPO)


def text(result: Any) -> str:
    return " ".join(getattr(block, "text", "") for block in result.content)


def events(state: Path) -> list[Any]:
    with EventReader(state / "events.db") as reader:
        (session,) = reader.sessions()
        return list(reader.events(session.id))


@pytest.mark.slow
def test_a_host_without_the_extension_gets_a_task_only_tools_result(isolated_state: Path) -> None:
    direct = [fastmcp_tasks_python(), str(SERVER)]

    async def run() -> tuple[str, str, list[str | None]]:
        async with Client(StdioServerParameters(command=direct[0], args=direct[1:])) as client:
            with pytest.raises(MCPError) as refused:  # the peer's own behaviour, unwrapped
                await client.call_tool("crunch", {"seconds": 0.1})
        seen: list[str | None] = []

        async def on_progress(progress: float, total: float | None, message: str | None) -> None:
            seen.append(message)

        async with Client(wrapped(), read_timeout_seconds=60) as client:
            assert client.protocol_version == "2026-07-28"
            result = await client.call_tool("crunch", {"seconds": 1}, progress_callback=on_progress)
            assert result.is_error is not True
        return str(refused.value), text(result), seen

    refused, answer, seen = anyio.run(run)  # each request is bounded by the client's read timeout
    assert "requires the tasks extension" in refused
    assert answer == "crunched 1"
    assert seen and seen[-1] == "completed"  # the task's status changes reached the host as progress
    log = events(isolated_state)
    (created,) = [e.data for e in log if e.kind == "task_created"]
    assert (created["era"], created["bridged"]) == ("extension", True)
    ends = [e.data for e in log if e.kind == "request_end" and e.tool == "crunch"]
    assert [e["outcome"] for e in ends] == ["ok"]


@pytest.mark.slow
def test_a_cut_bridged_extension_task_goes_on_and_an_identical_call_takes_its_result(isolated_state: Path) -> None:
    async def run() -> tuple[Any, list[Any]]:
        async with Client(wrapped("--deadline", "2"), read_timeout_seconds=60) as client:
            cut = await client.call_tool("crunch", {"seconds": 3})
            retries = []
            for _attempt in range(10):  # each identical call joins the task (the server polls every 5 s)
                await anyio.sleep(1)
                retries.append(await client.call_tool("crunch", {"seconds": 3}))
                if retries[-1].is_error is not True:
                    break
        return cut, retries

    cut, retries = anyio.run(run)
    assert cut.is_error is True and "deadline budget of 2 s" in text(cut)
    assert "goes on upstream as task" in text(cut)
    assert (text(retries[-1]), retries[-1].is_error) == ("crunched 3", False)
    log = events(isolated_state)
    tasks = {e.data["task_id"] for e in log if e.kind in ("task_created", "task_status")}
    assert len(tasks) == 1  # never started again: every identical call joined the one task
    assert [e.data["status"] for e in log if e.kind == "task_status"][-1] == "completed"


@pytest.mark.slow
def test_over_the_http_front_a_retried_sessionless_call_attaches_to_its_task(isolated_state: Path) -> None:
    """The 2026-era client's requests carry no session: its retry is matched by the client it names and the call's
    arguments, so the cut answer's promise holds over the HTTP front too (one task, one `crunch` run)."""
    port = free_port()
    url = f"http://127.0.0.1:{port}/mcp"
    upstream = [fastmcp_tasks_python(), str(SERVER)]
    command = [sys.executable, "-m", "mcpwatch", "wrap", "--deadline", "2", "--listen", url, "--", *upstream]
    wrapper = subprocess.Popen(command, cwd=REPO, stderr=subprocess.DEVNULL)
    try:
        wait_for_port(port)

        async def run() -> tuple[Any, list[Any]]:
            async with Client(url, read_timeout_seconds=60) as client:
                assert client.protocol_version == "2026-07-28"
                cut = await client.call_tool("crunch", {"seconds": 3})
                retries = []
                for _attempt in range(10):  # each retry waits on the one task (the server asks for polls every 5 s)
                    retries.append(await client.call_tool("crunch", {"seconds": 3}))
                    if retries[-1].is_error is not True:
                        break
            return cut, retries

        cut, retries = anyio.run(run)
    finally:
        wrapper.terminate()
        wrapper.wait(30)
    assert cut.is_error is True and "goes on upstream as task" in text(cut)
    assert (text(retries[-1]), retries[-1].is_error) == ("crunched 3", False)
    log = events(isolated_state)
    tasks = {e.data["task_id"] for e in log if e.kind in ("task_created", "task_status")}
    assert len(tasks) == 1  # every retry attached to the task the first call made
    assert [e for e in log if e.kind == "task_created" and e.data.get("attached_to")]
