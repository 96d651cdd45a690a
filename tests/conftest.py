"""Fixtures every test shares: its own state dir (nothing touches the user's files), the asyncio backend for anyio,
and a quiet Textual. Each folder's conftest.py adds what only its tests use."""

from __future__ import annotations

import gc
import logging
import os
import sys
import time
from collections.abc import Generator, Iterator
from pathlib import Path

import bytecode_warmup
import pytest
import slow_guard
from hypothesis import HealthCheck, settings

from waiting import patience

# The suite starts hundreds of Python processes of the same code (wrappers, councils, the CLI) and every worker
# imports every test module: without cached bytecode each one compiles mcpwatch again and re-runs the assertion
# rewriting (≈ 70 ms of CPU a process, ≈ 5 s a worker; xdist's controller makes it once, `bytecode_warmup`). An
# environment that asks for no bytecode files (PYTHONDONTWRITEBYTECODE) still gets them here, in the checkout's
# git-ignored __pycache__ folders.
sys.dont_write_bytecode = False
os.environ.pop("PYTHONDONTWRITEBYTECODE", None)

# Hypothesis's per-example deadline (200 ms) and its too-slow health check are speed checks: beside four CPU burners
# a 0.02 ms example once took 460 ms. The per-test timeout stays the bound on a hang.
settings.register_profile("any_load", deadline=None, suppress_health_check=[HealthCheck.too_slow])
settings.load_profile("any_load")


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_setupnodes(config: pytest.Config) -> None:
    """In xdist's controller, before any worker starts: the test modules' rewritten bytecode made once."""
    bytecode_warmup.warm(config, Path(__file__).parent)


def pytest_collection_finish(session: pytest.Session) -> None:
    """A worker's garbage collector spared the ≈ 200,000 objects its imports and collection made (they live until
    it exits) and run less often: with Python's default thresholds, collections took about a fifth of the console
    and replay tests' CPU (106 → 84 CPU-s on four workers). The tests that measure memory hold under it."""
    gc.collect()
    gc.freeze()
    gc.set_threshold(50_000, 20, 20)


def pytest_addoption(parser: pytest.Parser) -> None:
    slow_guard.add_option(parser)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item: pytest.Item) -> Generator[None, None, None]:
    with slow_guard.measuring(item):
        return (yield)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(
    item: pytest.Item, call: pytest.CallInfo[None]
) -> Generator[None, pytest.TestReport, pytest.TestReport]:
    report: pytest.TestReport = yield
    slow_guard.judge(item, report)
    return report


@pytest.fixture(autouse=True)
def isolated_state(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> Path:
    state = tmp_path_factory.mktemp("state")
    monkeypatch.setenv("MCPWATCH_STATE_DIR", str(state))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(state / "config"))
    for name in list(os.environ):
        if name.startswith(("MCPWATCH_TOOL_CALL", "MCPWATCH_HOST_TOOLS", "LLM_COUNCIL_")) or name == "MCPWATCH_CONFIG":
            monkeypatch.delenv(name)
    return state


@pytest.fixture(autouse=True)
def quiet_and_still(monkeypatch: pytest.MonkeyPatch) -> None:
    """No animations; keep an MCP server's logging setup from adding a handler to the root logger."""
    monkeypatch.setenv("TEXTUAL_ANIMATIONS", "none")
    root = logging.getLogger()
    if not root.handlers:
        root.addHandler(logging.NullHandler())


@pytest.fixture(autouse=True)
def patient_sdk_probe(monkeypatch: pytest.MonkeyPatch) -> None:
    """The SDK client's `server/discover` probe gives up after a fixed 10 s; a wrapper started beside four CPU
    burners can take longer to answer its first request. A test waits for the answer (the per-test timeout bounds a
    hang), so the probe's bound scales with the load like every other wait here."""
    import mcp.client.session

    monkeypatch.setattr(mcp.client.session, "DISCOVER_TIMEOUT_SECONDS", patience(10.0))


@pytest.fixture
def anyio_backend() -> str:
    """Async tests run on asyncio only (the product runs there; trio is not a dependency)."""
    return "asyncio"


@pytest.fixture
def utc(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Wall-clock times on screen are local: fix the zone."""
    monkeypatch.setenv("TZ", "UTC")
    time.tzset()
    yield
    monkeypatch.undo()
    time.tzset()
