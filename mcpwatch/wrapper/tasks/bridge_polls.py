"""When the bridge polls a task it made for a host, and until when (`wrapper.tasks.bridge`).

The rhythm: the server's `pollInterval`, held within [POLL_MIN_S, POLL_MAX_S] (one that is negative, not a number or
absent keeps the last interval, at first DEFAULT_POLL_S); sooner when a host call starts waiting for the task (it
was made, a retried call joins it) and when its host's answers to the task's input requests went upstream: then the
polls ramp up from POLL_MIN_S, doubling, to the server's interval (the news a waiting host needs comes within about
twice the time it took, not a whole interval later); and BUDGET_LEAD_S before a waiting call's budget ends (so its
answer, the result or the partial one, is as fresh as can be). Never two polls at
once, and never one sooner than POLL_MIN_S after the last began: a hostile interval cannot make mcpwatch spin.
While no host call waits, nobody needs its status at once: polls come at most every IDLE_POLL_MIN_S.

The lifetime: a task is polled only while someone can still use its result. That is while a host call waits for it,
then for `[tasks] reuse_s` after the last one stopped waiting (an identical call within that window takes the result),
never past the TTL mcpwatch asked for (`[tasks] ttl_s`, from the task's creation) and never past its host's session.
Then mcpwatch cancels it upstream (`tasks/cancel`) and logs why: an upstream whose task never ends (`ttl: null`)
costs polls for a bounded time, not for as long as the wrapper runs.
"""

from __future__ import annotations

import heapq
import itertools
from collections.abc import Callable

from mcpwatch.config import TasksSettings
from mcpwatch.scheduler import Scheduler
from mcpwatch.wrapper.calls.pending import Pending
from mcpwatch.wrapper.tasks.bridge_log import BridgedRun

POLL_MIN_S = 0.2  # never a poll sooner than this after the last one began, whatever the server or the host does
POLL_MAX_S = 30.0  # never a wait longer than this between polls, whatever interval the server suggests
DEFAULT_POLL_S = 1.0  # a server that suggests no usable interval
IDLE_POLL_MIN_S = 2.0  # while no host call waits (a retried call that joins gets a poll at once)
BUDGET_LEAD_S = 0.5  # a poll this long before a waiting call's budget ends


def interval_s(poll_interval_ms: int | None, previous_s: float) -> float:
    """The server's suggested interval (ms), held within the bounds (0: the least); none usable (negative, not a
    number): the previous one."""
    if poll_interval_ms is None:
        return min(max(previous_s, POLL_MIN_S), POLL_MAX_S)
    return min(max(poll_interval_ms / 1000, POLL_MIN_S), POLL_MAX_S)


