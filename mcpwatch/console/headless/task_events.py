"""Event handlers for calls that run as MCP tasks: the in-flight row shows the task's status and status message
and the TTL it has left, and the request's timeline each change (the call itself starts and ends by request_start
and request_end)."""

from __future__ import annotations

from mcpwatch.console.headless.state import ModelCore, _num, _text
from mcpwatch.events import Event, TaskCreatedData, TaskStatusData


class TaskEvents(ModelCore):
    def _task_created(self, event: Event, mono: float, data: TaskCreatedData) -> None:
        request = self._request(event)
        if request is None:
            return
        bridged = " by mcpwatch for the host" if data.get("bridged") else ""
        ttl_ms = _num(data.get("ttl_ms"))
        if ttl_ms is not None and not data.get("bridged"):  # a bridged call is still cut at its host's budget
            request.ttl_end_mono = mono + ttl_ms / 1000
        request.message = _task_line(data.get("status"), data.get("status_message"))
        request.note(mono, "task", f"task {_text(data.get('task_id'))} created{bridged}: {request.message}")

    def _task_status(self, event: Event, mono: float, data: TaskStatusData) -> None:
        request = self._request(event)
        if request is None:
            return
        request.message = _task_line(data.get("status"), data.get("status_message"))
        request.note(mono, "task", f"task {request.message}")


def _task_line(status: object, message: object) -> str:
    """`working: Analyzing content...`: the status, then the receiver's own words when it gave some."""
    words = _text(message)
    return f"{_text(status) or '?'}: {words}" if words else _text(status) or "?"
