"""The host side over stdio: frames in on stdin, frames out on stdout, nothing else on stdout.

At start the real stdout is kept on a private descriptor and fd 1 is pointed at stderr, so a stray print from any
library can never corrupt the protocol stream.
"""

from __future__ import annotations

import asyncio
import os
import stat
import sys
import threading
from typing import Any

from mcpwatch.wrapper import frames
from mcpwatch.wrapper.lines import LineSplitter
from mcpwatch.wrapper.port import HostPort


class _ReadProtocol(asyncio.Protocol):
    def __init__(self, splitter: LineSplitter, done: asyncio.Future[None]) -> None:
        self.splitter = splitter
        self.done = done

    def data_received(self, data: bytes) -> None:
        self.splitter.feed(data)

    def eof_received(self) -> bool:
        return False

    def connection_lost(self, exc: Exception | None) -> None:
        self.splitter.finish()
        if not self.done.done():
            self.done.set_result(None)


def _is_pipe(fd: int) -> bool:
    """Whether the event loop can watch `fd`: a pipe or a socket. A file, /dev/null or a terminal cannot be
    (uvloop aborts the process on them), so those are read by a thread and written by plain writes."""
    try:
        mode = os.fstat(fd).st_mode
    except OSError:
        return False
    return stat.S_ISFIFO(mode) or stat.S_ISSOCK(mode)


class StdioFront:
    name = "stdio"

    def __init__(self, core: HostPort) -> None:
        self.core = core
        self._out_fd = os.dup(1)
        os.dup2(2, 1)
        sys.stdout = sys.stderr
        self._writer: asyncio.WriteTransport | None = None
        self.closed = False

    def send(self, message: dict[str, Any]) -> None:
        if self.closed:
            return
        data = frames.encode(message)
        if self._writer is not None:
            self._writer.write(data)
            return
        try:
            os.write(self._out_fd, data)
        except OSError:
            self.closed = True

    async def _open_writer(self) -> None:
        loop = asyncio.get_running_loop()
        if not _is_pipe(self._out_fd):
            return  # plain blocking writes are fine there
        try:
            transport, _ = await loop.connect_write_pipe(asyncio.Protocol, os.fdopen(self._out_fd, "wb", buffering=0))
        except (ValueError, OSError):
            return  # a regular file or similar: plain blocking writes are fine there
        self._writer = transport  # type: ignore[assignment]

    async def serve(self) -> None:
        """Forward host frames until the host closes stdin."""
        await self._open_writer()
        loop = asyncio.get_running_loop()
        done: asyncio.Future[None] = loop.create_future()
        splitter = LineSplitter(lambda line: self.core.host_frame(self, line), self._host_oversize)
        try:
            if not _is_pipe(0):
                raise ValueError("not a pipe")
            await loop.connect_read_pipe(lambda: _ReadProtocol(splitter, done), os.fdopen(0, "rb", buffering=0))
        except (ValueError, OSError):
            threading.Thread(target=self._read_blocking, args=(loop, splitter, done), daemon=True).start()
        await done

    def _read_blocking(
        self, loop: asyncio.AbstractEventLoop, splitter: LineSplitter, done: asyncio.Future[None]
    ) -> None:
        with os.fdopen(0, "rb", buffering=0) as stdin:
            while chunk := stdin.read(65536):
                loop.call_soon_threadsafe(splitter.feed, chunk)
        loop.call_soon_threadsafe(splitter.finish)
        loop.call_soon_threadsafe(lambda: done.done() or done.set_result(None))

    def _host_oversize(self, size: int) -> None:
        self.core.count_frame_error()
        self.core.warn(f"host sent a frame of {size} bytes, over the limit; discarded")
        self.send(frames.error_response(None, frames.INVALID_REQUEST, "Invalid Request: frame too large"))

    async def close(self) -> None:
        self.closed = True
        if self._writer is not None:
            self._writer.close()
