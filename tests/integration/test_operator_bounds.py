"""The operator endpoint under idle floods, huge headers and absurd arguments: bounded, clear, and the wrapper's
host and upstream untouched."""

from __future__ import annotations

import asyncio
import resource
import socket
from urllib.parse import urlsplit

import pytest
from front_tools import Host, closed, listening_wrapper, raw_request, rpc, served_throughout, status_of, still_open

from waiting import eventually
from wraptools import Operator, registry_entry

pytestmark = pytest.mark.anyio


def few_descriptors() -> None:
    """The wrapper gets 256 file descriptors: 1,100 connections kept open would exhaust them."""
    resource.setrlimit(resource.RLIMIT_NOFILE, (256, 256))


def operator_port(entry: dict) -> int:
    return urlsplit(entry["operator_url"]).port or 0


@pytest.mark.slow
async def test_1100_idle_operator_clients_cannot_starve_the_operator_host_or_upstream(tmp_path, isolated_state):
    # default caps (64 connections); the wrapper has 256 descriptors in all
    async with listening_wrapper(tmp_path, preexec=few_descriptors) as front, Host(front) as host:
        entry = await asyncio.to_thread(registry_entry, isolated_state)
        operator = Operator(entry)
        generation = (await operator.tool("status"))["wrapper"]["upstream"]["generation"]
        async with served_throughout(host):

            def flood() -> list[socket.socket]:
                return [socket.create_connection(("127.0.0.1", operator_port(entry)), 10) for _ in range(1100)]

            idle = await asyncio.to_thread(flood)
            # the operator still answers a real client (the longest-idle connections make room)...
            status = await operator.tool("status")
            assert status["wrapper"]["upstream"]["state"] == "ready"
            # ...and the upstream can still be respawned (pipes need descriptors too)
            crashed = await host.post(rpc("boom", "tools/call", {"name": "crash", "arguments": {}}))
            answer = crashed.json()
            assert crashed.status_code == 200 and ("error" in answer or answer["result"]["isError"]), answer

            async def respawned() -> bool:
                upstream = (await operator.tool("status"))["wrapper"]["upstream"]
                return upstream["state"] == "ready" and upstream["generation"] > generation

            await eventually(respawned, 10, "the upstream respawned")
            echoed = await host.post(rpc("after", "tools/call", {"name": "echo", "arguments": {"n": 1}}))
            assert echoed.json()["result"]["isError"] is False
            await eventually(lambda: still_open(idle) <= 64, 10, "the cap, whatever the flood")
            for sock in idle:
                sock.close()
    assert "Too many open files" not in front.stderr and "Traceback" not in front.stderr


