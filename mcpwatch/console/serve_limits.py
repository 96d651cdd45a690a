"""Bounds for `mcpwatch watch --serve`: what a browser (or anything else on this machine) may hold.

aiohttp waits for a request head however slowly it comes, and textual-serve starts a console process for every
websocket: a trickle of bytes could hold connections forever, and a page opened many times over could start
console processes until memory runs out. So a request must be complete within `HEAD_TIMEOUT_S` of its first
byte (of the connection's opening, for the first), else 408 and the connection is closed, and at most
`[console] serve_max_consoles` consoles run at once (503 beyond, saying so). A websocket, once open, is the
console's own and is not timed.
"""

from __future__ import annotations

import asyncio
from typing import Any

from aiohttp.web_protocol import RequestHandler

HEAD_TIMEOUT_S = 5.0
KEEPALIVE_S = 15.0  # an idle kept-alive connection between requests (aiohttp closes it)
TIMEOUT_REPLY = (
    b"HTTP/1.1 408 Request Timeout\r\ncontent-type: text/plain; charset=utf-8\r\ncontent-length: 37\r\n"
    b"connection: close\r\n\r\nthe request did not arrive in time.\r\n"
)


class TimedRequestHandler(RequestHandler):
    """aiohttp's connection handler, with a deadline on each request it is owed."""

    head_timeout_s = HEAD_TIMEOUT_S

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        super().connection_made(transport)
        self._deadline: asyncio.TimerHandle | None = None
        self._owe()

    def data_received(self, data: bytes) -> None:
        requests = self._request_count
        super().data_received(data)
        if self._upgraded or self._request_count != requests:  # a whole head is in (or a websocket runs)
            self._paid()
        elif self._deadline is None:  # the first bytes of the next request
            self._owe()

    def connection_lost(self, exc: BaseException | None) -> None:
        self._paid()
        super().connection_lost(exc)

    def _owe(self) -> None:
        self._deadline = asyncio.get_running_loop().call_later(self.head_timeout_s, self._too_slow)

    def _paid(self) -> None:
        if getattr(self, "_deadline", None) is not None:
            self._deadline.cancel()  # type: ignore[union-attr]  # checked just above
            self._deadline = None

    def _too_slow(self) -> None:
        self._deadline = None
        transport: Any = self.transport
        if transport is not None and not transport.is_closing():
            transport.write(TIMEOUT_REPLY)
            transport.close()


class ConsoleCap:
    """How many consoles (websockets, each a process) run at once."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.running = 0

    def refusal(self) -> str | None:
        if self.running < self.limit:
            return None
        return (
            f"{self.running} consoles are open, the most this server runs at once ([console] serve_max_consoles):"
            " close one and reload"
        )
