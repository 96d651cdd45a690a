"""Every call's deadline behind one timer: a heap of deadlines, the timer armed at the earliest.

A timer per call costs a timer handle made and cancelled for every call, though nearly every call ends long before
its deadline. Here a call's deadline is one heap entry (its time and its key, never the call itself) and one
attribute of the call (`due`); a call that ends leaves the calls in flight, and its entry is let go when the sweep
reaches it, or when dead entries outnumber live ones, so the heap stays the size of the calls in flight. The one
timer is re-armed only when a deadline earlier than the armed one comes in, which with one budget for all calls is
never: deadlines arrive in order. The timer holds the sweep only weakly, so a core whose calls are over is not kept
alive by its scheduler; an idle sweep wakes once, at the earliest deadline still armed, and arms nothing more.
"""

from __future__ import annotations

import heapq
import weakref
from collections.abc import Callable, Mapping
from typing import Protocol

from mcpwatch.scheduler import Scheduler, Timer

COMPACT_MIN = 1024  # heap entries kept before dead ones are counted and let go


class Timed(Protocol):
    """What the sweep reads of a call: its deadline (None: it has none now)."""

    due: float | None


class DeadlineSweep:
    """Deadlines on a scheduler's clock. `calls` is the calls in flight by key (a call that leaves it has ended);
    each call whose deadline is reached is told to `expired`, in order of deadline (ties by key: the order calls
    were made); a call that ended, or whose deadline was moved or cleared, is passed over."""

    def __init__(self, scheduler: Scheduler, calls: Mapping[int, Timed], expired: Callable[[Timed], object]) -> None:
        self._scheduler = scheduler
        self._calls = calls
        self._expired = expired
        self._heap: list[tuple[float, int]] = []
        self._timer: Timer | None = None
        self._armed_at: float | None = None
        self._sweeping = False  # deadlines armed while the sweep runs wait for its end to arm the timer
        self._me = weakref.ref(self)

    def __len__(self) -> int:
        """Deadlines still to come (ended calls' entries excluded)."""
        return sum(1 for due, key in self._heap if self._live(due, key))

    def _live(self, due: float, key: int) -> bool:
        call = self._calls.get(key)
        return call is not None and call.due == due

    def arm(self, key: int, call: Timed, due: float) -> None:
        """The call `key` in flight ends at `due` (scheduler time) unless it ends first; an earlier deadline of the
        same call is replaced."""
        call.due = due
        heap = self._heap
        heapq.heappush(heap, (due, key))
        if self._sweeping:
            return
        armed_at = self._armed_at
        if armed_at is None or due < armed_at:
            self._rearm(due)
        elif len(heap) > COMPACT_MIN and len(heap) > 2 * len(self._calls):  # more ended than in flight: let go
            self._compact()

    def disarm(self, call: Timed) -> None:
        """The call keeps running with no deadline (its entry is let go when the sweep reaches it)."""
        call.due = None

    def _rearm(self, due: float) -> None:
        if self._timer is not None:
            self._timer.cancel()
        self._armed_at = due
        self._timer = self._scheduler.call_later(max(0.0, due - self._scheduler.time()), _sweep, self._me)

    def sweep(self) -> None:
        """The timer fired: every deadline reached ends (also one a float's rounding puts a hair past the armed
        time), then the timer is armed at the next live one, if any."""
        armed_at = self._armed_at
        self._timer = self._armed_at = None
        now = self._scheduler.time()
        cutoff = now if armed_at is None or armed_at < now else armed_at
        self._sweeping = True
        try:
            while self._heap and self._heap[0][0] <= cutoff:
                due, key = heapq.heappop(self._heap)
                call = self._calls.get(key)
                if call is not None and call.due == due:
                    call.due = None
                    self._expired(call)  # may arm more: in the heap before its head is looked at again
        finally:
            self._sweeping = False
            heap = self._heap
            while heap and not self._live(*heap[0]):
                heapq.heappop(heap)
            if heap:
                self._rearm(heap[0][0])

    def _compact(self) -> None:
        """Let go of ended calls' entries. The calls in flight, not the heap's size at the last look, set when the
        next look is: a burst answered at once is let go at the next deadline armed, not kept for its budget. Each
        look at least halves the heap, so it costs each entry a constant share."""
        live = [entry for entry in self._heap if self._live(*entry)]
        heapq.heapify(live)
        self._heap = live


def _sweep(ref: weakref.ref[DeadlineSweep]) -> None:
    """The timer's callback: the sweep, if its core is still there."""
    sweep = ref()
    if sweep is not None:
        sweep.sweep()
