"""`mcpwatch demo --headless`: in this checkout, and from a non-editable install in a fresh virtualenv."""

from __future__ import annotations

import io
import os
import re
import subprocess
import sys
import venv

import pytest

from checkout import REPO, mcpwatch_cmd


@pytest.mark.slow
def test_the_demo_tells_its_story_within_twenty_seconds(isolated_state):
    """At its own speed the headless demo shows, in 20 s, a deadline answered with partial results, a late answer
    dropped and kept, a model disabled and an invalidation; the summary says each, and everything stops cleanly."""
    result = subprocess.run(
        mcpwatch_cmd("demo", "--headless", "--duration", "20"), capture_output=True, text=True, cwd=REPO, timeout=180
    )
    assert result.returncode == 0, result.stderr
    figures = {
        name: int(match.group(1))
        for name, pattern in {
            "partial": r"\((\d+) answered with partial results\)",
            "dropped": r"late answers: (\d+) dropped",
            "kept": r"dropped, (\d+) kept",
            "disabled": r"models disabled: (\d+)",
            "invalidations": r"invalidations: (\d+)",
        }.items()
        if (match := re.search(pattern, result.stdout))
    }
    assert len(figures) == 5, result.stdout
    assert all(count > 0 for count in figures.values()), result.stdout
    assert "tool calls by outcome:" in result.stdout and "ok " in result.stdout
    assert f"log: {isolated_state / 'events.db'}" in result.stdout
    assert "Traceback" not in result.stderr
    assert not list((isolated_state / "wrappers").glob("*.json"))  # everything stopped cleanly


def test_the_relay_ignores_every_second_cancellation():
    from mcpwatch.demo.deaf_relay import relay

    cancel = b'{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":%d}}\n'
    call = b'{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"notifications/cancelled"}}\n'
    host = io.BytesIO(call + cancel % 1 + cancel % 2 + cancel % 3)
    upstream = io.BytesIO()
    assert relay(host, upstream) == 2
    assert upstream.getvalue() == call + cancel % 2


@pytest.mark.slow
def test_non_editable_install_runs_the_demo_with_its_themes(tmp_path, isolated_state):
    env_dir = tmp_path / "venv"
    venv.EnvBuilder().create(env_dir)  # no pip of its own: this pip installs into it (`--python`), saving ensurepip
    python = env_dir / "bin" / "python"
    install = subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "--python",
            str(python),
            "install",
            "-q",
            "--disable-pip-version-check",
            str(REPO),
        ],
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
