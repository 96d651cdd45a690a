"""The console tests' fixtures (the shared ones are in the tests' root conftest)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from operator_double import OperatorContractDouble


@pytest.fixture
def double() -> Iterator[OperatorContractDouble]:
    server = OperatorContractDouble().start()
    try:
        yield server
    finally:
        server.stop()
