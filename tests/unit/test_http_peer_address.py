"""The address mcpwatch's HTTP servers log for a request is the peer that connected. uvicorn, by default, takes
X-Forwarded-For as the client's address from any peer on 127.0.0.1, and every local process is one: a process
refused a host session at the front could have the log name any address it liked."""

from __future__ import annotations

import asyncio
from typing import Any

from mcpwatch.httpserve.asgi import quiet_server, respond, stop_server
from mcpwatch.httpserve.bounds import ConnectionLimits
from mcpwatch.ports import free_port


def test_a_forwarded_for_header_does_not_change_the_peer_address() -> None:
    port = free_port()
    seen: list[Any] = []

    async def app(scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] == "http":
            seen.append(scope.get("client"))
            await respond(send, 200, b"ok", b"text/plain")

    async def scenario() -> bytes:
        server = quiet_server(app, "127.0.0.1", port, ConnectionLimits())
        task = asyncio.ensure_future(server.serve())
        while not server.started:
            await asyncio.sleep(0.01)
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        writer.write(b"GET / HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Forwarded-For: 203.0.113.9\r\nConnection: close\r\n\r\n")
        answer = await asyncio.wait_for(reader.read(), 30)
        writer.close()
        await stop_server(server, task)
        return answer

    assert asyncio.run(scenario()).startswith(b"HTTP/1.1 200")
    assert len(seen) == 1 and seen[0][0] == "127.0.0.1", seen
