"""Tasks offered to a 2026-era host through the tasks extension (SEP-2663), with a client nobody here wrote: FastMCP
4's `Client` with `fastmcp-tasks` (in an interpreter of its own, `.venv-fastmcp-tasks` made by `.ci/run`, or
$MCPWATCH_TEST_FASTMCP_TASKS_PYTHON) calls the no-op server's `slow(seconds=4)` through a wrapper whose every
tools/call is cut at 2 s; offered as a task, the call runs to its end and the client gets `done`."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from shared_front import shared_front, state_env

from mcpwatch.store import EventReader

from checkout import REPO

# Each test waits for a call cut at 2 s or run for 4 s, after FastMCP has started: 3 s or more alone.
pytestmark = pytest.mark.slow
CLIENT = Path(__file__).with_name("fastmcp_tasks_client.py")
NOOP = [sys.executable, "-m", "mcpwatch.bench.noop_server"]


def fastmcp_tasks_python() -> str:
    named = os.environ.get("MCPWATCH_TEST_FASTMCP_TASKS_PYTHON")
    candidate = Path(named) if named else REPO / ".venv-fastmcp-tasks" / "bin" / "python"
    if not candidate.exists():
        pytest.skip("fastmcp-tasks is not installed: .ci/run makes .venv-fastmcp-tasks (pip install fastmcp-tasks)")
    return str(candidate)


def run_sessions(sessions: list[dict[str, Any]], env: dict[str, str] | None = None) -> list[dict]:
    """The client's answer to every call of `sessions` (`{"server": COMMAND list or URL, "env": {…}, "calls": […]}`),
    the sessions run at once by one client interpreter (FastMCP's import alone costs about 1.5 CPU-s), in order."""
    command = [fastmcp_tasks_python(), str(CLIENT), "--sessions", json.dumps(sessions)]
    run = subprocess.run(command, capture_output=True, text=True, cwd=REPO, env=env or os.environ, timeout=120)
    assert run.returncode == 0, run.stdout[-2000:] + run.stderr[-2000:]
    count = sum(len(session["calls"]) for session in sessions)
    answers = [json.loads(line) for line in run.stdout.strip().splitlines()[-count:]]
    assert len(answers) == count, run.stdout[-2000:]
    return answers


def slow_calls(tmp_path: Path) -> dict[str, tuple[dict, Path]]:
    """`slow(seconds=4)` called by one FastMCP client (one interpreter) in three sessions at once, each through a
    wrapper of its own whose every tools/call is cut at 2 s: offered as a task over stdio and over the HTTP front
    (sessionless), and not offered over stdio. Per session: the client's answer and the wrapper's state folder."""
    states = {name: tmp_path / name for name in ("stdio", "http-sessionless", "not-offered")}
    for state in states.values():
        state.mkdir()
    config = states["stdio"] / "offer.toml"
    config.write_text('[tasks]\noffer = ["slow"]\n')
    offered = ["--config", str(config), "--deadline", "2"]
    wrap = [sys.executable, "-m", "mcpwatch", "wrap"]
    with shared_front(states["http-sessionless"], NOOP, *offered) as url:

        def own_state(name: str) -> dict[str, str]:
            return {"MCPWATCH_STATE_DIR": str(states[name]), "XDG_CONFIG_HOME": str(states[name] / "config")}

        calls = [["slow", {"seconds": 4}]]
        sessions: list[dict[str, Any]] = [
            {"server": [*wrap, *offered, "--", *NOOP], "env": own_state("stdio"), "calls": calls},
            {"server": url, "env": {}, "calls": calls},
            {"server": [*wrap, "--deadline", "2", "--", *NOOP], "env": own_state("not-offered"), "calls": calls},
        ]
        answers = run_sessions(sessions, state_env(states["not-offered"]))  # and no setting from outside the test
    return {name: (answer, states[name]) for name, answer in zip(states, answers, strict=True)}


def test_fastmcps_client_runs_an_offered_task_past_the_wrappers_deadline_and_without_the_offer_is_cut(tmp_path):
    calls = slow_calls(tmp_path)
    for name in ("stdio", "http-sessionless"):
        answer, state = calls[name]
        assert (answer["text"], answer["is_error"]) == ("done", False), name
        assert answer["elapsed_s"] >= 4.0  # the whole call, though every tools/call is cut at 2 s
        with EventReader(state / "events.db") as reader:
            (session,) = reader.sessions()
            events = list(reader.events(session.id))
        (created,) = [e.data for e in events if e.kind == "task_created"]
        assert (created["era"], created["offered"]) == ("extension", True)
        starts = [e.data["method"] for e in events if e.kind == "request_start"]
        assert "tasks/get" not in starts  # its polls are the task's, not calls
        ends = [e.data for e in events if e.kind == "request_end" and e.tool == "slow"]
        assert [(e["outcome"], e["duration_s"] >= 4.0) for e in ends] == [("ok", True)], name
    answer, _state = calls["not-offered"]  # the same call without the offer
    assert answer["is_error"] is True and "deadline budget of 2 s" in answer["text"]
