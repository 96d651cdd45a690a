"""An upstream MCP server run as a child process over stdio: spawned, watched, respawned with backoff.

Writes never block the wrapper: they go to the pipe's buffer, and a buffer that stops draining marks the
upstream as stuck (the operator sees it) and, past a hard limit, further requests fail at once.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import shutil
import signal
import sys
from collections import deque
from typing import Any

from mcpwatch.config import Settings
from mcpwatch.reliability.backoff import Backoff, Reconnect
from mcpwatch.wrapper import frames
from mcpwatch.wrapper.lines import LineSplitter
from mcpwatch.wrapper.port import UpstreamPort, retrieve_exception

HARD_UNSENT_LIMIT = 16 * 1024 * 1024
STDERR_TAIL = 20
# On Linux the server is started through a tiny exec shim that asks the kernel to send it SIGTERM when the wrapper
# dies, even by SIGKILL: a server that ignores the end of its stdin would otherwise outlive the wrapper. (A
# preexec_fn cannot do it: Python code between fork and exec in a threaded process can deadlock or abort.) The
# shim exec()s the server in place, so the server keeps the shim's pid and the wrapper stays its parent.
_EXEC_SHIM = (
    "import ctypes,os,sys\n"
    "ctypes.CDLL(None).prctl(1,15)\n"  # PR_SET_PDEATHSIG, SIGTERM
    "if os.getppid()!=int(sys.argv[1]):os._exit(1)\n"  # the wrapper died before the signal was armed
    "os.execvp(sys.argv[2],sys.argv[2:])"
)


def spawn_argv(argv: list[str]) -> list[str]:
    """The command line that starts `argv` as the wrapper's upstream (through the shim on Linux)."""
    if not sys.platform.startswith("linux"):
        return argv
    return [sys.executable, "-I", "-S", "-c", _EXEC_SHIM, str(os.getpid()), *argv]


class _ChildProtocol(asyncio.SubprocessProtocol):
    def __init__(self, owner: StdioUpstream) -> None:
        self.owner = owner
        core = owner.core
        self.stdout = LineSplitter(core.upstream_frame, core.upstream_oversize)
        self.stderr = LineSplitter(owner.note_stderr_line, lambda size: None, max_line_bytes=64 * 1024)
        loop = asyncio.get_running_loop()
        self.exited: asyncio.Future[None] = loop.create_future()
        self.stdout_closed: asyncio.Future[None] = loop.create_future()

    def pipe_data_received(self, fd: int, data: bytes) -> None:
        if fd == 1:
            self.stdout.feed(data)
        else:
            self.owner.pass_stderr(data)
            self.stderr.feed(data)

    def pipe_connection_lost(self, fd: int, exc: Exception | None) -> None:
        if fd == 1:
            self.stdout.finish()
            if not self.stdout_closed.done():
                self.stdout_closed.set_result(None)
        elif fd == 2:
            self.stderr.finish()

    def process_exited(self) -> None:
        if not self.exited.done():
            self.exited.set_result(None)

    def pause_writing(self) -> None:
        self.owner.paused_since = asyncio.get_running_loop().time()

    def resume_writing(self) -> None:
        self.owner.paused_since = None


