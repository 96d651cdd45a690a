"""The lifeline of a stdio upstream (see mcpwatch.wrapper.upstreams.upstream_process) is the wrapper's to close,
whatever way the start ends: a descriptor left open keeps the keeper waiting, and leaks one descriptor a start."""

from __future__ import annotations

import asyncio
import os
import sys
from typing import Any

import pytest

from mcpwatch.config import Settings
from mcpwatch.wrapper.upstreams.upstream_stdio import StdioUpstream

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the lifeline exists on Linux only")


def _open_descriptors() -> set[int]:
    return {int(name) for name in os.listdir("/proc/self/fd")}


def test_a_start_cancelled_while_spawning_closes_both_ends_of_the_lifeline() -> None:
    async def cancelled_spawn(*args: Any, **kwargs: Any) -> Any:
        raise asyncio.CancelledError

    async def scenario() -> set[int]:
        loop = asyncio.get_running_loop()
        loop.subprocess_exec = cancelled_spawn  # type: ignore[method-assign]
        upstream = StdioUpstream([sys.executable, "-c", "pass"], core=None, settings=Settings())  # type: ignore[arg-type]
        before = _open_descriptors()
        with pytest.raises(asyncio.CancelledError):
            await upstream._run_once()
        return _open_descriptors() - before

    assert asyncio.run(scenario()) == set()
