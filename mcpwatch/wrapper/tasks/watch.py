"""A task-augmented tools/call watched as one operation, from its creation to its terminal status.

The upstream answers such a call at once with a task; the host then polls (`tasks/get`, `tasks/result`,
`tasks/list`) until the task ends. In the log the call stays open through all of that: `task_created` when the
task is made, `task_status` at each change (with its status message), and the call's own `request_end` at the
terminal status, with the task's true duration. The polls are routed like any request but are attributed to their
task (counted on it), never logged or counted as calls. The tools/call budget cannot cut the call: it has left the
pending table with its answer (`PendingTable.hand_over`).

Terminal status: the extension's `tasks/get` carries the result, so the call ends there; in 2025-11-25 the result
comes through `tasks/result`, so a `completed` seen by `tasks/get` waits a little for it (`result_grace_s`), to
log what the host got.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol

from mcpwatch.events import Kind, Outcome, RequestEndDetail, TaskCreatedData, TaskStatusData
from mcpwatch.scheduler import Scheduler, Timer
from mcpwatch.wrapper.calls.partial import peer_text
from mcpwatch.wrapper.calls.pending import Pending, PendingTable
from mcpwatch.wrapper.calls.recorder import Recorder
from mcpwatch.wrapper.framing import frames
from mcpwatch.wrapper.tasks.shapes import (
    Era,
    Status,
    TaskState,
    call_outcome,
    created_task,
    envelope,
    notified_task,
    poll_task_id,
    polled_task,
)

CANCEL_TIMEOUT_S = 30.0
RESULT_GRACE_MIN_S = 5.0  # how long a completed 2025-era task waits for the host's tasks/result before it ends
_OUTCOME = {"failed": Outcome.ERROR, "cancelled": Outcome.CANCELLED}


class BridgedTasks(Protocol):
    """What the watch tells the bridge (`bridge.TaskBridge`) about the tasks it made: their hosts wait for an answer."""

    def created(self, pending: Pending, state: TaskState) -> None: ...

    def made(self, task_id: str) -> bool: ...

    def changed(self, state: TaskState) -> None: ...

    def ended(self, task_id: str, outcome: Outcome, detail: RequestEndDetail, result: Any, error: Any) -> None: ...


@dataclass(eq=False, slots=True)
class WatchedTask:
    pending: Pending  # the tools/call that made the task
    state: TaskState
    polls: int = 0
    terminal_at: float | None = None  # scheduler time the terminal status was first seen
    timer: Timer | None = None  # the result grace, or the TTL
    bridged: bool = False


class TaskWatch:
    def __init__(
        self,
        *,
        table: PendingTable,
        recorder: Recorder,
        scheduler: Scheduler,
        request: Callable[..., Any],
        warn: Callable[[str], None],
        bridge: BridgedTasks,
    ) -> None:
        """`bridge`: told of the tasks it made (their hosts wait for an answer); it builds this watch and hands
        itself here."""
        self.tasks: dict[str, WatchedTask] = {}
        self._by_request: dict[str, str] = {}  # the call's request key -> its task id
        self._table = table
        self._recorder = recorder
        self._scheduler = scheduler
        self._request = request  # UpstreamSession.request: the wrapper's own request upstream (a cancel)
        self._warn = warn
        self._cancels: set[asyncio.Future[None]] = set()  # operator cancels under way (held: the loop keeps weak refs)
        self._bridge = bridge

    def __len__(self) -> int:
        return len(self.tasks)

    # ------------------------------------------------------------------ the call that makes a task

    def created(self, pending: Pending, result: Any, *, bridged: bool = False) -> TaskState | None:
        """The upstream answered a tools/call: if with a task, the call is watched as it (the caller hands the
        answer over); else None, an ordinary answer."""
        state = created_task(result)
        if state is None:
            return None
        task = WatchedTask(pending, state, bridged=bridged)
        self.tasks[state.task_id] = task
        self._by_request[pending.request_key] = state.task_id
        data = TaskCreatedData(
            task_id=state.task_id,
            status=state.status,
            status_message=peer_text(state.status_message) if state.status_message else None,
            ttl_ms=state.ttl_ms,
            poll_interval_ms=state.poll_interval_ms,
            era=state.era,
        )
        if bridged:
            data["bridged"] = True
        self._recorder.emit(Kind.TASK_CREATED, request_id=pending.request_key, tool=pending.tool, **data)
        if state.ttl_ms is not None:
            task.timer = self._scheduler.call_later(state.ttl_ms / 1000, self._expired, state.task_id)
        if bridged:
            self._bridge.created(pending, state)
        if state.terminal:
            self._terminal(task, state, "tasks/get")
        return state

    # ------------------------------------------------------------------ polls and notifications

    def poll(self, pending: Pending, params: dict[str, Any]) -> None:
        """A host's tasks/* request: it belongs to its task (never a call of its own)."""
        task_id = poll_task_id(params)
        pending.poll = task_id or ""
        task = self.tasks.get(task_id) if task_id else None
        if task is not None and pending.method != "tasks/cancel":
            task.polls += 1

    def answered(self, pending: Pending, message: dict[str, Any]) -> None:
        """The upstream answered a poll: whatever it says about a watched task is observed."""
        result = message.get("result")
        if pending.method == "tasks/result":
            task = self.tasks.get(pending.poll or "")
            if task is not None:
                self.finished(task, result, message.get("error"), "tasks/result")
            return
        era: Era = "extension" if isinstance(result, dict) and "resultType" in result else "2025-11-25"
        for state in polled_task(pending.method, result, era):
            self.observe(state, pending.method)

    def notification(self, message: dict[str, Any]) -> bool:
        """A task status notification, observed; True when it is about a task mcpwatch made for a host that does
        not know it (it is not passed on)."""
        state = notified_task(message)
        if state is None:
            return False
        self.observe(state, "notification")
        task = self.tasks.get(state.task_id)
        return (task is not None and task.bridged) or self._bridge.made(state.task_id)

    def observe(self, state: TaskState, seen_by: str) -> None:
        task = self.tasks.get(state.task_id)
        if task is None or task.terminal_at is not None:
            return  # not ours, or over (a cancelled task stays cancelled, whatever a later poll says)
        before = task.state
        if state.updated_at is not None and before.updated_at is not None and state.updated_at < before.updated_at:
            return  # an older snapshot (a poll answered before a notification that overtook it)
        task.state = state
        if (state.status, state.status_message) != (before.status, before.status_message):
            self._status(task, seen_by)
            if task.bridged:
                self._bridge.changed(state)
        if state.terminal:
            self._terminal(task, state, seen_by)

    def finished(self, task: WatchedTask, result: Any, error: Any, seen_by: str) -> None:
        """The call's own result (or JSON-RPC error) reached us: the task is over, whatever was last polled."""
        if task.terminal_at is None:
            status: Status = "failed" if error is not None else "completed"
            task.state = TaskState(
                task.state.task_id, status, task.state.status_message, task.state.ttl_ms, None, task.state.era
            )
            task.terminal_at = self._scheduler.time()
            self._status(task, seen_by)
        self._end(task, result, error)

    # ------------------------------------------------------------------ the operator, the upstream, shutdown

    def task_of(self, request_key: str) -> WatchedTask | None:
        task_id = self._by_request.get(request_key)
        return None if task_id is None else self.tasks.get(task_id)

    def cancel(self, request_key: str) -> bool:
        """The operator's cancel of a call running as a task: `tasks/cancel` upstream (never notifications/cancelled,
        which the spec rules out for tasks); the call ends as cancelled when the upstream confirms."""
        task = self.task_of(request_key)
        return task is not None and self.cancel_task(task.state.task_id)

    def cancel_task(self, task_id: str) -> bool:
        task = self.tasks.get(task_id)
        if task is None or task.terminal_at is not None:
            return False
        self._cancels.add(job := asyncio.ensure_future(self._cancel(task)))
        job.add_done_callback(self._cancels.discard)
        return True

    async def _cancel(self, task: WatchedTask) -> None:
        task_id = task.state.task_id
        try:
            answer = await self._request("tasks/cancel", cancel_params(task), CANCEL_TIMEOUT_S)
        except (ConnectionError, TimeoutError) as exc:
            self._warn(f"tasks/cancel of task {task_id} got no answer: {exc or 'timed out'}")
            return
        if not isinstance(answer, dict) or "error" in answer:
            error = frames.text_of(answer.get("error") if isinstance(answer, dict) else answer, 300)
            self._warn(f"the upstream refused tasks/cancel of task {task_id}: {error}")
            return
        states = polled_task("tasks/cancel", answer.get("result"), task.state.era)
        if states and states[0].task_id == task_id:
            self.observe(states[0], "tasks/cancel")
        if task.terminal_at is None:  # the extension's bare acknowledgement: the cancel is the operator's word
            state = task.state
            cancelled = TaskState(task_id, "cancelled", "cancelled by the operator", state.ttl_ms, None, state.era)
            self.observe(cancelled, "tasks/cancel")

    def end_all(self, outcome: Outcome, why: str) -> None:
        """The upstream that held the tasks is gone, or mcpwatch stops: every call still watched ends now."""
        for task_id in list(self.tasks):
            self.end(task_id, outcome, why)

    def end(self, task_id: str, outcome: Outcome, why: str) -> None:
        """Stop watching a task that will not say how it ended (gone upstream, unreachable): its call ends now."""
        task = self.tasks.get(task_id)
        if task is None:
            return
        if task.terminal_at is None:
            task.terminal_at = self._scheduler.time()
        self._close(task, outcome, {"error": why, "task_status": task.state.status})

    # ------------------------------------------------------------------ inside

    def _status(self, task: WatchedTask, seen_by: str) -> None:
        state = task.state
        elapsed = (task.terminal_at or self._scheduler.time()) - task.pending.started
        data = TaskStatusData(
            task_id=state.task_id,
            status=state.status,
            status_message=peer_text(state.status_message) if state.status_message else None,  # a log line, bounded
            elapsed_s=round(elapsed, 6),
            seen_by=seen_by,  # type: ignore[typeddict-item]  # the callers' literals
            polls=task.polls,
        )
        self._recorder.emit(Kind.TASK_STATUS, request_id=task.pending.request_key, tool=task.pending.tool, **data)

    def _terminal(self, task: WatchedTask, state: TaskState, seen_by: str) -> None:
        task.terminal_at = self._scheduler.time()
        if task.bridged and state.era == "2025-11-25" and state.status != "cancelled":
            return  # the bridge fetches the result (or error) by tasks/result itself
        if state.era == "extension" or state.status != "completed":
            self._end(task, state.result, state.error)
            return
        # 2025-11-25: the result comes by tasks/result; wait a little for it, so the log shows what the host got
        if task.timer is not None:
            task.timer.cancel()
        grace = max(RESULT_GRACE_MIN_S, 3 * (state.poll_interval_ms or 0) / 1000)
        task.timer = self._scheduler.call_later(grace, self._no_result, state.task_id)

    def _no_result(self, task_id: str) -> None:
        task = self.tasks.get(task_id)
        if task is not None:
            self._end(task, None, None)

    def _expired(self, task_id: str) -> None:
        task = self.tasks.get(task_id)
        if task is not None and task.terminal_at is None:
            self.end(task_id, Outcome.ERROR, f"the task's TTL ({task.state.ttl_ms} ms) passed before it ended")

    def _end(self, task: WatchedTask, result: Any, error: Any) -> None:
        status = task.state.status
        detail: RequestEndDetail = {"task_status": status}
        outcome = Outcome(call_outcome(result, error)) if status == "completed" else _OUTCOME.get(status, Outcome.ERROR)
        if error is not None:
            detail["error"] = frames.text_of(error, 1000)
        elif status == "failed":
            detail["error"] = task.state.status_message or "the task failed"
        if result is not None:
            detail["result_preview"] = frames.text_of(result, 4096)
        self._close(task, outcome, detail, result, error)

    def _close(
        self, task: WatchedTask, outcome: Outcome, detail: RequestEndDetail, result: Any = None, error: Any = None
    ) -> None:
        task_id = task.state.task_id
        self.tasks.pop(task_id, None)
        self._by_request.pop(task.pending.request_key, None)
        if task.timer is not None:
            task.timer.cancel()
            task.timer = None
        detail = detail.copy()
        detail["task_id"], detail["polls"] = task_id, task.polls
        elapsed = (task.terminal_at or self._scheduler.time()) - task.pending.started
        if task.bridged:
            self._bridge.ended(task_id, outcome, detail, result, error)
            return
        self._table.finish(task.pending, outcome, None, detail, elapsed=elapsed)


def cancel_params(task: WatchedTask) -> dict[str, Any]:
    """An extension task's cancel repeats its call's 2026-era envelope (the upstream checks it on every request)."""
    params = task.pending.message.get("params")
    meta = envelope(params.get("_meta")) if isinstance(params, dict) else {}
    return {"taskId": task.state.task_id, **({"_meta": meta} if meta else {})}
