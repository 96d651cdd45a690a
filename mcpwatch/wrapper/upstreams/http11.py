"""A lean HTTP/1.1 client for the Streamable HTTP upstream: keep-alive connections on asyncio protocols, responses
parsed by httptools (C), bodies streamed as they arrive, TLS by the standard library.

The wrapper sits on every call's path, and a general-purpose client (pure-Python parsing, several stream layers)
cost it more than the upstream itself. This one does only what MCP over HTTP needs: one request at a time per
connection, `Content-Length` request bodies, chunked or sized response bodies, server-sent events.
"""

from __future__ import annotations

import asyncio
import ssl
from collections import deque
from collections.abc import AsyncIterator, Callable
from urllib.parse import urlsplit

import httptools

CONNECT_TIMEOUT_S = 30.0
IDLE_PER_ORIGIN = 32  # kept-alive connections per origin; more may be open while busy
BUFFER_BYTES = 1024 * 1024  # of one response, received and not yet consumed
TURN_BYTES = 16 * 1024  # of a response consumed in one turn of the loop (a flood's events take ~40 µs each)
MAX_EVENT_BYTES = 16 * 1024 * 1024  # one event's data, as the frame cap (`[limits] max_frame_mb`) sets it
STALE_AFTER_S = 1.0  # a kept-alive connection idle this long may have been closed under us: one retry is safe


class TransportError(Exception):
    """The request could not be sent or its response not read: refused, reset, timed out, unparseable."""


class Response:
    """Status and headers at once; the body as it arrives (`chunks()`, `read()`). `close()` when done with it."""

    __slots__ = ("_buffered", "_chunks", "_complete", "_connection", "_error", "_waiter", "headers", "status")

    def __init__(self, connection: _Connection, status: int, headers: dict[str, str]) -> None:
        self._connection = connection
        self.status = status
        self.headers = headers  # lower-case names
        self._chunks: deque[bytes] = deque()
        self._buffered = 0  # bytes received and not yet taken: past BUFFER_BYTES the connection is not read
        self._complete = False
        self._error: Exception | None = None
        self._waiter: asyncio.Future[None] | None = None

    def _feed(self, data: bytes) -> None:
        self._chunks.append(data)
        self._buffered += len(data)
        if self._buffered > BUFFER_BYTES:
            self._connection.update_reading()
        self._wake()

    def _end(self, error: Exception | None = None) -> None:
        self._complete = True
        self._error = error
        self._wake()

    def _wake(self) -> None:
        waiter = self._waiter
        if waiter is not None and not waiter.done():
            waiter.set_result(None)

    async def chunks(self) -> AsyncIterator[bytes]:
        """The body as it arrives. Between two chunks already here the loop gets a turn: a response streaming
        faster than it is consumed must not hold up every other one (their answers wait for the loop). A large
        read is handed on in slices of TURN_BYTES for the same reason."""
        while True:
            while self._chunks:
                chunk = self._chunks.popleft()
                self._buffered -= len(chunk)
                if self._buffered <= BUFFER_BYTES // 2:
                    self._connection.update_reading()
                for start in range(0, len(chunk), TURN_BYTES):
                    if start:
                        await asyncio.sleep(0)
                    yield chunk[start : start + TURN_BYTES] if len(chunk) > TURN_BYTES else chunk
                if self._chunks:
                    await asyncio.sleep(0)
            if self._complete:
                if self._error is not None:
                    raise self._error
                return
            self._waiter = asyncio.get_running_loop().create_future()
            await self._waiter
            self._waiter = None

    async def read(self) -> bytes:
        return b"".join([chunk async for chunk in self.chunks()])

    async def read_capped(self, limit: int) -> tuple[bytes, int]:
        """The body and its size if it is at most `limit` bytes; else, as soon as it crosses the limit, its first
        64 KiB and the bytes read so far (the caller then closes the response, which drops the connection)."""
        parts: list[bytes] = []
        size = 0
        async for chunk in self.chunks():
            size += len(chunk)
            parts.append(chunk)
            if size > limit:
                return b"".join(parts)[: 64 * 1024], size
        return b"".join(parts), size

    def close(self) -> None:
        """Give the connection back if the body was read to its end, else drop it (its stream is mid-body)."""
        self._connection.release(self)


