"""Attacks on a real `mcpwatch wrap --listen …` front, each refused or bounded while a real host stays served."""

from __future__ import annotations

import asyncio
import re
import socket
import subprocess
import sys
import time

import httpx2
import pytest
from front_tools import (
    Host,
    closed,
    listening_wrapper,
    post_bytes,
    raw_request,
    rpc,
    served_throughout,
    status_of,
    still_open,
)
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client

from mcpwatch.cli import main
from mcpwatch.ports import free_port

from checkout import REPO, mcpwatch_cmd
from waiting import eventually
from wraptools import RAW_SERVER

pytestmark = pytest.mark.anyio
PING = b'{"jsonrpc":"2.0","id":1,"method":"ping"}'


def wrap_exits(*args: str) -> subprocess.CompletedProcess[str]:
    command = mcpwatch_cmd("wrap", "--no-log", *args, "--", sys.executable, RAW_SERVER)
    return subprocess.run(command, cwd=REPO, capture_output=True, text=True, timeout=30, stdin=subprocess.DEVNULL)


def wrap_refuses(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, list[str]]:
    """`mcpwatch wrap ARGS -- raw server` in this process, refused before anything starts: its exit code and the
    lines it wrote to stderr (the first case above shows the same through a process of its own)."""
    try:
        code = main(["wrap", "--no-log", *args, "--", sys.executable, RAW_SERVER])
    except SystemExit as exc:
        code = int(exc.code or 0)
    return code, capsys.readouterr().err.strip().splitlines()


def test_an_address_other_machines_reach_needs_allow_remote_from_the_command_line():
    done = wrap_exits("--listen", f"http://0.0.0.0:{free_port()}/mcp")
    assert done.returncode == 2
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and "reachable from other machines: add --allow-remote" in lines[0], done.stderr
    assert "Traceback" not in done.stderr


@pytest.mark.parametrize("host", ["0.0.0.0", "[::]", "192.0.2.1"])
def test_an_address_other_machines_reach_needs_allow_remote(host, capsys):
    code, lines = wrap_refuses(capsys, "--listen", f"http://{host}:{free_port()}/mcp")
    assert code == 2
    assert len(lines) == 1 and "reachable from other machines: add --allow-remote" in lines[0], lines


def test_token_options_are_checked_before_anything_starts(tmp_path, capsys):
    short = tmp_path / "short"
    short.write_text("abc\n")
    code, lines = wrap_refuses(capsys, "--listen", f"http://127.0.0.1:{free_port()}/mcp", "--token-file", str(short))
    assert code == 2 and len(lines) == 1 and "must hold one token of 16" in lines[0]
    absent = tmp_path / "absent"
    code, lines = wrap_refuses(capsys, "--listen", f"http://127.0.0.1:{free_port()}/mcp", "--token-file", str(absent))
    assert code == 2 and len(lines) == 1 and "cannot read it" in lines[0]
    code, lines = wrap_refuses(capsys, "--allow-remote")
    assert code == 2 and len(lines) == 1 and "only apply to --listen" in lines[0]


async def test_remote_listening_prints_a_token_once_and_requires_it(tmp_path):
    async with listening_wrapper(tmp_path, "--allow-remote", host="0.0.0.0") as front:
        found = await eventually(lambda: re.findall(r"Authorization: Bearer ([\w-]+)", front.stderr), 5, "the token")
        assert len(found) == 1, front.stderr
        token = found[0]
        url = f"http://127.0.0.1:{front.port}/mcp"
        async with httpx2.AsyncClient(timeout=10) as http:
            for wrong in ({}, {"Authorization": "Bearer nope"}, {"Authorization": token}):
                refused = await http.post(url, json=rpc(1, "ping"), headers=wrong)
                assert refused.status_code == 401 and refused.headers["www-authenticate"] == "Bearer"
                assert token not in refused.text
            bearer = {"Authorization": f"Bearer {token}"}
            # Host and Origin are still checked: a rebinding page names its own host
            evil = await http.post(url, json=rpc(1, "ping"), headers={**bearer, "Host": "evil.example"})
            assert evil.status_code == 421
            origin = {**bearer, "Origin": "http://evil.example"}
            assert (await http.post(url, json=rpc(1, "ping"), headers=origin)).status_code == 403
            # a host on the LAN names the machine by its address
            lan = {**bearer, "Host": f"192.0.2.10:{front.port}"}
            init = {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "lan", "version": "1"}}
            accept = {"Accept": "application/json, text/event-stream"}
            opened = await http.post(url, json=rpc(1, "initialize", init), headers={**lan, **accept})
            assert opened.status_code == 200 and opened.json()["result"]["serverInfo"]["name"] == "raw-server"
        # a real SDK host with the token is served
        http = create_mcp_http_client(headers=bearer)
        async with http, Client(streamable_http_client(url, http_client=http), mode="legacy") as client:
            assert "echo" in [t.name for t in (await client.list_tools()).tools]
        assert front.stderr.count(token) == 1


