"""The host requests in flight, and the one way each of them ends.

Every call ends here, whatever ended it: through `PendingTable.finish` for a call in the table (the upstream's
answer, a deadline, a cancel, a lost upstream, shutdown, its bridged or offered task's end), through
`PendingTable.answer_at_once` for one answered without going upstream (a kept late result, a bridged task's finished
result). Both end in `PendingTable._end`: the outcome counted once, the host given its reply (if one is owed), one
`request_end` event. The request key a call is logged under (`request_key`), its `request_start` event
(`PendingTable.started`) and the count of requests are made here too; `tests/unit/test_one_exit.py` holds every other
module to it.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Iterator
from typing import Any, Protocol

from mcpwatch.events import Counters as Counters  # declared once in events; the wrapper's parts count here
from mcpwatch.events import (
    Kind,
    LateReuseData,
    Outcome,
    OutcomeText,
    ProgressData,
    RequestEndData,
    RequestEndDetail,
    RequestStartData,
)
from mcpwatch.reliability.deadline import Budget
from mcpwatch.scheduler import Scheduler, Timer
from mcpwatch.wrapper.calls.recorder import Recorder
from mcpwatch.wrapper.framing import frames

UNDELIVERED = "answer not delivered: the host's request is closed"  # the warning when a reply finds no request


class HostLink(Protocol):
    """One host connection (the stdio front has one; the HTTP front one per session)."""

    # A name for this connection that no other connection of this wrapper ever gets ("stdio", "session <uuid>"), or
    # None for a link that is one sessionless request: late-result reuse never crosses from one name to another.
    @property
    def connection(self) -> str | None: ...

    # What this connection's request ids start with in the log ("" for stdio, "<host session>/" on the HTTP front):
    # two hosts' equal ids are two calls, logged under two keys (`request_key`).
    @property
    def key_prefix(self) -> str: ...

    def send(self, message: dict[str, Any]) -> bool | None:
        """False when the message could not be delivered (an HTTP host with no stream open to carry it)."""
        ...

    # `send` for a message already encoded as `frame` (its newline included), which the link writes as it is, or
    # holds as `message` where it must (a batch's answers): a plain call's answer then goes to it in the upstream's
    # own bytes, only its id replaced (`framing.splice`). None for a link that takes messages only.
    @property
    def send_raw(self) -> RawSend | None: ...


RawSend = Callable[[bytes, dict[str, Any]], bool | None]  # a link's `send_raw` (see `HostLink`)


def request_key(link: HostLink, host_id: Any) -> str:
    """The name a host's request is logged under: its id, after its connection's prefix; a huge id is kept by its
    digest, so equal ids stay apart and a 16 MiB id costs a few hundred bytes (the host gets its own id back)."""
    return link.key_prefix + frames.bounded_key(str(host_id))


class Pending:
    """A host request on its way upstream (or waiting for the upstream to be ready).

    Every call sets the attributes `__init__` sets; most never set the others, which are read from the class until
    a call sets its own (a call is made for every frame: the fewer attributes it writes, the cheaper it is)."""

    host_token: Any = None  # the host's own progress token; upstream sees the up_id instead
    request_key: str = ""  # set by `PendingTable.add` (`request_key`)
    host_key: Any = None  # (link, host id as the SDK matches it): how the host's cancel finds it
    sent: bool = False
    timer: Timer | None = None
    last_progress: ProgressData | None = None
    host: Any = None  # the DetectedHost whose clocks set this call's budget
    poll: str | None = None  # a tasks/* request: the task it names ("" none); its task owns it, not the log
    bridged: bool = False  # a host without tasks: mcpwatch runs this call upstream as a task (`tasks.bridge`)
    relayed_cancel: Callable[[], None] | None = None  # made again elsewhere (era translation): its cancel
    due: float | None = None  # scheduler time its deadline cuts it (`reliability.sweep`); None: no deadline now
    plain: bool = False  # on the plain call's path (`core.plain`): its answer skips the feature checks

    def __init__(
        self,
        up_id: int,
        host_id: Any,
        link: HostLink,
        method: str,
        message: dict[str, Any],
        started: float,  # scheduler time
        tool: str | None = None,
        budget: Budget | None = None,
    ) -> None:
        self.up_id = up_id
        self.host_id = host_id
        self.link = link
        self.method = method
        self.message = message
        self.started = started
        self.tool = tool
        self.budget = budget
        self.open = True  # False once finished: a queued frame or a timer that still names it does nothing

    _progress_log: deque[str] | None = None
    _models: dict[str, dict[str, Any]] | None = None

    @property
    def progress_log(self) -> deque[str]:
        """The last five progress messages (made when first needed: most calls have none)."""
        log = self._progress_log
        if log is None:
            log = self._progress_log = deque(maxlen=5)
        return log

    @property
    def models(self) -> dict[str, dict[str, Any]]:
        """The council's per-model state as its progress told it (made when first needed)."""
        models = self._models
        if models is None:
            models = self._models = {}
        return models


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
        """A request on its way: in the table, named in the log (`request_key`), counted unless it is a task's poll."""
        host_id = pending.host_id
        name = str(host_id)  # `request_key`, inline: every call comes here
        if len(name) > frames.KEY_MAX:
            name = frames.bounded_key(name)
        link = pending.link
        pending.request_key = link.key_prefix + name
        self.calls[pending.up_id] = pending
        pending.host_key = key = (id(link), host_id if type(host_id) is int else frames.id_key(host_id))
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
        self._end(pending.link, pending.request_key, pending.tool, pending.method, outcome, reply, detail, elapsed)
        return elapsed

    def answer_at_once(
        self,
        link: HostLink,
        host_id: Any,
        tool: str,
        arguments: Any,
        outcome: Outcome,
        reply: dict[str, Any],
        reused: LateReuseData,
        detail: RequestEndDetail,
    ) -> None:
        """A tools/call answered at once with a result kept from an identical cut call (a late result, a bridged
        task's): never sent upstream, one request all the same, started, marked as a reuse and ended here."""
        key = request_key(link, host_id)
        self._counters.requests += 1
        self._counters.late_reused += 1
        start = RequestStartData(
            method="tools/call",
            up_id=None,
            budget_s=None,
            budget_source="late_reuse",
            arguments=frames.text_of(arguments if arguments is not None else {}),
        )
        emit = self._recorder.emit
        emit(Kind.REQUEST_START, request_id=key, tool=tool, **start)
        emit(Kind.LATE_REUSE, request_id=key, tool=tool, **reused)
        self._end(link, key, tool, "tools/call", outcome, reply, {"late_reuse": True, **detail}, 0.0)

    def started(self, pending: Pending, params: dict[str, Any], trace_ids: dict[str, str] | None) -> None:
        """The request's `request_start` event (a task's poll has none: it is its task's, not a call)."""
        budget = pending.budget
        made_for = getattr(pending.link, "made_for", None)  # a call made on a host call's behalf (`era_translate`)
        if budget is None:
            host = None if pending.host is None else pending.host.label
            start = RequestStartData(method=pending.method, up_id=pending.up_id, budget_s=None, host=host)
            if made_for is not None:
                start["made_for"] = made_for
            self._recorder.emit(Kind.REQUEST_START, request_id=pending.request_key, **start, **(trace_ids or {}))
            return
        start = RequestStartData(
            method=pending.method,
            up_id=pending.up_id,
            budget_s=budget.seconds,
            budget_source=budget.source,
            arguments=frames.text_of(params.get("arguments", {})),
            host=budget.host,
        )
        if made_for is not None:
            start["made_for"] = made_for
        emit = self._recorder.emit
        emit(Kind.REQUEST_START, request_id=pending.request_key, tool=pending.tool, **start, **(trace_ids or {}))

    def plain_started(
        self, pending: Pending, budget: Budget, arguments: str, trace_ids: tuple[str, str] | None = None
    ) -> None:
        """`started` for a plain call (`core.plain`): the same `request_start`, built with nothing to look up.
        `trace_ids`: its trace's and span's ids (`otel.context.stamp_own`), written last, as `started` writes them.
        The two calls are written out rather than one with a `**` spread, which builds every call's keywords anew
        (see `plain_finish`)."""
        if trace_ids is not None:
            self._recorder.emit(
                Kind.REQUEST_START,
                request_id=pending.request_key,
                tool=pending.tool,
                method="tools/call",
                up_id=pending.up_id,
                budget_s=budget.seconds,
                budget_source=budget.source,
                arguments=arguments,
                host=budget.host,
                trace_id=trace_ids[0],
                span_id=trace_ids[1],
            )
            return
        self._recorder.emit(
            Kind.REQUEST_START,
            request_id=pending.request_key,
            tool=pending.tool,
            method="tools/call",
            up_id=pending.up_id,
            budget_s=budget.seconds,
            budget_source=budget.source,
            arguments=arguments,
            host=budget.host,
        )

    def plain_finish(
        self,
        pending: Pending,
        reply: dict[str, Any],
        preview: str,
        frame: bytes | None = None,
        send_raw: RawSend | None = None,
    ) -> None:
        """`finish` for a plain call's ordinary answer (`core.plain`, not degraded): the same count, reply and
        `request_end`, with nothing to look up. `frame`: the reply already encoded, given to the link's `send_raw`."""
        self._remove(pending)
        elapsed = self._scheduler.time() - pending.started
        self._counters.ok += 1
        key = pending.request_key
        emit = self._recorder.emit
        sent = pending.link.send(reply) if frame is None or send_raw is None else send_raw(frame, reply)
        if sent is False:  # as `_end`: the host's request is closed
            emit(Kind.WARNING, request_id=key, message=UNDELIVERED)
            emit(
                Kind.REQUEST_END,
                request_id=key,
                tool=pending.tool,
                outcome="ok",
                duration_s=round(elapsed, 6),
                method="tools/call",
                result_preview=preview,
                delivered=False,
            )
            return
        # written out again rather than with a `**` spread of the flag: a call with `**` builds its keywords anew
        # (about 2,500 of the loop thread's instructions a plain call)
        emit(
            Kind.REQUEST_END,
            request_id=key,
            tool=pending.tool,
            outcome="ok",
            duration_s=round(elapsed, 6),
            method="tools/call",
            result_preview=preview,
        )

    def _end(
        self,
        link: HostLink,
        key: str,
        tool: str | None,
        method: str,
        outcome: Outcome,
        reply: dict[str, Any] | None,
        detail: RequestEndDetail,
        elapsed: float,
    ) -> None:
        """Where every call ends: its outcome counted, its host answered, its one request_end written."""
        counters = self._counters
        if outcome is Outcome.OK and "degraded" not in detail:
            counters.ok += 1  # the common ending, counted without a lookup
        else:
            name = "degraded" if outcome is Outcome.OK else _COUNTER_OF[outcome]
            setattr(counters, name, getattr(counters, name) + 1)
        if reply is not None and link.send(reply) is False:  # the host's request is closed: not a plain "ok"
            detail = detail.copy()
            detail["delivered"] = False
            message = UNDELIVERED
            self._recorder.emit(Kind.WARNING, request_id=key, message=message)
        end = RequestEndData(outcome=_TEXT_OF[outcome], duration_s=round(elapsed, 6), method=method, **detail)
        self._recorder.emit(Kind.REQUEST_END, request_id=key, tool=tool, **end)

    def answer_early(self, pending: Pending, reply: dict[str, Any]) -> None:
        """A call answered with a task mcpwatch offers: the host has its answer, but the call runs on in the table
        (bounded by its budget) and ends later through `finish`, its task's end (see `wrapper.tasks.offer`)."""
        pending.link.send(reply)

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