class _Connection(asyncio.Protocol):
    def __init__(self, pool: Client, key: tuple[str, str, int]) -> None:
        self.pool = pool
        self.key = key
        self.transport: asyncio.Transport | None = None
        self.closed = False
        self.parser = httptools.HttpResponseParser(self)
        self._headers: dict[str, str] = {}
        self._head: asyncio.Future[Response] | None = None
        self._response: Response | None = None
        self._complete = False
        self._keep_alive = False
        self.idle_since = 0.0
        self.reading_paused = False
        self.received = False  # any response byte on this connection's current request

    # asyncio.Protocol
    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport  # type: ignore[assignment]  # a connection's transport is a Transport
        self.update_reading()

    def update_reading(self) -> None:
        """Read from the socket unless the hosts are behind (the pool is paused) or this response's consumer is."""
        response = self._response
        paused = self.pool.reading_paused or (response is not None and response._buffered > BUFFER_BYTES)
        if paused != self.reading_paused and self.transport is not None and not self.closed:
            self.reading_paused = paused
            if paused:
                self.transport.pause_reading()
            else:
                self.transport.resume_reading()

    def data_received(self, data: bytes) -> None:
        self.received = True
        try:
            self.parser.feed_data(data)
        except httptools.HttpParserError as exc:
            self._fail(TransportError(f"unreadable HTTP response: {exc}"))
            self.abort()

    def connection_lost(self, exc: Exception | None) -> None:
        self.closed = True
        self.pool._open.discard(self)
        response = self._response
        if exc is None and response is not None and not self._complete and self._until_close(response):
            self._complete = True  # a body without length or chunks ends where the connection does
            response._end()
            return
        self._fail(TransportError(f"connection closed: {exc}" if exc else "connection closed by the server"))

    @staticmethod
    def _until_close(response: Response) -> bool:
        headers = response.headers
        return "content-length" not in headers and "chunked" not in headers.get("transfer-encoding", "").lower()

    # httptools callbacks
    def on_header(self, name: bytes, value: bytes) -> None:
        self._headers[name.decode("latin-1").lower()] = value.decode("latin-1")

    def on_headers_complete(self) -> None:
        self._response = Response(self, self.parser.get_status_code(), self._headers)
        if self._head is not None and not self._head.done():
            self._head.set_result(self._response)

    def on_body(self, body: bytes) -> None:
        if self._response is not None:
            self._response._feed(body)

    def on_message_complete(self) -> None:
        self._complete = True
        self._keep_alive = self.parser.should_keep_alive()  # only valid now: the parser resets after this
        if self._response is not None:
            self._response._end()

    # the pool's side
    def _fail(self, error: Exception) -> None:
        if self._head is not None and not self._head.done():
            self._head.set_exception(error)
        if self._response is not None and not self._complete:
            self._response._end(error)

    async def request(self, head: bytes, body: bytes) -> Response:
        assert self.transport is not None
        self._headers = {}
        self._response = None
        self._complete = self._keep_alive = self.received = False
        self._head = asyncio.get_running_loop().create_future()
        self.transport.write(head + body if len(body) < 65536 else head)
        if len(body) >= 65536:
            self.transport.write(body)
        return await self._head

    def release(self, response: Response) -> None:
        if response is not self._response:
            return
        self._response = None
        if self._complete and self._keep_alive and not self.closed:
            self.update_reading()  # its response's backlog no longer holds the socket
            self.pool._idle_connection(self)
        else:
            self.abort()

    def abort(self) -> None:
        self.closed = True
        if self.transport is not None:
            self.transport.abort()


