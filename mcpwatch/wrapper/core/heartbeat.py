"""Heartbeats on the wrapper's scheduler: one timer per call whose host has an idle clock that progress resets.

The timing is `reliability.heartbeat`'s; this module only schedules, sends and logs. A heartbeat repeats the last
progress value the host saw (and its total) with a message of its own, and is logged as a `heartbeat` event, never
as upstream progress. A call that has ended (`pending.open` false) gets no more.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from mcpwatch.events import Kind
from mcpwatch.reliability.heartbeat import heartbeat_interval, heartbeat_message, next_heartbeat
from mcpwatch.scheduler import Scheduler, Timer
from mcpwatch.wrapper.calls.pending import Pending


class Heartbeats:
    def __init__(self, scheduler: Scheduler, emit: Callable[..., Any]) -> None:
        self._scheduler = scheduler
        self._emit = emit
        self._timers: dict[int, tuple[Pending, Timer, float]] = {}  # up_id -> (call, its timer, interval)

    def __len__(self) -> int:
        return len(self._timers)

    def start(self, pending: Pending) -> None:
        """Begin for a tools/call whose host gave a progress token and has an idle clock on this front."""
        host = pending.host
        clock = host.idle_clock() if host is not None and pending.host_token is not None else None
        if clock is None or pending.method != "tools/call":
            return
        self._arm(pending, heartbeat_interval(clock.seconds), self._scheduler.time())

    def touch(self, pending: Pending) -> None:
        """The upstream spoke (its progress went to the host): the host's idle clock restarted, so does ours."""
        entry = self._timers.get(pending.up_id)
        if entry is not None:
            entry[1].cancel()
            self._arm(pending, entry[2], self._scheduler.time())

    def stop(self, pending: Pending) -> None:
        entry = self._timers.pop(pending.up_id, None)
        if entry is not None:
            entry[1].cancel()

    def _arm(self, pending: Pending, interval: float, last_activity: float) -> None:
        budget = pending.budget.seconds if pending.budget is not None else None
        due = next_heartbeat(last_activity, interval, pending.started, budget)
        if due is None or not pending.open:
            self._timers.pop(pending.up_id, None)
            return
        timer = self._scheduler.call_later(max(0.0, due - self._scheduler.time()), self._beat, pending.up_id)
        self._timers[pending.up_id] = (pending, timer, interval)

    def _beat(self, up_id: int) -> None:
        entry = self._timers.get(up_id)
        if entry is None:
            return
        pending, _, interval = entry
        if not pending.open:  # answered meanwhile: nothing to keep alive
            self._timers.pop(up_id, None)
            return
        now = self._scheduler.time()
        elapsed = now - pending.started
        last: Mapping[str, Any] = pending.last_progress or {}
        params: dict[str, Any] = {
            "progressToken": pending.host_token,
            "progress": last.get("progress") if last.get("progress") is not None else 0,
            "message": heartbeat_message(elapsed),
        }
        if last.get("total") is not None:
            params["total"] = last["total"]
        pending.link.send({"jsonrpc": "2.0", "method": "notifications/progress", "params": params})
        self._emit(
            Kind.HEARTBEAT,
            request_id=pending.request_key,
            tool=pending.tool,
            progress=params["progress"],
            total=params.get("total"),
            message=params["message"],
            elapsed_s=round(elapsed, 3),
            interval_s=interval,
        )
        self._arm(pending, interval, now)
