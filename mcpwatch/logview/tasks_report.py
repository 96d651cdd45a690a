"""The report's Tasks section: the calls that ran as MCP tasks, from the task events in the log.

A tools/call becomes a task when the upstream answers it with one (watched), when mcpwatch makes one for a host that
cannot use tasks (bridged), or when mcpwatch answers the host with a task of its own (offered). Its `task_created`
comes first, `task_status` events follow its status changes (an `input_required` status opens one input round: the
task waits for its host's answers), and its call's `request_end` carries its terminal status and the host's polls.

Pure and streaming (one event at a time, a few numbers per task), so a long session costs little.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

from mcpwatch.events import Event, Kind

TERMINAL = ("completed", "failed", "cancelled")
KINDS = ("watched", "bridged", "offered")


@dataclass(slots=True)
class _Task:
    how: str  # watched | bridged | offered
    status: str = "working"
    rounds: int = 0  # input rounds: times it entered input_required


@dataclass
class TaskFold:
    """Fold `task_created`, `task_status` and the `request_end` of task calls into the section's figures."""

    _tasks: dict[str, _Task] = field(default_factory=dict)  # request id -> its task
    _ended: dict[str, int] = field(default_factory=dict)
    _durations: list[float] = field(default_factory=list)
    _rounds: int = 0
    _asked: int = 0  # tasks with at least one input round
    _polls: int = 0
    _created: dict[str, int] = field(default_factory=lambda: dict.fromkeys(KINDS, 0))

    @property
    def running(self) -> bool:
        """Whether a task is still open (a request_end can end one)."""
        return bool(self._tasks)

    def add(self, event: Event) -> None:
        data = event.data if isinstance(event.data, dict) else {}
        rid = event.request_id
        if rid is None:
            return
        if event.kind == Kind.TASK_CREATED:
            if data.get("attached_to"):
                return  # an identical call joined a task another call made: one task, counted once
            how = "offered" if data.get("offered") else "bridged" if data.get("bridged") else "watched"
            made = self._tasks[rid] = _Task(how)
            self._created[how] += 1
            self._status(made, data.get("status"))
            return
        task = self._tasks.get(rid)
        if task is None:
            return
        if event.kind == Kind.TASK_STATUS:
            self._status(task, data.get("status"))
        elif event.kind == Kind.REQUEST_END:
            del self._tasks[rid]
            status = data.get("task_status") if isinstance(data.get("task_status"), str) else task.status
            key = status if status in TERMINAL else "other"
            self._ended[key] = self._ended.get(key, 0) + 1
            polls = data.get("polls")
            self._polls += polls if type(polls) is int and polls > 0 else 0
            duration = data.get("duration_s")
            if isinstance(duration, int | float) and not isinstance(duration, bool) and math.isfinite(duration):
                self._durations.append(float(duration))
            self._rounds += task.rounds
            self._asked += task.rounds > 0

    def _status(self, task: _Task, status: Any) -> None:
        if not isinstance(status, str):
            return
        if status == "input_required" and task.status != "input_required":
            task.rounds += 1
        task.status = status

    def section(self) -> dict[str, Any] | None:
        """The section's figures (None: no call ran as a task)."""
        created = sum(self._created.values())
        if not created:
            return None
        running = list(self._tasks.values())
        ordered = sorted(self._durations)
        return {
            "created": created,
            "by_kind": dict(self._created),
            "completed": self._ended.get("completed", 0),
            "failed": self._ended.get("failed", 0),
            "cancelled": self._ended.get("cancelled", 0),
            "ended_otherwise": self._ended.get("other", 0),  # the watch stopped (upstream lost, session ended)
            "unfinished": len(running),
            "input_rounds": self._rounds + sum(t.rounds for t in running),
            "asked_input": self._asked + sum(1 for t in running if t.rounds),
            "polls": self._polls,
            "p50_s": _nearest(ordered, 0.5),
            "p95_s": _nearest(ordered, 0.95),
            "max_s": ordered[-1] if ordered else None,
        }


def _nearest(ordered: list[float], q: float) -> float | None:
    if not ordered:
        return None
    return ordered[min(len(ordered), max(1, math.ceil(q * len(ordered)))) - 1]


def section_lines(block: dict[str, Any], seconds: Any) -> list[str]:
    """The section as plain lines (`seconds` formats a duration)."""
    kinds = ", ".join(f"{block['by_kind'][k]} {k}" for k in KINDS if block["by_kind"][k])
    ends = [f"{block[k]} {k}" for k in ("completed", "failed", "cancelled")]
    if block["ended_otherwise"]:
        ends.append(f"{block['ended_otherwise']} ended otherwise (watch stopped)")
    if block["unfinished"]:
        ends.append(f"{block['unfinished']} unfinished")
    rounds = f"{block['input_rounds']} input round{'s' if block['input_rounds'] != 1 else ''}"
    if block["input_rounds"]:
        rounds += f" (in {block['asked_input']} task{'s' if block['asked_input'] != 1 else ''})"
    durations = ", ".join(
        f"{name} {seconds(block[key])}" for name, key in (("p50", "p50_s"), ("p95", "p95_s"), ("max", "max_s"))
    )
    return [
        f"tasks: {block['created']} created ({kinds}); {', '.join(ends)}",
        f"  {rounds}; {block['polls']} host polls; durations {durations}",
    ]
