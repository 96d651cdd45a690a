"""The third-party tests' shared peer, and the `npm` marker derived from the fixtures that install from npm."""

from __future__ import annotations

from pathlib import Path

import pytest
from npm_cache import NPM_FIXTURES, installed_bin, npm_fixture

EVERYTHING = (
    "@modelcontextprotocol/server-everything@2026.8.31",
    "@modelcontextprotocol/inspector@2.12.0",
)


@npm_fixture
def npm_bin() -> Path:
    """The reference `server-everything` and the MCP Inspector CLI."""
    return installed_bin(*EVERYTHING)


@pytest.hookimpl(tryfirst=True)  # before `-m` deselects
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if NPM_FIXTURES.intersection(getattr(item, "fixturenames", ())):
            item.add_marker(pytest.mark.npm)
