"""The operator endpoint listens from the wrapper's start but loads its HTTP server (uvicorn) only for its first
client: a wrapper nobody looks at never pays for it, and whoever connects is answered as before."""

from __future__ import annotations

import asyncio
import socket
import urllib.request

from mcpwatch.httpserve.asgi import respond
from mcpwatch.wrapper.operator.operator_server import OperatorServer


async def _ok(scope, receive, send) -> None:
    if scope["type"] == "lifespan":
        while (await receive())["type"] != "lifespan.shutdown":
            await send({"type": "lifespan.startup.complete"})
        await send({"type": "lifespan.shutdown.complete"})
    elif scope["type"] == "http":
        await respond(send, 200, b"ok", b"text/plain")


def _get(url: str) -> bytes:
    with urllib.request.urlopen(url, timeout=30) as answer:
        body: bytes = answer.read()
        return body


def test_the_first_client_starts_the_server_and_is_answered() -> None:
    async def scenario() -> tuple[bool, bool, bytes, bytes]:
        server = OperatorServer(_ok)
        url = await server.start()
        for _ in range(20):  # the loop turns; nothing has connected
            await asyncio.sleep(0)
        idle = server.serving
        first = await asyncio.to_thread(_get, url)  # waits in the backlog while the server starts
        again = await asyncio.to_thread(_get, url)
        serving = server.serving
        await server.stop()
        return idle, serving, first, again

    idle, serving, first, again = asyncio.run(scenario())
    assert not idle and serving
    assert first == again == b"ok"


def test_a_wrapper_nobody_looks_at_frees_its_port_at_stop() -> None:
    async def scenario() -> int:
        server = OperatorServer(_ok)
        url = await server.start()
        await server.stop()
        assert not server.serving
        return int(url.split(":")[2].split("/")[0])

    port = asyncio.run(scenario())
    with socket.create_server(("127.0.0.1", port)):  # the socket was closed: the port can be bound again
        pass


def test_an_operator_port_in_use_is_one_clear_line() -> None:
    from mcpwatch.errors import UserError

    with socket.create_server(("127.0.0.1", 0)) as taken:
        port = taken.getsockname()[1]

        async def scenario() -> str:
            try:
                await OperatorServer(_ok, port=port).start()
            except UserError as exc:
                return str(exc)
            return "started"

        said = asyncio.run(scenario())
    assert said.startswith(f"the operator endpoint cannot listen on 127.0.0.1:{port} (") and "\n" not in said
