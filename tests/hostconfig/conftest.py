"""A throw-away home directory and project holding each host's config file (from `examples.py`)."""

from __future__ import annotations

from pathlib import Path

import pytest
from examples import HOME_FILES, PROJECT_FILES


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """HOME with every host's file, the working directory a project with its own; returns HOME."""
    home = tmp_path / "home"
    project = tmp_path / "project"
    for base, files in ((home, HOME_FILES), (project, PROJECT_FILES)):
        for relative, text in files.items():
            path = base / relative
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text)
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.delenv("MCP_TOOL_TIMEOUT", raising=False)
    monkeypatch.chdir(project)
    return home
