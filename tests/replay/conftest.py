"""The replay tests' fixtures (the shared ones are in the tests' root conftest)."""

from __future__ import annotations

from pathlib import Path

import pytest
from replay_helpers import write_log


@pytest.fixture(scope="session")
def shared_log(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    """One synthetic session written once for the whole run (read-only in the tests)."""
    path = tmp_path_factory.mktemp("replay") / "events.db"
    return path, write_log(path)
