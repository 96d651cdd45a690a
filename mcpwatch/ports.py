"""Ports: check one can be served before a server starts on it (so a busy port is one clear line, not a server's
traceback); for benchmarks and tests, pick a free one and wait until it listens."""

from __future__ import annotations

import socket
import time
from collections import deque

_HANDED_OUT: deque[int] = deque(maxlen=4096)


def free_port() -> int:
    """A loopback port nothing listens on right now (the OS picks it), and not one this process was given lately:
    the OS may pick the same free port twice in a row, and two servers started side by side would then share it
    (the second one's client silently talking to the first)."""
    for _ in range(64):
        with socket.socket() as sock:
            sock.bind(("127.0.0.1", 0))
            port = int(sock.getsockname()[1])
        if port not in _HANDED_OUT:
            _HANDED_OUT.append(port)
            return port
    raise OSError("no free loopback port that was not handed out already")


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
