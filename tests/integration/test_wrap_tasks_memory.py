"""Finished offered tasks are held in memory by bytes, not by count: 1,500 tasks each answering 1 MiB took a real
wrapper to 2.8 GB (a result and a request held for each task's TTL); now its resident memory stays bounded,
the newest results answered from memory, the oldest with one clear error (none of them fits the log's
`[late_results] keep_bytes`). A real wrapper over the raw server, whose `echo` answers with what it was sent.

150 tasks tell the two apart: with every result held (`results_memory_mb = 4000`) the wrapper holds about 200 MB,
with the default 32 MB about 80 MB; the line between is drawn at 140 MB. The core's bound itself is
tests/unit/test_tasks_offer_bounds.py's.
`MCPWATCH_TEST_TASKS` sets another count."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from checkout import REPO, mcpwatch_cmd
from wraptools import FIXTURES

TASKS: dict[str, Any] = {"tasks": {"list": {}, "cancel": {}, "requests": {}}}
MIB = 1024 * 1024
RSS_MAX_MB = 140  # every result held: about 200 MB; the default 32 MB of results: about 80 MB


class Host:
    def __init__(self, proc: subprocess.Popen[bytes]) -> None:
        self.proc, self.next_id = proc, 0

    def call(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self.next_id += 1
        message = {"jsonrpc": "2.0", "id": self.next_id, "method": method, "params": params}
        self.proc.stdin.write(json.dumps(message).encode() + b"\n")
        self.proc.stdin.flush()
        while True:
            line = self.proc.stdout.readline()
            assert line, "the wrapper closed its stdout"
            answer = json.loads(line)
            if answer.get("id") == self.next_id and "method" not in answer:
                return answer


def resident_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    raise AssertionError("no VmRSS")


@pytest.mark.slow
@pytest.mark.skipif(not Path("/proc/self/status").exists(), reason="reads the wrapper's resident memory in /proc")
def test_offered_tasks_of_1_mib_results_keep_the_wrapper_bounded(tmp_path: Path) -> None:
    config = tmp_path / "mcpwatch.toml"
    config.write_text('[tasks]\noffer = ["echo"]\n')
    command = mcpwatch_cmd(
        "wrap",
        "--config",
        str(config),
        "--log",
        str(tmp_path / "events.db"),
        "--",
        sys.executable,
        str(FIXTURES / "raw_server.py"),
    )
    with open(tmp_path / "stderr", "wb") as stderr:
        proc = subprocess.Popen(command, cwd=REPO, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=stderr)
    host = Host(proc)
    try:
        init = {"protocolVersion": "2025-11-25", "capabilities": TASKS, "clientInfo": {"name": "heavy"}}
        assert "result" in host.call("initialize", init)
        blob = "x" * MIB
        ids = []
        for _ in range(int(os.environ.get("MCPWATCH_TEST_TASKS", "150"))):
            call = {"name": "echo", "arguments": {"blob": blob}, "task": {"ttl": 3_600_000}}
            task_id = host.call("tools/call", call)["result"]["task"]["taskId"]
            ids.append(task_id)
            done = host.call("tasks/result", {"taskId": task_id})
            assert len(done["result"]["content"][0]["text"]) > MIB
        rss = resident_mb(proc.pid)
        assert rss < RSS_MAX_MB, f"the wrapper holds {rss:.0f} MB"
        newest = host.call("tasks/result", {"taskId": ids[-1]})
        assert len(newest["result"]["content"][0]["text"]) > MIB
        oldest = host.call("tasks/result", {"taskId": ids[0]})
        assert "was let go: [tasks] results_memory_mb" in oldest["error"]["message"]
        print(f"wrapper resident memory after {len(ids)} x 1 MiB results: {rss:.0f} MB")
    finally:
        assert proc.stdin is not None
        proc.stdin.close()
        proc.wait(30)
