"""One timer for every call's deadline (`mcpwatch/reliability/sweep.py`), on a manual clock: each deadline ends its
call at its own time, in order, whatever order they were armed in; ended, moved and cleared deadlines are passed
over; the heap stays the size of the calls in flight; the timer never keeps its owner alive."""

from __future__ import annotations

import gc
import random
import weakref

from mcpwatch.clock import ManualClock
from mcpwatch.reliability.sweep import COMPACT_MIN, DeadlineSweep, Timed
from mcpwatch.testing.scheduler import ManualScheduler


class Call:
    def __init__(self, key: int) -> None:
        self.key = key
        self.due: float | None = None


class Calls:
    """Calls in flight by key, and the (key, time) each deadline was reached at."""

    def __init__(self) -> None:
        self.scheduler = ManualScheduler(ManualClock(monotonic=0.0))
        self.live: dict[int, Call] = {}
        self.expired: list[tuple[int, float]] = []
        self.sweep = DeadlineSweep(self.scheduler, self.live, self.reached)

    def reached(self, call: Timed) -> None:
        assert isinstance(call, Call)
        self.expired.append((call.key, self.scheduler.time()))
        del self.live[call.key]

    def start(self, key: int, due: float) -> Call:
        call = self.live[key] = Call(key)
        self.sweep.arm(key, call, due)
        return call


def test_many_deadlines_armed_out_of_order_each_end_at_their_own_time_in_order() -> None:
    calls = Calls()
    shuffled = random.Random(7)
    dues = {key: round(shuffled.uniform(0.1, 60.0), 3) for key in range(500)}
    for key in shuffled.sample(list(dues), len(dues)):
        calls.start(key, dues[key])
    ended = set(shuffled.sample(list(dues), 200))  # answered in time
    for key in ended:
        del calls.live[key]
    while calls.scheduler.advance(0.7):
        pass
    calls.scheduler.advance(60.0)
    expected = sorted((dues[k], k) for k in dues if k not in ended)
    assert calls.expired == [(key, due) for due, key in expected]  # at its own time, exactly, in order
    assert calls.scheduler.pending == 0 and len(calls.sweep) == 0


def test_equal_deadlines_end_in_the_order_the_calls_were_made() -> None:
    calls = Calls()
    for key in (5, 3, 9, 1):
        calls.start(key, 10.0)
    calls.scheduler.advance(10.0)
    assert [key for key, _ in calls.expired] == [1, 3, 5, 9]


def test_an_earlier_deadline_rearms_the_one_timer_and_a_moved_or_cleared_one_is_passed_over() -> None:
    calls = Calls()
    late = calls.start(1, 50.0)
    calls.start(2, 5.0)  # earlier than the armed one
    moved = calls.start(3, 7.0)
    calls.sweep.arm(3, moved, 20.0)  # its deadline moved later
    calls.sweep.disarm(late)  # no deadline any more
    assert calls.scheduler.pending == 1  # one timer for all of them
    calls.scheduler.advance(100.0)
    assert calls.expired == [(2, 5.0), (3, 20.0)]
    assert 1 in calls.live


def test_a_deadline_armed_while_the_sweep_runs_is_not_lost() -> None:
    calls = Calls()

    def reached(call: Timed) -> None:
        assert isinstance(call, Call)
        calls.expired.append((call.key, calls.scheduler.time()))
        del calls.live[call.key]
        if call.key == 1:
            calls.start(2, calls.scheduler.time())  # due at once
            calls.start(3, calls.scheduler.time() + 1.0)

    calls.sweep = DeadlineSweep(calls.scheduler, calls.live, reached)
    calls.start(1, 1.0)
    calls.scheduler.advance(5.0)
    assert calls.expired == [(1, 1.0), (2, 1.0), (3, 2.0)]


def test_the_heap_stays_the_size_of_the_calls_in_flight() -> None:
    calls = Calls()
    for key in range(20 * COMPACT_MIN):  # answered in time, one after the other
        calls.start(key, 60.0 + key)
        del calls.live[key]
    assert len(calls.sweep._heap) <= 2 * COMPACT_MIN


def test_the_timer_does_not_keep_the_sweeps_owner_alive() -> None:
    scheduler = ManualScheduler(ManualClock(monotonic=0.0))
    live: dict[int, Call] = {}
    sweep = DeadlineSweep(scheduler, live, lambda call: None)
    live[1] = call = Call(1)
    sweep.arm(1, call, 30.0)
    gone = weakref.ref(sweep)
    del sweep
    gc.collect()
    assert gone() is None  # its owner (a session's core) ended: nothing holds it for the 30 s
    assert scheduler.advance(60.0) == 1  # the timer runs once and finds nothing to do


def test_a_burst_answered_at_once_leaves_no_heap_behind_it() -> None:
    """A burst of calls with long deadlines, all answered: the next deadline armed lets their entries go, rather
    than keeping them for as long as their budget (up to a week) at twice the burst's size."""
    calls = Calls()
    burst = 8 * COMPACT_MIN
    for key in range(burst):
        calls.start(key, 600.0)
    calls.live.clear()  # all answered
    calls.scheduler.advance(1.0)
    calls.start(burst, 601.0)
    assert len(calls.sweep._heap) <= COMPACT_MIN
    calls.scheduler.advance(600.0)
    assert calls.expired == [(burst, 601.0)]


def test_a_deadline_reached_while_another_is_swept_ends_in_the_same_sweep() -> None:
    """The call a deadline ends arms a deadline already past and ends another due at the same time: the past one
    ends at once, the ended one is passed over; a deadline whose call fails to end does not stop the others."""
    calls = Calls()
    first, second = calls.start(1, 5.0), calls.start(2, 5.0)
    calls.start(4, 6.0)
    calls.start(5, 6.0)

    def reached(call: Timed) -> None:
        assert isinstance(call, Call)
        calls.expired.append((call.key, calls.scheduler.time()))
        del calls.live[call.key]
        if call is first:
            del calls.live[second.key]  # answered meanwhile
            calls.start(3, 1.0)  # a deadline already past
        if call.key == 4:
            raise RuntimeError("the call could not be ended")

    calls.sweep._expired = reached
    calls.scheduler.advance(5.0)
    assert calls.expired == [(1, 5.0), (3, 5.0)]
    try:
        calls.scheduler.advance(1.0)
    except RuntimeError:
        pass
    calls.scheduler.advance(0.0)
    assert calls.expired == [(1, 5.0), (3, 5.0), (4, 6.0), (5, 6.0)]
