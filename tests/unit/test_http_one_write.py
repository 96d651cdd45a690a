"""An answer of known length leaves in one write: its head and its body together. uvicorn wrote the head as soon as
the app started the response, then the body, so every answer cost two system calls and woke its host twice (the
host reads the head, then waits for the body). Counted on the connection's writes, never timed. An event stream's
head still leaves at once: a host waits for it before any event comes."""

from __future__ import annotations

import asyncio
from typing import Any
from unittest import mock

from uvicorn.config import Config
from uvicorn.server import ServerState

from mcpwatch.httpserve.asgi import respond
from mcpwatch.httpserve.bounds import ConnectionLimits
from mcpwatch.httpserve.limits import limited_protocol


async def _answer(scope: Any, receive: Any, send: Any) -> None:
    await respond(send, 200, b'{"jsonrpc":"2.0","id":1,"result":{}}', b"application/json")


async def _stream(scope: Any, receive: Any, send: Any) -> None:
    await send({"type": "http.response.start", "status": 200, "headers": [(b"content-type", b"text/event-stream")]})
    await asyncio.sleep(3600)  # no event yet: the host must still have the head


def _writes(app: Any, request: bytes) -> list[bytes]:
    """What the server wrote to the connection, write by write, once the app has run as far as it goes."""
    config = Config(app=app, http="httptools", lifespan="off", log_level="critical")
    config.load()
    loop = asyncio.new_event_loop()
    written: list[bytes] = []
    try:
        protocol_class: Any = limited_protocol(ConnectionLimits())
        protocol = protocol_class(config=config, server_state=ServerState(), app_state={}, _loop=loop)
        transport = mock.Mock(
            get_extra_info=lambda name, default=None: default,
            is_closing=lambda: False,
            write=lambda data: written.append(bytes(data)),
        )
        protocol.connection_made(transport)
        protocol.data_received(request)
        for _ in range(10):
            loop.run_until_complete(asyncio.sleep(0))
        protocol.connection_lost(None)
    finally:
        for task in asyncio.all_tasks(loop):
            task.cancel()
        loop.run_until_complete(asyncio.sleep(0))
        loop.close()
    return written


POST = b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 2\r\n\r\n{}"


def test_an_answer_of_known_length_is_one_write_with_the_same_bytes() -> None:
    written = _writes(_answer, POST)
    assert len(written) == 1, written
    head, _, body = written[0].partition(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 200 OK\r\n") and b"\r\ncontent-length: 36" in head
    assert body == b'{"jsonrpc":"2.0","id":1,"result":{}}'


def test_two_answers_on_one_connection_are_one_write_each() -> None:
    assert len(_writes(_answer, POST + POST)) == 2


def test_an_event_streams_head_is_written_before_any_event() -> None:
    written = _writes(_stream, POST)
    assert len(written) == 1 and written[0].startswith(b"HTTP/1.1 200 OK\r\n") and written[0].endswith(b"\r\n\r\n")


def test_a_head_request_gets_its_head_though_no_body_follows() -> None:
    written = _writes(_answer, b"HEAD /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
    assert len(written) == 1 and written[0].startswith(b"HTTP/1.1 200 OK\r\n") and written[0].endswith(b"\r\n\r\n")