async def test_a_token_file_is_required_even_on_loopback(tmp_path):
    token_file = tmp_path / "token"
    token_file.write_text("s3cret-token-of-enough-length\n")
    token_file.chmod(0o600)
    async with listening_wrapper(tmp_path, "--token-file", str(token_file)) as front:
        async with httpx2.AsyncClient(timeout=10) as http:
            assert (await http.post(front.url, json=rpc(1, "ping"))).status_code == 401
        front.headers = {"Authorization": "Bearer s3cret-token-of-enough-length"}
        async with Host(front) as host:
            await host.ping()
        assert "s3cret" not in front.stderr


async def test_host_and_origin_are_checked_on_any_loopback_address(tmp_path):
    # 127.0.0.2 is loopback (only this machine reaches it): no --allow-remote, the same Host and Origin checks.
    async with (
        listening_wrapper(tmp_path, host="127.0.0.2") as front,
        Host(front) as host,
        served_throughout(host),
        httpx2.AsyncClient(timeout=10) as http,
    ):
        cases = {
            "evil.example": 421,
            f"evil.example:{front.port}": 421,
            f"127.0.0.2.evil.example:{front.port}": 421,
            "0.0.0.0": 421,
            "192.168.1.20": 421,
            "": 421,
        }
        for value, status in cases.items():
            reply = await http.post(front.url, json=rpc(1, "ping"), headers={"Host": value})
            assert reply.status_code == status, (value, reply.status_code)
            assert reply.status_code != 500
        for origin in ("http://evil.example", "null", "http://127.0.0.1.evil.example", "file://"):
            reply = await http.post(front.url, json=rpc(1, "ping"), headers={"Origin": origin})
            assert reply.status_code == 403, origin
        same = {"Origin": f"http://localhost:{front.port}", **host.headers}
        assert (await http.post(front.url, json=rpc(2, "ping"), headers=same)).json()["result"] == {}
        # duplicate Host (or Origin) headers: refused, whatever the values
        for extra in (
            f"Host: 127.0.0.2:{front.port}\r\n",
            "Host: evil.example\r\n",
            "Origin: http://localhost\r\nOrigin: http://localhost\r\n",
        ):
            raw = await asyncio.to_thread(
                raw_request,
                front.port,
                post_bytes("/mcp", front.port, PING, extra, f"127.0.0.2:{front.port}"),
                "127.0.0.2",
            )
            assert status_of(raw) in (400, 403), (extra, raw[:100])
    assert "Traceback" not in front.stderr


CAPS = "[front]\nmax_body_mb = 1\nmax_header_kb = 16\nidle_timeout_s = 1\nmax_connections = 40\n"


@pytest.fixture(scope="module")
def anyio_backend() -> str:
    """Module-wide, so that the capped wrapper below is one for the module."""
    return "asyncio"


@pytest.fixture(scope="module")
async def capped(tmp_path_factory):
    """One wrapper with CAPS for the tests of the caps: each opens a host session of its own and leaves nothing
    behind that another's checks depend on (its connections closed, its session served or deleted)."""
    async with listening_wrapper(tmp_path_factory.mktemp("capped"), config=CAPS) as front:
        yield front


