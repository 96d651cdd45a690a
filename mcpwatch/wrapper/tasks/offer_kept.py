"""A finished offered task's polls answered from what the log kept of it (`wrapper.tasks.offer`): a wrapper started
again, or another HTTP session's core, answers a task it does not hold as a live one would have."""

from __future__ import annotations

from typing import Any

from mcpwatch.events import KeptTask
from mcpwatch.wrapper.calls.pending import HostLink
from mcpwatch.wrapper.framing import frames
from mcpwatch.wrapper.tasks.shapes import INVALID_PARAMS, METHOD_NOT_FOUND

DONE = {"resultType": "complete"}  # the extension's mark on every tasks/* answer
NO_RESULT_METHOD = "the tasks extension has no tasks/result: tasks/get carries the result once the task has ended"


def task_error(request_id: Any, text: str, code: int = INVALID_PARAMS) -> dict[str, Any]:
    return frames.error_response(request_id, code, text)


def answer_kept(kept: KeptTask, method: str, link: HostLink, request_id: Any) -> None:
    """A finished task's polls, answered from what the log kept of it."""
    task = kept["task"]
    if "ttlMs" in task:  # the extension's, answered as a live one is
        _answer_kept_extension(kept, method, link, request_id)
    elif method == "tasks/get":
        link.send({"jsonrpc": "2.0", "id": request_id, "result": task})
    elif method == "tasks/result" and kept["reply"] is not None:
        link.send({"jsonrpc": "2.0", "id": request_id, **kept["reply"]})
    elif method == "tasks/result":
        text = f"task {task.get('taskId')} ended {task.get('status')}, but its result was too large to keep"
        link.send(task_error(request_id, text, frames.INTERNAL_ERROR))
    else:
        link.send(task_error(request_id, f"task {task.get('taskId')} is already {task.get('status')}"))


def _answer_kept_extension(kept: KeptTask, method: str, link: HostLink, request_id: Any) -> None:
    if method == "tasks/get":  # the result inline
        link.send({"jsonrpc": "2.0", "id": request_id, "result": {**kept["task"], **(kept["reply"] or {}), **DONE}})
    elif method in ("tasks/cancel", "tasks/update"):  # an empty acknowledgement: nothing runs, nothing is asked
        link.send({"jsonrpc": "2.0", "id": request_id, "result": DONE})
    else:
        link.send(task_error(request_id, NO_RESULT_METHOD, METHOD_NOT_FOUND))
