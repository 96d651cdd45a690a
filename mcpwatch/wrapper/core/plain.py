"""The plain call's path: a 2025-era `tools/call` that no option can touch, forwarded and answered with no feature
checks.

Most calls are plain: a name and arguments, no task, no `_meta`, answered with an ordinary result. Whether any
option can touch such a call depends only on its host link and its tool, so it is decided once per (link, tool)
(`PlainCalls.route`) from the settings and what the wrapper has learnt (late-result reuse, State Sync's
invalidations, the task bridge, the health tool), and kept until that changes: a
host's `initialize`, an upstream answer to anything but a tools/call (its tools, capabilities, discover), an
error answer (a tool the upstream runs only as a task), an answer to the wrapper's own requests. The frame's own
shape is checked each time (only `name` and `arguments` in its params), and the upstream must be ready; anything
else takes the full path (`pump.WrapperCore._host_request`), which does exactly what it did before.

A plain call's answer skips the task watch, the task offer, the bridge's retry and State Sync; its deadline is one
entry in the core's `DeadlineSweep`, stamped once on the frame as it leaves. With OpenTelemetry export on, the
frame carries the wrapper's span as its `traceparent`, as on the full path. Its events are the full path's,
through the same `PendingTable` (`started`, `finish`): the log cannot tell the two paths apart. An answer that is
anything but an ordinary result (an error, `isError`, a task's shape, a result that is not an object) takes the
full path. An ordinary one that `framing.splice` could read goes to a host link with `send_raw` (either front)
as the upstream's own bytes with only the id replaced: parsed once for the log, never encoded again.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from mcpwatch.events import Outcome, UpstreamState
from mcpwatch.otel.context import stamp_own
from mcpwatch.reliability.deadline import DeadlinePolicy
from mcpwatch.reliability.degraded import degraded_of_result
from mcpwatch.reliability.statesync import StateSync
from mcpwatch.reliability.sweep import DeadlineSweep
from mcpwatch.scheduler import Scheduler
from mcpwatch.wire import DEADLINE_META, deadline_ms
from mcpwatch.wrapper.calls.pending import HostLink, Pending, PendingTable
from mcpwatch.wrapper.core.endings import Failures
from mcpwatch.wrapper.core.hostwatch import HostDirectory
from mcpwatch.wrapper.core.late_results import LateResults
from mcpwatch.wrapper.core.session import UpstreamSession
from mcpwatch.wrapper.framing.frames import text_of
from mcpwatch.wrapper.framing.splice import Framed, with_id
from mcpwatch.wrapper.tasks.bridge import TaskBridge

PLAIN_PARAMS = frozenset(("name", "arguments"))  # a params object with anything else takes the full path
ROUTES_MAX = 1024  # (link, tool) verdicts kept; beyond, the memory starts again (a host names the tools)
TOOL_MAX = 256  # a longer tool name takes the full path (the verdicts would hold it)
PREVIEW_CHARS = 4096  # as the full path's `result_preview`
Route = tuple[Any, ...]  # (the link's host,) for a plain call; () for the full path

_NO_ARGUMENTS: dict[str, Any] = {}  # `arguments` absent: logged as "{}", as the full path logs it
_READY = UpstreamState.READY
_OK = Outcome.OK


class PlainCalls:
    def __init__(
        self,
        *,
        routes: dict[tuple[int, str], Route],
        table: PendingTable,
        session: UpstreamSession,
        failures: Failures,
        deadline: DeadlinePolicy,
        deadlines: DeadlineSweep,
        scheduler: Scheduler,
        hosts: HostDirectory,
        late_results: LateResults,
        bridge: TaskBridge,
        state_sync: StateSync | None,
        health_tool: str,
        propagate: bool,
        trace: bool = False,
    ) -> None:
        """`routes`: the verdicts, a dict the core clears when what they rest on changes. `trace`: OpenTelemetry
        export is on, so each forwarded call carries the wrapper's span (`otel.context.stamp`)."""
        self.routes = routes
        self._table = table
        self._calls = table.calls
        self._session = session
        self._failures = failures
        self._budget: Callable[..., Any] = deadline.budget
        self._deadlines = deadlines
        self._time = scheduler.time
        self._hosts = hosts
        self._reuse = late_results.reuse
        self._bridge = bridge
        self._state_sync = state_sync
        self._health_tool = health_tool
        self._propagate = propagate
        self._trace = trace

    # ------------------------------------------------------------------ the verdict, once per link and tool

    def route(self, link: HostLink, tool: str) -> Route:
        """Whether a plain call of `tool` from `link` is one no option touches now, and the host it is from."""
        plain = (
            len(tool) <= TOOL_MAX
            and tool != self._health_tool  # the host's health check is logged as one
            and getattr(link, "made_for", None) is None  # a call made on another host call's behalf
            and not self._reused(tool)
            and not self._invalidates(tool)
            and not self._bridged(link, tool)
        )
        route: Route = (self._hosts.for_request(link, None, None),) if plain else ()
        if len(tool) <= TOOL_MAX:
            if len(self.routes) >= ROUTES_MAX:
                self.routes.clear()
            self.routes[(id(link), tool)] = route
        return route

    def _reused(self, tool: str) -> bool:
        reuse = self._reuse
        return reuse.enabled and (reuse.policy_for(tool) is not None or reuse.refused_as_mutation(tool))

    def _invalidates(self, tool: str) -> bool:
        return self._state_sync is not None and self._state_sync.invalidates(tool)

    def _bridged(self, link: HostLink, tool: str) -> bool:
        """Whether the task bridge could take the call: run it as a task, list the tools first, attach it to a
        running task or answer it from a finished one (a verdict made while the bridge runs a task sends that
        call down the full path)."""
        bridge = self._bridge
        if bridge.runs or bridge.attachable:
            return True
        params: dict[str, Any] = {}
        return bridge.must_list_first(link, tool, params) or (
            tool in bridge.support and bridge.wants(link, tool, params)
        )

    # ------------------------------------------------------------------ the call

    def request(self, link: HostLink, message: Any) -> bool:
        """Forward `message` if it is a plain call (True); False leaves it to the full path, untouched."""
        if type(message) is not dict or message.get("method") != "tools/call" or message.get("jsonrpc") != "2.0":
            return False
        host_id = message.get("id")
        params = message.get("params")
        kind = type(host_id)
        if (kind is not int and kind is not str) or type(params) is not dict or not params.keys() <= PLAIN_PARAMS:
            return False
        tool = params.get("name")
        if type(tool) is not str:
            return False
        route = self.routes.get((id(link), tool))
        if route is None:
            route = self.route(link, tool)
        session = self._session
        upstream = session.link
        if not route or upstream is None or session.state is not _READY:
            return False  # a feature's call, or one to queue: the full path
        host = route[0]
        budget = self._budget(tool, host, False)
        up_id = session.ids.allocate()
        started = self._time()
        pending = Pending(up_id, host_id, link, "tools/call", message, started, tool, budget)
        pending.host = host
        pending.plain = True
        table = self._table
        table.add(pending)
        seconds = budget.seconds
        if seconds is None:
            meta = {"progressToken": up_id}  # as `progress.own_token`: the server's progress is logged, a basis
        else:
            self._deadlines.arm(up_id, pending, started + seconds)
            if self._propagate:  # stamped once: the frame leaves now
                meta = {"progressToken": up_id, DEADLINE_META: deadline_ms(seconds)}
            else:
                meta = {"progressToken": up_id}
        trace_ids = stamp_own(meta) if self._trace else None  # its span's `traceparent`, after the rest
        forwarded_params = dict(params)
        forwarded_params["_meta"] = meta
        pending.message = forwarded = {
            "jsonrpc": "2.0",
            "id": up_id,
            "method": "tools/call",
            "params": forwarded_params,
        }
        outcome = upstream.send(forwarded)
        if outcome == "sent":
            pending.sent = True
        else:
            outcome = session.unsent(pending, forwarded, outcome)
        arguments = params.get("arguments", _NO_ARGUMENTS)
        table.plain_started(pending, budget, text_of(arguments) if arguments is not _NO_ARGUMENTS else "{}", trace_ids)
        if outcome != "sent" and outcome != "queued":
            self._failures.fail(pending, Outcome.ERROR, session.refusal_text(outcome))
        return True

    def answer(self, message: dict[str, Any], framed: Framed | None = None) -> bool:
        """End a plain call with the upstream's ordinary answer (True); False leaves it to the full path. `framed`:
        the answer's bytes, read so that its id can be replaced in them (`framing.splice`): a host link that takes
        an encoded frame (`HostLink.send_raw`) is sent those, never encoded again."""
        up_id = message.get("id")
        pending = self._calls.get(up_id) if type(up_id) is int else None
        if pending is None or not pending.plain:
            return False
        result = message.get("result")
        if (
            type(result) is not dict
            or "error" in message
            or "method" in message
            or message.get("jsonrpc") != "2.0"
            or "resultType" in result  # a task's shape (`inbound._may_be_task`)
            or "task" in result
            or result.get("isError") is True
        ):
            return False
        preview = text_of(result, PREVIEW_CHARS)
        reply = {"jsonrpc": "2.0", "id": pending.host_id, "result": result}
        degraded = degraded_of_result(result, preview)
        if degraded is None:
            send_raw = pending.link.send_raw if framed is not None else None
            frame = with_id(framed[1], pending.host_id) if framed is not None and send_raw is not None else None
            self._table.plain_finish(pending, reply, preview, frame, send_raw)
        else:
            self._table.finish(pending, _OK, reply, {"result_preview": preview, "degraded": degraded})
        return True

    def heard(self, message: Any) -> None:
        """A frame from the upstream on the full path: an answer to anything but a tools/call, an error, or an
        answer to the wrapper's own request may teach the wrapper what the verdicts rest on (a tool's task support,
        the upstream's capabilities), so they are made again."""
        if not self.routes:
            return
        for item in message if type(message) is list else (message,):
            if type(item) is not dict or "method" in item or ("result" not in item and "error" not in item):
                continue  # a notification or a request: nothing the verdicts rest on
            up_id = item.get("id")
            pending = self._calls.get(up_id) if type(up_id) is int else None
            if pending is None or pending.method != "tools/call" or "error" in item:
                self.routes.clear()
                return
