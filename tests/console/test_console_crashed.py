"""The live console watching a real wrapper that is killed outright: the session shows as ended (crashed) at its
last event, and the wrapper's registry file is gone once the console has looked."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from console_helpers import SIZE, ready

from mcpwatch.console.app import ConsoleApp
from mcpwatch.console.headless.source import Target
from mcpwatch.logview.units import format_time
from mcpwatch.registry import find_wrapper
from mcpwatch.store import EventReader

from checkout import REPO
from pilot_tools import screen_text, until
from waiting import patience

pytestmark = pytest.mark.anyio

RAW_SERVER = str(REPO / "tests" / "fixtures" / "raw_server.py")


def start_wrapper(log: Path, name: str) -> subprocess.Popen[bytes]:
    return subprocess.Popen(
        [sys.executable, "-m", "mcpwatch", "wrap", "--name", name, "--log", str(log), "--", sys.executable, RAW_SERVER],
        stdin=subprocess.PIPE,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        cwd=REPO,
    )


def wait_registered(name: str, timeout: float = 20.0) -> None:
    deadline = time.monotonic() + patience(timeout)
    while not find_wrapper(name):
        assert time.monotonic() < deadline, "the wrapper did not register"
        time.sleep(0.05)


@pytest.mark.slow
async def test_a_killed_wrapper_shows_as_crashed_at_its_last_event(tmp_path: Path, isolated_state: Path) -> None:
    log = tmp_path / "events.db"
    wrapper = start_wrapper(log, "doomed")
    try:
        wait_registered("doomed")
        app = ConsoleApp(target=Target(selector="doomed"))
        async with app.run_test(size=SIZE) as pilot:
            await ready(pilot)
            await until(pilot, lambda: "● live" in screen_text(app), what="live")
            os.kill(wrapper.pid, signal.SIGKILL)
            wrapper.wait(10)
            await until(pilot, lambda: "crashed" in screen_text(app), timeout=20, what="the crash on screen")
            text = screen_text(app)
            with EventReader(log) as reader:
                (session,) = reader.sessions()
            assert session.state == "crashed"
            assert "ended: crashed — its wrapper stopped without recording an end" in text
            assert format_time(session.last_ts) in text
            # the process is gone, not the connection: no "retrying in 5s" beside "ended: crashed"
            await pilot.pause(1.5)  # past the first reconnect attempts
            text = screen_text(app)
            assert "retrying" not in text and "disconnected" not in text
            assert "wrapper 'doomed' (pid" in text and "its process is gone — start it again" in text
        assert not (isolated_state / "wrappers" / f"{wrapper.pid}.json").exists()
    finally:
        if wrapper.poll() is None:
            wrapper.kill()
            wrapper.wait(10)


@pytest.mark.slow
async def test_a_killed_wrapper_watched_by_pid_is_named_gone_not_a_pid_to_wait_for(
    tmp_path: Path, isolated_state: Path
) -> None:
    """Watching by pid (what the chooser and Fleet do): after kill -9 the banner says the wrapper is gone, by its
    name, and what to do; it never promises to watch "a new wrapper '<pid>'", which cannot come back."""
    wrapper = start_wrapper(tmp_path / "events.db", "doomed")
    try:
        wait_registered("doomed")
        app = ConsoleApp(target=Target(selector=str(wrapper.pid)))
        async with app.run_test(size=SIZE) as pilot:
            await ready(pilot)
            await until(pilot, lambda: "● live" in screen_text(app), what="live")
            os.kill(wrapper.pid, signal.SIGKILL)
            wrapper.wait(10)
            await until(pilot, lambda: "process is gone" in screen_text(app), timeout=20, what="the gone banner")
            text = screen_text(app)
            assert f"wrapper {wrapper.pid!s}" not in text and f"'{wrapper.pid}'" not in text
            assert f"wrapper 'doomed' (pid {wrapper.pid}): its process is gone — start it again" in text
    finally:
        if wrapper.poll() is None:
            wrapper.kill()
            wrapper.wait(10)
