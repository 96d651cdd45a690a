"""A 2026-era host with the tasks extension (FastMCP 4's client with `fastmcp-tasks`, run from its own virtualenv):
calls one tool, which its client resolves by polling `tasks/get` when the server answers with a task, and prints
one JSON line: the result's text, whether it is an error, and the seconds it took.
Usage: python fastmcp_tasks_client.py TOOL ARGS_JSON -- COMMAND [ARGS…] (or -- URL of a Streamable HTTP server)"""

import asyncio
import json
import os
import sys
import time

import fastmcp_tasks  # noqa: F401  (registers the tasks extension on every Client)
from fastmcp import Client
from fastmcp.client.transports import StdioTransport


async def main() -> None:
    tool, arguments, dashes, command, *args = sys.argv[1:]
    assert dashes == "--", __doc__
    transport = command if command.startswith("http://") else StdioTransport(command, args, env=dict(os.environ))
    async with Client(transport) as client:
        started = time.monotonic()
        result = await client.call_tool(tool, json.loads(arguments), raise_on_error=False, timeout=120)
        text = " ".join(getattr(block, "text", "") for block in result.content)
        print(json.dumps({"text": text, "is_error": result.is_error, "elapsed_s": time.monotonic() - started}))


asyncio.run(main())
