"""Late results: what a tombstoned call's response said, kept in the log, and (opt-in) reused for an identical call.

The wrapper calls in at three moments: when the core cuts a call (`note_cut`), when a response arrives for a
tombstoned id (`arrived`, from the tombstones in `late`), and when a host starts a tools/call (`answer_from_store`,
only with reuse policies).
The response itself is still dropped towards the host that gave up; this module only records it, so the log knows
the call's true duration (cut + delay) and what it would have said.
"""

from __future__ import annotations

from collections import OrderedDict
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from mcpwatch.events import CancelAckData, Kind, LateErrorData, LateResultData, LateReuseData, Outcome, WarningData
from mcpwatch.reliability.cancel_ack import is_cancel_ack
from mcpwatch.reliability.reuse import LateResultReuse, ReuseKey
from mcpwatch.wrapper.framing import frames

if TYPE_CHECKING:
    from mcpwatch.config import LateResultSettings
    from mcpwatch.reliability.statesync import StateSync
    from mcpwatch.reliability.tombstones import Tombstone
    from mcpwatch.wrapper.calls.pending import HostLink, PendingTable
    from mcpwatch.wrapper.calls.recorder import Recorder

PREVIEW_CHARS = 4096
CUT_KEYS_BYTES_MAX = 16 * 1024 * 1024  # reuse keys (canonical arguments) held for cut calls, in all


@dataclass(slots=True)
class CutCall:
    """What the core knew about a tools/call when it stopped waiting for it."""

    tool: str | None
    request_id: str | None
    cut_after_s: float
    reason: str
    reuse_key: ReuseKey | None
    cancelled: bool = True  # mcpwatch sent notifications/cancelled for it (not so when the upstream was lost)


