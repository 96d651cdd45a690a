"""One `mcpwatch wrap --listen` front shared by the tests of a module that only talk to it: a real peer behind it
is started once, not once a test. Its log is its own (a state folder of the module's), read with
`events_when`, which waits for the events a test expects: the front writes them a little after it answered."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

from mcpwatch.events import Event
from mcpwatch.ports import free_port

from checkout import REPO
from waiting import wait_for_port, wait_until
from wraptools import logged_events


def state_env(state: Path) -> dict[str, str]:
    """This process's environment with mcpwatch's state in `state` and no setting from outside the test (as the
    suite's `isolated_state` fixture makes it for one test)."""
    env = {
        name: value
        for name, value in os.environ.items()
        if not name.startswith(("MCPWATCH_TOOL_CALL", "MCPWATCH_HOST_TOOLS", "LLM_COUNCIL_"))
        and name != "MCPWATCH_CONFIG"
    }
    return {**env, "MCPWATCH_STATE_DIR": str(state), "XDG_CONFIG_HOME": str(state / "config")}


@contextmanager
def shared_front(state: Path, upstream: list[str], *wrap_args: str) -> Iterator[str]:
    """`mcpwatch wrap [wrap_args] --listen URL -- upstream…` logging into `state`: the URL of its HTTP front."""
    port = free_port()
    url = f"http://127.0.0.1:{port}/mcp"
    command = [sys.executable, "-m", "mcpwatch", "wrap", *wrap_args, "--listen", url, "--", *upstream]
    wrapper = subprocess.Popen(command, cwd=REPO, env=state_env(state), stderr=subprocess.DEVNULL)
    try:
        wait_for_port(port, process=wrapper)
        yield url
    finally:
        wrapper.terminate()
        wrapper.wait(30)


def events_when(state: Path, done: Callable[[list[Event]], bool], what: str) -> list[Event]:
    """The front's events once `done(events)` holds (it logs a call's end a little after answering it)."""
    log = state / "events.db"

    def ready() -> list[Event] | None:
        seen = logged_events(log)
        return seen if done(seen) else None

    return wait_until(ready, 30, what)
