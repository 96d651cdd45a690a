"""Peers nobody here wrote: the MCP Inspector CLI as the host and the reference `server-everything` as the server,
both from npm, with `mcpwatch wrap` between them."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
from clirun import run_cli

from mcpwatch.store import EventReader

from checkout import REPO
from wraptools import wrapped_client


def inspector(npm_bin: Path, *args: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    """The Inspector passes the server only a minimal environment: hand it the test's state dir explicitly."""
    wrap = [sys.executable, "-m", "mcpwatch", "wrap", "--name", "everything", "--"]
    state = ["-e", f"MCPWATCH_STATE_DIR={env['MCPWATCH_STATE_DIR']}"]
    command = [str(npm_bin / "mcp-inspector"), "--cli", *wrap, str(npm_bin / "mcp-server-everything"), *args, *state]
    return subprocess.run(command, capture_output=True, text=True, cwd=REPO, env=env, timeout=120)


@pytest.mark.slow
def test_inspector_cli_through_the_wrapper_to_server_everything(npm_bin, isolated_state):
    env = {**os.environ}
    listed = inspector(npm_bin, "--method", "tools/list", env=env)
    assert listed.returncode == 0, listed.stderr[-2000:]
    assert '"name": "echo"' in listed.stdout and '"name": "trigger-long-running-operation"' in listed.stdout
    called = inspector(npm_bin, "--method", "tools/call", "--tool-name", "echo", "--tool-arg", "message=hello", env=env)
    assert called.returncode == 0, called.stderr[-2000:]
    assert "Echo: hello" in called.stdout
    reader = EventReader(isolated_state / "events.db")
    sessions = [s for s in reader.sessions() if s.name == "everything"]
    assert len(sessions) == 2
    ends = list(reader.events(sessions[-1].id, kinds=["request_end"]))
    assert any(e.tool == "echo" and e.data["outcome"] == "ok" for e in ends)
    assert reader.count_by_kind(sessions[-1].id)["host_info"] == 1
    (info,) = [e.data for e in reader.events(sessions[-1].id, kinds=["host_info"])]
    assert (info["name"], info["label"], info["known"]) == ("inspector-cli", "MCP Inspector", True), info


@pytest.mark.slow
@pytest.mark.anyio
async def test_deadline_on_a_third_party_long_running_tool(npm_bin):
    progress: list[float] = []

    async def on_progress(value: float, total: float | None, message: str | None) -> None:
        progress.append(value)

    env = {"MCPWATCH_TOOL_CALL_DEADLINE_SEC": "1.5"}
    async with wrapped_client([str(npm_bin / "mcp-server-everything")], env=env, wrap_args=["--no-log"]) as client:
        started = time.monotonic()
        result = await client.call_tool(
            "trigger-long-running-operation", {"duration": 6, "steps": 6}, progress_callback=on_progress
        )
        elapsed = time.monotonic() - started
        assert result.is_error and "deadline budget of 1.5 s" in result.content[0].text
        assert elapsed >= 1.5  # cut at the budget (never early), not the operation's 6 s: the answer says so
        assert progress and "last progress" in result.content[0].text
        echo = await client.call_tool("echo", {"message": "still here"})
        assert echo.content[0].text == "Echo: still here"


def test_check_against_server_everything_shows_handshake_tools_ping_and_each_hosts_budget(npm_bin, tmp_path):
    config = tmp_path / "mcpwatch.toml"
    config.write_text("[hosts.codex-mcp-client]\nwall_s = 240\n")
    done = run_cli("check", "--config", str(config), "--margin", "15", "--", str(npm_bin / "mcp-server-everything"))
    assert done.returncode == 0, done.stdout + done.stderr
    lines = done.stdout.splitlines()
    assert any(line.startswith("ok   handshake") and "everything" in line for line in lines), done.stdout
    assert any(line.startswith("ok   tools") and "tools (" in line for line in lines)
    assert any(line.startswith("ok   ping") for line in lines)
    assert "trigger-long-running-operation" in done.stdout and "echo" in done.stdout
    rows = {line.split("│")[1].strip(): line for line in lines if line.count("│") >= 5}
    assert "225 s" in rows["Codex CLI"] and "tool_timeout_sec 240 s − margin 15 s" in rows["Codex CLI"]
    assert "585 s" in rows["Gemini CLI"]
    assert "45 s" in rows["Claude Desktop"]
    assert "Traceback" not in done.stderr


def test_check_reports_a_server_that_will_not_start(tmp_path):
    done = run_cli("check", "--timeout", "20", "--", sys.executable, "-c", "import sys; sys.exit(4)")
    assert done.returncode == 1, done.stdout + done.stderr
    assert "FAIL handshake" in done.stdout and "exit code 4" in done.stdout
    assert "Traceback" not in done.stdout + done.stderr