async def test_bodies_are_capped_and_read_in_linear_time(capped):
    front = capped
    async with Host(front) as host, served_throughout(host):
        # declared too large: refused before a byte of the body is read
        head = post_bytes("/mcp", front.port, b"", "").replace(b"Content-Length: 0", b"Content-Length: 50000000")
        raw = await asyncio.to_thread(raw_request, front.port, head)
        assert status_of(raw) == 413 and b"at most 1048576 bytes" in raw

        # streamed (chunked, no length): refused once past the cap; 8 MiB are offered
        async def chunks():
            for _ in range(128):
                yield b"x" * 65536

        async with httpx2.AsyncClient(timeout=20) as http:
            try:
                reply = await http.post(front.url, content=chunks(), headers=host.headers)
                assert reply.status_code == 413
            except httpx2.TransportError:
                pass  # the server closed the connection while the client was still sending: also a refusal
        # just under the cap, sent in small pieces: one answer (a quadratic join would take minutes)
        padding = "y" * (1024 * 1024 - 200)
        body = ('{"jsonrpc":"2.0","id":"big","method":"ping","params":{"pad":"' + padding + '"}}').encode()

        async def pieces():
            for start in range(0, len(body), 1024):
                yield body[start : start + 1024]

        big = await host.http.post(front.url, content=pieces(), headers=host.headers)
        assert big.status_code == 200 and big.json()["id"] == "big"
    assert "Traceback" not in front.stderr


async def test_huge_headers_are_refused_at_the_cap(capped):
    front = capped
    async with Host(front) as host, served_throughout(host):

        def flood() -> tuple[int, bytes]:
            """Offer a 150 MB header; count what the wrapper took before it answered and closed."""
            sent = 0
            with socket.create_connection(("127.0.0.1", front.port), timeout=10) as sock:
                sock.sendall(f"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:{front.port}\r\nX-Flood: ".encode())
                piece = b"z" * 65536
                try:
                    while sent < 150 * 1024 * 1024:
                        sock.sendall(piece)
                        sent += len(piece)
                except OSError:
                    pass
                reply = b""
                try:
                    while chunk := sock.recv(65536):
                        reply += chunk
                except OSError:
                    pass
            return sent, reply

        sent, reply = await asyncio.to_thread(flood)
        assert reply.startswith(b"HTTP/1.1 431"), reply[:100]
        assert sent < 16 * 1024 * 1024  # the wrapper stopped reading long before 150 MB
        many = "".join(f"X-H{i}: {'v' * 100}\r\n" for i in range(400))  # 40 KB of small headers
        raw = await asyncio.to_thread(raw_request, front.port, post_bytes("/mcp", front.port, PING, many))
        assert status_of(raw) == 431
    assert "Traceback" not in front.stderr


BAD_FIELDS = [
    {"name": "echo", "_meta": {"progressToken": [1, 2]}},
    {"name": "echo", "_meta": {"progressToken": {"a": 1}}},
    {"name": "echo", "_meta": {"progressToken": True}},
    {"name": "echo", "_meta": [1]},
    {"name": ["echo"]},
    {"name": {"x": 1}, "arguments": [1]},
]