@pytest.mark.slow
async def test_idle_operator_clients_are_disconnected_after_the_idle_timeout(tmp_path, isolated_state):
    config = "[operator]\nidle_timeout_s = 1\nmax_connections = 8\n"
    async with listening_wrapper(tmp_path, config=config) as front, Host(front) as host:
        entry = await asyncio.to_thread(registry_entry, isolated_state)
        async with served_throughout(host):
            idle = [socket.create_connection(("127.0.0.1", operator_port(entry)), 10) for _ in range(5)]
            half = socket.create_connection(("127.0.0.1", operator_port(entry)), 10)
            half.sendall(b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\n")  # a head that never ends
            await eventually(lambda: still_open([*idle, half]) == 0, 10, "the idle clients disconnected")
            assert all(await asyncio.to_thread(lambda: [closed(s) for s in [*idle, half]]))
            assert (await Operator(entry).tool("status"))["wrapper"]["upstream"]["state"] == "ready"
            for sock in [*idle, half]:
                sock.close()


async def test_huge_operator_headers_are_refused_at_64_kib(tmp_path, isolated_state):
    async with listening_wrapper(tmp_path) as front, Host(front) as host:
        entry = await asyncio.to_thread(registry_entry, isolated_state)
        port = operator_port(entry)
        async with served_throughout(host):

            def flood() -> tuple[int, bytes]:
                sent = 0
                with socket.create_connection(("127.0.0.1", port), timeout=10) as sock:
                    sock.sendall(f"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nX-Flood: ".encode())
                    try:
                        while sent < 150 * 1024 * 1024:
                            sock.sendall(b"z" * 65536)
                            sent += 65536
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
            assert sent < 16 * 1024 * 1024
            two_hosts = f"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nHost: 127.0.0.1:{port}\r\n"
            two_hosts += f"Authorization: Bearer {entry['token']}\r\nContent-Length: 2\r\n\r\n{{}}"
            assert status_of(await asyncio.to_thread(raw_request, port, two_hosts.encode())) == 400
            assert (await Operator(entry).tool("status"))["wrapper"]["upstream"]["state"] == "ready"


ABSURD = [
    ({"after": 10**30}, "after must be a whole number from 0 to 2^53, got a 31-digit number"),
    ({"after": -(10**30)}, "after must be a whole number from 0 to 2^53"),
    ({"after": "9" * 5000}, "after must be a whole number from 0 to 2^53, got a 5000-digit number"),
    ({"after": -1}, "after must be a whole number from 0 to 2^53, got -1"),
    ({"limit": 10**100}, "limit must be a whole number from 1 to 10000, got a 101-digit number"),
    ({"limit": -1}, "limit must be a whole number from 1 to 10000, got -1"),
    ({"limit": 0}, "limit must be a whole number from 1 to 10000, got 0"),
    ({"limit": 10001}, "limit must be a whole number from 1 to 10000, got 10001"),
    ({"wait_ms": -5}, "wait_ms must be a whole number from 0 to 30000, got -5"),
    ({"wait_ms": 86_400_000}, "wait_ms must be a whole number from 0 to 30000, got 86400000"),
    ({"wait_ms": 1e300}, "wait_ms must be a whole number from 0 to 30000, got a 301-digit number"),
    ({"wait_ms": 2.5}, "wait_ms must be a whole number from 0 to 30000, got 2.5"),
    ({"after": [1]}, "after must be a whole number from 0 to 2^53, got [1]"),
    ({"after": {"a": 1}}, "after must be a whole number from 0 to 2^53"),
    ({"limit": True}, "limit must be a whole number from 1 to 10000, got true"),
]


@pytest.mark.slow
async def test_absurd_event_arguments_are_clear_errors(tmp_path, isolated_state):
    async with listening_wrapper(tmp_path) as front:
        operator = Operator(await asyncio.to_thread(registry_entry, isolated_state))
        for arguments, text in ABSURD:
            result = await operator.call("events", **arguments)  # HTTP 200 (asserted inside), a tool error
            assert result["isError"] is True and text in result["content"][0]["text"], (arguments, result)
        assert (await operator.tool("events", after=0, limit=1))["events"]
        edges = await operator.tool("events", after=0, limit=10000, wait_ms=0)  # the bounds themselves pass
        assert edges["events"] and (await operator.tool("events", after=2**53, limit=1))["events"] == []
    assert "Traceback" not in front.stderr


@pytest.mark.slow
async def test_1100_idle_front_clients_with_few_descriptors_leave_room_for_hosts_and_the_upstream(tmp_path):
    # default caps; the wrapper has 256 descriptors in all, fewer than the front's default cap of 256 connections
    async with (
        listening_wrapper(tmp_path, preexec=few_descriptors) as front,
        Host(front) as host,
        served_throughout(host),
    ):
        idle = await asyncio.to_thread(
            lambda: [socket.create_connection(("127.0.0.1", front.port), 10) for _ in range(1100)]
        )
        async with Host(front) as newcomer:  # a new host gets in
            await newcomer.ping()
        crashed = await host.post(rpc("boom", "tools/call", {"name": "crash", "arguments": {}}))
        assert crashed.status_code == 200

        async def echoed() -> bool:  # the upstream is respawned (its pipes need descriptors)
            answer = (await host.post(rpc("after", "tools/call", {"name": "echo", "arguments": {}}))).json()
            return answer.get("result", {}).get("isError") is False

        await eventually(echoed, 10, "an echo from the respawned upstream", poll=0.1)
        # (256 - 64) / 2: half the descriptors left
        await eventually(lambda: still_open(idle) <= 96, 10, "the idle clients beyond the cap closed")
        for sock in idle:
            sock.close()
    assert "Too many open files" not in front.stderr and "Traceback" not in front.stderr
