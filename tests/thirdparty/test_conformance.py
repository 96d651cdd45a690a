"""The official MCP conformance suite (`@modelcontextprotocol/conformance`, server mode) against the reference
`server-everything` in streamableHttp mode, directly and through `mcpwatch wrap --listen … --url <server>`: every
scenario that passes directly must pass wrapped. The suite opens a host session per scenario and never ends them,
so it is also a host that exits without DELETE thirty times over."""

from __future__ import annotations

import re
import shutil
import subprocess
from contextlib import AsyncExitStack
from pathlib import Path

import anyio
import pytest
from npm_cache import installed_bin, npm_fixture
from test_front_hosts import everything_direct, everything_wrapped

pytestmark = pytest.mark.anyio
# Pinned: later versions import fs.globSync, which needs Node 22 (Node 20 is what the machines have).
CONFORMANCE = "@modelcontextprotocol/conformance@0.1.13"
SCENARIO = re.compile(r"^[✓✗] (?P<name>[\w-]+): (?P<passed>\d+) passed, (?P<failed>\d+) failed$", re.MULTILINE)


@npm_fixture
def conformance() -> Path:
    if shutil.which("node") is None:
        pytest.skip("node is not installed: the conformance suite runs on it")
    return installed_bin(CONFORMANCE) / "conformance"


def passing(conformance: Path, url: str, out: Path) -> tuple[set[str], int]:
    """The scenarios that passed whole, and how many ran."""
    done = subprocess.run([str(conformance), "server", "--url", url, "-o", str(out)], capture_output=True,
                          text=True, timeout=600, stdin=subprocess.DEVNULL)  # fmt: skip
    scenarios = list(SCENARIO.finditer(done.stdout))
    assert scenarios, (done.returncode, done.stdout[-2000:], done.stderr[-2000:])
    return {m["name"] for m in scenarios if int(m["failed"]) == 0 and int(m["passed"]) > 0}, len(scenarios)


@pytest.mark.slow
async def test_every_scenario_that_passes_directly_passes_through_the_front(npm_bin, conformance, tmp_path):
    async with everything_direct(npm_bin) as url:
        direct, ran = await anyio.to_thread.run_sync(passing, conformance, url, tmp_path / "direct")
    async with AsyncExitStack() as stack:
        url = await stack.enter_async_context(everything_wrapped(npm_bin, tmp_path, over_http=True))
        wrapped, ran_wrapped = await anyio.to_thread.run_sync(passing, conformance, url, tmp_path / "wrapped")
    print(f"conformance: {len(direct)} of {ran} scenarios pass directly, {len(wrapped)} of {ran_wrapped} wrapped")
    assert ran > 16 and len(direct) >= 10  # more scenarios than the default max_sessions; the reference passes many
    assert direct <= wrapped, sorted(direct - wrapped)