class Client:
    """Connections kept alive per origin (scheme, host, port), one request at a time on each."""

    def __init__(self, *, connect_timeout_s: float = CONNECT_TIMEOUT_S) -> None:
        self.connect_timeout_s = connect_timeout_s
        self._idle: dict[tuple[str, str, int], list[_Connection]] = {}
        self._busy: set[_Connection] = set()
        self._open: set[_Connection] = set()  # every connection not yet closed, streaming ones too
        self._ssl: ssl.SSLContext | None = None
        self.reading_paused = False

    def pause_reading(self) -> None:
        """Read no response bytes on any connection until `resume_reading` (the hosts are behind)."""
        if not self.reading_paused:
            self.reading_paused = True
            for connection in list(self._open):
                connection.update_reading()

    def resume_reading(self) -> None:
        if self.reading_paused:
            self.reading_paused = False
            for connection in list(self._open):
                connection.update_reading()

    async def request(self, method: str, url: str, headers: dict[str, str], body: bytes = b"") -> Response:
        """Send a request; return once the response's status and headers are in. Raises TransportError."""
        parts = urlsplit(url)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise TransportError(f"not an http(s) URL: {url}")
        port = parts.port or (443 if parts.scheme == "https" else 80)
        key = (parts.scheme, parts.hostname, port)
        target = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
        host = parts.netloc.rpartition("@")[2]
        lines = [f"{method} {target} HTTP/1.1", f"Host: {host}", f"Content-Length: {len(body)}"]
        lines += [f"{name}: {value}" for name, value in headers.items()]
        head = ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1")
        connection = self._take_idle(key)
        if connection is not None:
            stale = asyncio.get_running_loop().time() - connection.idle_since >= STALE_AFTER_S
            try:
                return await self._send(connection, head, body)
            except TransportError:
                # A server closes an idle kept-alive connection as it pleases; if it did so as we reused it (not a
                # byte came back), the request never reached it: once more on a fresh one. A connection that was
                # busy a moment ago failed for another reason, and the request may have been taken: no retry.
                if not stale or connection.received:
                    raise
        return await self._send(await self._connect(key), head, body)

    async def _send(self, connection: _Connection, head: bytes, body: bytes) -> Response:
        self._busy.add(connection)
        try:
            return await connection.request(head, body)
        except BaseException:
            connection.abort()
            raise
        finally:
            self._busy.discard(connection)

    def _take_idle(self, key: tuple[str, str, int]) -> _Connection | None:
        idle = self._idle.get(key)
        while idle:
            connection = idle.pop()
            if not connection.closed:
                return connection
        return None

    def _idle_connection(self, connection: _Connection) -> None:
        connection.idle_since = asyncio.get_running_loop().time()
        idle = self._idle.setdefault(connection.key, [])
        if len(idle) < IDLE_PER_ORIGIN:
            idle.append(connection)
        else:
            connection.abort()

    async def _connect(self, key: tuple[str, str, int]) -> _Connection:
        scheme, host, port = key
        loop = asyncio.get_running_loop()
        factory: Callable[[], _Connection] = lambda: _Connection(self, key)  # noqa: E731
        tls = self._tls() if scheme == "https" else None
        try:
            _, connection = await asyncio.wait_for(
                loop.create_connection(factory, host, port, ssl=tls, server_hostname=host if tls else None),
                self.connect_timeout_s,
            )
        except TimeoutError:
            raise TransportError(f"connecting to {host}:{port} timed out") from None
        except OSError as exc:
            raise TransportError(f"cannot connect to {host}:{port}: {exc.strerror or exc}") from None
        self._open.add(connection)
        return connection

    def _tls(self) -> ssl.SSLContext:
        if self._ssl is None:
            self._ssl = ssl.create_default_context()
        return self._ssl

    def close(self) -> None:
        for connection in list(self._open):
            connection.abort()
        self._open.clear()
        self._idle.clear()


