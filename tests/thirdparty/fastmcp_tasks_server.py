"""A 2026-era server with the tasks extension (FastMCP 4 with `fastmcp-tasks`, run from its own virtualenv) whose
`crunch` tool runs only as a task: it reports a status message, then answers `crunched SECONDS`. `pick` (task-only)
and `pick_now` (an ordinary tool) ask the user for a topic `rounds` times, by FastMCP's guard pattern: a multi
round-trip `input_required` answer in the foreground, the task's `input_required` status as a task; each answers
`picked TOPIC…`, or `declined` / `cancelled`. `settle` asks to be called again (a multi round-trip answer with only a
`requestState`, as a server shedding load does) `times` times, then answers `settled after N`.
Usage: python fastmcp_tasks_server.py (stdio)"""

import asyncio

import mcp_types
from fastmcp import Context, FastMCP
from fastmcp.utilities.tasks import TaskConfig
from fastmcp_tasks import TasksExtension

mcp = FastMCP("task-only")
mcp.add_extension(TasksExtension())


@mcp.tool(task=TaskConfig(mode="required"))
async def crunch(seconds: float, ctx: Context) -> str:
    await ctx.report_progress(1, 2, "halfway")
    await asyncio.sleep(seconds)
    return f"crunched {seconds:g}"


def _ask(ctx: Context, rounds: int) -> str | mcp_types.InputRequiredResult:
    """The topics answered so far (one key per round), asking for the next until `rounds` are in."""
    answers = dict(ctx.input_responses or {})
    topics = [] if ctx.request_state is None else [t for t in ctx.request_state.split(",") if t]
    key = f"topic{len(topics) + 1}"
    if key in answers:
        answer = answers[key]
        action = getattr(answer, "action", None)
        if action != "accept":
            return str(action)
        topics.append(str((getattr(answer, "content", None) or {}).get("topic")))
    if len(topics) >= rounds:
        return "picked " + " ".join(topics)
    key = f"topic{len(topics) + 1}"
    schema = {"type": "object", "properties": {"topic": {"type": "string"}}, "required": ["topic"]}
    question = mcp_types.ElicitRequest(
        params=mcp_types.ElicitRequestFormParams(message=f"Which topic ({key})?", requested_schema=schema)
    )
    return mcp_types.InputRequiredResult(input_requests={key: question}, request_state=",".join(topics) or ",")


@mcp.tool(task=TaskConfig(mode="required"))
async def pick(ctx: Context, rounds: int = 1) -> str | mcp_types.InputRequiredResult:
    return _ask(ctx, rounds)


@mcp.tool
async def pick_now(ctx: Context, rounds: int = 1) -> str | mcp_types.InputRequiredResult:
    return _ask(ctx, rounds)


@mcp.tool
async def settle(ctx: Context, times: int = 1) -> str | mcp_types.InputRequiredResult:
    tries = int(ctx.request_state or 0)
    if tries < times:
        return mcp_types.InputRequiredResult(request_state=str(tries + 1))
    return f"settled after {tries}"


if __name__ == "__main__":
    mcp.run()
