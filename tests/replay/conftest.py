"""The replay tests' fixtures (the shared ones are in the tests' root conftest)."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from replay_helpers import write_log


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
