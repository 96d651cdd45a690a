"""Claude Code's own CLI (from npm) connects to `mcpwatch council` through the wrapper as fast as directly.

Claude Code 2.1.330 speaks the 2026-07-28 era and opens a `subscriptions/listen` stream at connect time; if the
acknowledgement does not carry its own listen id it waits ~27 s before giving up on it."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
from npm_cache import installed_bin, npm_fixture

from checkout import REPO

CLAUDE_CODE = "@anthropic-ai/claude-code@2.1.330"


@npm_fixture
def claude() -> Path:
    return installed_bin(CLAUDE_CODE) / "claude"


@pytest.mark.slow
def test_claude_code_connects_through_the_wrapper_as_fast_as_directly(claude, tmp_path, isolated_state):
    home = tmp_path / "home"
    home.mkdir()
    env = {
        **os.environ,
        "HOME": str(home),
        "DISABLE_AUTOUPDATER": "1",
        "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
        "MCPWATCH_STATE_DIR": str(isolated_state),
    }
    mcpwatch = [sys.executable, "-m", "mcpwatch"]
    servers = {
        "direct": [*mcpwatch, "council", "--time-scale", "0.01"],
        "wrapped": [*mcpwatch, "wrap", "--name", "council", "--", *mcpwatch, "council", "--time-scale", "0.01"],
    }

    def claude_cli(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([str(claude), *args], capture_output=True, text=True, cwd=REPO, env=env, timeout=120)

    took: dict[str, float] = {}
    for name, command in servers.items():
        added = claude_cli("mcp", "add", name, "--", *command)
        assert added.returncode == 0, added.stderr[-2000:]
        started = time.monotonic()
        got = claude_cli("mcp", "get", name)
        took[name] = time.monotonic() - started
        assert got.returncode == 0 and "Connected" in got.stdout, got.stdout[-2000:] + got.stderr[-2000:]
    assert took["wrapped"] < took["direct"] + 20, took  # the handshake did not hang (a generous bound)
    # the wrapper knew its host: Claude Code names itself (in the 2026 era, on each request's _meta)
    from mcpwatch.store import EventReader

    with EventReader(isolated_state / "events.db") as reader:
        session = next(s for s in reader.sessions() if s.name == "council")
        infos = [e.data for e in reader.events(session.id, kinds=["host_info"])]
    assert infos and all(i["name"] == "claude-code" and i["label"] == "Claude Code" for i in infos), infos
    assert infos[0]["deciding_clock"]["setting"] == "MCP_TOOL_TIMEOUT"  # with a progress token, on stdio
