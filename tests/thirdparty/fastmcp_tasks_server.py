"""A 2026-era server with the tasks extension (FastMCP 4 with `fastmcp-tasks`, run from its own virtualenv) whose
`crunch` tool runs only as a task: it reports a status message, then answers `crunched SECONDS`.
Usage: python fastmcp_tasks_server.py (stdio)"""

import asyncio

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


if __name__ == "__main__":
    mcp.run()