class EventStream:
    """Server-sent events, fed bytes as they arrive: `data` of each event to `on_event` (comments, ids ignored).

    A long event arriving in many chunks is joined once, at its end, not re-scanned on every chunk. An event (or a
    single line) longer than `max_event_bytes` is never held: it is reported to `on_oversize(size, head)` the moment
    it crosses the cap, with its first bytes (where its JSON-RPC id usually is), then discarded as it streams past
    (`dropping` says so meanwhile)."""

    __slots__ = (
        "_data",
        "_data_len",
        "_head",
        "_max",
        "_on_event",
        "_on_oversize",
        "_oversize",
        "_partial",
        "_partial_len",
        "_skip_line",
    )

    def __init__(
        self,
        on_event: Callable[[bytes], None],
        on_oversize: Callable[[int, bytes], None] | None = None,
        max_event_bytes: int = MAX_EVENT_BYTES,
    ) -> None:
        self._on_event = on_event
        self._on_oversize = on_oversize
        self._max = max_event_bytes
        self._partial: list[bytes] = []  # the current line's chunks, before its end arrives
        self._partial_len = 0
        self._data: list[bytes] = []
        self._data_len = 0
        self._oversize = 0  # bytes of the current event discarded so far (0: it is within the cap)
        self._head = b""
        self._skip_line = False  # inside a line too long to hold, until its end

    def feed(self, chunk: bytes) -> None:
        if not chunk:
            return
        if self._skip_line:
            cut = _line_end(chunk)
            if cut < 0:
                self._oversize += len(chunk)
                return
            self._oversize += cut
            self._skip_line = False
            chunk = chunk[cut + (2 if chunk.startswith(b"\r\n", cut) else 1) :]
            if not chunk:
                return
        if b"\n" not in chunk and b"\r" not in chunk:
            self._hold(chunk)
            return
        if self._partial:
            self._partial.append(chunk)
            chunk = b"".join(self._partial)
            self._partial = []
            self._partial_len = 0
        if chunk.endswith(b"\r"):  # maybe the first half of a CRLF: keep it for the next chunk
            self._hold(chunk)
            return
        if b"\r" in chunk:
            chunk = chunk.replace(b"\r\n", b"\n").replace(b"\r", b"\n")
        *lines, rest = chunk.split(b"\n")
        for line in lines:
            if not line:
                self._dispatch()
            elif line.startswith(b"data:"):
                value = line[5:]
                self._add_data(value[1:] if value.startswith(b" ") else value)
        if rest:
            self._hold(rest)

    def _hold(self, part: bytes) -> None:
        """Keep the start of a line until its end arrives; a line over the cap is dropped as it comes."""
        if self._partial_len + len(part) <= self._max:
            self._partial.append(part)
            self._partial_len += len(part)
            return
        line = b"".join(self._partial) + part[: 64 * 1024]
        crossing = not self._oversize
        if crossing:
            self._start_oversize(line[5:].lstrip(b" ") if line.startswith(b"data:") else b"")
        self._oversize += self._partial_len + len(part)
        self._partial = []
        self._partial_len = 0
        self._skip_line = True
        if crossing:
            self._report()

    def _add_data(self, value: bytes) -> None:
        if self._oversize:
            self._oversize += len(value) + 1
        elif self._data_len + len(value) > self._max:
            self._start_oversize(value)
            self._oversize += len(value)
            self._report()
        else:
            self._data.append(value)
            self._data_len += len(value) + 1

    def _start_oversize(self, value: bytes) -> None:
        self._head = (b"\n".join([*self._data, value[: 64 * 1024]]))[: 64 * 1024]
        self._oversize = self._data_len
        self._data = []
        self._data_len = 0

    def _report(self) -> None:
        head, self._head = self._head, b""
        if self._on_oversize is not None:
            self._on_oversize(self._oversize, head)

    @property
    def dropping(self) -> bool:
        """Inside an event over the cap (reported already), until it ends."""
        return bool(self._oversize)

    def _dispatch(self) -> None:
        if self._oversize:
            self._oversize = 0  # reported when it crossed the cap
            return
        if self._data:
            data = b"\n".join(self._data)
            self._data = []
            self._data_len = 0
            if data:  # an event whose data is empty is not dispatched (the SSE rules)
                self._on_event(data)


def _line_end(chunk: bytes) -> int:
    """Index of the first line ending (LF or CR) in the chunk, else -1."""
    ends = [i for i in (chunk.find(b"\n"), chunk.find(b"\r")) if i >= 0]
    return min(ends) if ends else -1