class BridgePolls:
    """Each bridged task's next poll and the end of its polling, on the scheduler."""

    def __init__(
        self,
        *,
        settings: TasksSettings,
        scheduler: Scheduler,
        poll: Callable[[BridgedRun], None],
        expire: Callable[[BridgedRun, str], None],
    ) -> None:
        self._settings = settings
        self._scheduler = scheduler
        self._poll = poll  # send one tasks/get, then call `done`
        self._expire = expire  # cancel the task upstream and end it, every waiting host call told why
        self._order = itertools.count()  # ties between budget ends: first come first

    def waiting(self, run: BridgedRun, pending: Pending) -> None:
        """A host call waits for the task (it made it, or joined it): a poll comes before its budget ends. Kept in
        a heap, so that 20,000 calls joining one task cost 20,000 small steps, not 20,000 scans of the others."""
        run.waiters.append(pending)
        lead = _lead(pending)
        if lead is not None:
            heapq.heappush(run.leads, (lead, next(self._order), pending))

    def start(self, run: BridgedRun, poll_interval_ms: int | None) -> None:
        """The task was made: poll it at the server's interval, and end it at the TTL mcpwatch asked for."""
        run.poll_s = interval_s(poll_interval_ms, DEFAULT_POLL_S)
        run.ramp_s = POLL_MIN_S  # its host waits for the first news
        why = (
            f"bridged task {run.task_id} was still running {self._settings.ttl_s:g} s after it was made, the TTL "
            "mcpwatch asked for ([tasks] ttl_s); mcpwatch cancelled it upstream"
        )
        run.life_timer = self._scheduler.call_later(self._settings.ttl_s, self._expire, run, why)
        self._next(run, POLL_MIN_S)

    def began(self, run: BridgedRun) -> None:
        run.polling, run.poll_again = True, False
        run.last_poll_at = self._scheduler.time()

    def done(self, run: BridgedRun, poll_interval_ms: int | None, *, again: bool) -> None:
        """A poll was answered (`poll_interval_ms`: what it suggests); `again`: the task still runs."""
        run.polling = False
        if not again or run.finished_at is not None or run.given_up:
            return
        run.poll_s = interval_s(poll_interval_ms, run.poll_s)
        delay = 0.0 if run.poll_again else run.poll_s
        if run.ramp_s is not None:  # a host waits for news: sooner, then less and less so
            run.ramp_s *= 2
            delay = min(delay, run.ramp_s)
            if run.ramp_s >= run.poll_s:
                run.ramp_s = None
        if not any(p.open for p in run.waiters):
            delay, run.ramp_s = max(delay, IDLE_POLL_MIN_S), None
        self._next(run, delay)

    def soon(self, run: BridgedRun) -> None:
        """Someone needs the task's news now (a host call joined, its input answers went upstream): poll as soon as
        the bounds allow, or right after the poll under way."""
        if run.finished_at is not None:
            return
        run.ramp_s = POLL_MIN_S
        if run.polling:
            run.poll_again = True
        else:
            self._next(run, 0.0)

    def waiters_changed(self, run: BridgedRun) -> None:
        """A host call started or stopped waiting: with none left, the result waits `[tasks] reuse_s` for an
        identical call, then the task is cancelled; with one, it is polled, its budget's end included."""
        if run.finished_at is not None:
            return
        if any(p.open for p in run.waiters):
            if run.idle_timer is not None:
                run.idle_timer.cancel()
                run.idle_timer = None
            if not run.polling:
                self._next(run, run.poll_s)  # a sooner poll at its budget's end, if that comes first
            return
        if run.idle_timer is None:
            reuse_s = self._settings.reuse_s
            why = (
                f"no host call waited for bridged task {run.task_id} for {reuse_s:g} s ([tasks] reuse_s), so no "
                "identical call can take its result any more; mcpwatch cancelled it upstream"
            )
            run.idle_timer = self._scheduler.call_later(reuse_s, self._idle, run, why)

    def stop(self, run: BridgedRun) -> None:
        """The task is over (or given up): no more polls, no timers left."""
        for timer in (run.poll_timer, run.idle_timer, run.life_timer):
            if timer is not None:
                timer.cancel()
        run.poll_timer = run.idle_timer = run.life_timer = None
        run.poll_due = None
        run.leads.clear()

    # ------------------------------------------------------------------ inside

    def _next(self, run: BridgedRun, delay_s: float) -> None:
        """Poll after `delay_s` (or sooner, before a waiting call's budget ends), never sooner than POLL_MIN_S after
        the last poll began; a poll already due sooner stands."""
        now = self._scheduler.time()
        due = now + delay_s
        lead = self._budget_lead(run, now)
        if lead is not None:
            due = min(due, lead)
        if run.last_poll_at is not None:
            due = max(due, run.last_poll_at + POLL_MIN_S)
        due = max(due, now)
        if run.poll_timer is not None and run.poll_due is not None:
            if run.poll_due <= due:
                return
            run.poll_timer.cancel()
        run.poll_due = due
        run.poll_timer = self._scheduler.call_later(due - now, self._fire, run)

    def _idle(self, run: BridgedRun, why: str) -> None:
        run.idle_timer = None
        if run.input is not None and run.input.timer is not None:
            return  # its host was asked for input: `bridge_input` bounds that wait (reuse_s too), and says so
        self._expire(run, why)

    def _fire(self, run: BridgedRun) -> None:
        run.poll_timer = run.poll_due = None
        if run.finished_at is None and not run.given_up:
            self.began(run)
            self._poll(run)

    def _budget_lead(self, run: BridgedRun, now: float) -> float | None:
        """The soonest time, still ahead, BUDGET_LEAD_S before a waiting call's budget ends. What is behind (time
        only moves on), a call no longer open, leaves the heap for good; a call whose budget was given it since
        (`WrapperCore.continue_call`) goes back in at its new place."""
        while run.leads:
            noted, _, pending = run.leads[0]
            lead = _lead(pending) if pending.open else None
            if lead is not None and lead != noted:
                heapq.heapreplace(run.leads, (lead, next(self._order), pending))
                continue
            if lead is not None and lead > now and (run.last_poll_at is None or lead > run.last_poll_at):
                return lead
            heapq.heappop(run.leads)
        return None


def _lead(pending: Pending) -> float | None:
    """When a poll should come for this call: BUDGET_LEAD_S before its budget ends (None: no budget)."""
    if pending.budget is None or pending.budget.seconds is None:
        return None
    return pending.started + pending.budget.seconds - BUDGET_LEAD_S
