"""A 2026-era host with the tasks extension (FastMCP 4's client with `fastmcp-tasks`, run from its own virtualenv):
calls each tool named in turn, which its client resolves by polling `tasks/get` when the server answers with a task
(answering each elicitation of it with the topic `tN`, N counting them in that call), and prints one JSON line a
call: the result's text, whether it is an error, the seconds it took, and the elicitations' messages.
Usage: python fastmcp_tasks_client.py TOOL ARGS_JSON [TOOL ARGS_JSON…] -- COMMAND [ARGS…] (or -- URL of a
Streamable HTTP server)"""

import asyncio
import json
import os
import sys
import time

import fastmcp_tasks  # noqa: F401  (registers the tasks extension on every Client)
from fastmcp import Client
from fastmcp.client.transports import StdioTransport


async def main() -> None:
    dashes = sys.argv.index("--")
    calls, (command, *args) = sys.argv[1:dashes], sys.argv[dashes + 1 :]
    assert calls and len(calls) % 2 == 0, __doc__
    transport = command if command.startswith("http://") else StdioTransport(command, args, env=dict(os.environ))
    asked: list[str] = []

    async def on_elicit(message, response_type, params, context):
        asked.append(message)
        return {"topic": f"t{len(asked)}"}

    async with Client(transport, elicitation_handler=on_elicit) as client:
        for tool, arguments in zip(calls[::2], calls[1::2], strict=True):
            asked.clear()
            started = time.monotonic()
            result = await client.call_tool(tool, json.loads(arguments), raise_on_error=False, timeout=120)
            text = " ".join(getattr(block, "text", "") for block in result.content)
            elapsed = time.monotonic() - started
            print(json.dumps({"text": text, "is_error": result.is_error, "elapsed_s": elapsed, "asked": list(asked)}))


asyncio.run(main())
