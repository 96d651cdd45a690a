"""What the upstream sends, routed to the hosts: answers to their calls (through the pending table's `finish`),
progress for the call it belongs to, server→client requests and other notifications to the host they belong to;
late and unknown frames to the tombstones; garbage counted and, at a bounded rate, logged.

A core serves one host (the stdio front, or one HTTP host session), except the one upstream that 2026-era
sessionless requests share (`shared`): there a frame that names no request goes to the one host with calls in
flight, and is dropped (and counted) when it could belong to several — it never reaches a host it may not
belong to."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from mcpwatch.events import HealthCheckData, InvalidationData, Kind, Outcome, RequestEndDetail, UnknownResponseData
from mcpwatch.reliability.degraded import degraded_of_result
from mcpwatch.reliability.statesync import StateSync, resource_notifications
from mcpwatch.wire import PARTIAL_META, SUBSCRIPTION_ID_META
from mcpwatch.wrapper.calls.pending import Counters, HostLink, Pending, PendingTable
from mcpwatch.wrapper.calls.progress import LoggedOnly, has_own_token, note_progress
from mcpwatch.wrapper.calls.recorder import Recorder
from mcpwatch.wrapper.core.health import tool_payload
from mcpwatch.wrapper.core.session import UpstreamSession
from mcpwatch.wrapper.framing import frames
from mcpwatch.wrapper.tasks.bridge import TaskBridge
from mcpwatch.wrapper.tasks.offer import OfferedTask, TaskOffer
from mcpwatch.wrapper.tasks.watch import TaskWatch

GARBAGE_WARNINGS_MAX = 20


class UpstreamInbound:
    def __init__(
        self,
        *,
        table: PendingTable,
        session: UpstreamSession,
        links: list[HostLink],
        recorder: Recorder,
        counters: Counters,
        state_sync: StateSync | None,
        health_tool: str,
        warn: Callable[[str], None],
        on_progress: Callable[[Pending], None] = lambda _pending: None,
        shared: bool = False,
        tasks: TaskWatch | None = None,
        bridge: TaskBridge | None = None,
        offer: TaskOffer | None = None,
        on_tools_listed: Callable[[Any], None] | None = None,
        on_discovered: Callable[[dict[str, Any]], None] | None = None,
        translate: Callable[..., bool] | None = None,
        end_heartbeat: Callable[[Pending], None] = lambda _pending: None,
    ) -> None:
        self.tasks = tasks
        self.on_discovered = on_discovered  # told the upstream's own server/discover answer
        # runs a 2025-era host's extension-only call on the HTTP front's 2026-era upstream (`fronts.era_translate`)
        self.translate = translate
        self._end_heartbeat = end_heartbeat
        self.bridge = bridge
        self.offer = offer
        self.table = table
        self.session = session
        self.links = links  # the core's own list: hosts come and go
        self.recorder = recorder
        self.counters = counters
        self.state_sync = state_sync
        self._health_tool = health_tool
        self._warn = warn
        self._on_progress = on_progress  # the upstream spoke for a call (heartbeats wait again)
        self._garbage_warnings = 0
        self._shared = shared
        self.on_tools_listed = on_tools_listed  # the scrape endpoint learns the tool names
        self._logged_only = LoggedOnly(recorder)

    def _owner(self) -> HostLink | None:
        """The host an unattributed frame (a server request, a notification) belongs to: the one with calls in
        flight (an offered task's call is its host's); with none in flight, the core's own host (never on a shared
        upstream)."""
        hosts = (p.link.link if isinstance(p.link, OfferedTask) else p.link for p in self.table.calls.values())
        owners = {id(link): link for link in hosts if link in self.links}
        if len(owners) == 1:
            return next(iter(owners.values()))
        if not owners and not self._shared and self.links:
            return self.links[-1]
        return None

    def decoded(self, message: Any) -> None:
        """One decoded frame: a message, or a batch of them."""
        if isinstance(message, list):
            for item in message:
                self.message(item)
        else:
            self.message(message)

    def garbage(self, what: str) -> None:
        self.counters.upstream_garbage += 1
        n = self.counters.upstream_garbage
        if self._garbage_warnings < GARBAGE_WARNINGS_MAX or n % 1000 == 0:
            self._garbage_warnings += 1
            self._warn(f"upstream wrote a frame that is {what} (#{n})")

    def message(self, message: Any) -> None:
        kind = frames.kind_of(message)
        if kind == frames.RESPONSE:
            self._upstream_response(message)
        elif kind == frames.NOTIFICATION:
            self._upstream_notification(message)
        elif kind == frames.REQUEST:
            self._server_request(message)
        else:
            self.garbage(f"not valid JSON-RPC: {frames.text_of(message, 200)}")

    def _server_request(self, message: dict[str, Any]) -> None:
        """A server→client request goes to the host it belongs to (see `_owner`); if no host can be named, the
        upstream gets an error at once rather than another host's answer."""
        link = self._owner()
        if link is None:
            text = "no host connected" if not self.links else "mcpwatch cannot tell which host this request is for"
            self.session.send_direct(frames.error_response(message["id"], frames.INTERNAL_ERROR, text))
            return
        self.session.note_server_request(message["id"], link)
        if link.send(message) is False:
            self.session.forget_server_request(message["id"])
            text = f"the host has no open stream to receive a {message['method']} request"
            self._warn(f"upstream {text}; answered with an error")
            self.session.send_direct(frames.error_response(message["id"], frames.INTERNAL_ERROR, text))

    def _upstream_response(self, message: dict[str, Any]) -> None:
        """An upstream's answer: a late one, or one the task parts take; else the host's reply, and the call ends."""
        if self.session.internal and self.session.answer_internal(message):
            return
        up_id = message["id"]
        pending = self.table.get(up_id)
        if pending is None:
            self.session.late.late_response(up_id, message)
            return
        if self._taken_by_tasks(pending, message):
            return
        reply = {"jsonrpc": "2.0", "id": pending.host_id}
        if "error" in message:
            ended = self._error_reply(pending, message, reply)
            if ended is None:
                return  # made again in the 2026 era: its answer comes through `translated`
            outcome, detail = ended
        else:
            outcome, detail = self._result_reply(pending, message.get("result"), reply)
        elapsed = self.table.finish(pending, outcome, reply, detail)
        if pending.tool is not None and pending.tool == self._health_tool and "result" in message:
            self._note_host_health_check(pending, message, elapsed)

    def _taken_by_tasks(self, pending: Pending, message: dict[str, Any]) -> bool:
        """Whether the task parts took the answer: a task's poll, a task made, an offered task's input request, or
        a call sent again as a task."""
        if self.tasks is not None and pending.poll is not None:  # a task's poll: the answer goes to its task too
            self.table.finish(pending, Outcome.OK, {**message, "id": pending.host_id}, {})
            self.tasks.answered(pending, message)
            return True
        result = message.get("result")
        watch = self.tasks if pending.method == "tools/call" and _may_be_task(result) else None
        if watch is not None and watch.created(pending, result, bridged=pending.bridged) is not None:
            if not pending.bridged:  # a task: the host has it, and the call lives on as it (a bridged one waits)
                self.table.hand_over(pending, {"jsonrpc": "2.0", "id": pending.host_id, "result": message["result"]})
            return True
        if self.offer is not None and "result" in message and self.offer.asked_input(pending, message):
            return True  # an offered task's call asked its host for input: made again once the host answers
        retry = self.bridge is not None and "error" in message and self.bridge.retry_as_task(pending, message)
        # the same call again, as a task the host waits for
        return bool(retry and self.session.transmit(pending, pending.message) in ("sent", "queued"))

    def _error_reply(
        self, pending: Pending, message: dict[str, Any], reply: dict[str, Any]
    ) -> tuple[Outcome, RequestEndDetail] | None:
        """The host's error reply (filled into `reply`) and how the call ended; None: made again in the 2026 era."""
        era_refusal = self.bridge.era_refusal(pending, message["error"]) if self.bridge is not None else None
        if era_refusal is not None and self.translate is not None:
            client = (self.session.init_params or {}).get("clientInfo")
            if self.translate(pending, client, era_refusal, self.translated):
                self._end_heartbeat(pending)  # the 2026-era call's own heartbeat and progress reach the host
                return None
        reply["error"] = era_refusal or message["error"]  # a 2025-era host told why a 2026-only tool cannot run
        return Outcome.ERROR, {"error": frames.text_of(message["error"], 1000)}

    def _result_reply(self, pending: Pending, result: Any, reply: dict[str, Any]) -> tuple[Outcome, RequestEndDetail]:
        """The host's result (filled into `reply`, decorated as its method needs) and how the call ended."""
        outcome = Outcome.OK
        if pending.method == "tools/call" and isinstance(result, dict):
            if result.get("isError") is True:
                outcome = Outcome.TOOL_ERROR
            elif self.state_sync is not None and pending.tool is not None:
                result = self._invalidate(pending, result)
        elif pending.method == "tools/list" and isinstance(result, dict):
            result = self._tools_listed(pending, result)
        elif pending.method == "server/discover" and isinstance(result, dict):
            result = self._discovered(result)
        elif pending.method == "initialize" and isinstance(result, dict):
            self.session.init_result = result
            if self.offer is not None:  # a host with tasks learns mcpwatch takes them for offered tools
                result = self.offer.decorate_initialize(pending.link, result)
        reply["result"] = result
        detail: RequestEndDetail = {}
        if pending.method == "tools/call":
            detail["result_preview"] = frames.text_of(result, 4096)
            degraded = degraded_of_result(result, detail["result_preview"]) if outcome is Outcome.OK else None
            if degraded is not None:
                detail["degraded"] = degraded
        return outcome, detail

    def _tools_listed(self, pending: Pending, result: dict[str, Any]) -> dict[str, Any]:
        """tools/list's result as this host sees it: the task parts' marks and State Sync's notes."""
        if self.on_tools_listed is not None:
            self.on_tools_listed(result)
        if self.bridge is not None:  # hosts without tasks see the tools mcpwatch runs as tasks as ordinary
            result = self.bridge.tools_listed(pending.link, result)
        if self.offer is not None:  # hosts with tasks see the tools offered as tasks as such
            result = self.offer.tools_listed(pending.link, result)
        if self.state_sync is not None:
            result = self.state_sync.decorate_tools(result)
        return result

    def _discovered(self, result: dict[str, Any]) -> dict[str, Any]:
        """server/discover's result: learnt by the bridge, kept for next time, marked with the offer."""
        if self.bridge is not None:  # does the upstream take the tasks extension? (before the offer's mark)
            self.bridge.discovered(result)
        if self.on_discovered is not None:  # kept, to answer while the upstream starts next time
            self.on_discovered(result)
        if self.offer is not None:  # a 2026-era host learns mcpwatch offers tasks
            result = self.offer.decorate_discover(result)
        return result

    def translated(self, pending: Pending, message: dict[str, Any]) -> None:
        """The answer to a host's call made again in the 2026 era (`fronts.era_translate`): the host's answer."""
        if not pending.open:
            return  # cut or cancelled meanwhile
        reply: dict[str, Any] = {"jsonrpc": "2.0", "id": pending.host_id}
        detail: RequestEndDetail
        if "error" in message:
            reply["error"] = message["error"]
            outcome, detail = Outcome.ERROR, {"error": frames.text_of(message["error"], 1000)}
        else:
            result = message.get("result")
            if isinstance(result, dict) and "resultType" in result:  # a 2026-era field this host never asked for
                result = {k: v for k, v in result.items() if k != "resultType"}
            reply["result"] = result
            meta = result.get("_meta") if isinstance(result, dict) else None
            partial = meta.get(PARTIAL_META) if isinstance(meta, dict) else None
            outcome = Outcome.OK
            if isinstance(partial, dict) and partial.get("outcome") == "deadline":
                outcome = Outcome.DEADLINE
            elif isinstance(result, dict) and result.get("isError") is True:
                outcome = Outcome.TOOL_ERROR
            detail = {"result_preview": frames.text_of(result, 4096)}
        self.table.finish(pending, outcome, reply, detail)

    def _note_host_health_check(self, pending: Pending, message: dict[str, Any], elapsed: float) -> None:
        """A host calling the upstream's health tool is a health check too: the console shows its tiers."""
        payload, ok, error = tool_payload(message)
        check = HealthCheckData(
            ok=ok, ping_ms=None, result=payload, error=error, latency_ms=round(elapsed * 1000, 2), source="host"
        )
        check["tool"] = pending.tool  # emit takes it as the event's tool column, as for the operator's checks
        self.recorder.emit(Kind.HEALTH_CHECK, request_id=pending.request_key, **check)

    def _invalidate(self, pending: Pending, result: dict[str, Any]) -> dict[str, Any]:
        assert self.state_sync is not None and pending.tool is not None
        result, event = self.state_sync.decorate_call(pending.tool, result)
        if event is not None:
            self.counters.invalidations += 1
            invalidation = InvalidationData(caused_by=event.caused_by, patterns=list(event.patterns))
            self.recorder.emit(Kind.INVALIDATION, tool=pending.tool, **invalidation)
            for notification in resource_notifications(event):
                pending.link.send(notification)
        return result

    def _upstream_notification(self, message: dict[str, Any]) -> None:
        if message["method"] == "notifications/progress":
            params = got if isinstance(got := message.get("params"), dict) else {}
            token = params.get("progressToken")
            pending = self.table.get(token)
            if pending is not None and has_own_token(pending):
                self._logged_only.note(pending, params)  # its host asked for no progress: logged, not sent
                return
            if pending is None or pending.host_token is None:
                # late, unknown, or for a call whose host asked for no progress (the upstream guessed the token)
                self.session.late.late_progress(token)
                return
            forwarded = {**message, "params": {**params, "progressToken": pending.host_token}}
            note_progress(self.recorder, pending, params)
            self._on_progress(pending)
            pending.link.send(forwarded)
            return
        if self.tasks is not None and self.tasks.notification(message):
            return  # about a task mcpwatch made for a host that does not know it
        frame_params = message.get("params")
        if isinstance(frame_params, dict):
            meta = frame_params.get("_meta")
            if isinstance(meta, dict) and SUBSCRIPTION_ID_META in meta:
                self._subscription_frame(message, frame_params, meta)
                return
        owner = self._owner()
        if owner is not None:
            owner.send(message)
        else:
            self.counters.unknown_dropped += 1
            self.recorder.emit(
                Kind.UNKNOWN_RESPONSE,
                **UnknownResponseData(up_id=None, reason="no_host_for_notification", method=message["method"]),
            )

    def _subscription_frame(self, message: dict[str, Any], params: dict[str, Any], meta: dict[str, Any]) -> None:
        """A frame of a 2026-era `subscriptions/listen` stream (its acknowledgement or an event): upstream it is
        stamped with the listen request's upstream id; the host must see its own id, on its own stream only."""
        up_id = meta[SUBSCRIPTION_ID_META]
        is_up_id = isinstance(up_id, int) and not isinstance(up_id, bool)
        pending = self.table.get(up_id) if is_up_id else None
        if pending is None or pending.method != "subscriptions/listen":
            self.counters.unknown_dropped += 1
            shown = up_id if is_up_id else frames.text_of(up_id, 64)
            self.recorder.emit(Kind.UNKNOWN_RESPONSE, **UnknownResponseData(up_id=shown, reason="unknown_subscription"))
            return
        host_meta = {**meta, SUBSCRIPTION_ID_META: pending.host_id}
        pending.link.send({**message, "params": {**params, "_meta": host_meta}})


def _may_be_task(result: Any) -> bool:
    """Whether a tools/call result can be a task's creation at all (`created_task` reads no other shape): an
    ordinary answer skips the task watch."""
    return isinstance(result, dict) and ("resultType" in result or "task" in result)
