"""Waiting in tests for an event, never for a number of seconds.

A test waits for a condition (a port accepting, a file written, a line on stderr, a widget shown); the bound on that
wait only catches a hang, so it must never be what fails a test on a loaded machine. `patience` turns the figure a
test names (what an idle machine needs, with room) into such a bound: scaled by the load per core when the wait
starts, and never under the figure itself. The suite's per-test timeout (pytest-timeout, pyproject) stays the last
word on a hang."""

from __future__ import annotations

import asyncio
import inspect
import os
import socket
import subprocess
import time
from collections.abc import Callable
from typing import Any

# Past this a wait gives up even on a very loaded machine: pytest-timeout (120 s a test) reports a hang plainly.
CEILING_S = 100.0


def load_factor() -> float:
    """How many times slower than idle this machine runs now: runnable tasks per core, at least 1."""
    try:
        load = os.getloadavg()[0]
    except OSError:  # no load average on this system
        return 1.0
    return max(1.0, load / (os.cpu_count() or 1))


def patience(seconds: float) -> float:
    """The bound on a wait an idle machine finishes well within `seconds`: scaled by the load, capped at the ceiling
    (but never under `seconds`)."""
    return max(seconds, min(seconds * 2 * load_factor(), CEILING_S))


def wait_until(condition: Callable[[], Any], timeout: float = 10.0, what: str = "", poll: float = 0.05) -> Any:
    """Poll until `condition()` is truthy; its value. AssertionError naming `what` past `patience(timeout)`."""
    deadline = time.monotonic() + patience(timeout)
    while True:
        value = condition()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what or condition}")
        time.sleep(poll)


async def eventually(condition: Callable[[], Any], timeout: float = 10.0, what: str = "", poll: float = 0.05) -> Any:
    """`wait_until` inside an event loop: polls `condition()` (awaited when it is a coroutine function, e.g. a call to
    the operator endpoint) without blocking the loop; its value. AssertionError naming `what` past the bound."""
    deadline = time.monotonic() + patience(timeout)
    while True:
        value = condition()
        if inspect.isawaitable(value):
            value = await value
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what or condition}")
        await asyncio.sleep(poll)


def accepts(port: int, host: str = "127.0.0.1") -> bool:
    """Whether something accepts connections on the port now."""
    with socket.socket() as sock:
        return sock.connect_ex((host, port)) == 0


def wait_for_port(port: int, timeout: float = 20.0, process: subprocess.Popen[Any] | None = None) -> None:
    """Block until something accepts connections on the loopback port. With `process` (the one meant to listen),
    fail at once when it exits instead of waiting out the bound."""

    def listening() -> bool:
        if process is not None and process.poll() is not None:
            raise AssertionError(f"the process meant to listen on port {port} exited with {process.returncode}")
        return accepts(port)

    wait_until(listening, timeout, what=f"something to listen on port {port}")


def sooner_than(slow_s: float, idle_s: float) -> float:
    """The bound for "this ended on its event, not after `slow_s`" (a budget, a host's timeout): what an idle machine
    needs (`idle_s`), scaled by the load, but kept under `slow_s` so the test still tells the two apart."""
    return max(idle_s, min(patience(idle_s), 0.8 * slow_s))


def stop_process(process: subprocess.Popen[Any], grace_s: float = 10.0) -> None:
    """Ask a process a test started to end (SIGTERM, so it finishes its log), and kill it if it has not within
    `grace_s`."""
    process.terminate()
    try:
        process.wait(grace_s)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait(5)
