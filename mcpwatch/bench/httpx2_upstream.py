"""`mcpwatch wrap` with httpx2 as its HTTP upstream client, for `mcpwatch bench wrap`: the general-purpose client
the wrapper's own HTTP/1.1 client replaced, measured in the same run rather than assumed slower.

Run as `python -m mcpwatch.bench.httpx2_upstream WRAP-ARGS…` (the arguments of `mcpwatch wrap`). The adapter gives
httpx2 the small interface the upstream link uses: `request()` returning status and headers at once, the body
streamed by `chunks()` / `read()`, `close()`.
"""

from __future__ import annotations

import asyncio
import sys
from collections.abc import AsyncIterator
from typing import Any

import httpx2

from mcpwatch.wrapper.upstreams.http11 import TransportError


class _Response:
    def __init__(self, response: httpx2.Response) -> None:
        self._response = response
        self.status = response.status_code
        self.headers = {name.lower(): value for name, value in response.headers.items()}

    async def chunks(self) -> AsyncIterator[bytes]:
        try:
            async for chunk in self._response.aiter_raw():
                yield chunk
        except httpx2.HTTPError as exc:
            raise TransportError(str(exc)) from exc

    async def read(self) -> bytes:
        return b"".join([chunk async for chunk in self.chunks()])

    def close(self) -> None:
        task = asyncio.ensure_future(self._response.aclose())
        task.add_done_callback(lambda done: done.cancelled() or done.exception())


class Httpx2Client:
    """The wrapper's `http11.Client` interface over one `httpx2.AsyncClient` (keep-alive pool, no timeouts of its
    own: the wrapper's deadlines bound every call)."""

    def __init__(self) -> None:
        limits = httpx2.Limits(max_connections=None, max_keepalive_connections=32)
        self._client = httpx2.AsyncClient(timeout=None, limits=limits)

    async def request(self, method: str, url: str, headers: dict[str, str], body: bytes = b"") -> Any:
        request = self._client.build_request(method, url, headers=headers, content=body)
        try:
            return _Response(await self._client.send(request, stream=True))
        except httpx2.HTTPError as exc:
            raise TransportError(str(exc)) from exc

    def close(self) -> None:
        task = asyncio.ensure_future(self._client.aclose())
        task.add_done_callback(lambda done: done.cancelled() or done.exception())


def main(argv: list[str]) -> int:
    from mcpwatch import cli
    from mcpwatch.wrapper.upstreams import upstream_http

    upstream_http.Client = Httpx2Client  # type: ignore[attr-defined,assignment]  # the benchmark swaps the client class on purpose
    return cli.main(["wrap", *argv])


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
