"""The host side over stdio: frames in on stdin, frames out on stdout, nothing else on stdout.

At start the real stdout is kept on a private descriptor and fd 1 is pointed at stderr, so a stray print from any
library can never corrupt the protocol stream. A JSON-RPC batch is answered with one batch: the answers of its
requests are held until the last one is in (progress and other messages pass at once). What the host has not read
yet is bounded: once the pipe's buffer is full, frames wait in an outbox (progress coalesced per token) and count
towards the backpressure that pauses the upstream; a host that reads nothing at all while its outbox grows past
twice the mark is not read either.
"""

from __future__ import annotations

import asyncio
import os
import stat
import sys
import threading
from collections import Counter
from typing import Any

from mcpwatch.wrapper.core.port import HostPort
from mcpwatch.wrapper.core.pressure import LOW_WATER_BYTES, Outbox
from mcpwatch.wrapper.framing import frames
from mcpwatch.wrapper.framing.batch_answers import BatchAnswers
from mcpwatch.wrapper.framing.lines import LineSplitter


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


class _WriteProtocol(asyncio.Protocol):
    """The host's stdout pipe: tells the front when its buffer is full and when it has drained."""

    def __init__(self, front: StdioFront) -> None:
        self.front = front

    def pause_writing(self) -> None:
        self.front.pipe_full = True

    def resume_writing(self) -> None:
        self.front.pipe_full = False
        self.front.drain()

    def connection_lost(self, exc: Exception | None) -> None:
        self.front.host_gone()


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
    connection: str | None = "stdio"  # one host, on this process's stdin and stdout, for the wrapper's whole life
    key_prefix = ""  # its host's ids are the log's request ids as they are

    def __init__(self, core: HostPort) -> None:
        self.core = core
        self._out_fd = os.dup(1)
        os.dup2(2, 1)
        sys.stdout = sys.stderr
        self._writer: asyncio.WriteTransport | None = None
        self._reader: asyncio.ReadTransport | None = None
        self.outbox = Outbox()
        self.pipe_full = False
        self.reading_paused = False
        self.closed = False
        self._batches: list[_Batch] = []

    def send(self, message: dict[str, Any]) -> None:
        if self.closed:
            return
        if self._batches and "method" not in message:
            key = frames.id_key(message.get("id"))
            for batch in self._batches:
                if batch.expected[key] > 0:
                    batch.take(key, message)
                    if batch.complete:
                        self._batches.remove(batch)
                        self._write(batch.answers.body())
                    return
        self._write(frames.encode(message), message)

    def send_raw(self, frame: bytes, message: dict[str, Any]) -> None:
        """`send` for an answer already encoded as `frame` (a plain call's, in the upstream's bytes): written as it
        is, unless a batch is waiting for answers (then it may be one of them, held as `message`)."""
        if self._batches:
            self.send(message)
        elif not self.closed:
            self._write(frame, message)

    def _write(self, data: bytes, message: Any = None) -> None:
        writer = self._writer
        if writer is None:
            try:
                os.write(self._out_fd, data)
            except OSError:
                self.closed = True
            return
        if self.pipe_full or self.outbox:
            if self.outbox.push(message, data, keep_message=False):
                self.core.pressure.note_coalesced()
        else:
            writer.write(data)
            if not self.pipe_full and not writer.get_write_buffer_size():
                return  # all written at once: nothing unsent (the common case, kept cheap)
        self._report()

    def drain(self) -> None:
        """The pipe took what it held: hand it waiting frames until it is full again."""
        writer = self._writer
        if writer is None or writer.is_closing():
            return
        while self.outbox and not self.pipe_full:
            writer.write(self.outbox.pop()[1])
        self._report()

    def _report(self) -> None:
        writer = self._writer
        unsent = self.outbox.bytes + (writer.get_write_buffer_size() if writer is not None else 0)
        pressure = self.core.pressure
        pressure.set_unsent(self, unsent)
        reader = self._reader
        if reader is None:
            return
        if not self.reading_paused and self.outbox.bytes > 2 * pressure.high_water:
            self.reading_paused = True  # it reads nothing and still asks: its new requests wait in its own pipe
            reader.pause_reading()
        elif self.reading_paused and unsent <= LOW_WATER_BYTES:
            self.reading_paused = False
            reader.resume_reading()

    def host_gone(self) -> None:
        """The host closed its end of our stdout: nothing more can reach it; what waited is let go."""
        self.closed = True
        self.outbox.clear()
        self.core.pressure.set_unsent(self, 0)

    async def _open_writer(self) -> None:
        loop = asyncio.get_running_loop()
        if not _is_pipe(self._out_fd):
            return  # plain blocking writes are fine there
        try:
            transport, _ = await loop.connect_write_pipe(
                lambda: _WriteProtocol(self), os.fdopen(self._out_fd, "wb", buffering=0)
            )
        except (ValueError, OSError):
            return  # a regular file or similar: plain blocking writes are fine there
        self._writer = transport

    async def serve(self) -> None:
        """Forward host frames until the host closes stdin."""
        await self._open_writer()
        loop = asyncio.get_running_loop()
        done: asyncio.Future[None] = loop.create_future()
        splitter = LineSplitter(
            self._host_line, lambda size, head: self.core.host_oversize(self, size, head), self.core.frame_limit()
        )
        try:
            if not _is_pipe(0):
                raise ValueError("not a pipe")
            self._reader, _ = await loop.connect_read_pipe(
                lambda: _ReadProtocol(splitter, done), os.fdopen(0, "rb", buffering=0)
            )
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
        loop.call_soon_threadsafe(_resolve, done)

    def _host_line(self, line: bytes) -> None:
        first = line[:1]
        if first == b"[" or (first.isspace() and line.lstrip()[:1] == b"["):
            try:
                items = frames.decode(line)
            except ValueError:
                items = None
            if isinstance(items, list) and items:
                batch = _Batch(items, self.core.frame_limit())
                if not batch.complete:
                    self._batches.append(batch)
                for item in items:
                    self.core.host_message(self, item)
                return
        self.core.host_frame(self, line)  # a lone message, or a line that is not a non-empty batch

    async def close(self) -> None:
        self.closed = True
        if self._writer is not None:
            self._writer.close()


class _Batch:
    """The answers a batch is owed (one per request, and one per invalid item, as JSON-RPC says) and those in."""

    def __init__(self, items: list[Any], frame_limit: int) -> None:
        self.expected: Counter[Any] = Counter()
        for item in items:
            kind = frames.kind_of(item)
            if kind == frames.REQUEST:
                self.expected[frames.id_key(item["id"])] += 1
            elif kind == frames.INVALID:
                request_id = item.get("id") if isinstance(item, dict) else None
                self.expected[frames.id_key(request_id if frames.valid_id(request_id) else None)] += 1
        self.missing = sum(self.expected.values())
        self.answers = BatchAnswers(frame_limit, "[limits] max_frame_mb")  # one line a host reads: one frame

    def take(self, key: Any, message: dict[str, Any]) -> None:
        self.expected[key] -= 1
        self.missing -= 1
        self.answers.add(message)

    @property
    def complete(self) -> bool:
        return self.missing == 0


def _resolve(done: asyncio.Future[None]) -> None:
    if not done.done():
        done.set_result(None)
