"""The replay tests' fixtures, loaded as a plugin by each test module (`pytest_plugins`)."""

from __future__ import annotations

import logging
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from replay_helpers import write_log


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture(autouse=True)
def quiet_and_still(monkeypatch: pytest.MonkeyPatch) -> None:
    """No animations; no stray root-logger handler printing over a headless app."""
    monkeypatch.setenv("TEXTUAL_ANIMATIONS", "none")
    root = logging.getLogger()
    if not root.handlers:
        root.addHandler(logging.NullHandler())


@pytest.fixture
def utc(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Wall-clock times on screen are local: fix the zone."""
    monkeypatch.setenv("TZ", "UTC")
    time.tzset()
    yield
    monkeypatch.undo()
    time.tzset()


@pytest.fixture(scope="session")
def shared_log(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    """One synthetic session written once for the whole run (read-only in the tests)."""
    path = tmp_path_factory.mktemp("replay") / "events.db"
    return path, write_log(path)
