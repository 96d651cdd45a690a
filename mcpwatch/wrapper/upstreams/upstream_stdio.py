"""An upstream MCP server run as a child process over stdio: spawned, watched, respawned with backoff.

Writes never block the wrapper: they go to the pipe's buffer; past a hard limit, further requests fail at once.
A process that takes nothing from that buffer for `write_timeout_s` has stopped reading its input: it is stuck, and
is lost as one that exits is (its calls answered, the process stopped, a new one started with backoff). Its stdout
is not read while the hosts have too much unsent (backpressure). A process that closes its stdout is lost too: it
can answer nothing more. Whatever way it ends, its whole process group ends with it.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import shutil
import signal
from collections import deque
from typing import Any

from mcpwatch.config import Settings
from mcpwatch.operator import UpstreamDetail
from mcpwatch.reliability.backoff import Backoff, Reconnect
from mcpwatch.terminal import say
from mcpwatch.wrapper.core.port import UpstreamPort, retrieve_exception
from mcpwatch.wrapper.framing import frames
from mcpwatch.wrapper.framing.lines import LineSplitter
from mcpwatch.wrapper.upstreams.upstream_process import GROUP_GRACE_S, Launch, end_process_group

HARD_UNSENT_LIMIT = 16 * 1024 * 1024
STDERR_TAIL = 20
STDOUT_CLOSED_GRACE_S = 0.25  # a process that closed its stdout and has not exited by then is lost all the same
STDOUT_CLOSED = "closed its stdout but kept running; it was stopped"


class _ChildProtocol(asyncio.SubprocessProtocol):
    def __init__(self, owner: StdioUpstream) -> None:
        self.owner = owner
        core = owner.core
        self.stdout = LineSplitter(core.upstream_frame, core.upstream_oversize, owner.settings.limits.max_frame_bytes)
        self.stderr = LineSplitter(owner.note_stderr_line, lambda size, head: None, max_line_bytes=64 * 1024)
        loop = asyncio.get_running_loop()
        self.exited: asyncio.Future[None] = loop.create_future()
        self.stdout_closed: asyncio.Future[None] = loop.create_future()
        self.stuck: asyncio.Future[str] = loop.create_future()  # why, once its input has not moved for too long
        self._stall_check: asyncio.TimerHandle | None = None
        self._taken_at_check = 0

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
        """The process's stdin pipe is full: from now on, check that the process still takes from it."""
        loop = asyncio.get_running_loop()
        self.owner.paused_since = loop.time()
        self._taken_at_check = self.owner.taken_bytes()
        self._stall_check = loop.call_later(self._check_every(), self._check_stall)

    def resume_writing(self) -> None:
        self.owner.paused_since = None
        if self._stall_check is not None:
            self._stall_check.cancel()
            self._stall_check = None

    def _check_every(self) -> float:
        return self.owner.settings.upstream.write_timeout_s / 4

    def _check_stall(self) -> None:
        """Blocked writes that still move are a slow reader; ones that have not moved for `write_timeout_s` are a
        process that stopped reading (its time since the last move is what `describe` shows as stuck_for_s)."""
        owner, loop = self.owner, asyncio.get_running_loop()
        if owner.paused_since is None or self.stuck.done() or self.exited.done():
            return
        taken = owner.taken_bytes()
        if taken > self._taken_at_check:
            self._taken_at_check = taken
            owner.paused_since = loop.time()
        elif loop.time() - owner.paused_since >= owner.settings.upstream.write_timeout_s:
            self.stuck.set_result(owner.stuck_reason())
            return
        self._stall_check = loop.call_later(self._check_every(), self._check_stall)


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
        self._written = 0  # bytes given to the current process's stdin pipe, buffered or taken
        self._stdout: asyncio.ReadTransport | None = None
        self.reading_paused = False
        self.paused_since: float | None = None
        self.stderr_tail: deque[str] = deque(maxlen=STDERR_TAIL)
        self.restarts = 0
        self.closing = False
        self._stopped = asyncio.Event()
        self._spawned: asyncio.Future[None] | None = None  # pending while a process is being started
        self._group_ended: asyncio.Event | None = None  # cleared while what is left of a process group is ended

    # ------------------------------------------------------------------ the link the core writes to

    def send(self, message: dict[str, Any]) -> str:
        stdin = self._stdin
        if stdin is None or stdin.is_closing():
            return "down"
        if stdin.get_write_buffer_size() > HARD_UNSENT_LIMIT:
            return "stuck"
        data = frames.encode(message)
        self._written += len(data)
        stdin.write(data)
        return "sent"

    def taken_bytes(self) -> int:
        """What the current process has taken from its stdin so far (written, less what is still buffered)."""
        stdin = self._stdin
        return self._written - (stdin.get_write_buffer_size() if stdin is not None and not stdin.is_closing() else 0)

    def stuck_reason(self) -> str:
        unsent = self._stdin.get_write_buffer_size() if self._stdin is not None else 0
        timeout = self.settings.upstream.write_timeout_s
        return (
            f"stopped reading its input ({unsent} bytes unsent, none taken for {timeout:g} s, "
            "[upstream] write_timeout_s); it was stopped"
        )

    def pause_reading(self) -> None:
        if not self.reading_paused and self._stdout is not None and not self._stdout.is_closing():
            self.reading_paused = True
            self._stdout.pause_reading()

    def resume_reading(self) -> None:
        if self.reading_paused and self._stdout is not None and not self._stdout.is_closing():
            self._stdout.resume_reading()
        self.reading_paused = False

    def describe(self) -> UpstreamDetail:
        loop = asyncio.get_running_loop()
        stuck_for = loop.time() - self.paused_since if self.paused_since is not None else 0.0
        unsent = self._stdin.get_write_buffer_size() if self._stdin is not None and not self._stdin.is_closing() else 0
        return {
            "pid": self.transport.get_pid() if self.transport is not None else None,
            "stuck": stuck_for >= self.settings.upstream.write_timeout_s,
            "stuck_for_s": round(stuck_for, 3),
            "unsent_bytes": unsent,
            "restarts": self.restarts,
            "reading_paused": self.reading_paused,
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
        launch = Launch(self.argv)
        try:  # the lifeline is closed however this ends (a cancel while spawning too): the keeper ends the group
            try:
                transport, protocol = await loop.subprocess_exec(
                    lambda: _ChildProtocol(self),
                    *launch.argv,
                    stdin=asyncio.subprocess.PIPE,
                    stdout=asyncio.subprocess.PIPE,
                    stderr=asyncio.subprocess.PIPE,
                    start_new_session=True,
                    pass_fds=launch.pass_fds,
                )
            except OSError as exc:
                self.core.upstream_lost(reason=f"could not be started: {exc.strerror or exc}", fail_queued=True)
                return None
            finally:
                launch.started()
                self._spawned.set_result(None)
            return await self._watch(transport, protocol)
        finally:
            launch.ended()

    async def _watch(self, transport: asyncio.SubprocessTransport, protocol: _ChildProtocol) -> int | None:
        """Serve one process until it ends (exits, closes its stdout, or is stuck); its exit code."""
        self.transport = transport
        self._stdin = transport.get_pipe_transport(0)  # type: ignore[assignment]  # a subprocess pipe 0 is writable
        # Any byte its pipe does not take is noticed (pause_writing), not only a buffer past 64 KiB: a process that
        # stopped reading may have been sent less than that since its pipe filled.
        self._stdin.set_write_buffer_limits(high=0)  # type: ignore[union-attr]  # the pipe, got just above
        self._stdout = transport.get_pipe_transport(1)  # type: ignore[assignment]  # a subprocess pipe 1 is readable
        self._written = 0
        self.reading_paused = False
        self.paused_since = None
        self.stderr_tail.clear()
        starting = asyncio.ensure_future(self.core.upstream_started())
        starting.add_done_callback(retrieve_exception)
        ended: set[asyncio.Future[Any]] = {protocol.exited, protocol.stdout_closed, protocol.stuck}
        await asyncio.wait({starting, *ended}, return_when=asyncio.FIRST_COMPLETED)
        if not starting.done():
            starting.cancel()
        elif starting.exception() is not None:
            self.core.warn(f"upstream start failed: {starting.exception()}")
            self._terminate()
        await asyncio.wait(ended, return_when=asyncio.FIRST_COMPLETED)
        reason = "exited"
        if not protocol.exited.done() and not protocol.stuck.done():  # its stdout closed: it may be on its way out
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(asyncio.shield(protocol.exited), STDOUT_CLOSED_GRACE_S)
        if not protocol.exited.done():
            reason = protocol.stuck.result() if protocol.stuck.done() else STDOUT_CLOSED
            if not self.closing:
                self.core.upstream_lost(reason=reason, stderr_tail=list(self.stderr_tail))
            await self._stop_process(protocol)
        else:
            self.resume_reading()  # its last answers, even if the hosts are behind
            # The exit can overtake the last stdout bytes; give them a moment so no answer is lost.
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(asyncio.shield(protocol.stdout_closed), 0.5)
        exit_code = transport.get_returncode()
        pgid = transport.get_pid()
        self.transport = None
        self._stdin = None
        self._stdout = None
        transport.close()
        if not self.closing and reason == "exited":
            self.core.upstream_lost(reason=reason, exit_code=exit_code, stderr_tail=list(self.stderr_tail))
        self._group_ended = asyncio.Event()
        try:
            await end_process_group(pgid)
        finally:
            self._group_ended.set()
        return exit_code

    async def _stop_process(self, protocol: _ChildProtocol) -> None:
        """SIGTERM the process group, then SIGKILL: a process that closed its stdout or stopped reading its stdin is
        of no more use."""
        for sig in (signal.SIGTERM, signal.SIGKILL):
            self._terminate(sig)
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(asyncio.shield(protocol.exited), GROUP_GRACE_S)
                return

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
        if self.transport is None:  # nothing running (waiting to reconnect, or never started)
            if self._group_ended is not None:  # the last one's leftovers may still be ending
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(self._group_ended.wait(), grace_s)
            return
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
            say("the upstream did not stop")
