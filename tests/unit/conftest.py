"""Fixtures shared by the unit tests."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator

import pytest
from taskrig import closing_loop


@pytest.fixture
def loop() -> Iterator[asyncio.AbstractEventLoop]:
    """An event loop for one test; the jobs the wrapper left waiting are cancelled before it closes."""
    yield from closing_loop()
