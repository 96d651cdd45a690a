"""The operator endpoint listens from the wrapper's start but loads its HTTP server (uvicorn) only for its first
client: a wrapper nobody looks at never pays for it, and whoever connects is answered as before."""

from __future__ import annotations

import asyncio
import select
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


def _silent(port: int) -> socket.socket:
    return socket.create_connection(("127.0.0.1", port), timeout=30)


def _ended(sock: socket.socket) -> bool:
    """Whether the server closed this readable connection (closed or reset)."""
    try:
        return sock.recv(1) == b""
    except ConnectionResetError:
        return True


def test_clients_waiting_before_the_server_started_are_under_its_connection_cap() -> None:
    """Any local process may connect first and say nothing, many at once, while the server is still to be loaded:
    they wait in the backlog, and once it runs they are under the cap as any client is (a newcomer closes the one
    quiet longest), so a real request made after them is answered."""
    from mcpwatch.httpserve.bounds import ConnectionLimits

    limits = ConnectionLimits(max_connections=4, head_timeout_s=600.0, idle_timeout_s=600.0, body_grace_s=600.0)

    async def scenario() -> tuple[bytes, int, int]:
        server = OperatorServer(_ok, limits=limits)
        url = await server.start()
        port = int(url.split(":")[2].split("/")[0])
        silent = [_silent(port) for _ in range(20)]  # all connected before the server was loaded
        answer = await asyncio.to_thread(_get, url)
        closed: set[socket.socket] = set()
        loop = asyncio.get_running_loop()
        deadline = loop.time() + 30
        while len(closed) < 17 and loop.time() < deadline:
            readable, _, _ = await asyncio.to_thread(select.select, silent, [], [], 0.05)
            closed.update(s for s in readable if _ended(s))
        still_open = sum(1 for s in silent if s not in closed and not select.select([s], [], [], 0)[0])
        for sock in silent:
            sock.close()
        await server.stop()
        return answer, len(closed), still_open

    answer, closed, still_open = asyncio.run(scenario())
    assert answer == b"ok"
    assert closed == 17 and still_open == 3  # 3 silent ones and the request: the cap of 4


def test_a_wrapper_stopping_while_its_first_client_starts_the_server_ends_it_all() -> None:
    """The wrapper stops while the first client's connection is loading the server: stop returns, the client's
    connection is closed, the port is free and no task is left running."""

    async def scenario() -> tuple[int, bool, list[asyncio.Task[object]]]:
        server = OperatorServer(_ok)
        url = await server.start()
        port = int(url.split(":")[2].split("/")[0])
        client = _silent(port)
        while not server.serving:  # the server is being started for it
            await asyncio.sleep(0)
        await asyncio.wait_for(server.stop(), 30)
        said = await asyncio.to_thread(_ended, client)
        client.close()
        left = [t for t in asyncio.all_tasks() if t is not asyncio.current_task()]
        return port, said, left

    port, said, left = asyncio.run(scenario())
    assert said and left == []
    with socket.create_server(("127.0.0.1", port)):  # the socket was closed: the port can be bound again
        pass
