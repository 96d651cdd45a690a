"""The console tests' fixtures, loaded as a plugin by each test module (`pytest_plugins`).

A conftest.py in this folder would shadow the tests' root conftest for `from conftest import REPO`.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator

import pytest
from operator_double import OperatorContractDouble


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture(autouse=True)
def quiet_and_still(monkeypatch: pytest.MonkeyPatch) -> None:
    """No animations; keep the MCP server's logging setup from adding a handler to the root logger."""
    monkeypatch.setenv("TEXTUAL_ANIMATIONS", "none")
    root = logging.getLogger()
    if not root.handlers:
        root.addHandler(logging.NullHandler())


@pytest.fixture
def double() -> Iterator[OperatorContractDouble]:
    server = OperatorContractDouble().start()
    try:
        yield server
    finally:
        server.stop()
