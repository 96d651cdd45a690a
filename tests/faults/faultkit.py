"""Helpers for the fault-injection tests: a raw JSON-RPC host driving a real `mcpwatch wrap` process over its pipes.

The SDK client is slow and hides the wire; this host writes exactly the bytes a test gives it, reads every line the
wrapper writes (in order, with the time it arrived) and never waits without a bound.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import signal
import sqlite3
import sys
import time
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from checkout import REPO
from waiting import patience

FIXTURES = REPO / "tests" / "fixtures"
FAULT_SERVER = [sys.executable, str(FIXTURES / "fault_server.py")]
RAW_SERVER = [sys.executable, str(FIXTURES / "raw_server.py")]
INIT_PARAMS = {
    "protocolVersion": "2025-06-18",
    "capabilities": {},
    "clientInfo": {"name": "fault-host", "version": "1.0"},
}
LINE_LIMIT = 64 * 1024 * 1024


def id_key(value: Any) -> str:
    """Ids as a host matches them: by JSON value, so 7 and "7" stay apart."""
    return json.dumps(value)


@dataclass(frozen=True, slots=True)
class Received:
    index: int  # position on the wrapper's stdout
    at: float  # time.monotonic() when read
    message: Any


class RawHost:
    """One host connection: raw frames to the wrapper's stdin, every line of its stdout recorded."""

    def __init__(self, process: asyncio.subprocess.Process, stderr_path: Path) -> None:
        self.process = process
        self.stderr_path = stderr_path
        self.received: list[Received] = []
        self.responses: dict[str, list[Received]] = {}
        self.notifications: list[Received] = []
        self.not_json: list[bytes] = []
        self.sent_at: dict[str, float] = {}
        self._waiters: dict[str, asyncio.Future[dict[str, Any]]] = {}
        self._changed = asyncio.Event()
        self._next_id = 0
        self.eof = asyncio.Event()
        self._reader = asyncio.ensure_future(self._read())

    @property
    def pid(self) -> int:
        return self.process.pid

    def _record(self, item: Received) -> None:
        self.received.append(item)
        message = item.message
        if isinstance(message, dict) and "id" in message and "method" not in message:
            key = id_key(message["id"])
            self.responses.setdefault(key, []).append(item)
            waiter = self._waiters.pop(key, None)
            if waiter is not None and not waiter.done():
                waiter.set_result(message)
        else:
            self.notifications.append(item)

    async def _read(self) -> None:
        stdout = self.process.stdout
        assert stdout is not None
        try:
            while line := await stdout.readline():
                now = time.monotonic()
                try:
                    parsed = json.loads(line)
                except ValueError:
                    self.not_json.append(line[:200])
                    continue
                # a batch is answered with one batch: each of its answers is recorded as received
                for message in parsed if isinstance(parsed, list) and parsed else [parsed]:
                    self._record(Received(len(self.received), now, message))
                self._changed.set()
        finally:
            self.eof.set()
            self._changed.set()
            for waiter in self._waiters.values():
                if not waiter.done():
                    waiter.set_exception(ConnectionError("the wrapper closed its stdout"))
                    waiter.exception()  # a test that no longer waits for it need not hear about it

    # -- sending -------------------------------------------------------------------------------------------

    def send_bytes(self, data: bytes) -> None:
        stdin = self.process.stdin
        assert stdin is not None
        stdin.write(data)

    def send(self, message: Any) -> None:
        self.send_bytes(json.dumps(message, separators=(",", ":")).encode() + b"\n")

    def new_id(self) -> int:
        self._next_id += 1
        return self._next_id

    def request(
        self, method: str, params: dict[str, Any] | None = None, *, request_id: Any = None
    ) -> asyncio.Future[dict[str, Any]]:
        """Send a request; the future resolves with the first response carrying its id."""
        request_id = self.new_id() if request_id is None else request_id
        key = id_key(request_id)
        future: asyncio.Future[dict[str, Any]] = asyncio.get_running_loop().create_future()
        self._waiters[key] = future
        message: dict[str, Any] = {"jsonrpc": "2.0", "id": request_id, "method": method}
        if params is not None:
            message["params"] = params
        self.sent_at[key] = time.monotonic()
        self.send(message)
        return future

    async def call(self, method: str, params: dict[str, Any] | None = None, *, timeout: float = 10.0) -> dict[str, Any]:
        return await asyncio.wait_for(self.request(method, params), timeout)

    async def tool(
        self, name: str, arguments: dict[str, Any] | None = None, *, timeout: float = 10.0
    ) -> dict[str, Any]:
        """A tools/call; returns the whole response (result or error)."""
        return await self.call("tools/call", {"name": name, "arguments": arguments or {}}, timeout=timeout)

    def cancel(self, request_id: Any, reason: str = "the host gave up") -> None:
        params = {"requestId": request_id, "reason": reason}
        self.send({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": params})

    async def initialize(self) -> dict[str, Any]:
        reply = await self.call("initialize", INIT_PARAMS, timeout=30)
        self.send({"jsonrpc": "2.0", "method": "notifications/initialized"})
        return reply

    # -- waiting -------------------------------------------------------------------------------------------

    async def wait_until(self, predicate: Callable[[], bool], timeout: float, what: str) -> None:
        """Until `predicate()` holds; `timeout` only bounds a hang (scaled by the load, waiting.patience)."""
        timeout = patience(timeout)
        deadline = time.monotonic() + timeout
        while not predicate():
            left = deadline - time.monotonic()
            if left <= 0:
                raise AssertionError(f"timed out after {timeout} s waiting for {what}")
            self._changed.clear()
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._changed.wait(), min(left, 0.1))

    async def next_response(self, request_id: Any, timeout: float = 10.0) -> dict[str, Any]:
        key = id_key(request_id)
        await self.wait_until(lambda: bool(self.responses.get(key)), timeout, f"a response to id {request_id!r}")
        return self.responses[key][0].message

    def responses_to(self, request_id: Any) -> list[dict[str, Any]]:
        return [r.message for r in self.responses.get(id_key(request_id), [])]

    # -- ending --------------------------------------------------------------------------------------------

    async def close(self, timeout: float = 15.0) -> int:
        """Close the wrapper's stdin (the host goes away) and wait for it to exit."""
        stdin = self.process.stdin
        assert stdin is not None
        with contextlib.suppress(OSError):
            stdin.close()
        return await self.wait_exit(timeout)

    async def signal(self, signum: int) -> None:
        with contextlib.suppress(ProcessLookupError):
            os.kill(self.process.pid, signum)

    async def wait_exit(self, timeout: float = 15.0) -> int:
        timeout = patience(timeout)
        try:
            code = await asyncio.wait_for(self.process.wait(), timeout)
        except TimeoutError:
            self.process.kill()
            await self.process.wait()
            raise AssertionError(f"the wrapper did not exit within {timeout} s; stderr:\n{self.stderr()}") from None
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self.eof.wait(), 5)
        return code

    def stderr(self) -> str:
        try:
            return self.stderr_path.read_text(errors="replace")
        except OSError:
            return ""

    def assert_clean_stderr(self) -> None:
        text = self.stderr()
        assert "Traceback" not in text, text[-4000:]

    def assert_clean_stdout(self) -> None:
        assert not self.not_json, self.not_json[:5]


