"""The task bridge's bounds with real processes: `mcpwatch wrap` before a hand-written server whose tasks never end
(`ttl: null`, `pollInterval: 0`), for a host without tasks whose calls are cut at their budget. The abandoned
tasks are polled until `[tasks] reuse_s`, then cancelled upstream, and never polled again; a host whose HTTP session
ends has its tasks cancelled at once; a 4 MiB status message reaches the cut answer once, cut, in a frame of a few
kilobytes."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from front_tools import Host, listening_wrapper, rpc

from checkout import REPO, mcpwatch_cmd
from waiting import patience
from wraptools import FIXTURES

SERVER = FIXTURES / "forever_tasks_server.py"


class BridgedHost:
    """A host without tasks speaking JSON-RPC lines to `mcpwatch wrap --deadline S` over the never-ending server."""

    def __init__(self, state: Path, reuse_s: float, deadline_s: float, env: dict[str, str]) -> None:
        config = state / "bridge.toml"
        config.write_text(f"[tasks]\nreuse_s = {reuse_s}\n")
        command = mcpwatch_cmd(
            "wrap",
            "--config",
            str(config),
            "--deadline",
            str(deadline_s),
            "--no-log",
            "--",
            sys.executable,
            str(SERVER),
        )
        self.proc = subprocess.Popen(
            command,
            cwd=REPO,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            env={**os.environ, **env},
        )
        self.replies: dict[Any, bytes] = {}
        self._arrived = threading.Condition()
        threading.Thread(target=self._read, daemon=True).start()
        init = {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "no-tasks-host"}}
        self.send({"jsonrpc": "2.0", "id": "init", "method": "initialize", "params": init})
        self.wait_for("init")
        self.send({"jsonrpc": "2.0", "method": "notifications/initialized"})
        self.send({"jsonrpc": "2.0", "id": "list", "method": "tools/list", "params": {}})
        self.wait_for("list")

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            message = json.loads(line)
            if "id" in message and "method" not in message:
                with self._arrived:
                    self.replies[message["id"]] = line
                    self._arrived.notify_all()

    def send(self, message: dict[str, Any]) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(json.dumps(message).encode() + b"\n")
        self.proc.stdin.flush()

    def wait_for(self, *ids: Any, timeout: float = 60.0) -> list[bytes]:
        with self._arrived:
            assert self._arrived.wait_for(lambda: all(i in self.replies for i in ids), timeout), ids
            return [self.replies[i] for i in ids]

    def close(self) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.close()
        try:
            self.proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()


@contextmanager
def bridged_host(state: Path, reuse_s: float = 600.0, deadline_s: float = 1.0, **env: str) -> Iterator[BridgedHost]:
    host = BridgedHost(state, reuse_s, deadline_s, env)
    try:
        yield host
    finally:
        host.close()


def requests(log: Path, method: str) -> list[str]:
    text = log.read_text() if log.exists() else ""
    return [line.split(" ", 1)[1] for line in text.splitlines() if line.startswith(method + " ")]


@pytest.mark.slow
def test_abandoned_never_ending_tasks_stop_being_polled_at_reuse_s(isolated_state: Path) -> None:
    log = isolated_state / "forever.log"
    with bridged_host(isolated_state, reuse_s=2.0, FOREVER_LOG=str(log)) as host:
        for n in range(10):
            call = {"name": "forever", "arguments": {"n": n}}
            host.send({"jsonrpc": "2.0", "id": n, "method": "tools/call", "params": call})
        for reply in host.wait_for(*range(10)):
            assert "goes on upstream as task" in json.loads(reply)["result"]["content"][0]["text"]
        deadline = time.monotonic() + patience(60)
        while len(set(requests(log, "tasks/cancel"))) < 10:  # each, once its window passed
            assert time.monotonic() < deadline, requests(log, "tasks/cancel")
            time.sleep(0.2)
        assert sorted(set(requests(log, "tasks/cancel"))) == sorted(f"forever-{n}" for n in range(1, 11))
        polls = len(requests(log, "tasks/get"))
        assert polls > 0  # they were polled while someone could use them
        time.sleep(2.0)  # what the old bridge did meanwhile: a poll per task every 50 ms, for ever
        assert len(requests(log, "tasks/get")) == polls


@pytest.mark.slow
def test_a_4_mib_status_message_reaches_the_cut_answer_once(isolated_state: Path) -> None:
    huge = str(4 * 1024 * 1024)
    with bridged_host(  # polled many times before the cut
        isolated_state, deadline_s=5.0, FOREVER_MESSAGE_BYTES=huge, FOREVER_POLL_INTERVAL="100"
    ) as host:
        host.send({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "forever", "arguments": {}}})
        [reply] = host.wait_for(1)
        assert len(reply) < 64 * 1024  # was 16,778,113 bytes: four copies, over the 16 MiB frame cap
        assert reply.count(b"M" * 1900) == 1 and b"cut to 2,000 characters" in reply


@pytest.mark.slow
def test_a_host_session_that_ends_has_its_bridged_task_cancelled_at_once(
    tmp_path: Path, isolated_state: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    log = tmp_path / "forever.log"
    monkeypatch.setenv("FOREVER_LOG", str(log))

    async def run() -> None:
        upstream = [sys.executable, str(SERVER)]
        async with listening_wrapper(tmp_path, "--deadline", "1", upstream=upstream) as front, Host(front) as host:
            reply = await host.post(rpc(1, "tools/call", {"name": "forever", "arguments": {}}))
            assert "goes on upstream as task forever-1" in reply.text  # cut; [tasks] reuse_s is 600 s
            assert requests(log, "tasks/cancel") == []
            ended = await host.http.delete(front.url, headers=host.headers)  # the host leaves
            assert ended.status_code in (200, 204)
            deadline = time.monotonic() + patience(60)
            while requests(log, "tasks/cancel") != ["forever-1"]:
                assert time.monotonic() < deadline, requests(log, "tasks/cancel")
                await asyncio.sleep(0.1)
            polls = len(requests(log, "tasks/get"))
            await asyncio.sleep(2.5)  # an idle task would be polled every 2 s
            assert len(requests(log, "tasks/get")) == polls

    asyncio.run(run())
