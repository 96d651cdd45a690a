"""Real SDK hosts through the front, as users run them: a call that times out, then the host's exit, must leave
the host exiting 0 (the held request ends with a well-formed stream end, not a 503 saying mcpwatch is shutting
down); and hosts that exit without DELETE, many times over, never lock a later host out."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from npm_cache import installed_bin, npm_fixture

from checkout import REPO

sys.path.insert(0, str(Path(__file__).parent.parent / "integration"))  # the front's test helpers live there
from front_tools import Host, listening_wrapper

pytestmark = pytest.mark.anyio
TS_SDK = "@modelcontextprotocol/sdk@1.32.2"
FIXTURES = Path(__file__).parent.parent / "fixtures"


@npm_fixture
def ts_sdk() -> Path:
    """The folder holding the current TypeScript SDK (for NODE_PATH); skips without node and npm."""
    if shutil.which("node") is None:
        pytest.skip("node is not installed: the TypeScript SDK host runs on it")
    return installed_bin(TS_SDK).parent


def ts_host(ts_sdk: Path, url: str, mode: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "NODE_PATH": str(ts_sdk)}
    command = ["node", str(FIXTURES / "ts_client.mjs"), url, mode]
    return subprocess.run(command, capture_output=True, text=True, env=env, timeout=60, stdin=subprocess.DEVNULL)


@pytest.mark.slow
async def test_the_python_sdk_exits_cleanly_after_a_timed_out_call(tmp_path):
    async with listening_wrapper(tmp_path) as front:
        for _ in range(2):  # the second host comes after the first one's exit
            done = subprocess.run([sys.executable, str(FIXTURES / "sdk_timeout_host.py"), front.url], cwd=REPO,
                                  capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL)  # fmt: skip
            assert done.returncode == 0, done.stderr[-3000:]
            assert "exited cleanly" in done.stdout and "Error" not in done.stderr
    assert "Traceback" not in front.stderr


@pytest.mark.slow
async def test_the_typescript_sdk_exits_cleanly_after_a_timed_out_call(tmp_path, ts_sdk):
    async with listening_wrapper(tmp_path) as front:
        for _ in range(2):  # the second host comes after the first one's exit
            done = ts_host(ts_sdk, front.url, "timeout")
            assert done.returncode == 0, (done.stdout, done.stderr[-3000:])
            seen = json.loads(done.stdout.strip().splitlines()[-1])
            assert seen["timedOut"] is True and seen["after"] == seen["tools"] > 0
            assert "Error" not in done.stderr, done.stderr[-3000:]
    assert "Traceback" not in front.stderr


@pytest.mark.slow
async def test_typescript_hosts_that_close_without_delete_never_lock_a_host_out(tmp_path, ts_sdk):
    async with listening_wrapper(tmp_path, config="[front]\nmax_sessions = 2\n") as front:
        for _ in range(5):  # more than twice the cap, each host gone without DELETE
            done = ts_host(ts_sdk, front.url, "abandon")
            assert done.returncode == 0, (done.stdout, done.stderr[-3000:])
        async with Host(front) as newcomer:
            await newcomer.ping()
    assert "Traceback" not in front.stderr