def wrap_command(upstream: list[str], *, log: Path | None, wrap_args: list[str] | None = None) -> list[str]:
    log_args = ["--log", str(log)] if log is not None else ["--no-log"]
    command = ["--", *upstream] if upstream else []  # none: the upstream is an --url in wrap_args
    return [sys.executable, "-m", "mcpwatch", "wrap", *log_args, *(wrap_args or []), *command]


@asynccontextmanager
async def raw_host(
    upstream: list[str],
    tmp: Path,
    *,
    log: Path | None = None,
    env: dict[str, str] | None = None,
    wrap_args: list[str] | None = None,
    name: str = "wrapper",
) -> AsyncIterator[RawHost]:
    """Start `mcpwatch wrap` with raw pipes; on the way out, make sure the process is gone (killed if need be)."""
    stderr_path = tmp / f"{name}.stderr"
    with stderr_path.open("wb") as stderr:
        process = await asyncio.create_subprocess_exec(
            *wrap_command(upstream, log=log, wrap_args=wrap_args),
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
            stderr=stderr,
            env={**os.environ, **(env or {})},
            cwd=str(REPO),
            limit=LINE_LIMIT,
        )
    host = RawHost(process, stderr_path)
    try:
        yield host
    finally:
        if process.returncode is None:  # a test that failed half way: stop it as a user would, then for sure
            for signum, grace in ((signal.SIGTERM, 10.0), (signal.SIGKILL, 10.0)):
                with contextlib.suppress(ProcessLookupError):
                    process.send_signal(signum)
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(process.wait(), grace)
                    break
        host._reader.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await host._reader


async def registry_of(state_dir: Path, pid: int, timeout: float = 15.0) -> dict[str, Any]:
    """The registry file of the wrapper with this pid."""
    path = state_dir / "wrappers" / f"{pid}.json"
    deadline = time.monotonic() + patience(timeout)
    while time.monotonic() < deadline:
        with contextlib.suppress(OSError, ValueError):
            return json.loads(path.read_text())
        await asyncio.sleep(0.05)
    raise AssertionError(f"the wrapper {pid} did not register at {path}")


def read_jsonl(path: Path) -> list[dict[str, Any]]:
    """The whole lines of a JSON-lines file a live process appends to (a line still being written is left out)."""
    if not path.exists():
        return []
    lines = path.read_text().split("\n")[:-1]  # what follows the last newline is not whole yet
    return [json.loads(line) for line in lines if line.strip()]


def pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    # a zombie still answers kill(0); it is gone for our purposes
    with contextlib.suppress(OSError), open(f"/proc/{pid}/stat") as stat:
        return stat.read().split(") ", 1)[1][:1] != "Z"
    return True


def group_members(pgid: int) -> list[int]:
    """The live processes of a process group, from /proc (zombies do not count)."""
    members = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except (OSError, IndexError):
            continue
        if int(fields[2]) == pgid and fields[0] != "Z":
            members.append(int(stat.parent.name))
    return members


async def wait_group_gone(pgid: int, timeout: float) -> None:
    deadline = time.monotonic() + patience(timeout)
    while members := group_members(pgid):
        assert time.monotonic() < deadline, f"process group {pgid} still has {members}"
        await asyncio.sleep(0.05)


def integrity(path: Path) -> str:
    """SQLite's own verdict on the file ("ok" when intact)."""
    conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True, timeout=30)
    try:
        return str(conn.execute("PRAGMA integrity_check").fetchone()[0])
    finally:
        conn.close()


def session_events(log: Path, session_id: str) -> list[Any]:
    from mcpwatch.store import EventReader

    with EventReader(log) as reader:
        return list(reader.events(session_id))


def is_deadline_answer(message: dict[str, Any]) -> bool:
    result = message.get("result")
    if not isinstance(result, dict) or result.get("isError") is not True:
        return False
    text = " ".join(b.get("text", "") for b in result.get("content", []) if isinstance(b, dict))
    return "deadline" in text


def text_of(message: dict[str, Any]) -> str:
    result = message.get("result") or {}
    return " ".join(b.get("text", "") for b in result.get("content", []) if isinstance(b, dict))
