"""The upstream's HTTP/1.1 client against a real loopback server that writes raw responses: sized and chunked
bodies, streamed events, keep-alive reuse, a kept-alive connection the server closed, refusals and garbage."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager

import pytest

from mcpwatch.wrapper.upstreams.http11 import Client, EventStream, TransportError

pytestmark = pytest.mark.anyio

Handler = Callable[[bytes, asyncio.StreamWriter], Awaitable[bool]]  # returns whether to keep the connection


@asynccontextmanager
async def raw_server(handler: Handler) -> AsyncIterator[tuple[str, list[bytes]]]:
    """Each request head (and body) read whole, then answered by `handler` with raw bytes."""
    seen: list[bytes] = []

    async def serve(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while True:
                head = await reader.readuntil(b"\r\n\r\n")
                sizes = [
                    line.split(b":")[1] for line in head.split(b"\r\n") if line.lower().startswith(b"content-length")
                ]
                length = int(sizes[0]) if sizes else 0
                request = head + await reader.readexactly(length)
                seen.append(request)
                if not await handler(request, writer):
                    break
        except (asyncio.IncompleteReadError, ConnectionError, asyncio.CancelledError):
            pass
        writer.close()

    server = await asyncio.start_server(serve, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    try:
        yield f"http://127.0.0.1:{port}/mcp", seen
    finally:
        server.close()


def sized(body: bytes, content_type: bytes = b"application/json", extra: bytes = b"") -> bytes:
    return (
        b"HTTP/1.1 200 OK\r\nContent-Type: "
        + content_type
        + b"\r\nContent-Length: "
        + str(len(body)).encode()
        + b"\r\n"
        + extra
        + b"\r\n"
        + body
    )


async def test_sized_body_headers_and_keep_alive_reuse() -> None:
    async def handler(request: bytes, writer: asyncio.StreamWriter) -> bool:
        writer.write(sized(b'{"ok":1}', extra=b"Mcp-Session-Id: abc\r\n"))
        return True

    client = Client()
    async with raw_server(handler) as (url, seen):
        for _ in range(3):
            reply = await client.request("POST", url, {"Content-Type": "application/json"}, b'{"x":1}')
            assert (reply.status, reply.headers["mcp-session-id"]) == (200, "abc")
            assert await reply.read() == b'{"ok":1}'
            reply.close()
        assert len(client._idle[("http", "127.0.0.1", int(url.split(":")[2].split("/")[0]))]) == 1
        assert seen[0].startswith(b"POST /mcp HTTP/1.1\r\n") and b"Content-Length: 7" in seen[0]
        assert seen[0].endswith(b'{"x":1}') and len(seen) == 3
    client.close()


async def test_chunked_event_stream_arrives_as_it_is_written() -> None:
    release = asyncio.Event()

    async def handler(request: bytes, writer: asyncio.StreamWriter) -> bool:
        writer.write(b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n")
        for part in (b'event: message\r\ndata: {"a":', b"1}\r\n\r\n: comment\r\n\r\n", b"id: 7\ndata:\n\n"):
            writer.write(b"%x\r\n%s\r\n" % (len(part), part))
        await writer.drain()
        await release.wait()
        last = b'data: {"b":2}\ndata: {"c":3}\n\n'
        writer.write(b"%x\r\n%s\r\n0\r\n\r\n" % (len(last), last))
        return True

    received: list[bytes] = []
    events = EventStream(received.append)
    client = Client()
    async with raw_server(handler) as (url, _):
        reply = await client.request("GET", url, {"Accept": "text/event-stream"})
        chunks = reply.chunks()
        while not received:
            events.feed(await anext(chunks))
        assert received == [b'{"a":1}']  # the empty-data event is not dispatched, the comment is skipped
        release.set()
        async for chunk in chunks:
            events.feed(chunk)
        reply.close()
    assert received == [b'{"a":1}', b'{"b":2}\n{"c":3}']
    client.close()


async def test_a_kept_alive_connection_the_server_closed_is_replaced() -> None:
    async def handler(request: bytes, writer: asyncio.StreamWriter) -> bool:
        writer.write(sized(b"{}"))
        await writer.drain()
        return False  # close after each answer, without saying so

    client = Client()
    async with raw_server(handler) as (url, seen):
        for _ in range(3):
            reply = await client.request("POST", url, {}, b"{}")
            assert await reply.read() == b"{}"
            reply.close()
            await asyncio.sleep(0.05)
        assert len(seen) == 3
    client.close()


async def test_unread_body_drops_the_connection_and_errors_are_transport_errors() -> None:
    async def handler(request: bytes, writer: asyncio.StreamWriter) -> bool:
        if b"garbage" in request:
            writer.write(b"this is not HTTP\r\n\r\n")
        elif b"cut" in request:
            writer.write(b"HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\nshort")
            await writer.drain()
            return False
        else:  # half a body, and the rest never comes
            writer.write(b"HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nxxxxx")
        return True

    client = Client()
    async with raw_server(handler) as (url, _):
        reply = await client.request("POST", url, {}, b"half")
        reply.close()  # mid-body: the connection must not be reused
        assert not any(client._idle.values())
        with pytest.raises(TransportError, match="unreadable HTTP response"):
            await client.request("POST", url, {}, b"garbage")
        reply = await client.request("POST", url, {}, b"cut")
        with pytest.raises(TransportError, match="closed"):
            await reply.read()
        reply.close()
    with pytest.raises(TransportError, match="cannot connect"):
        await client.request("POST", url, {}, b"{}")
    with pytest.raises(TransportError, match="not an http"):
        await client.request("POST", "ftp://127.0.0.1/x", {}, b"")
    client.close()


def test_event_stream_handles_line_endings_split_across_chunks() -> None:
    received: list[bytes] = []
    events = EventStream(received.append)
    for piece in (b"data: one\r", b"\n\r", b"\ndata: two\r\r", b"data: three\n", b"\n"):
        events.feed(piece)
    big = b"x" * 100_000
    for i in range(0, len(big), 1000):  # one long event in many chunks
        events.feed((b"data: " if i == 0 else b"") + big[i : i + 1000])
    events.feed(b"\n\n")
    assert received == [b"one", b"two", b"three", big]


async def test_a_body_that_ends_with_the_connection_and_a_stale_connection_retried_once() -> None:
    async def handler(request: bytes, writer: asyncio.StreamWriter) -> bool:
        if b"until-close" in request:  # HTTP/1.0 style: no length, no chunks, the close ends the body
            writer.write(b'HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nConnection: close\r\n\r\n{"ok":2}')
            await writer.drain()
            return False
        writer.write(sized(b"{}"))
        await writer.drain()
        return False  # closes a kept-alive connection without saying so

    client = Client()
    async with raw_server(handler) as (url, seen):
        reply = await client.request("POST", url, {}, b"until-close")
        assert await reply.read() == b'{"ok":2}'
        reply.close()
        reply = await client.request("POST", url, {}, b"first")
        await reply.read()
        reply.close()
        await asyncio.sleep(0.05)  # the server's close arrives: the pool sees it and forgets the connection
        reply = await client.request("POST", url, {}, b"second")
        assert await reply.read() == b"{}"
        reply.close()
        assert [r.rsplit(b"\r\n\r\n", 1)[1] for r in seen] == [b"until-close", b"first", b"second"]
    client.close()
