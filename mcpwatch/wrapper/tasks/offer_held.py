"""Finished offered tasks' results held in memory, bounded in bytes (`wrapper.tasks.offer`).

A finished task's result is answered from memory while it fits `[tasks] results_memory_mb` in all; beyond it the
oldest results are let go, and their tasks answer from what the log kept of them (`[late_results] keep_bytes`),
else with one clear error. Memory holds what routes a task (its id, owner, status), not what it produced.
"""

from __future__ import annotations

from collections import OrderedDict
from typing import Any, Protocol


class Holds(Protocol):
    task_id: str
    reply: dict[str, Any] | None
    reply_size: int
    dropped: bool


class HeldResults:
    def __init__(self, budget_bytes: int) -> None:
        self.budget_bytes = budget_bytes
        self.total = 0  # bytes of the results held (their JSON size)
        self._held: OrderedDict[str, Holds] = OrderedDict()

    def hold(self, task: Holds) -> None:
        """Hold the task's result; let the oldest go while the total is beyond the budget."""
        if task.reply is None:
            return
        self._held[task.task_id] = task
        self.total += task.reply_size
        while self.total > self.budget_bytes and self._held:
            _, oldest = self._held.popitem(last=False)
            self.total -= oldest.reply_size
            oldest.reply, oldest.dropped = None, True

    def release(self, task_id: str) -> None:
        """The task is gone (its TTL): its result with it."""
        task = self._held.pop(task_id, None)
        if task is not None:
            self.total -= task.reply_size

    def __len__(self) -> int:
        return len(self._held)
