"""The ways a call ends before its answer: abandoned (deadline, a host's or an operator's cancel, shutdown) or
failed (the upstream gone or stuck). Either way a call the upstream was sent is tombstoned, so its late answer is
dropped (and noted as a late result); an abandoned one is also cancelled upstream, once. The host is answered with
what mcpwatch knows (partial progress, per-model state), unless it cancelled the call itself.

Two parts, split by what they need: `Failures` needs only the tombstones, so it is built before the session (which
fails through it a call it cannot deliver); `Endings` cancels calls upstream through the session, so it comes after."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from mcpwatch.events import Outcome, RequestEndDetail
from mcpwatch.reliability.deadline import DeadlinePolicy
from mcpwatch.wrapper.calls.partial import abandoned_reply, failed_reply
from mcpwatch.wrapper.calls.pending import Pending, PendingTable
from mcpwatch.wrapper.core.late import LateFrames
from mcpwatch.wrapper.core.late_results import LateResults
from mcpwatch.wrapper.core.session import UpstreamSession
from mcpwatch.wrapper.framing import frames


class Failures:
    """Calls that cannot complete (the upstream gone, stuck, or its answer unusable), answered at once."""

    def __init__(
        self,
        *,
        table: PendingTable,
        tombstones: LateFrames,
        deadline: DeadlinePolicy,
        late_results: LateResults,
        modern: Callable[[], bool],
    ) -> None:
        self.table = table
        self.tombstones = tombstones
        self.deadline = deadline
        self.late_results = late_results
        self._modern = modern  # whether the host speaks the 2026 era (its results carry resultType)

    def fail(self, pending: Pending, outcome: Outcome, text: str, reason: str = "upstream_lost") -> None:
        """Answer a call that cannot complete (upstream gone or stuck) at once, with a clear error."""
        elapsed = self.table.elapsed(pending)
        if pending.sent:
            self.bury(pending, reason, elapsed, cancelled=False)
        reply = failed_reply(pending, text, self._modern())
        detail: RequestEndDetail = {"error": text, "partial": pending.last_progress is not None}
        detail["result_preview"] = frames.text_of(reply, 4096)
        self.table.finish(pending, outcome, reply, detail, elapsed=elapsed)

    def undeliverable(self, pending: Pending, text: str) -> None:
        """A call the session could neither send nor queue (stuck, unstartable, or waiting too long): an error."""
        self.fail(pending, Outcome.ERROR, text)

    def fail_with_error(self, pending: Pending, code: int, text: str) -> None:
        """Answer a call whose answer arrived unusable (over the frame cap) at once with a JSON-RPC error, a
        tools/call too. The upstream has answered it: nothing more will come for its id, so no tombstone."""
        reply = frames.error_response(pending.host_id, code, text)
        detail: RequestEndDetail = {
            "error": text,
            "partial": pending.last_progress is not None,
            "result_preview": frames.text_of(reply),
        }
        self.table.finish(pending, Outcome.ERROR, reply, detail)

    def bury(self, pending: Pending, reason: str, elapsed: float, *, cancelled: bool) -> None:
        """Tombstone a call the upstream was sent, and note the cut for its late result."""
        # The call's own budget is its request timeout (a long per-tool budget must be covered too); a call without
        # one (not a tools/call) gets the current budget.
        self.tombstones.bury(pending, reason, pending.budget or self.deadline.budget(None))
        self.late_results.note_cut(pending, reason, elapsed, cancelled=cancelled)


class Endings:
    """Calls abandoned before their answer: cancelled upstream once, tombstoned, the host answered if owed."""

    def __init__(
        self,
        *,
        table: PendingTable,
        session: UpstreamSession,
        failures: Failures,
        modern: Callable[[], bool],
    ) -> None:
        self.table = table
        self.session = session
        self._failures = failures
        self._modern = modern  # whether the host speaks the 2026 era (its results carry resultType)

    def deadline_hit(self, up_id: int) -> None:
        pending = self.table.get(up_id)
        if pending is not None:
            self.abandon(pending, Outcome.DEADLINE, "deadline")

    def cancel(self, request_id: str) -> bool:
        """The operator's cancel: the call ends as a deadline would, with its own explanation."""
        pending = self.table.by_request_key(str(request_id))
        if pending is None:
            return False
        self.abandon(pending, Outcome.CANCELLED, "operator_cancel")
        return True

    def abandon(self, pending: Pending, outcome: Outcome, reason: str, reason_text: Any = None) -> None:
        """Stop waiting for a call: cancel it upstream once, tombstone its id, and answer the host if owed."""
        elapsed = self.table.elapsed(pending)
        if pending.sent:
            cancel_reason = reason_text if isinstance(reason_text, str) else f"mcpwatch: {reason.replace('_', ' ')}"
            params = {"requestId": pending.up_id, "reason": cancel_reason}
            self.session.send_direct({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": params})
            self._failures.bury(pending, reason, elapsed, cancelled=True)
        detail: RequestEndDetail = {"partial": pending.last_progress is not None, "error": reason}
        reply = None
        if reason != "host_cancel":  # a host that cancelled is owed nothing
            note = None if pending.sent else self.session.unavailable_text()
            reply = abandoned_reply(pending, reason, elapsed, note, self._modern())
            detail["result_preview"] = frames.text_of(reply, 4096)
        self.table.finish(pending, outcome, reply, detail, elapsed=elapsed)

    def host_cancel(self, pending: Pending, reason_text: Any = None) -> None:
        """The host cancelled the call (`notifications/cancelled`): it is abandoned, and the host is owed nothing."""
        self.abandon(pending, Outcome.CANCELLED, "host_cancel", reason_text)
