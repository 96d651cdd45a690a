"""The floor of any stdio wrapper, for `mcpwatch bench wrap`: bytes forwarded both ways, nothing parsed.

Run as `python -m mcpwatch.bench.line_forwarder CMD ARGS…`; what it costs over the direct path is what the two extra
pipe hops cost on this machine, before mcpwatch does anything.
"""

from __future__ import annotations

import asyncio
import os
import sys
from typing import Any


class _Upstream(asyncio.SubprocessProtocol):
    def __init__(self, out: asyncio.WriteTransport) -> None:
        self.out = out
        self.done: asyncio.Future[None] = asyncio.get_running_loop().create_future()

    def pipe_data_received(self, fd: int, data: bytes) -> None:
        if fd == 1:
            self.out.write(data)

    def process_exited(self) -> None:
        if not self.done.done():
            self.done.set_result(None)


class _Host(asyncio.Protocol):
    def __init__(self, upstream: Any) -> None:
        self.upstream = upstream

    def data_received(self, data: bytes) -> None:
        self.upstream.write(data)

    def connection_lost(self, exc: Exception | None) -> None:
        self.upstream.close()


async def _forward(argv: list[str]) -> None:
    loop = asyncio.get_running_loop()
    out, _ = await loop.connect_write_pipe(asyncio.Protocol, os.fdopen(os.dup(1), "wb", buffering=0))
    child, upstream = await loop.subprocess_exec(
        lambda: _Upstream(out), *argv, stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE, stderr=None
    )
    await loop.connect_read_pipe(lambda: _Host(child.get_pipe_transport(0)), os.fdopen(0, "rb", buffering=0))
    await upstream.done


if __name__ == "__main__":
    try:
        import uvloop

        uvloop.run(_forward(sys.argv[1:]))
    except ImportError:
        asyncio.run(_forward(sys.argv[1:]))
