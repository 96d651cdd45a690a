"""Picking free loopback ports for servers started side by side."""

from __future__ import annotations

import socket

from mcpwatch.ports import free_port


def test_no_port_is_handed_out_twice() -> None:
    """The OS picks a free port at random and may pick one it gave a moment ago: among 1,000 picks a repeat is all
    but certain, and two servers would then share a port (one test's client talking to another's server)."""
    ports = [free_port() for _ in range(1000)]
    assert len(set(ports)) == len(ports)
    with socket.socket() as sock:  # and each was free
        sock.bind(("127.0.0.1", ports[-1]))
