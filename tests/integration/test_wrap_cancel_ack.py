"""A server's acknowledgement of mcpwatch's cancel is logged as a `cancel_ack`, never as a late result, and neither
`report` nor `whatif` count the call as one a longer budget "would have saved": the call never finished.

Three servers: FastMCP 2.14 (MCP SDK 1.x: `{"code": 0, "message": "Request cancelled"}` over stdio; it runs in an
interpreter of its own, `.venv-fastmcp2` made by `.ci/run`, or $MCPWATCH_TEST_FASTMCP2_PYTHON), the MCP SDK 2.x
over Streamable HTTP (-32800 "Request cancelled"), and the raw fixture sending FastMCP 2.x's exact frame (always
runs, so the test never depends on the network)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from clirun import run_cli
from mcp import Client, StdioServerParameters

from mcpwatch.events import payload_problems
from mcpwatch.store import EventReader

from checkout import REPO
from waiting import eventually
from wraptools import FIXTURES, RAW_SERVER, SDK_SERVER, first_text, free_port, logged_events, wait_for_port

pytestmark = pytest.mark.anyio
BUDGET_1S = {"MCPWATCH_HOST_TOOLS_CALL_TIMEOUT_SEC": "3", "MCPWATCH_TOOL_CALL_DEADLINE_MARGIN_SEC": "2"}
FASTMCP_FRAME = '{"code": 0, "message": "Request cancelled"}'


def fastmcp2_python() -> str | None:
    named = os.environ.get("MCPWATCH_TEST_FASTMCP2_PYTHON")
    candidate = Path(named) if named else REPO / ".venv-fastmcp2" / "bin" / "python"
    return str(candidate) if candidate.exists() else None


@contextmanager
def sdk2_http_server() -> Iterator[list[str]]:
    port = free_port()
    server = subprocess.Popen([sys.executable, SDK_SERVER, "http", str(port)], stderr=subprocess.DEVNULL)
    try:
        wait_for_port(port)
        yield ["--url", f"http://127.0.0.1:{port}/mcp"]
    finally:
        server.terminate()
        server.wait(10)


@contextmanager
def upstream_for(kind: str) -> Iterator[tuple[list[str], str, dict[str, str]]]:
    """(wrap arguments naming the upstream, its slow tool, extra environment)."""
    if kind == "fastmcp2":
        python = fastmcp2_python()
        if python is None:
            pytest.skip(
                "FastMCP 2.14 is not installed: .ci/run makes .venv-fastmcp2 (pip install 'fastmcp>=2.14,<2.15')"
            )
        yield ["--", python, str(FIXTURES / "fastmcp2_server.py")], "sleepy", {}
    elif kind == "sdk2-http":
        with sdk2_http_server() as wrap_args:
            yield wrap_args, "sleepy", {}
    else:
        yield ["--", sys.executable, RAW_SERVER], "sleep", {"RAW_SERVER_CANCEL_ACK": FASTMCP_FRAME}


def kinds(log: Path, kind: str) -> list[str]:
    return [e.kind for e in logged_events(log) if e.kind == kind]


def run(*args: str) -> subprocess.CompletedProcess[str]:
    return run_cli(*args)


@pytest.mark.slow
@pytest.mark.parametrize("kind", ["fastmcp2", "sdk2-http", "raw-frame"])
async def test_a_cancel_acknowledgement_is_no_late_result(isolated_state: Path, kind: str) -> None:
    log = isolated_state / "events.db"
    with upstream_for(kind) as (upstream, tool, env):
        params = StdioServerParameters(
            command=sys.executable,
            args=["-m", "mcpwatch", "wrap", "--log", str(log), *upstream],
            env={**os.environ, **BUDGET_1S, **env},
            cwd=str(REPO),
        )
        async with Client(params, mode="legacy") as client:
            for _ in range(2):
                result = await client.call_tool(tool, {"seconds": 3})
                assert result.is_error is True and "deadline budget of 1 s" in first_text(result)
            # each acknowledgement comes a moment after its cancel, and is logged a moment after that
            await eventually(lambda: len(kinds(log, "cancel_ack")) >= 2, 20, "both acknowledgements logged")
    with EventReader(log) as reader:
        session = reader.latest_session().id
        events = list(reader.events(session))
    acks = [e for e in events if e.kind == "cancel_ack"]
    assert [e.kind for e in events if e.kind == "late_result"] == []
    assert len(acks) == 2, [(e.kind, e.data) for e in events if e.kind.startswith(("tomb", "late", "cancel"))]
    expected_code = -32800 if kind == "sdk2-http" else 0
    for ack in acks:
        assert payload_problems(ack.kind, ack.data) == []
        assert (ack.tool, ack.data["reason"], ack.data["code"]) == (tool, "deadline", expected_code)
        # the answer to the cancel, not the 3 s sleep finishing (which would come ~2 s after it)
        assert "Request cancelled" in ack.data["error"] and ack.data["delay_s"] < 2.0

    report = json.loads(run("report", str(log), "--json").stdout)
    (row,) = [r for r in report["finished_late"] if r["tier"] is None]
    assert (row["cut"], row["finished_late"], row["would_save"]) == (2, 0, 0)
    whatif = json.loads(run("whatif", str(log), "--budget", "4", "--json").stdout)
    assert (whatif["cut_now"], whatif["saved"]) == (2, 0)
    assert whatif["budget_to_save"] == {"p50": None, "p90": None, "all": None}
    text = run("whatif", str(log), "--budget", "4").stdout
    assert "saved 0" in text and "would have saved" not in text
