"""The wrapper's message pump, independent of transports: host requests in, upstream answers out, and the three
ways a call ends early (deadline, cancel, failure).

The parts it routes through each have their own module: the requests in flight (`calls.pending`), the upstream
connection (`session`), tombstones (`late`) and late results (`late_results`), what the upstream sends (`inbound`),
the early endings and failures (`endings`), frames it cannot take (`oversize`), MCP Tasks (`wrapper.tasks`). Each
part is handed the parts or bound methods it needs when it is built, in dependency order: the tombstones and the
failures come before the session, which fails through them a call it cannot deliver; the task bridge builds the
task watch, which tells it of its tasks. None holds the core, and none is patched into another after it is built.
Links reach the core only through its ports (`port`); the operator through `operator.operated.OperatedCore`.
Everything runs on one asyncio loop, so no locks: each handler runs to completion between frames.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from functools import partial
from typing import Any

from mcpwatch.config import Settings
from mcpwatch.events import Outcome
from mcpwatch.otel.context import stamp as stamp_trace
from mcpwatch.reliability.deadline import Budget, DeadlinePolicy
from mcpwatch.reliability.hosts import catalog as host_catalog
from mcpwatch.reliability.ids import UpstreamIds
from mcpwatch.reliability.statesync import StateSync
from mcpwatch.reliability.sweep import DeadlineSweep, Timed
from mcpwatch.reliability.tombstones import TtlTerms
from mcpwatch.scheduler import LoopScheduler, Scheduler
from mcpwatch.terminal import say
from mcpwatch.wire import DEADLINE_META, DEFAULT_HEALTH_TOOL, MODERN_VERSION_META, deadline_ms
from mcpwatch.wrapper.calls.pending import Counters, HostLink, Pending, PendingTable
from mcpwatch.wrapper.calls.progress import own_token
from mcpwatch.wrapper.calls.recorder import Recorder
from mcpwatch.wrapper.core import oversize
from mcpwatch.wrapper.core.discover_memo import DiscoverMemo
from mcpwatch.wrapper.core.endings import Endings, Failures
from mcpwatch.wrapper.core.heartbeat import Heartbeats
from mcpwatch.wrapper.core.hostwatch import HostDirectory
from mcpwatch.wrapper.core.inbound import UpstreamInbound
from mcpwatch.wrapper.core.late import LateFrames
from mcpwatch.wrapper.core.late_results import LateResults
from mcpwatch.wrapper.core.plain import PlainCalls, Route
from mcpwatch.wrapper.core.pressure import Backpressure
from mcpwatch.wrapper.core.session import UpstreamLink, UpstreamSession
from mcpwatch.wrapper.framing import frames
from mcpwatch.wrapper.framing.splice import SPLICE_BYTES, read_response
from mcpwatch.wrapper.tasks.bridge import TaskBridge
from mcpwatch.wrapper.tasks.offer import SharedOffers, TaskOffer
from mcpwatch.wrapper.tasks.shapes import INVALID_PARAMS, POLL_METHODS


class WrapperCore:
    def __init__(
        self,
        *,
        settings: Settings,
        deadline: DeadlinePolicy,
        recorder: Recorder,
        state_sync: StateSync | None = None,
        name: str = "mcpwatch",
        loop: asyncio.AbstractEventLoop | None = None,
        scheduler: Scheduler | None = None,
        shared: bool = False,
        front: str = "stdio",
        trace_requests: bool = False,
        on_tools_listed: Callable[[Any], None] | None = None,
        offers: SharedOffers | None = None,
        discover_memo: DiscoverMemo | None = None,
        translate: Callable[..., bool] | None = None,
    ) -> None:
        """`front`: the kind of front its hosts use ("stdio" or "http"; host profiles may have clocks for one only).
        `trace_requests`: OpenTelemetry export is on, so each forwarded request carries the wrapper's span.
        `on_tools_listed`: told each tools/list result (the scrape endpoint learns the tool names).
        `offers`: what this wrapper's cores share about the tasks they offer.
        `discover_memo`: the upstream's kept `server/discover` answer (the core 2026-era hosts use).
        `translate`: runs a 2025-era host's call of an extension-only tool in the 2026 era (HTTP front sessions)."""
        self.settings = settings
        self.deadline = deadline
        self.recorder = recorder
        self.state_sync = state_sync if state_sync is not None and state_sync.enabled else None
        self.name = name
        self.loop = loop or asyncio.get_running_loop()
        self.scheduler: Scheduler = scheduler if scheduler is not None else LoopScheduler(self.loop)
        self.counters = Counters()
        self.table = PendingTable(recorder=recorder, counters=self.counters, scheduler=self.scheduler)
        self.late_results = LateResults(
            settings.late_results,
            recorder,
            counters=self.counters,
            table=self.table,
            state_sync=self.state_sync,
            cap=settings.tombstones.cap,
        )
        self.hosts = HostDirectory(
            host_catalog(settings.hosts, settings.source or "mcpwatch.toml"), recorder.emit, front=front
        )
        tombstones = LateFrames(
            ids=UpstreamIds(),
            settings=settings.tombstones,
            recorder=recorder,
            counters=self.counters,
            results=self.late_results,
        )
        self.failures = Failures(
            table=self.table,
            tombstones=tombstones,
            deadline=deadline,
            late_results=self.late_results,
            modern=self.hosts.speaks_modern,
        )
        self.session = UpstreamSession(
            settings=settings,
            recorder=recorder,
            scheduler=self.scheduler,
            loop=self.loop,
            late=tombstones,
            undeliverable=self.failures.undeliverable,
        )
        self.pressure = Backpressure(clock=self.loop.time, warn=recorder.warn, counters=self.counters)
        self.endings = Endings(
            table=self.table, session=self.session, failures=self.failures, modern=self.hosts.speaks_modern
        )
        self.heartbeats = Heartbeats(self.scheduler, recorder.emit)
        self.routes: dict[tuple[int, str], Route] = {}  # the plain path's verdicts (`plain`), cleared on changes
        self.links: list[HostLink] = []
        self.on_detach: list[Callable[[HostLink], None]] = []  # told when a host's session ends (`era_translate`)
        self.bridge = TaskBridge(
            settings=settings.tasks,
            table=self.table,
            recorder=recorder,
            scheduler=self.scheduler,
            counters=self.counters,
            request=self.session.request,
            upstream_capabilities=self.session.capabilities,
            on_progress=self.heartbeats.touch,
            modern=self.hosts.speaks_modern,
            warn=recorder.warn,
        )
        self.bridge.on_learnt = self.routes.clear  # a tool's task support learnt: the plain path's verdicts again
        self.tasks = self.bridge.watch  # every task-augmented call; the bridge builds it, to be told of its tasks
        self.offer = TaskOffer(
            settings=settings.tasks,
            table=self.table,
            recorder=recorder,
            scheduler=self.scheduler,
            host_has_tasks=self.bridge.host_has_tasks,
            upstream_support=self.bridge.support.get,
            upstream_takes_tasks=self.bridge.upstream_takes_tasks,
            cancel_call=self.endings.host_cancel,
            send_upstream=self.session.send,
            keep_bytes=settings.late_results.keep_bytes,
            shared=offers,
        )
        health_tool = settings.upstream.health_tool or DEFAULT_HEALTH_TOOL
        self.inbound = UpstreamInbound(
            tasks=self.tasks,
            bridge=self.bridge,
            offer=self.offer,
            table=self.table,
            session=self.session,
            links=self.links,
            recorder=recorder,
            counters=self.counters,
            state_sync=self.state_sync,
            health_tool=health_tool,
            warn=recorder.warn,
            on_progress=self.heartbeats.touch,
            shared=shared,
            on_tools_listed=on_tools_listed,
            on_discovered=None if discover_memo is None else discover_memo.note,
            translate=translate,
            end_heartbeat=self.heartbeats.stop,
        )
        self.discover_memo = discover_memo
        self.unusable = oversize.UnusableFrames(
            cap_bytes=settings.limits.max_frame_bytes,
            session=self.session,
            table=self.table,
            failures=self.failures,
            counters=self.counters,
            garbage=self.inbound.garbage,
            warn=recorder.warn,
        )
        self.closing = False
        self.trace_requests = trace_requests
        self._propagate = settings.deadline.propagate
        # every call's deadline, behind one timer
        self.deadlines = DeadlineSweep(
            self.scheduler, self.table.calls, partial(_deadline_reached, self.bridge, self.endings)
        )
        self.plain = PlainCalls(
            routes=self.routes,
            table=self.table,
            session=self.session,
            failures=self.failures,
            deadline=deadline,
            deadlines=self.deadlines,
            scheduler=self.scheduler,
            hosts=self.hosts,
            late_results=self.late_results,
            bridge=self.bridge,
            state_sync=self.state_sync,
            health_tool=health_tool,
            propagate=self._propagate,
            trace=trace_requests,
        )

    # ------------------------------------------------------------------ the ports' small services

    def warn(self, message: str) -> None:
        self.recorder.warn(message)

    def count_frame_error(self) -> None:
        self.counters.host_frame_errors += 1

    def frame_limit(self) -> int:
        return self.settings.limits.max_frame_bytes

    def host_oversize(self, link: HostLink, size: int, head: bytes = b"") -> None:
        self.unusable.host_over_cap(link, size, head)

    # ------------------------------------------------------------------ host side

    def attach_link(self, link: HostLink) -> None:
        self.links.append(link)

    def detach_link(self, link: HostLink) -> None:
        if link in self.links:
            self.links.remove(link)
        self.late_results.forget_link(link)
        self.bridge.forget_link(link)
        self.offer.forget_link(link)
        self.hosts.forget(link)
        self.routes.clear()
        for detached in self.on_detach:
            detached(link)

    def host_frame(self, link: HostLink, line: bytes) -> None:
        """One line from a host: parse, answer malformed frames as the spec says, dispatch the rest."""
        try:
            message = frames.decode(line)
        except ValueError:
            self.counters.host_frame_errors += 1
            self.warn(f"host sent a frame that is not JSON: {frames.text_of(line, 200)}")
            link.send(frames.error_response(None, frames.PARSE_ERROR, "Parse error"))
            return
        if isinstance(message, list):
            if not message:
                self._refuse(link, None, "Invalid Request: empty batch", message)
            for item in message:
                self.host_message(link, item)
            return
        self.host_message(link, message)

    def host_message(self, link: HostLink, message: Any) -> None:
        if self.plain.request(link, message):
            return  # a plain call, forwarded (`plain`)
        kind = frames.kind_of(message)
        if kind == frames.REQUEST:
            self._host_request(link, message)
        elif kind == frames.NOTIFICATION:
            self._host_notification(link, message)
        elif kind == frames.RESPONSE:
            # only the host that was asked may answer, and only while the upstream that asked is still there
            if self.session.take_server_request(message["id"], link):
                self.session.send(None, message)
        else:
            request_id = message.get("id") if isinstance(message, dict) else None
            if not frames.valid_id(request_id):
                request_id = None
            self._refuse(link, request_id, "Invalid Request", message)

    def _refuse(self, link: HostLink, request_id: Any, error: str, message: Any) -> None:
        """A host frame that breaks JSON-RPC: counted, logged as a warning, answered with Invalid Request."""
        self.counters.host_frame_errors += 1
        self.warn(f"host sent an invalid JSON-RPC message ({error}): {frames.text_of(message, 200)}")
        link.send(frames.error_response(request_id, frames.INVALID_REQUEST, error))

    def _host_request(self, link: HostLink, message: dict[str, Any]) -> None:
        method: str = message["method"]
        params = message.get("params")
        if params is not None and not isinstance(params, dict):
            self._refuse(link, message["id"], "Invalid Request: params must be an object", message)
            return
        params = params or {}
        meta = got if isinstance(got := params.get("_meta"), dict) else None
        if method == "initialize":
            self.routes.clear()  # another host on this link: the plain path's verdicts are made again
            self.session.init_params = params
            self.hosts.initialized(link, params.get("clientInfo"), params.get("protocolVersion"))
            self.bridge.host_initialized(link, params.get("capabilities"))
            self.offer.host_initialized(link, params.get("clientInfo"))
        # as `modern_version(message)`, from the `_meta` already read; the host directory notes the era
        version = got if meta is not None and isinstance(got := meta.get(MODERN_VERSION_META), str) else None
        tool = params.get("name") if method == "tools/call" and isinstance(params.get("name"), str) else None
        host = self.hosts.for_request(link, meta, version)  # each call gets the budget of its own host
        late = self.late_results  # an identical call's late result, given at once (opt-in: [[late_results.reuse]])
        if (
            tool is not None
            and late.reuse.enabled
            and late.answer_from_store(link, host, message["id"], tool, params.get("arguments"))
        ):
            return
        bridge, offer = self.bridge, self.offer
        arguments = params.get("arguments")
        if tool is not None and bridge.runs and bridge.answer_at_once(link, message["id"], tool, arguments, meta):
            return  # an identical call whose bridged task finished after its host stopped waiting
        if method in POLL_METHODS and offer.handles(link, message):
            return  # a poll of a task mcpwatch itself runs for this host
        if tool is not None and "requestState" in params and (refusal := bridge.input.refusal(link, params)):
            link.send(frames.error_response(message["id"], INVALID_PARAMS, refusal))
            return  # an answer to a bridged task's input requests that no task of this host waits for
        # only a call naming a task (or, in the 2026 era, with a `_meta` to declare the extension in) can be offered one
        offered = method == "tools/call" and ("task" in params or meta is not None)
        offered = offered and offer.wants(link, tool, params)
        if offered and (refused := offer.refusal(link, params)) is not None:
            link.send(frames.error_response(message["id"], *refused))
            return
        if (
            tool is not None
            and not offered
            and tool not in bridge.support  # a tool listed already needs no listing
            and bridge.must_list_first(link, tool, params)
        ):
            bridge.list_then(tool, params, lambda: self._host_request(link, message))  # is it a task-only tool?
            return
        up_id = self.session.ids.allocate()
        host_id = message["id"]
        # a host names the method, and the call's start and end carry it into the 10,000-event ring: a long one is
        # kept as its start and a digest there, as tool names are (the upstream gets the request as it came)
        named = method if len(method) <= frames.KEY_MAX else frames.bounded_key(method)
        pending = Pending(up_id, host_id, link, named, message, self.scheduler.time(), tool)
        pending.host = host
        if method in POLL_METHODS:
            self.tasks.poll(pending, params)
        self.table.add(pending)
        forwarded_params = dict(params)
        if meta is not None and "progressToken" in meta:
            # The wrapper owns the token space upstream too: several hosts may share one upstream, and a late
            # progress notification is then recognised by its token alone.
            pending.host_token = meta["progressToken"]
            forwarded_params["_meta"] = meta = {**meta, "progressToken": up_id}
        elif method == "tools/call":  # a token of the wrapper's own: the server's progress is logged, a basis
            forwarded_params["_meta"] = meta = own_token(meta, up_id)
        budget = None
        if method == "tools/call":
            budget = pending.budget = self.deadline.budget(tool, host, pending.host_token is not None)
            if offered:  # the host has its task at once; the call runs to its end, bounded by [tasks] max_s
                forwarded_params["_meta"] = meta = self.offer.start(pending, link, params, forwarded_params, meta)
                budget = pending.budget
            else:
                self.heartbeats.start(pending)
            if budget.seconds is not None:
                self.deadlines.arm(up_id, pending, pending.started + budget.seconds)
                if self._propagate:  # the time left is stamped again when the frame is sent
                    forwarded_params["_meta"] = {**(meta or {}), DEADLINE_META: deadline_ms(budget.seconds)}
        if tool is not None and bridge.attachable and bridge.attach(pending, arguments):
            self.table.started(pending, params, None)  # it waits for the task an identical call made
            return
        if tool is not None and tool in bridge.support and bridge.wants(link, tool, params):
            pending.bridged = True
            bridge.augment(forwarded_params)
        forwarded = {"jsonrpc": "2.0", "id": up_id, "method": method}
        trace_ids = stamp_trace(forwarded_params) if self.trace_requests else None
        if "params" in message or trace_ids is not None:
            forwarded["params"] = forwarded_params
        pending.message = forwarded
        if method == "server/discover" and (kept := self._kept_discover(version, forwarded_params)) is not None:
            self.table.started(pending, params, trace_ids)  # answered at once from the kept answer
            self.inbound.message({"jsonrpc": "2.0", "id": up_id, "result": kept})
            return
        outcome = self.session.transmit(pending, forwarded)  # first: the upstream starts on it meanwhile
        if pending.poll is None:  # a task's poll is its task's, not a call of its own
            self.table.started(pending, params, trace_ids)
        if outcome == "unstartable":
            self.failures.fail(pending, Outcome.UPSTREAM_LOST, self.session.refusal_text(outcome))
        elif outcome not in ("sent", "queued"):
            self.failures.fail(pending, Outcome.ERROR, self.session.refusal_text(outcome))

    def _kept_discover(self, version: str | None, params: dict[str, Any]) -> dict[str, Any] | None:
        """While the upstream is not ready, the answer it gave at its last start (`discover_memo`); the same request
        goes upstream once it is, and its answer is kept."""
        memo = self.discover_memo
        if memo is None or self.session.ready or (kept := memo.kept(version)) is None:
            return None
        memo.refresh(partial(self.session.request_when_ready, "server/discover", params), self.bridge.discovered)
        return kept

    def _host_notification(self, link: HostLink, message: dict[str, Any]) -> None:
        if message["method"] == "notifications/cancelled":
            params = got if isinstance(got := message.get("params"), dict) else {}
            request_id = params.get("requestId")
            if request_id is None or not frames.valid_id(request_id):
                return  # names no request of ours (and may not even be hashable)
            pending = self.table.for_host(link, request_id)
            if pending is None:
                return  # nothing of ours in flight: the spec says ignore
            if pending.bridged and self.bridge.cut(pending, "host_cancel"):
                return  # the host stopped waiting; its task goes on (an identical call takes its result)
            if self.offer.host_cancelled(pending, params.get("reason")):
                return  # the request that made an offered task: the task is cancelled, as by tasks/cancel
            if pending.relayed_cancel is not None:  # the call made for it in the 2026 era is cancelled too
                pending.relayed_cancel()
            self.endings.host_cancel(pending, params.get("reason"))
            return
        self.session.send(None, message)

    # ------------------------------------------------------------------ upstream side

    def upstream_frame(self, line: bytes, fallback: Any = oversize.UNKNOWN) -> None:
        # a response whose id can be replaced in its bytes (`framing.splice`), when large enough for that to pay
        framed = read_response(line) if len(line) >= SPLICE_BYTES else None
        if framed is not None:
            message = framed[0]
            if self.plain.answer(message, framed):
                return  # a plain call's ordinary answer (`plain`), forwarded in the upstream's bytes
        else:
            try:
                message = frames.decode(line)
            except ValueError as exc:  # the request it answers, if its start or its POST shows which, is told at once
                self.unusable.upstream_unreadable(line, str(exc), fallback)
                return
            if type(message) is dict and self.plain.answer(message):
                return  # a plain call's ordinary answer (`plain`)
        self.plain.heard(message)
        self.inbound.decoded(message)

    def upstream_message(self, message: Any) -> None:
        self.plain.heard(message)
        self.inbound.message(message)

    def upstream_oversize(self, size: int, head: bytes = b"", fallback: Any = oversize.UNKNOWN) -> None:
        self.unusable.upstream_over_cap(size, head, fallback)

    def is_waiting(self, up_id: Any) -> bool:
        """Whether a request sent upstream under this id still waits for its answer."""
        return self.table.get(up_id) is not None or self.session.has_internal(up_id)

    def requeue(self, up_id: Any) -> bool:
        """A request the upstream never received (its connection was gone): send it again on the next one."""
        return self.session.requeue(self.table.get(up_id))

    # ------------------------------------------------------------------ deadlines, cancellation, failure

    def _deadline_hit(self, up_id: int) -> None:
        pending = self.table.get(up_id)
        if pending is not None:
            _deadline_reached(self.bridge, self.endings, pending)

    def continue_call(self, link: HostLink, host_id: Any, started: float, budget: Budget | None) -> None:
        """The call just made through `link` on another core's host's behalf (`fronts.era_translate`) started when
        that host's call did, and its budget is that call's: it is cut when the host's would have been."""
        pending = self.table.for_host(link, host_id)
        if pending is None:
            return
        pending.started = started
        pending.budget = budget
        if budget is not None and budget.seconds is not None:
            self.deadlines.arm(pending.up_id, pending, started + budget.seconds)
        else:
            self.deadlines.disarm(pending)

    def cancel(self, request_id: str) -> bool:
        return self.bridge.cancel(request_id) or self.endings.cancel(request_id) or self.tasks.cancel(request_id)

    def ttl_terms(self) -> TtlTerms:
        return self.session.late.terms(self.deadline.budget(None))

    def sweep_tombstones(self) -> int:
        return self.session.late.sweep()

    # ------------------------------------------------------------------ upstream lifecycle

    def attach_upstream(self, upstream: UpstreamLink) -> None:
        self.session.link = upstream
        self.pressure.upstream = upstream

    def upstream_connecting(self) -> int:
        return self.session.connecting()

    async def upstream_started(self) -> None:
        await self.session.started()

    def upstream_lost(
        self,
        *,
        reason: str,
        exit_code: int | None = None,
        stderr_tail: list[str] | None = None,
        fail_queued: bool = False,
    ) -> None:
        """The upstream is gone: answer every call it held at once, clearly. Queued calls keep waiting for the next
        connection, unless it could not even be started (`fail_queued`): then they are answered with that too."""
        text = self.session.lost(reason, exit_code, stderr_tail or [])
        if fail_queued:
            self.session.start_failure = text
        if not self.closing:
            # the host keeps this as the server's log; the upstream's text in it may hold escapes and line ends
            say(text)
        for pending in [p for p in self.table if p.sent or fail_queued]:
            self.failures.fail(pending, Outcome.UPSTREAM_LOST, text)
        self.tasks.end_all(Outcome.UPSTREAM_LOST, text)

    def upstream_backoff(self, retry_in_s: float) -> None:
        self.session.backoff(retry_in_s)

    # ------------------------------------------------------------------ operator actions and shutdown

    def shutdown(self, why: str) -> None:
        """Cancel every call upstream and tombstone it; answer hosts that are still there."""
        self.closing = True
        for pending in list(self.table):
            self.endings.abandon(
                pending, Outcome.CANCELLED, "shutdown", reason_text=f"mcpwatch is shutting down ({why})"
            )
        self.session.waiting.clear()
        self.tasks.end_all(Outcome.CANCELLED, "shutdown")


def _deadline_reached(bridge: TaskBridge, endings: Endings, call: Timed) -> None:
    """A call's deadline came (`DeadlineSweep`): a bridged call's host gets the partial answer while its task goes
    on; any other call is cut."""
    assert isinstance(call, Pending)
    if call.bridged and bridge.cut(call, "deadline"):
        return
    endings.deadline_hit(call.up_id)