async def test_bad_field_types_are_json_rpc_errors_never_500(tmp_path):
    async with listening_wrapper(tmp_path) as front, Host(front) as host:
        for index, params in enumerate(BAD_FIELDS):
            reply = await host.post(rpc(index, "tools/call", params))
            assert reply.status_code in (200, 400), (params, reply.status_code, reply.text)
            answer = reply.json()
            assert answer["id"] == index and ("error" in answer or "result" in answer), (params, answer)
        token_errors = [(await host.post(rpc(f"t{i}", "ping", p))).json() for i, p in enumerate(BAD_FIELDS[:3])]
        assert [e["error"]["code"] for e in token_errors] == [-32602] * 3
        for odd in ([1, 2], "text", 7):  # params that are not an object
            reply = await host.post(rpc("odd", "tools/call", odd))
            assert reply.status_code in (200, 400) and reply.json()["error"]["code"] == -32600
        odd_bodies = [
            b'{"jsonrpc":"2.0","id":1,"method":"ping","params":{"_meta":{"progressToken":1e400}}}',
            b'{"jsonrpc":"2.0","id":100000000000000000000000000000,"method":"ping"}',
            b'{"jsonrpc":"2.0","id":1,"method":["ping"]}',
            b'{"jsonrpc":"2.0","id":1,"method":"ping","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":[1]}}}',
            b'[{"jsonrpc":"2.0","id":1,"method":"ping","params":{"_meta":{"progressToken":{"x":[]}}}}]',
            b'{"jsonrpc":"2.0","id":1,"method":"initialize","params":[1]}',
            b'"just a string"',
            b"\xff\xfe",
        ]
        for body in odd_bodies:
            reply = await host.http.post(front.url, content=body, headers=host.headers)
            assert reply.status_code in (200, 400), (body, reply.status_code, reply.text)
            answer = reply.json()
            assert answer[0 if isinstance(answer, list) else "jsonrpc"], (body, answer)
        batch = [rpc("ok", "ping"), rpc("bad", "ping", {"_meta": {"progressToken": [1]}})]
        answers = {a["id"]: a for a in (await host.post(batch)).json()}
        assert answers["ok"]["result"] == {} and answers["bad"]["error"]["code"] == -32602
        await host.ping()
        # the default body cap: 16 MiB (a 200 MB body is refused from its Content-Length alone)
        head = post_bytes("/mcp", front.port, b"").replace(b"Content-Length: 0", b"Content-Length: 200000000")
        raw = await asyncio.to_thread(raw_request, front.port, head)
        assert status_of(raw) == 413 and b"at most 16777216 bytes" in raw
    assert "Traceback" not in front.stderr and "Exception" not in front.stderr


@pytest.mark.slow
async def test_idle_and_stalled_clients_are_dropped_and_cannot_crowd_out_a_host(capped):
    front = capped
    async with Host(front) as host, served_throughout(host):
        idle = []
        for _ in range(300):  # far more than max_connections = 40
            idle.append(await asyncio.to_thread(socket.create_connection, ("127.0.0.1", front.port), 10))
        stalled = socket.create_connection(("127.0.0.1", front.port), timeout=10)
        stalled.sendall(post_bytes("/mcp", front.port, PING).replace(b"Content-Length: 40", b"Content-Length: 400"))
        # a new host still gets in (the longest-idle connections make room)...
        async with Host(front) as newcomer:
            await newcomer.ping()
        # ...and once idle_timeout_s (1 s) passes, idle and stalled clients are disconnected
        await eventually(lambda: still_open([*idle, stalled]) == 0, 10, "the idle clients disconnected")
        assert all(await asyncio.to_thread(lambda: [closed(s) for s in idle]))
        assert await asyncio.to_thread(closed, stalled)
        for sock in [*idle, stalled]:
            sock.close()
    assert "Traceback" not in front.stderr


@pytest.mark.slow
async def test_a_long_call_and_an_event_stream_are_not_idle(capped):
    # the idle timeout is for clients that owe a request; a call the upstream takes long over is waited for
    front = capped
    async with Host(front) as host:
        started = time.monotonic()
        reply = await host.post(rpc("slow", "tools/call", {"name": "sleep", "arguments": {"seconds": 2.5}}))
        assert reply.json()["result"]["content"][0]["text"] == "slept 2.5"
        assert time.monotonic() - started >= 2.5
        async with host.http.stream("GET", front.url, headers=host.headers) as stream:
            assert stream.status_code == 200 and stream.headers["content-type"] == "text/event-stream"
            await asyncio.sleep(2.5)  # quiet for more than idle_timeout_s: the stream stays open
            ended = await host.http.delete(front.url, headers=host.headers)  # ends the session and its stream
            assert ended.status_code == 200
            assert [chunk async for chunk in stream.aiter_bytes()] == []  # ended cleanly, not cut