class LateResults:
    def __init__(
        self,
        settings: LateResultSettings,
        recorder: Recorder,
        *,
        counters: Any,
        table: PendingTable,
        state_sync: StateSync | None = None,
        cap: int = 100_000,
    ) -> None:
        self.keep_bytes = settings.keep_bytes
        self.recorder = recorder
        self._cap = cap
        self._cuts: OrderedDict[int, CutCall] = OrderedDict()
        self._key_bytes = 0  # of the reuse keys the cut calls hold: a call past the bound is not reusable
        self.reuse = LateResultReuse(settings.reuse, is_mutation=_mutation_test(state_sync), clock=recorder.clock)
        self.counters = counters  # the core's: late_results is counted there
        self._table = table  # a reused result ends its call there, as every call ends
        self._guard_warned: set[str] = set()

    # ------------------------------------------------------------------ cut

    def note_cut(self, pending: Any, reason: str, elapsed_s: float, *, cancelled: bool = True) -> None:
        """Remember a tools/call the core gave up on (a `Pending`: its up_id, tool, link and forwarded message)."""
        if pending.method != "tools/call":
            return
        key = None
        if self.reuse.enabled and pending.tool is not None:
            params = pending.message.get("params")
            arguments = params.get("arguments") if isinstance(params, dict) else None
            key = self.reuse.key(pending.link.connection, host_identity(pending.host), pending.tool, arguments)
        if key is not None and self._key_bytes + len(key.arguments) > CUT_KEYS_BYTES_MAX:
            key = None
        self._key_bytes += len(key.arguments) if key is not None else 0
        self._cuts[pending.up_id] = CutCall(pending.tool, pending.request_key, elapsed_s, reason, key, cancelled)
        while len(self._cuts) > self._cap:
            self._pop(next(iter(self._cuts)))

    def forget(self, up_id: Any) -> None:
        """Its tombstone expired: no response can be matched to it any more."""
        self._pop(up_id)

    def _pop(self, up_id: Any) -> CutCall | None:
        cut = self._cuts.pop(up_id, None)
        if cut is not None and cut.reuse_key is not None:
            self._key_bytes -= len(cut.reuse_key.arguments)
        return cut

    # ------------------------------------------------------------------ the late response

    def arrived(self, tombstone: Tombstone, message: dict[str, Any]) -> None:
        """Log a late response to a cut tools/call: delay, outcome, size and the result (bounded)."""
        cut = self._pop(tombstone.key)
        if cut is None:
            return  # not a tools/call (or its note was evicted): the tombstone_hit says enough
        delay = max(0.0, tombstone.age(self.recorder.clock.monotonic()))
        if cut.cancelled and is_cancel_ack(message.get("error")):
            ack = CancelAckData(
                up_id=tombstone.key,
                reason=cut.reason,  # type: ignore[typeddict-item]  # a TombstoneReason, as the tombstone was made
                cut_after_s=round(cut.cut_after_s, 6),
                delay_s=round(delay, 6),
                code=message["error"].get("code"),
                error=frames.text_of(message["error"], 1000),
            )
            self.recorder.emit(Kind.CANCEL_ACK, request_id=cut.request_id, tool=cut.tool, **ack)
            return
        if "error" in message or "result" not in message:  # an error is no result: its delay is no duration
            error = message.get("error")
            failed = LateErrorData(
                up_id=tombstone.key,
                reason=cut.reason,  # type: ignore[typeddict-item]  # a TombstoneReason, as the tombstone was made
                cut_after_s=round(cut.cut_after_s, 6),
                delay_s=round(delay, 6),
                code=error.get("code") if isinstance(error, dict) else None,
                error=frames.text_of(error, 1000),
            )
            self.recorder.emit(Kind.LATE_ERROR, request_id=cut.request_id, tool=cut.tool, **failed)
            return
        result = message.get("result")
        encoded = frames.encode(result)
        size = len(encoded) - encoded.endswith(b"\n")  # the payload's bytes, not the frame's line end
        body: dict[str, Any] = {}
        is_error = isinstance(result, dict) and result.get("isError") is True
        outcome = Outcome.TOOL_ERROR if is_error else Outcome.OK
        if size <= self.keep_bytes:
            body["result"] = result
        else:
            body["result_preview"] = frames.text_of(result, PREVIEW_CHARS)
            body["truncated"] = True
        stored = None
        if cut.reuse_key is not None and outcome == Outcome.OK and "result" in body:
            stored = self.reuse.keep(
                cut.reuse_key, body["result"], request_id=cut.request_id, delay_s=delay, size_bytes=size
            )
        self.counters.late_results += 1
        late = LateResultData(
            up_id=tombstone.key,
            reason=cut.reason,
            cut_after_s=round(cut.cut_after_s, 6),
            delay_s=round(delay, 6),
            duration_s=round(cut.cut_after_s + delay, 6),
            outcome=outcome.value,
            size_bytes=size,
            reuse_ttl_s=None if stored is None else stored.ttl_s,
            **body,  # type: ignore[typeddict-item]  # body holds LateResultData's optional keys
        )
        self.recorder.emit(Kind.LATE_RESULT, request_id=cut.request_id, tool=cut.tool, **late)

    # ------------------------------------------------------------------ reuse

    def answer_from_store(self, link: HostLink, host: Any, host_id: Any, tool: str, arguments: Any) -> bool:
        """Answer an identical call at once with a stored late result (marked); False sends it upstream as usual."""
        if self.reuse.refused_as_mutation(tool):
            self._warn_guard(tool)
            return False
        reuse = self.reuse.take(self.reuse.key(link.connection, host_identity(host), tool, arguments))
        if reuse is None:
            return False
        reused = LateReuseData(
            from_request_id=reuse.stored.request_id or "",  # a stored result always names its cut call
            delay_s=round(reuse.stored.delay_s, 6),
            age_s=round(reuse.age_s, 6),
            ttl_s=reuse.stored.ttl_s,
        )
        reply = {"jsonrpc": "2.0", "id": host_id, "result": reuse.result}
        preview = frames.text_of(reuse.result, PREVIEW_CHARS)
        self._table.answer_at_once(
            link, host_id, tool, arguments, Outcome.OK, reply, reused, {"result_preview": preview}
        )
        return True

    def forget_link(self, link: Any) -> None:
        """The host connection went away: its stored results, and the late results still due to it, answer no one."""
        if not self.reuse.enabled or (connection := link.connection) is None:
            return
        self.reuse.forget_connection(connection)
        for cut in self._cuts.values():
            if cut.reuse_key is not None and cut.reuse_key.connection == connection:
                self._key_bytes -= len(cut.reuse_key.arguments)
                cut.reuse_key = None

    def _warn_guard(self, tool: str) -> None:
        if tool in self._guard_warned or len(self._guard_warned) >= 100:
            return
        self._guard_warned.add(tool)
        text = f"late results of {tool} are never reused: State Sync treats it as a mutation (invalidates)"
        self.recorder.emit(Kind.WARNING, tool=tool, **WarningData(message=text))


def host_identity(host: Any) -> tuple[str | None, str | None]:
    """The name and version a host gave (a `DetectedHost`), part of the reuse key."""
    return (getattr(host, "name", None), getattr(host, "version", None))


def _mutation_test(state_sync: StateSync | None) -> Any:
    """A tool is a mutation when its State Sync policy invalidates something."""
    if state_sync is None:
        return lambda tool: False
    return state_sync.invalidates
