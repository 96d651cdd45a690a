"""The host requests in flight, and the one way each of them ends.

Every request ends through `PendingTable.finish`, whatever ended it (the upstream's answer, a deadline, a cancel, a
lost upstream, shutdown): it leaves the table, its timer stops, its outcome is counted once, the host gets its
reply (if one is owed) and one `request_end` event is written.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from functools import partial
from typing import Any, Protocol, cast

from mcpwatch.events import CountersBlock, Kind, Outcome, OutcomeText, ProgressData, RequestEndData, RequestEndDetail
from mcpwatch.reliability.deadline import Budget
from mcpwatch.scheduler import Scheduler, Timer
from mcpwatch.wrapper.calls.recorder import Recorder
from mcpwatch.wrapper.framing import frames


class HostLink(Protocol):
    """One host connection (the stdio front has one; the HTTP front one per session)."""

    # A name for this connection that no other connection of this wrapper ever gets ("stdio", "session <uuid>"), or
    # None for a link that is one sessionless request: late-result reuse never crosses from one name to another.
    @property
    def connection(self) -> str | None: ...

    def send(self, message: dict[str, Any]) -> bool | None:
        """False when the message could not be delivered (an HTTP host with no stream open to carry it)."""
        ...


@dataclass(slots=True, eq=False)
class Pending:
    """A host request on its way upstream (or waiting for the upstream to be ready)."""

    up_id: int
    host_id: Any
    link: HostLink
    method: str
    message: dict[str, Any]
    started: float  # scheduler time
    tool: str | None = None
    budget: Budget | None = None
    request_key: str = ""
    host_token: Any = None  # the host's own progress token; upstream sees the up_id instead
    host_key: Any = None  # (link, host id as the SDK matches it): how the host's cancel finds it
    sent: bool = False
    open: bool = True  # False once finished: a queued frame or a timer that still names it does nothing
    timer: Timer | None = None
    last_progress: ProgressData | None = None
    progress_log: deque[str] = field(default_factory=partial(deque, (), 5))  # the last five messages
    models: dict[str, dict[str, Any]] = field(default_factory=dict)
    host: Any = None  # the DetectedHost whose clocks set this call's budget
    poll: str | None = None  # a tasks/* request: the task it names ("" none); its task owns it, not the log
    bridged: bool = False  # a host without tasks: mcpwatch runs this call upstream as a task (`tasks.bridge`)
    relayed_cancel: Callable[[], None] | None = None  # made again elsewhere (era translation): its cancel


@dataclass
class Counters:
    requests: int = 0
    ok: int = 0  # whole answers
    degraded: int = 0  # ok answers that say they are not whole (a fallback summary, a partial run)
    errors: int = 0
    timeouts: int = 0
    cancelled: int = 0
    late_dropped: int = 0
    late_results: int = 0  # late responses to cut tools/calls, logged as late_result
    late_reused: int = 0  # calls answered with a stored late result
    unknown_dropped: int = 0
    invalidations: int = 0
    host_frame_errors: int = 0
    upstream_garbage: int = 0
    progress_coalesced: int = 0  # progress replaced by a newer one for the same token before a slow host read it
    upstream_pauses: int = 0  # times the upstream was not read because hosts had too much unsent

    def to_dict(self) -> CountersBlock:
        # the fields are CountersBlock's keys, in its order (tests/unit/test_one_shape.py holds them together)
        return cast(CountersBlock, dict(self.__dict__))


_COUNTER_OF = {
    Outcome.OK: "ok",
    Outcome.ERROR: "errors",
    Outcome.TOOL_ERROR: "errors",
    Outcome.UPSTREAM_LOST: "errors",
    Outcome.DEADLINE: "timeouts",
    Outcome.CANCELLED: "cancelled",
}
# a dict lookup, not the enum's `value` property; Outcome's values are OutcomeText's (tests/unit/test_one_shape.py)
_TEXT_OF: dict[Outcome, OutcomeText] = {outcome: outcome.value for outcome in Outcome}


class PendingTable:
    """Requests by the upstream id the wrapper gave them, and by (host link, host id) for the host's cancels."""

    def __init__(self, *, recorder: Recorder, counters: Counters, scheduler: Scheduler) -> None:
        self.calls: dict[int, Pending] = {}
        self._by_host: dict[tuple[int, Any], int] = {}
        self._recorder = recorder
        self._counters = counters
        self._scheduler = scheduler

    def __len__(self) -> int:
        return len(self.calls)

    def __iter__(self) -> Iterator[Pending]:
        return iter(self.calls.values())

    def add(self, pending: Pending) -> None:
        self.calls[pending.up_id] = pending
        pending.host_key = key = (id(pending.link), frames.id_key(pending.host_id))
        self._by_host[key] = pending.up_id
        if pending.poll is None:  # a task's poll is not a call (see wrapper.tasks)
            self._counters.requests += 1

    def get(self, up_id: Any) -> Pending | None:
        """The request an upstream id (or progress token) names; a bool or non-int names none."""
        return self.calls.get(up_id) if type(up_id) is int else None

    def for_host(self, link: HostLink, host_id: Any) -> Pending | None:
        up_id = self._by_host.get((id(link), frames.id_key(host_id)))
        return self.calls.get(up_id) if up_id is not None else None

    def by_request_key(self, request_key: str) -> Pending | None:
        for pending in self.calls.values():
            if pending.request_key == request_key:
                return pending
        return None

    def elapsed(self, pending: Pending) -> float:
        return self._scheduler.time() - pending.started

    def finish(
        self,
        pending: Pending,
        outcome: Outcome,
        reply: dict[str, Any] | None,
        detail: RequestEndDetail,
        *,
        elapsed: float | None = None,
    ) -> float:
        """End a request: out of the table, counted, the host answered with `reply` (None: the host is owed
        nothing), and one request_end event carrying `detail`. Returns how long it took. A task's poll is only
        answered: its task counts it (see `wrapper.tasks`)."""
        self._remove(pending)
        if elapsed is None:
            elapsed = self._scheduler.time() - pending.started
        if pending.poll is not None:
            if reply is not None:
                pending.link.send(reply)
            return elapsed
        counters = self._counters
        name = "degraded" if outcome is Outcome.OK and "degraded" in detail else _COUNTER_OF[outcome]
        setattr(counters, name, getattr(counters, name) + 1)
        if reply is not None and pending.link.send(reply) is False:  # the host's request is closed: not a plain "ok"
            detail = detail.copy()
            detail["delivered"] = False
            message = "answer not delivered: the host's request is closed"
            self._recorder.emit(Kind.WARNING, request_id=pending.request_key, message=message)
        end = RequestEndData(outcome=_TEXT_OF[outcome], duration_s=round(elapsed, 6), method=pending.method, **detail)
        self._recorder.emit(Kind.REQUEST_END, request_id=pending.request_key, tool=pending.tool, **end)
        return elapsed

    def hand_over(self, pending: Pending, reply: dict[str, Any]) -> None:
        """A call answered with a task: the host gets the answer and the call leaves the table (no budget can cut
        it now), but it has not ended: its task ends it later through `finish` (see `wrapper.tasks.watch`)."""
        self._remove(pending)
        pending.link.send(reply)

    def _remove(self, pending: Pending) -> None:
        up_id = pending.up_id
        self.calls.pop(up_id, None)
        pending.open = False
        timer = pending.timer
        if timer is not None:
            timer.cancel()
            pending.timer = None
        key = pending.host_key
        if self._by_host.get(key) == up_id:  # a host may reuse an id while the first call still runs
            del self._by_host[key]
