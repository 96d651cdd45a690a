"""Extension tasks bridged for a 2026-era host without them, against a server nobody here wrote: FastMCP 4 with
`fastmcp-tasks` (its own interpreter, `.venv-fastmcp-tasks` made by `.ci/run`) serves `crunch`, a tool it runs only
as a task (it refuses a call that does not declare the tasks extension with `-32021`). The Python SDK's `Client`
(2026 era, no tasks extension) calls it through `mcpwatch wrap`: mcpwatch calls it again as a task, polls the
extension's `tasks/get` and answers the host with the result (checked in the same stdio session as the input
rounds, `test_tasks_fastmcp_input.py`: one server start for both); cut at the host's budget, the task goes on and
an identical call from the same host takes its result."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
import urllib.request
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client, MCPError, StdioServerParameters
from test_tasks_fastmcp import fastmcp_tasks_python

from mcpwatch.ports import free_port
from mcpwatch.store import EventReader

from checkout import REPO
from waiting import wait_for_port
from wraptools import logged_events

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


def upstream_ready(url: str) -> None:
    """Wait (however long the machine takes) until the front's 2026-era upstream has answered `server/discover`:
    the SDK client's own probe gives up after 10 s, which a loaded machine may need just to start the server."""
    meta = {
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientInfo": {"name": "warm-up", "version": "1"},
        "io.modelcontextprotocol/clientCapabilities": {},
    }
    body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "server/discover", "params": {"_meta": meta}}).encode()
    headers = {"content-type": "application/json", "accept": "application/json, text/event-stream"}
    request = urllib.request.Request(url, body, headers, method="POST")
    with urllib.request.urlopen(request, timeout=120) as answer:
        assert b"supportedVersions" in answer.read()


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
        upstream_ready(url)

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


GATED = """import pathlib, runpy, sys, time
gate = pathlib.Path(sys.argv[1])
for _ in range(2400):  # at most 120 s: a test that never opens the gate does not leave a server behind
    if gate.exists():
        break
    time.sleep(0.05)
sys.argv = sys.argv[2:]
runpy.run_path(sys.argv[0], run_name="__main__")
"""


def gated_front(tmp: Path, gate: Path, *wrap_args: str) -> tuple[subprocess.Popen[bytes], str]:
    """A freshly started HTTP front whose upstream (FastMCP 4 with the tasks extension) starts only once `gate`
    exists: a server as slow to start as the test wants, whatever the machine's speed."""
    port = free_port()
    url = f"http://127.0.0.1:{port}/mcp"
    upstream = [fastmcp_tasks_python(), "-c", GATED, str(gate), str(SERVER)]
    command = [sys.executable, "-m", "mcpwatch", "wrap", *wrap_args, "--listen", url, "--", *upstream]
    wrapper = subprocess.Popen(command, cwd=REPO, stderr=subprocess.DEVNULL)
    wait_for_port(port)
    return wrapper, url


async def connect(url: str, then: Any = None, mode: str = "auto") -> tuple[str, str, bool | None]:
    """A Python SDK client at `url` (calling `then()` once connected) calls the task-only `crunch`: the protocol
    version it settled on, the answer's text and whether it is an error."""
    async with Client(url, mode=mode, read_timeout_seconds=120) as client:
        version = client.protocol_version
        if then is not None:
            then()
        result = await client.call_tool("crunch", {"seconds": 0.5})
        return version, text(result), result.is_error


@pytest.mark.slow
def test_over_the_http_front_every_era_runs_the_task_only_tool_and_a_front_started_again_answers_discover_at_once(
    isolated_state: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The Python SDK client probes `server/discover` (for 10 s), then falls back to the 2025 handshake, where the
    task-only tool fails on the upstream's own connection. On a first start ever no answer is kept: an upstream
    slower to start than the probe (the gate opens only once the client has given up and sent `initialize`) leaves
    the client in the 2025 era, and over the HTTP front the task-only tool still runs there (era translation). A
    front started again answers the probe from the upstream's answer at its last start, while the upstream is still
    starting: the client stays in the 2026 era and the task-only call runs; a client in the 2025 era by choice
    (`mode="legacy"`, as Claude Code connects) runs it too."""
    import mcp.client.session

    patient = mcp.client.session.DISCOVER_TIMEOUT_SECONDS
    # The probe giving up is the point of the first start (the suite's conftest lengthens it with the load): 2 s.
    monkeypatch.setattr(mcp.client.session, "DISCOVER_TIMEOUT_SECONDS", 2.0)
    gate = tmp_path / "gate"
    wrapper, url = gated_front(tmp_path, gate)

    def open_gate_once_the_client_fell_back() -> None:
        for _ in range(1200):  # the probe gives up after 2 s (at most 120 s here, whatever the load)
            seen = [e for e in logged_events(isolated_state / "events.db") if e.kind == "host_info"]
            if any(str(e.data.get("protocol_version")).startswith("2025") for e in seen):
                break
            time.sleep(0.1)
        gate.touch()

    async def first_start() -> tuple[str, str, bool | None]:
        async with anyio.create_task_group() as group:
            group.start_soon(anyio.to_thread.run_sync, open_gate_once_the_client_fell_back)
            return await connect(url)
        raise AssertionError("unreachable")

    try:
        fell_back = anyio.run(first_start)
        upstream_ready(url)  # its answer is kept
    finally:
        gate.touch()
        wrapper.terminate()
        wrapper.wait(30)
    assert fell_back == ("2025-11-25", "crunched 0.5", False)

    monkeypatch.setattr(mcp.client.session, "DISCOVER_TIMEOUT_SECONDS", patient)
    gate.unlink()  # the next start: its upstream waits for the gate, which opens only once the client is connected
    wrapper, url = gated_front(tmp_path, gate)
    try:
        again = anyio.run(connect, url, gate.touch)
        legacy = anyio.run(connect, url, None, "legacy")
    finally:
        gate.touch()
        wrapper.terminate()
        wrapper.wait(30)
    assert again == ("2026-07-28", "crunched 0.5", False)
    assert legacy == ("2025-11-25", "crunched 0.5", False)


@pytest.mark.slow
def test_over_stdio_a_2025_era_host_reads_one_line_why_an_extension_only_tool_does_not_run(
    isolated_state: Path,
) -> None:
    """Era translation needs the HTTP front: the Python SDK client in the 2025 era (`mode="legacy"`) calling the
    task-only `crunch` through `mcpwatch wrap` over stdio reads one line saying why not and what to do."""

    async def call() -> tuple[str, str]:
        async with Client(wrapped(), mode="legacy", read_timeout_seconds=60) as client:
            with pytest.raises(MCPError) as refused:
                await client.call_tool("crunch", {"seconds": 0.5})
            return client.protocol_version, str(refused.value)

    version, refused = anyio.run(call)
    assert version == "2025-11-25"
    assert "runs only as a task of the MCP tasks extension" in refused and "wrap the server with --listen" in refused
