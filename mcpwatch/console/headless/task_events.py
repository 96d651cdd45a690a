"""The model's tasks part: for calls that run as MCP tasks, the in-flight row shows the task's status and status
message and the TTL it has left, and the request's timeline each change (the call itself starts and ends by
request_start and request_end, in the calls part). It has no state of its own: it writes on the calls' records.
"""

from __future__ import annotations

from mcpwatch.console.headless.coerce import as_num, as_text
from mcpwatch.console.headless.records import TaskMark
from mcpwatch.console.headless.request_events import CallsPart
from mcpwatch.events import Event, TaskCreatedData, TaskStatusData


class TasksPart:
    def __init__(self, calls: CallsPart) -> None:
        self.calls = calls

    def created(self, event: Event, mono: float, data: TaskCreatedData) -> None:
        request = self.calls.of(event)
        if request is None:
            return
        bridged = " by mcpwatch for the host" if data.get("bridged") else ""
        ttl_ms = as_num(data.get("ttl_ms"))
        if ttl_ms is not None and not data.get("bridged"):  # a bridged call is still cut at its host's budget
            request.ttl_end_mono = mono + ttl_ms / 1000
        request.message = _task_line(data.get("status"), data.get("status_message"))
        kind = "offered" if data.get("offered") else "bridged" if data.get("bridged") else "watched"
        reason = as_text(data.get("offered_by")) or None
        request.task = TaskMark(kind, as_text(data.get("task_id")) or "?", as_text(data.get("status")) or "?", reason)
        request.note(mono, "task", f"task {as_text(data.get('task_id'))} created{bridged}: {request.message}")

    def status(self, event: Event, mono: float, data: TaskStatusData) -> None:
        request = self.calls.of(event)
        if request is None:
            return
        request.message = _task_line(data.get("status"), data.get("status_message"))
        if request.task is not None:
            request.task.status = as_text(data.get("status")) or request.task.status
            polls = as_num(data.get("polls"))
            if polls is not None:
                request.task.polls = max(request.task.polls, int(polls))
        request.note(mono, "task", f"task {request.message}")


def _task_line(status: object, message: object) -> str:
    """`working: Analyzing content...`: the status, then the receiver's own words when it gave some."""
    words = as_text(message)
    return f"{as_text(status) or '?'}: {words}" if words else as_text(status) or "?"
