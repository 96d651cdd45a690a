"""A 2026-era host with the tasks extension (FastMCP 4's client with `fastmcp-tasks`, run from its own virtualenv):
calls each tool named in turn, which its client resolves by polling `tasks/get` when the server answers with a task
(answering each elicitation of it with the topic `tN`, N counting them in that call), and prints one JSON line a
call: the result's text, whether it is an error, the seconds it took, and the elicitations' messages.
Usage: python fastmcp_tasks_client.py TOOL ARGS_JSON [TOOL ARGS_JSON…] -- COMMAND [ARGS…] (or -- URL of a
Streamable HTTP server); or python fastmcp_tasks_client.py --sessions SESSIONS_JSON, a list of sessions run at
the same time (one interpreter for them all), each {"server": COMMAND list or URL, "env": {…} added to this
process's for a command, "calls": [[TOOL, ARGS], …]}: the answers in the order of the sessions, then their calls."""

import asyncio
import json
import os
import sys
import time

import fastmcp_tasks  # noqa: F401  (registers the tasks extension on every Client)
from fastmcp import Client
from fastmcp.client.transports import StdioTransport


async def session(server, env: dict, calls: list) -> list[dict]:
    stdio = not isinstance(server, str)
    transport = StdioTransport(server[0], server[1:], env={**os.environ, **env}) if stdio else server
    asked: list[str] = []

    async def on_elicit(message, response_type, params, context):
        asked.append(message)
        return {"topic": f"t{len(asked)}"}

    answers = []
    async with Client(transport, elicitation_handler=on_elicit) as client:
        for tool, arguments in calls:
            asked.clear()
            started = time.monotonic()
            result = await client.call_tool(tool, arguments, raise_on_error=False, timeout=120)
            text = " ".join(getattr(block, "text", "") for block in result.content)
            elapsed = time.monotonic() - started
            answers.append({"text": text, "is_error": result.is_error, "elapsed_s": elapsed, "asked": list(asked)})
    return answers


async def main() -> None:
    if sys.argv[1] == "--sessions":
        sessions = json.loads(sys.argv[2])
    else:
        dashes = sys.argv.index("--")
        named, (command, *args) = sys.argv[1:dashes], sys.argv[dashes + 1 :]
        assert named and len(named) % 2 == 0, __doc__
        calls = [[tool, json.loads(arguments)] for tool, arguments in zip(named[::2], named[1::2], strict=True)]
        server = command if command.startswith("http://") else [command, *args]
        sessions = [{"server": server, "env": {}, "calls": calls}]
    done = await asyncio.gather(*(session(s["server"], s.get("env", {}), s["calls"]) for s in sessions))
    for answers in done:
        for answer in answers:
            print(json.dumps(answer))


asyncio.run(main())
