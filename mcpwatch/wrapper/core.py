"""The wrapper's protocol logic, independent of transports: ids, deadlines, cancellation, tombstones, progress,
State Sync, upstream lifecycle, and the events that describe all of it.

Fronts (host side) and upstream links call in with parsed frames; the core answers through their `send`.
Everything here runs on one asyncio loop, so no locks: each handler runs to completion between frames.
"""

from __future__ import annotations

import asyncio
import os
import sys
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Protocol

from mcpwatch import __version__
from mcpwatch.config import Settings
from mcpwatch.events import Kind, Outcome, UpstreamState
from mcpwatch.otel.context import stamp as stamp_trace
from mcpwatch.reliability.deadline import Budget, DeadlinePolicy
from mcpwatch.reliability.ids import UpstreamIds
from mcpwatch.reliability.statesync import StateSync, resource_notifications
from mcpwatch.reliability.tombstones import TombstoneTable, ttl_terms
from mcpwatch.wrapper import frames
from mcpwatch.wrapper.partial import call_error_result, deadline_result, reason_text
from mcpwatch.wrapper.recorder import Recorder

DEADLINE_META = "dev.mcpwatch/deadline_ms"
COUNCIL_META = "dev.mcpwatch/council"
MODERN_VERSION_META = "io.modelcontextprotocol/protocolVersion"
MODERN_CLIENT_META = "io.modelcontextprotocol/clientInfo"
SUBSCRIPTION_ID_META = "io.modelcontextprotocol/subscriptionId"  # the listen request's id, on every frame of its stream
GARBAGE_WARNINGS_MAX = 20


def modern_version(message: dict[str, Any]) -> str | None:
    """The protocol version a 2026-era message carries in its own `_meta`, else None (a 2025-era frame)."""
    params = message.get("params")
    meta = params.get("_meta") if isinstance(params, dict) else None
    version = meta.get(MODERN_VERSION_META) if isinstance(meta, dict) else None
    return version if isinstance(version, str) else None


class HostLink(Protocol):
    """One host connection (the stdio front has one; the HTTP front one per session)."""

    def send(self, message: dict[str, Any]) -> bool | None:
        """False when the message could not be delivered (an HTTP host with no stream open to carry it)."""
        ...


class UpstreamLink(Protocol):
    kind: str
    target: str

    def send(self, message: dict[str, Any]) -> str:
        """ "sent", "down" (not connected: the caller queues) or "stuck" (the upstream stopped reading)."""
        ...

    def describe(self) -> dict[str, Any]: ...


@dataclass(slots=True, eq=False)
class Pending:
    """A host request on its way upstream (or waiting for the upstream to be ready)."""

    up_id: int
    host_id: Any
    link: HostLink
    method: str
    message: dict[str, Any]
    started: float  # loop time
    tool: str | None = None
    budget: Budget | None = None
    request_key: str = ""
    host_token: Any = None  # the host's own progress token; upstream sees the up_id instead
    sent: bool = False
    timer: asyncio.TimerHandle | None = None
    last_progress: dict[str, Any] | None = None
    progress_log: deque[str] = field(default_factory=lambda: deque(maxlen=5))
    models: dict[str, dict[str, Any]] = field(default_factory=dict)


