"""Ports: check one can be served before a server starts on it (so a busy port is one clear line, not a server's
traceback); for benchmarks and tests, pick a free one and wait until it listens."""

from __future__ import annotations

import socket
import time


def free_port() -> int:
    """A loopback port nothing listens on right now (the OS picks it)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def wait_for_port(port: int, timeout: float = 20.0) -> None:
    """Block until something accepts connections on the loopback port; TimeoutError after `timeout` seconds."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        with socket.socket() as sock:
            if sock.connect_ex(("127.0.0.1", port)) == 0:
                return
        time.sleep(0.05)
    raise TimeoutError(f"nothing listens on port {port} after {timeout:g} s")


def check_can_listen(host: str, port: int, option: str) -> None:
    """Raise UserError naming `option` when `host:port` cannot be served (unresolvable, or in use)."""
    from mcpwatch.errors import UserError

    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except OSError as exc:
        raise UserError(f"{option} {host}:{port}: cannot resolve {host!r} ({exc.strerror or exc})") from None
    family, kind, proto, _, address = infos[0]
    with socket.socket(family, kind, proto) as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            probe.bind(address)
        except OSError as exc:
            raise UserError(f"{option} {host}:{port}: cannot listen there ({exc.strerror or exc})") from None