class StdioUpstream:
    kind = "stdio"

    def __init__(self, argv: list[str], core: UpstreamPort, settings: Settings) -> None:
        self.argv = argv
        self.target = " ".join(argv)
        self.core = core
        self.settings = settings
        self.reconnect = Reconnect(
            Backoff(base_s=settings.upstream.backoff_base_s, max_s=settings.tombstones.backoff_max_s)
        )
        self.transport: asyncio.SubprocessTransport | None = None
        self._stdin: asyncio.WriteTransport | None = None
        self.paused_since: float | None = None
        self.stderr_tail: deque[str] = deque(maxlen=STDERR_TAIL)
        self.restarts = 0
        self.closing = False
        self._stopped = asyncio.Event()
        self._spawned: asyncio.Future[None] | None = None  # pending while a process is being started

    # ------------------------------------------------------------------ the link the core writes to

    def send(self, message: dict[str, Any]) -> str:
        stdin = self._stdin
        if stdin is None or stdin.is_closing():
            return "down"
        if stdin.get_write_buffer_size() > HARD_UNSENT_LIMIT:
            return "stuck"
        stdin.write(frames.encode(message))
        return "sent"

    def describe(self) -> dict[str, Any]:
        loop = asyncio.get_running_loop()
        stuck_for = loop.time() - self.paused_since if self.paused_since is not None else 0.0
        unsent = self._stdin.get_write_buffer_size() if self._stdin is not None and not self._stdin.is_closing() else 0
        return {
            "pid": self.transport.get_pid() if self.transport is not None else None,
            "stuck": stuck_for >= self.settings.upstream.write_timeout_s,
            "stuck_for_s": round(stuck_for, 3),
            "unsent_bytes": unsent,
            "restarts": self.restarts,
            "stderr_tail": list(self.stderr_tail),
        }

    def note_stderr_line(self, line: bytes) -> None:
        self.stderr_tail.append(line.decode("utf-8", "replace").rstrip())

    def pass_stderr(self, data: bytes) -> None:
        """The child's stderr goes on to ours (hosts keep it as the server's log)."""
        with contextlib.suppress(OSError):
            os.write(2, data)

    # ------------------------------------------------------------------ lifecycle

    async def run(self) -> None:
        loop = asyncio.get_running_loop()
        try:
            while not self.closing:
                self.core.upstream_connecting()
                self.reconnect.started(loop.time())
                await self._run_once()
                if self.closing:
                    break
                delay = self.reconnect.delay_after_loss(loop.time())
                self.core.upstream_backoff(delay)
                await asyncio.sleep(delay)
                self.restarts += 1
        finally:
            self._stopped.set()

    async def _run_once(self) -> int | None:
        loop = asyncio.get_running_loop()
        if shutil.which(self.argv[0]) is None:  # the shim would only fail after exec: say it here, as exec would
            self.core.upstream_lost(
                reason=f"could not be started: {self.argv[0]}: no such executable", fail_queued=True
            )
            return None
        self._spawned = loop.create_future()
        try:
            transport, protocol = await loop.subprocess_exec(
                lambda: _ChildProtocol(self),
                *spawn_argv(self.argv),
                stdin=asyncio.subprocess.PIPE,
                stdout=asyncio.subprocess.PIPE,
                stderr=asyncio.subprocess.PIPE,
                start_new_session=True,
            )
        except OSError as exc:
            self.core.upstream_lost(reason=f"could not be started: {exc.strerror or exc}", fail_queued=True)
            return None
        finally:
            self._spawned.set_result(None)
        self.transport = transport
        self._stdin = transport.get_pipe_transport(0)  # type: ignore[assignment]
        self.paused_since = None
        self.stderr_tail.clear()
        starting = asyncio.ensure_future(self.core.upstream_started())
        starting.add_done_callback(retrieve_exception)
        await asyncio.wait({starting, protocol.exited}, return_when=asyncio.FIRST_COMPLETED)
        if not starting.done():
            starting.cancel()
        elif starting.exception() is not None:
            self.core.warn(f"upstream start failed: {starting.exception()}")
            self._terminate()
        await protocol.exited
        # The exit can overtake the last stdout bytes; give them a moment so no answer is lost.
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(asyncio.shield(protocol.stdout_closed), 0.5)
        exit_code = transport.get_returncode()
        self.transport = None
        self._stdin = None
        transport.close()
        if not self.closing:
            self.core.upstream_lost(reason="exited", exit_code=exit_code, stderr_tail=list(self.stderr_tail))
        return exit_code

    def _terminate(self, sig: int = signal.SIGTERM) -> None:
        transport = self.transport
        if transport is None or transport.get_returncode() is not None:
            return
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(transport.get_pid(), sig)

    async def close(self, grace_s: float = 2.0) -> None:
        """Close the child's stdin, then SIGTERM, then SIGKILL its process group: no orphans."""
        self.closing = True
        if self._spawned is not None and not self._spawned.done():  # a process is starting: stop it too
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(asyncio.shield(self._spawned), grace_s)
        if self.transport is None:
            return  # nothing running (waiting to reconnect, or never started)
        if self._stdin is not None:
            self._stdin.close()
        for sig in (None, signal.SIGTERM, signal.SIGKILL):
            if self.transport is None:
                break
            if sig is not None:
                self._terminate(sig)
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._stopped.wait(), grace_s)
            if self._stopped.is_set():
                break
        if not self._stopped.is_set():
            print("mcpwatch: the upstream did not stop", file=sys.stderr)
