"""Shared fixtures: every test gets its own state dir, so nothing touches the user's files."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent


@pytest.fixture(autouse=True)
def isolated_state(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> Path:
    state = tmp_path_factory.mktemp("state")
    monkeypatch.setenv("MCPWATCH_STATE_DIR", str(state))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(state / "config"))
    for name in list(os.environ):
        if name.startswith(("MCPWATCH_TOOL_CALL", "MCPWATCH_HOST_TOOLS", "LLM_COUNCIL_")) or name == "MCPWATCH_CONFIG":
            monkeypatch.delenv(name)
    return state


def mcpwatch_cmd(*args: str) -> list[str]:
    """The command line that runs this checkout's mcpwatch in a subprocess."""
    return [sys.executable, "-m", "mcpwatch", *args]