@dataclass
class Counters:
    requests: int = 0
    ok: int = 0
    errors: int = 0
    timeouts: int = 0
    cancelled: int = 0
    late_dropped: int = 0
    unknown_dropped: int = 0
    invalidations: int = 0
    host_frame_errors: int = 0
    upstream_garbage: int = 0

    def to_dict(self) -> dict[str, int]:
        return dict(self.__dict__)


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
    ) -> None:
        self.settings = settings
        self.deadline = deadline
        self.recorder = recorder
        self.state_sync = state_sync if state_sync is not None and state_sync.enabled else None
        self.name = name
        self.loop = loop or asyncio.get_running_loop()
        self.ids = UpstreamIds()
        self.tombstones = TombstoneTable(clock=recorder.clock, cap=settings.tombstones.cap)
        self.counters = Counters()
        self.upstream: UpstreamLink | None = None
        self.upstream_state = UpstreamState.CONNECTING
        self.links: list[HostLink] = []
        self.pending: dict[int, Pending] = {}
        self.waiting: list[tuple[Pending | None, dict[str, Any]]] = []  # frames held until the upstream is ready
        self._by_host: dict[tuple[int, Any], int] = {}
        self._internal: dict[int, asyncio.Future[dict[str, Any]]] = {}
        self._server_requests: dict[Any, tuple[int, HostLink]] = {}
        self.init_params: dict[str, Any] | None = None  # the host's initialize, replayed to a respawned upstream
        self.init_result: dict[str, Any] | None = None
        self.host_info: dict[str, Any] = {}
        self.modern_era = False
        self.last_exit: dict[str, Any] = {}
        self._garbage_warnings = 0
        self.closing = False
        self._connected_once = False
        self.on_change: Callable[[], None] | None = None
        self.trace_requests = False  # OpenTelemetry export on: each forwarded request carries the wrapper's span

    # ------------------------------------------------------------------ host side

    def attach_link(self, link: HostLink) -> None:
        self.links.append(link)

    def detach_link(self, link: HostLink) -> None:
        if link in self.links:
            self.links.remove(link)

    def host_frame(self, link: HostLink, line: bytes) -> None:
        """One line from a host: parse, answer malformed frames as the spec says, dispatch the rest."""
        try:
            message = frames.decode(line)
        except ValueError:
            self.counters.host_frame_errors += 1
            self.recorder.emit(Kind.WARNING, message=f"host sent a frame that is not JSON: {frames.text_of(line, 200)}")
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
        kind = frames.kind_of(message)
        if kind == frames.REQUEST:
            self._host_request(link, message)
        elif kind == frames.NOTIFICATION:
            self._host_notification(link, message)
        elif kind == frames.RESPONSE:
            self._host_response(message)
        else:
            request_id = message.get("id") if isinstance(message, dict) else None
            if not frames.valid_id(request_id):
                request_id = None
            self._refuse(link, request_id, "Invalid Request", message)

    def _refuse(self, link: HostLink, request_id: Any, error: str, message: Any) -> None:
        """A host frame that breaks JSON-RPC: counted, logged as a warning, answered with Invalid Request."""
        self.counters.host_frame_errors += 1
        self.recorder.emit(
            Kind.WARNING, message=f"host sent an invalid JSON-RPC message ({error}): {frames.text_of(message, 200)}"
        )
        link.send(frames.error_response(request_id, frames.INVALID_REQUEST, error))

    def _host_request(self, link: HostLink, message: dict[str, Any]) -> None:
        method: str = message["method"]
        params = message.get("params")
        if params is not None and not isinstance(params, dict):
            self._refuse(link, message["id"], "Invalid Request: params must be an object", message)
            return
        params = params or {}
        meta = params.get("_meta") if isinstance(params.get("_meta"), dict) else None
        if method == "initialize":
            self.init_params = params
            self._note_host(params.get("clientInfo"), params.get("protocolVersion"))
        elif not self.modern_era and (version := modern_version(message)) is not None:
            self.modern_era = True
            self._note_host(meta.get(MODERN_CLIENT_META) if meta else None, version)
        up_id = self.ids.allocate()
        host_id = message["id"]
        tool = params.get("name") if method == "tools/call" and isinstance(params.get("name"), str) else None
        pending = Pending(
            up_id=up_id,
            host_id=host_id,
            link=link,
            method=method,
            message=message,
            started=self.loop.time(),
            tool=tool,
            request_key=str(host_id),
        )
        self.pending[up_id] = pending
        self._by_host[(id(link), frames.id_key(host_id))] = up_id
        self.counters.requests += 1
        forwarded_params = dict(params)
        if meta is not None and "progressToken" in meta:
            # The wrapper owns the token space upstream too: several hosts may share one upstream, and a late
            # progress notification is then recognised by its token alone.
            pending.host_token = meta["progressToken"]
            forwarded_params["_meta"] = meta = {**meta, "progressToken": up_id}
        budget = None
        if method == "tools/call":
            budget = pending.budget = self.deadline.budget(tool)
            if budget.seconds is not None:
                pending.timer = self.loop.call_later(budget.seconds, self._deadline_hit, up_id)
                if self.settings.deadline.propagate:  # the time left is stamped again when the frame is sent
                    forwarded_params["_meta"] = {**(meta or {}), DEADLINE_META: int(budget.seconds * 1000)}
        forwarded = {"jsonrpc": "2.0", "id": up_id, "method": method}
        trace_ids = stamp_trace(forwarded_params) if self.trace_requests else None
        if "params" in message or trace_ids is not None:
            forwarded["params"] = forwarded_params
        pending.message = forwarded
        outcome = self._transmit(pending, forwarded)  # first: the upstream starts on it while the event is built
        if budget is not None:
            self.recorder.emit(
                Kind.REQUEST_START,
                request_id=pending.request_key,
                tool=tool,
                method=method,
                up_id=up_id,
                budget_s=budget.seconds,
                budget_source=budget.source,
                arguments=frames.text_of(params.get("arguments", {})),
                **(trace_ids or {}),
            )
        else:
            self.recorder.emit(
                Kind.REQUEST_START,
                request_id=pending.request_key,
                method=method,
                up_id=up_id,
                budget_s=None,
                **(trace_ids or {}),
            )
        if outcome == "stuck":
            self._stuck(pending)

    def _note_host(self, client_info: Any, protocol_version: Any) -> None:
        info = client_info if isinstance(client_info, dict) else {}
        self.host_info = {
            "name": info.get("name"),
            "version": info.get("version"),
            "protocol_version": protocol_version,
        }
        self.recorder.emit(Kind.HOST_INFO, **self.host_info)

    def _host_notification(self, link: HostLink, message: dict[str, Any]) -> None:
        if message["method"] == "notifications/cancelled":
            params = message.get("params") if isinstance(message.get("params"), dict) else {}
            request_id = params.get("requestId")
            if request_id is None or not frames.valid_id(request_id):
                return  # names no request of ours (and may not even be hashable)
            up_id = self._by_host.get((id(link), frames.id_key(request_id)))
            pending = self.pending.get(up_id) if up_id is not None else None
            if pending is None:
                return  # nothing of ours in flight: the spec says ignore
            self._abandon(pending, Outcome.CANCELLED, "host_cancel", reason_text=params.get("reason"))
            return
        self._send_upstream(None, message)

    def _host_response(self, message: dict[str, Any]) -> None:
        """The host answering a server→client request (sampling, elicitation, roots, ping)."""
        entry = self._server_requests.pop(frames.id_key(message["id"]), None)
        if entry is None or entry[0] != self.ids.generation:
            return  # its requester is gone with an old upstream process
        self._send_upstream(None, message)

    # ------------------------------------------------------------------ sending upstream

    def _send_upstream(self, pending: Pending | None, message: dict[str, Any]) -> None:
        if self._transmit(pending, message) == "stuck" and pending is not None:
            self._stuck(pending)

    def _transmit(self, pending: Pending | None, message: dict[str, Any]) -> str:
        """Send now, or queue until the upstream is ready: "sent", "queued" or "stuck" (the caller fails it)."""
        if self.upstream is None or self.upstream_state != UpstreamState.READY:
            self._queue(pending, message)
            return "queued"
        if pending is not None and pending.budget is not None and self.settings.deadline.propagate:
            self._stamp_time_left(pending, message)
        outcome = self.upstream.send(message)
        if outcome == "sent":
            if pending is not None:
                pending.sent = True
                if pending.budget is None and pending.timer is not None:  # its wait limit was for the queue only
                    pending.timer.cancel()
                    pending.timer = None
        elif outcome == "down":
            self._queue(pending, message)
            return "queued"
        return outcome

    def _stuck(self, pending: Pending) -> None:
        unsent = self.upstream.describe().get("unsent_bytes", 0) if self.upstream is not None else 0
        self._fail(pending, Outcome.ERROR, f"the upstream MCP server is not reading its input ({unsent} bytes unsent)")

    def _stamp_time_left(self, pending: Pending, message: dict[str, Any]) -> None:
        """The deadline a tools/call carries upstream is the time left as it leaves (less after a wait in the queue)."""
        params = message.get("params")
        meta = params.get("_meta") if isinstance(params, dict) else None
        seconds = pending.budget.seconds if pending.budget is not None else None
        if isinstance(meta, dict) and DEADLINE_META in meta and seconds is not None:
            meta[DEADLINE_META] = max(0, round((seconds - (self.loop.time() - pending.started)) * 1000))

    def _queue(self, pending: Pending | None, message: dict[str, Any]) -> None:
        """Hold a frame until the upstream is ready. A tools/call waits within its budget; any other request gets
        a bound of its own (the handshake timeout plus the longest reconnect delay), so nothing waits for ever."""
        self.waiting.append((pending, message))
        if pending is not None and pending.timer is None:
            limit = self.settings.tombstones.init_timeout_s + self.settings.tombstones.backoff_max_s
            pending.timer = self.loop.call_later(limit, self._queue_timeout, pending.up_id, limit)

    def _queue_timeout(self, up_id: int, limit: float) -> None:
        pending = self.pending.get(up_id)
        if pending is not None and not pending.sent:
            self._fail(pending, Outcome.ERROR, f"{self._unavailable_text()} for {limit:g} s")

    def _flush_waiting(self) -> None:
        waiting, self.waiting = self.waiting, []
        for pending, message in waiting:
            if pending is not None and pending.up_id not in self.pending:
                continue  # answered meanwhile (deadline, cancel)
            self._send_upstream(pending, message)

    # ------------------------------------------------------------------ upstream side

    def upstream_frame(self, line: bytes) -> None:
        try:
            message = frames.decode(line)
        except ValueError:
            self._upstream_garbage(f"not JSON: {frames.text_of(line, 200)}")
            return
        if isinstance(message, list):
            for item in message:
                self.upstream_message(item)
        else:
            self.upstream_message(message)

    def upstream_oversize(self, size: int) -> None:
        self._upstream_garbage(f"a line of {size} bytes, over the frame limit; discarded")

    def _upstream_garbage(self, what: str) -> None:
        self.counters.upstream_garbage += 1
        n = self.counters.upstream_garbage
        if self._garbage_warnings < GARBAGE_WARNINGS_MAX or n % 1000 == 0:
            self._garbage_warnings += 1
            self.recorder.emit(Kind.WARNING, message=f"upstream wrote a frame that is {what} (#{n})")

    def upstream_message(self, message: Any) -> None:
        kind = frames.kind_of(message)
        if kind == frames.RESPONSE:
            self._upstream_response(message)
        elif kind == frames.NOTIFICATION:
            self._upstream_notification(message)
        elif kind == frames.REQUEST:
            link = self._link_for_server_request()
            if link is None:
                self._send_direct(frames.error_response(message["id"], frames.INTERNAL_ERROR, "no host connected"))
                return
            self._server_requests[frames.id_key(message["id"])] = (self.ids.generation, link)
            if link.send(message) is False:
                self._server_requests.pop(frames.id_key(message["id"]), None)
                text = f"the host has no open stream to receive a {message['method']} request"
                self.recorder.emit(Kind.WARNING, message=f"upstream {text}; answered with an error")
                self._send_direct(frames.error_response(message["id"], frames.INTERNAL_ERROR, text))
        else:
            self._upstream_garbage(f"not valid JSON-RPC: {frames.text_of(message, 200)}")

    def _send_direct(self, message: dict[str, Any]) -> None:
        if self.upstream is not None and self.upstream_state == UpstreamState.READY:
            self.upstream.send(message)

    def _link_for_server_request(self) -> HostLink | None:
        """The host of the newest call in flight (the one most likely to have caused the request), else the last
        host to connect."""
        for pending in reversed(self.pending.values()):
            if pending.link in self.links:
                return pending.link
        return self.links[-1] if self.links else None

    def requeue(self, up_id: Any) -> bool:
        """A request the upstream never received (its connection was gone): send it again on the next one."""
        pending = self.pending.get(up_id)
        if pending is None or not pending.sent:
            return False
        pending.sent = False
        self._queue(pending, pending.message)
        return True

    def _upstream_response(self, message: dict[str, Any]) -> None:
        up_id = message["id"]
        future = self._internal.pop(up_id, None) if isinstance(up_id, int) else None
        if future is not None:
            if not future.done():
                future.set_result(message)
            return
        pending = self.pending.pop(up_id, None) if isinstance(up_id, int) and not isinstance(up_id, bool) else None
        if pending is None:
            self._late_response(up_id)
            return
        self._forget(pending)
        elapsed = self.loop.time() - pending.started
        reply = {"jsonrpc": "2.0", "id": pending.host_id}
        if "error" in message:
            reply["error"] = message["error"]
            outcome = Outcome.ERROR
            self.counters.errors += 1
            detail: dict[str, Any] = {"error": frames.text_of(message["error"], 1000)}
        else:
            result = message["result"]
            outcome = Outcome.OK
            if pending.method == "tools/call" and isinstance(result, dict):
                if result.get("isError") is True:
                    outcome = Outcome.TOOL_ERROR
                elif self.state_sync is not None and pending.tool is not None:
                    result = self._invalidate(pending, result)
            elif pending.method == "tools/list" and self.state_sync is not None and isinstance(result, dict):
                result = self.state_sync.decorate_tools(result)
            elif pending.method == "initialize" and isinstance(result, dict):
                self.init_result = result
            reply["result"] = result
            if outcome == Outcome.OK:
                self.counters.ok += 1
            else:
                self.counters.errors += 1
            detail = {"result_preview": frames.text_of(result, 4096)} if pending.method == "tools/call" else {}
        pending.link.send(reply)
        self.recorder.emit(
            Kind.REQUEST_END,
            request_id=pending.request_key,
            tool=pending.tool,
            outcome=outcome.value,
            duration_s=round(elapsed, 6),
            method=pending.method,
            **detail,
        )
        if pending.tool is not None and pending.tool == self.health_tool_name and "result" in message:
            self._note_host_health_check(pending, message, elapsed)

    @property
    def health_tool_name(self) -> str:
        return self.settings.upstream.health_tool or "council_health_check"

    def _note_host_health_check(self, pending: Pending, message: dict[str, Any], elapsed: float) -> None:
        """A host calling the upstream's health tool is a health check too: the console shows its tiers."""
        payload, ok, error = _tool_payload(message)
        self.recorder.emit(
            Kind.HEALTH_CHECK,
            request_id=pending.request_key,
            tool=pending.tool,
            ok=ok,
            ping_ms=None,
            result=payload,
            error=error,
            latency_ms=round(elapsed * 1000, 2),
            source="host",
        )

    def _invalidate(self, pending: Pending, result: dict[str, Any]) -> dict[str, Any]:
        assert self.state_sync is not None and pending.tool is not None
        result, event = self.state_sync.decorate_call(pending.tool, result)
        if event is not None:
            self.counters.invalidations += 1
            self.recorder.emit(
                Kind.INVALIDATION, tool=pending.tool, caused_by=event.caused_by, patterns=list(event.patterns)
            )
            for notification in resource_notifications(event):
                pending.link.send(notification)
        return result

    def _late_response(self, up_id: Any) -> None:
        if self._tombstone_hit(up_id, "response"):
            return
        self.counters.unknown_dropped += 1
        verdict = self.ids.classify(up_id)
        reason = {"stale_generation": "stale_generation", "current": "expired_tombstone"}.get(verdict, "unknown_id")
        self.recorder.emit(Kind.UNKNOWN_RESPONSE, up_id=up_id, reason=reason)

    def _tombstone_hit(self, up_id: Any, what: str) -> bool:
        """A late response or progress for a call we gave up on: dropped, counted, logged against its request."""
        tombstone = self.tombstones.hit(up_id) if isinstance(up_id, int) and not isinstance(up_id, bool) else None
        if tombstone is None:
            return False
        self.counters.late_dropped += 1
        self.recorder.emit(
            Kind.TOMBSTONE_HIT,
            request_id=tombstone.request_id,
            tool=tombstone.tool,
            up_id=up_id,
            what=what,
            age_s=round(tombstone.age(self.recorder.clock.monotonic()), 3),
        )
        return True

    def _upstream_notification(self, message: dict[str, Any]) -> None:
        method = message["method"]
        if method == "notifications/progress":
            params = message.get("params") if isinstance(message.get("params"), dict) else {}
            token = params.get("progressToken")
            pending = self.pending.get(token) if isinstance(token, int) and not isinstance(token, bool) else None
            if pending is None or pending.host_token is None:
                # late, unknown, or for a call whose host asked for no progress (the upstream guessed the token)
                self._late_progress(token)
                return
            forwarded = {**message, "params": {**params, "progressToken": pending.host_token}}
            self._note_progress(pending, params)
            pending.link.send(forwarded)
            return
        params = message.get("params")
        meta = params.get("_meta") if isinstance(params, dict) else None
        if isinstance(meta, dict) and SUBSCRIPTION_ID_META in meta:
            self._subscription_frame(message, params, meta)
            return
        for link in self.links:
            link.send(message)

    def _subscription_frame(self, message: dict[str, Any], params: dict[str, Any], meta: dict[str, Any]) -> None:
        """A frame of a 2026-era `subscriptions/listen` stream (its acknowledgement or an event): upstream it is
        stamped with the listen request's upstream id; the host must see its own id, on its own stream only."""
        up_id = meta[SUBSCRIPTION_ID_META]
        is_up_id = isinstance(up_id, int) and not isinstance(up_id, bool)
        pending = self.pending.get(up_id) if is_up_id else None
        if pending is None or pending.method != "subscriptions/listen":
            self.counters.unknown_dropped += 1
            shown = up_id if is_up_id else frames.text_of(up_id, 64)
            self.recorder.emit(Kind.UNKNOWN_RESPONSE, up_id=shown, reason="unknown_subscription")
            return
        host_meta = {**meta, SUBSCRIPTION_ID_META: pending.host_id}
        pending.link.send({**message, "params": {**params, "_meta": host_meta}})

    def _late_progress(self, token: Any) -> None:
        # Upstream progress tokens are up_ids (see _host_request), so a late one finds its call's tombstone.
        if not self._tombstone_hit(token, "progress"):
            self.counters.unknown_dropped += 1
            self.recorder.emit(Kind.UNKNOWN_RESPONSE, up_id=token, reason="unknown_progress_token")

    def _note_progress(self, pending: Pending, params: dict[str, Any]) -> None:
        progress = {"progress": params.get("progress"), "total": params.get("total"), "message": params.get("message")}
        pending.last_progress = progress
        if progress["message"]:
            pending.progress_log.append(str(progress["message"]))
        meta = params.get("_meta")
        council = meta.get(COUNCIL_META) if isinstance(meta, dict) else None
        stage = council.get("stage") if isinstance(council, dict) else None
        extra = {"stage": stage} if stage is not None else {}
        self.recorder.emit(Kind.PROGRESS, request_id=pending.request_key, tool=pending.tool, **progress, **extra)
        if isinstance(council, dict) and isinstance(council.get("models"), dict):
            for model, state in council["models"].items():
                if not isinstance(state, dict):
                    continue
                previous = pending.models.get(model)
                if previous is not None and previous.get("status") == state.get("status"):
                    continue
                pending.models[model] = dict(state)
                self.recorder.emit(
                    Kind.MODEL_STATUS,
                    request_id=pending.request_key,
                    tool=pending.tool,
                    model=str(model),
                    stage=council.get("stage"),
                    status=state.get("status"),
                    latency_ms=state.get("latency_ms"),
                    per_model_s=council.get("per_model_s"),
                    tier=council.get("tier"),
                )

    # ------------------------------------------------------------------ deadlines, cancellation, failure

    def _deadline_hit(self, up_id: int) -> None:
        pending = self.pending.get(up_id)
        if pending is not None:
            self._abandon(pending, Outcome.DEADLINE, "deadline")

    def cancel(self, request_id: str) -> bool:
        """The operator's cancel: the call ends as a deadline would, with its own explanation."""
        for pending in list(self.pending.values()):
            if pending.request_key == str(request_id):
                self._abandon(pending, Outcome.CANCELLED, "operator_cancel")
                return True
        return False

    def _abandon(self, pending: Pending, outcome: Outcome, reason: str, reason_text: Any = None) -> None:
        """Stop waiting for a call: cancel it upstream once, tombstone its id, and answer the host if owed."""
        self.pending.pop(pending.up_id, None)
        self._forget(pending)
        elapsed = self.loop.time() - pending.started
        if pending.sent:
            cancel_reason = reason_text if isinstance(reason_text, str) else f"mcpwatch: {reason.replace('_', ' ')}"
            self._send_direct(
                {
                    "jsonrpc": "2.0",
                    "method": "notifications/cancelled",
                    "params": {"requestId": pending.up_id, "reason": cancel_reason},
                }
            )
            self._tombstone(pending, reason)
        if outcome == Outcome.DEADLINE:
            self.counters.timeouts += 1
        else:
            self.counters.cancelled += 1
        detail: dict[str, Any] = {}
        if reason != "host_cancel":  # a host that cancelled is owed nothing
            detail["result_preview"] = frames.text_of(self._answer_abandoned(pending, reason, elapsed), 4096)
        self.recorder.emit(
            Kind.REQUEST_END,
            request_id=pending.request_key,
            tool=pending.tool,
            outcome=outcome.value,
            duration_s=round(elapsed, 6),
            method=pending.method,
            partial=pending.last_progress is not None,
            error=reason,
            **detail,
        )

    def _answer_abandoned(self, pending: Pending, reason: str, elapsed: float) -> dict[str, Any]:
        """Answer the host for a call mcpwatch stopped waiting for; returns what was sent."""
        if pending.method != "tools/call":
            reply = frames.error_response(pending.host_id, frames.INTERNAL_ERROR, f"the request {reason_text(reason)}")
            pending.link.send(reply)
            return reply
        upstream_note = None if pending.sent else self._unavailable_text()
        result = deadline_result(
            tool=pending.tool or "?",
            budget=pending.budget,
            elapsed_s=elapsed,
            reason=reason,
            last_progress=pending.last_progress,
            progress_log=list(pending.progress_log),
            models=pending.models,
            upstream_note=upstream_note,
            modern=self.modern_era,
        )
        reply = {"jsonrpc": "2.0", "id": pending.host_id, "result": result}
        pending.link.send(reply)
        return reply

    def _fail(self, pending: Pending, outcome: Outcome, text: str, reason: str = "upstream_lost") -> None:
        """Answer a call that cannot complete (upstream gone or stuck) at once, with a clear error."""
        self.pending.pop(pending.up_id, None)
        self._forget(pending)
        elapsed = self.loop.time() - pending.started
        if pending.sent:
            self._tombstone(pending, reason)
        self.counters.errors += 1
        if pending.method == "tools/call":
            result = call_error_result(
                pending.tool or "?", text, pending.last_progress, pending.models, self.modern_era
            )
            reply = {"jsonrpc": "2.0", "id": pending.host_id, "result": result}
        else:
            reply = frames.error_response(pending.host_id, frames.INTERNAL_ERROR, text)
        pending.link.send(reply)
        self.recorder.emit(
            Kind.REQUEST_END,
            request_id=pending.request_key,
            tool=pending.tool,
            outcome=outcome.value,
            duration_s=round(elapsed, 6),
            method=pending.method,
            error=text,
            partial=pending.last_progress is not None,
            result_preview=frames.text_of(reply, 4096),
        )

    def _forget(self, pending: Pending) -> None:
        if pending.timer is not None:
            pending.timer.cancel()
            pending.timer = None
        key = (id(pending.link), frames.id_key(pending.host_id))
        if self._by_host.get(key) == pending.up_id:  # a host may reuse an id while the first call still runs
            del self._by_host[key]

    def _tombstone(self, pending: Pending, reason: str) -> None:
        # The call's own budget is its request timeout (a long per-tool budget must be covered too); a call
        # without one (not a tools/call) gets the current budget.
        terms = ttl_terms(pending.budget or self.deadline.budget(None), self.settings.tombstones)
        tombstone = self.tombstones.add(
            pending.up_id, ttl_s=terms.total_s, reason=reason, request_id=pending.request_key, tool=pending.tool
        )
        self.recorder.emit(
            Kind.TOMBSTONE_ADD,
            request_id=pending.request_key,
            tool=pending.tool,
            up_id=pending.up_id,
            ttl_s=terms.total_s,
            reason=reason,
            expires_mono=round(self.recorder.mono() + tombstone.ttl_s, 3),
        )

    def ttl_terms(self) -> Any:
        return ttl_terms(self.deadline.budget(None), self.settings.tombstones)

    def sweep_tombstones(self) -> int:
        expired = self.tombstones.sweep()
        now = self.recorder.clock.monotonic()
        for tombstone in expired:
            self.recorder.emit(
                Kind.TOMBSTONE_EXPIRE,
                request_id=tombstone.request_id,
                tool=tombstone.tool,
                up_id=tombstone.key,
                age_s=round(tombstone.age(now), 3),
            )
        return len(expired)

    # ------------------------------------------------------------------ upstream lifecycle

    def attach_upstream(self, upstream: UpstreamLink) -> None:
        self.upstream = upstream

    def upstream_connecting(self) -> int:
        generation = self.ids.new_generation() if self._connected_once else self.ids.generation
        self._connected_once = True
        self._set_state(UpstreamState.CONNECTING, generation=generation)
        return generation

    async def upstream_started(self) -> None:
        """A new upstream connection is up: replay the host's handshake if it completed on an earlier connection
        (a host initialize still waiting in the queue goes through itself: a server must see it only once), then
        flush the queue."""
        if self.init_params is not None and self.init_result is not None:
            response = await self._request_raw(
                "initialize", self.init_params, self.settings.tombstones.init_timeout_s, force=True
            )
            if response is None or "error" in response:
                raise ConnectionError(f"the upstream refused the replayed initialize: {response}")
            self.upstream.send({"jsonrpc": "2.0", "method": "notifications/initialized"})  # type: ignore[union-attr]
        self._set_state(UpstreamState.READY, generation=self.ids.generation)
        self._flush_waiting()

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
        self.last_exit = {"reason": reason, "exit_code": exit_code, "stderr_tail": stderr_tail or []}
        self._set_state(
            UpstreamState.CLOSED,
            generation=self.ids.generation,
            reason=reason,
            exit_code=exit_code,
            stderr_tail=stderr_tail or [],
        )
        text = f"the upstream MCP server {reason}"
        if exit_code is not None:
            text += f" (exit code {exit_code})"
        if stderr_tail:
            text += "; its last stderr lines: " + " | ".join(stderr_tail[-5:])
        if not self.closing:
            print(f"mcpwatch: {text}", file=sys.stderr, flush=True)  # the host keeps this as the server's log
        for pending in [p for p in self.pending.values() if p.sent or fail_queued]:
            self._fail(pending, Outcome.UPSTREAM_LOST, text)
        for future in self._internal.values():
            if not future.done():
                future.set_exception(ConnectionError(text))
        self._internal.clear()
        self._server_requests.clear()

    def upstream_backoff(self, retry_in_s: float) -> None:
        self._set_state(UpstreamState.BACKOFF, generation=self.ids.generation, retry_in_s=round(retry_in_s, 3))

    def _set_state(self, state: UpstreamState, **data: Any) -> None:
        self.upstream_state = state
        self.recorder.emit(Kind.UPSTREAM_STATE, state=state.value, **data)

    def _unavailable_text(self) -> str:
        state = self.upstream_state.value
        text = f"the upstream MCP server was not available (state: {state})"
        if self.last_exit.get("exit_code") is not None:
            text += f"; it last exited with code {self.last_exit['exit_code']}"
        return text

    # ------------------------------------------------------------------ the wrapper's own requests upstream

    async def _request_raw(
        self, method: str, params: dict[str, Any] | None, timeout: float, *, force: bool = False
    ) -> dict[str, Any] | None:
        if self.upstream is None or (self.upstream_state != UpstreamState.READY and not force):
            raise ConnectionError(self._unavailable_text())
        up_id = self.ids.allocate()
        future: asyncio.Future[dict[str, Any]] = self.loop.create_future()
        self._internal[up_id] = future
        message: dict[str, Any] = {"jsonrpc": "2.0", "id": up_id, "method": method}
        if params is not None:
            message["params"] = params
        if self.upstream.send(message) != "sent":
            self._internal.pop(up_id, None)
            raise ConnectionError(self._unavailable_text())
        try:
            return await asyncio.wait_for(future, timeout)
        except TimeoutError:
            self._internal.pop(up_id, None)
            raise

    async def health_check(self, health_tool: str | None, timeout: float = 15.0) -> dict[str, Any]:
        """MCP ping, then the upstream's health tool when it has one; the result is logged as an event."""
        result: dict[str, Any] = {"ok": False, "ping_ms": None, "tool": None, "result": None, "error": None}
        started = self.loop.time()
        try:
            reply = await self._request_raw("ping", None, timeout)
            result["ping_ms"] = round((self.loop.time() - started) * 1000, 2)
            if reply is not None and "error" in reply:
                result["error"] = f"ping failed: {frames.text_of(reply['error'], 300)}"
            elif self.init_params is None and not self.modern_era:
                result["ok"] = True
                result["error"] = "the upstream has not been initialised by a host yet; health tool not called"
            else:
                tool = health_tool or await self._find_health_tool(timeout)
                result["ok"] = True
                if tool:
                    result["tool"] = tool
                    call = await self._request_raw("tools/call", {"name": tool, "arguments": {}}, timeout)
                    result["result"], result["ok"], result["error"] = _tool_payload(call)
        except TimeoutError:
            result["error"] = f"no answer within {timeout:g} s"
        except ConnectionError as exc:
            result["error"] = str(exc)
        result["latency_ms"] = round((self.loop.time() - started) * 1000, 2)
        self.recorder.emit(Kind.HEALTH_CHECK, **result)
        return result

    async def _find_health_tool(self, timeout: float) -> str | None:
        reply = await self._request_raw("tools/list", {}, timeout)
        tools = (reply or {}).get("result", {}).get("tools", [])
        names = [t.get("name") for t in tools if isinstance(t, dict)]
        for name in names:
            if name == "council_health_check":
                return name
        return None

    # ------------------------------------------------------------------ operator changes and status

    def change_deadline(self, key: str, value: Any) -> dict[str, Any]:
        """set_margin / set_host_timeout / set_deadline: validated by the policy; logged as config_change."""
        before = self.deadline.budget(None).to_dict()
        setter = {
            "margin_s": self.deadline.set_margin,
            "host_timeout_s": self.deadline.set_host_timeout,
            "override_s": self.deadline.set_deadline,
        }[key]
        after = setter(value).to_dict()
        self.recorder.emit(
            Kind.CONFIG_CHANGE, key=key, old=before.get(key), new=after.get(key), source="operator", deadline=after
        )
        return after

    def reset_deadline(self) -> dict[str, Any]:
        """Undo every operator change to the budget; logged as one config_change per key that changes."""
        before = self.deadline.budget(None).to_dict()
        after = self.deadline.reset().to_dict()
        for key in ("host_timeout_s", "margin_s", "override_s"):
            if before.get(key) != after.get(key):
                old, new = before.get(key), after.get(key)
                self.recorder.emit(Kind.CONFIG_CHANGE, key=key, old=old, new=new, source="reset", deadline=after)
        return after

    def status(self) -> dict[str, Any]:
        now = self.loop.time()
        mono_now = self.recorder.clock.monotonic()
        terms = self.ttl_terms()
        stats = self.tombstones.stats(limit=50)
        upstream = self.upstream.describe() if self.upstream is not None else {}
        return {
            "wrapper": {
                "name": self.name,
                "pid": os.getpid(),
                "version": __version__,
                "upstream": {
                    "kind": getattr(self.upstream, "kind", None),
                    "target": getattr(self.upstream, "target", None),
                    "state": self.upstream_state.value,
                    "generation": self.ids.generation,
                    **upstream,
                },
                "host": self.host_info,
                "uptime_s": round(self.recorder.mono(), 3),
            },
            "deadline": self.deadline.budget(None).to_dict(),
            "tombstones": {
                "count": len(self.tombstones),
                "ttl_s": terms.total_s,
                "terms": terms.to_dict(),
                "late_dropped": self.counters.late_dropped,
                "evicted": self.tombstones.evicted,
                "next_expiry_in_s": self.tombstones.next_expiry_in(),
                "items": stats["items"],
            },
            "in_flight": [
                {
                    "request_id": p.request_key,
                    "method": p.method,
                    "tool": p.tool,
                    "elapsed_s": round(now - p.started, 3),
                    "budget_s": p.budget.seconds if p.budget else None,
                    "progress": (p.last_progress or {}).get("progress"),
                    "total": (p.last_progress or {}).get("total"),
                    "message": (p.last_progress or {}).get("message"),
                    "sent": p.sent,
                }
                for p in self.pending.values()
            ],
            "counters": self.counters.to_dict(),
            "state_sync": self.state_sync_summary(),
            "mono": round(mono_now, 3),
        }

    def state_sync_summary(self) -> dict[str, Any]:
        if self.state_sync is None:
            return {"policies": 0, "overlaps": []}
        return {"policies": len(self.state_sync.policies), "overlaps": [w.message for w in self.state_sync.overlaps]}

    # ------------------------------------------------------------------ shutdown

    def shutdown(self, why: str) -> None:
        """Cancel every call upstream and tombstone it; answer hosts that are still there."""
        self.closing = True
        for pending in list(self.pending.values()):
            self._abandon(pending, Outcome.CANCELLED, "shutdown", reason_text=f"mcpwatch is shutting down ({why})")
        self.waiting.clear()


def retrieve_exception(task: asyncio.Task[Any]) -> None:
    """Mark a start task's failure as seen: the loss that caused it is reported already, not as a traceback."""
    if not task.cancelled():
        task.exception()


def _tool_payload(reply: dict[str, Any] | None) -> tuple[Any, bool, str | None]:
    """A health tool's answer as (payload, ok, error)."""
    if reply is None:
        return None, False, "no answer"
    if "error" in reply:
        return None, False, frames.text_of(reply["error"], 300)
    result = reply.get("result") or {}
    payload: Any = result.get("structuredContent")
    if payload is None:
        for block in result.get("content") or []:
            if isinstance(block, dict) and block.get("type") == "text":
                try:
                    payload = frames.decode(block["text"])
                except ValueError:
                    payload = block["text"]
                break
    if isinstance(payload, dict) and set(payload) == {"result"} and isinstance(payload["result"], dict):
        payload = payload["result"]
    ok = result.get("isError") is not True
    if isinstance(payload, dict) and payload.get("ready") is False:
        ok = False
    return payload, ok, None if ok else "the health tool reported a problem"
