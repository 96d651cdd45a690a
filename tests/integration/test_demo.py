"""`mcpwatch demo --headless`: in this checkout, and from a non-editable install in a fresh virtualenv."""

from __future__ import annotations

import os
import subprocess
import venv

import pytest

from conftest import REPO, mcpwatch_cmd


def test_headless_demo_runs_and_summarises(isolated_state):
    result = subprocess.run(
        mcpwatch_cmd("demo", "--headless", "--duration", "8", "--time-scale", "0.05"),
        capture_output=True,
        text=True,
        cwd=REPO,
        timeout=120,
    )
    assert result.returncode == 0, result.stderr
    out = result.stdout
    assert "tool calls by outcome:" in out and "ok " in out
    assert f"log: {isolated_state / 'events.db'}" in out
    assert "Traceback" not in result.stderr
    assert not list((isolated_state / "wrappers").glob("*.json"))  # everything stopped cleanly


@pytest.mark.slow
def test_non_editable_install_runs_the_demo_with_its_themes(tmp_path, isolated_state):
    env_dir = tmp_path / "venv"
    venv.EnvBuilder(with_pip=True).create(env_dir)
    python = env_dir / "bin" / "python"
    install = subprocess.run(
        [str(python), "-m", "pip", "install", "-q", "--disable-pip-version-check", str(REPO)],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert install.returncode == 0, install.stderr[-2000:]
    env = {**os.environ, "MCPWATCH_STATE_DIR": str(isolated_state)}
    themes = subprocess.run(
        [
            str(python),
            "-c",
            "import importlib.resources as r; print(sorted(p.name for p in "
            "(r.files('mcpwatch') / 'themes').iterdir()))",
        ],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env=env,
        timeout=60,
    )
    assert "mcpwatch-dark.toml" in themes.stdout and "mcpwatch-high-contrast.toml" in themes.stdout, themes.stderr
    demo = subprocess.run(
        [str(env_dir / "bin" / "mcpwatch"), "demo", "--headless", "--duration", "10", "--time-scale", "0.05"],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env=env,
        timeout=180,
    )
    assert demo.returncode == 0, demo.stderr[-2000:]
    assert "tool calls by outcome:" in demo.stdout
    assert f"log: {isolated_state / 'events.db'}" in demo.stdout
