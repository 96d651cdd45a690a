"""The upstream the wrapper benchmarks measure against: an ordinary SDK server with a no-op tool.

Run as `python -m mcpwatch.bench.noop_server` (stdio) or `… http PORT` (Streamable HTTP).
"""

import logging
import sys

logging.basicConfig(level=logging.CRITICAL)

import anyio  # noqa: E402
from mcp.server import MCPServer  # noqa: E402

server = MCPServer("mcpwatch-bench-noop", log_level="CRITICAL")


@server.tool()
async def noop() -> str:
    """Return at once."""
    return "ok"


@server.tool()
async def slow(seconds: float) -> str:
    """Take a while (honours cancellation)."""
    await anyio.sleep(seconds)
    return "done"


if __name__ == "__main__":
    if len(sys.argv) > 2 and sys.argv[1] == "http":
        server.run("streamable-http", host="127.0.0.1", port=int(sys.argv[2]), streamable_http_path="/mcp")
    else:
        server.run()
