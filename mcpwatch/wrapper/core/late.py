"""Frames for calls the wrapper no longer waits for: tombstones for the calls it gave up on, so their late answers
and progress are dropped and logged against their request, and a verdict for answers that name no call at all."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from mcpwatch.config import TombstoneSettings
from mcpwatch.events import (
    Kind,
    TombstoneAddData,
    TombstoneExpireData,
    TombstoneHitData,
    UnknownReason,
    UnknownResponseData,
)
from mcpwatch.reliability.deadline import Budget
from mcpwatch.reliability.ids import UpstreamIds
from mcpwatch.reliability.tombstones import TombstoneTable, TtlTerms, ttl_terms
from mcpwatch.wrapper.calls.pending import Counters, Pending
from mcpwatch.wrapper.calls.recorder import Recorder

if TYPE_CHECKING:
    from mcpwatch.reliability.tombstones import Tombstone
    from mcpwatch.wrapper.core.late_results import LateResults

_VERDICT_REASON: dict[str, UnknownReason] = {"stale_generation": "stale_generation", "current": "expired_tombstone"}


class LateFrames:
    def __init__(
        self,
        *,
        ids: UpstreamIds,
        settings: TombstoneSettings,
        recorder: Recorder,
        counters: Counters,
        results: LateResults | None = None,
    ) -> None:
        self.ids = ids
        self.settings = settings
        self.table = TombstoneTable(clock=recorder.clock, cap=settings.cap)
        self._recorder = recorder
        self._counters = counters
        self.results = results  # keeps what a cut tools/call answered late (late_result)

    def terms(self, budget: Budget) -> TtlTerms:
        return ttl_terms(budget, self.settings)

    def bury(self, pending: Pending, reason: str, budget: Budget) -> None:
        """Tombstone a call that was sent upstream: its own budget is its request timeout (a long per-tool budget
        must be covered too)."""
        terms = ttl_terms(budget, self.settings)
        tombstone = self.table.add(
            pending.up_id, ttl_s=terms.total_s, reason=reason, request_id=pending.request_key, tool=pending.tool
        )
        recorder = self._recorder
        added = TombstoneAddData(
            up_id=pending.up_id,
            ttl_s=terms.total_s,
            reason=reason,  # type: ignore[typeddict-item]  # a TombstoneReason, from the caller's literals
            expires_mono=round(recorder.mono() + tombstone.ttl_s, 3),
        )
        recorder.emit(Kind.TOMBSTONE_ADD, request_id=pending.request_key, tool=pending.tool, **added)

    def hit(self, up_id: Any, what: str) -> bool:
        """A late response or progress for a call we gave up on: dropped, counted, logged against its request."""
        return self._hit(up_id, what) is not None

    def _hit(self, up_id: Any, what: str) -> Tombstone | None:
        tombstone = self.table.hit(up_id) if type(up_id) is int else None
        if tombstone is None:
            return None
        self._counters.late_dropped += 1
        late = TombstoneHitData(
            up_id=up_id,
            what=what,  # type: ignore[typeddict-item]  # "response" or "progress", from the callers
            age_s=round(tombstone.age(self._recorder.clock.monotonic()), 3),
        )
        self._recorder.emit(Kind.TOMBSTONE_HIT, request_id=tombstone.request_id, tool=tombstone.tool, **late)
        return tombstone

    def late_response(self, up_id: Any, message: dict[str, Any] | None = None) -> None:
        """A response that matches no call in flight: a tombstone's (kept as a late result), else an unknown one,
        said why."""
        tombstone = self._hit(up_id, "response")
        if tombstone is not None:
            if self.results is not None and message is not None:
                self.results.arrived(tombstone, message)
            return
        self._counters.unknown_dropped += 1
        reason = _VERDICT_REASON.get(self.ids.classify(up_id), "unknown_id")
        self._recorder.emit(Kind.UNKNOWN_RESPONSE, **UnknownResponseData(up_id=up_id, reason=reason))

    def late_progress(self, token: Any) -> None:
        # Upstream progress tokens are up_ids, so a late one finds its call's tombstone.
        if not self.hit(token, "progress"):
            self._counters.unknown_dropped += 1
            unknown = UnknownResponseData(up_id=token, reason="unknown_progress_token")
            self._recorder.emit(Kind.UNKNOWN_RESPONSE, **unknown)

    def sweep(self) -> int:
        expired = self.table.sweep()
        now = self._recorder.clock.monotonic()
        for tombstone in expired:
            if self.results is not None:
                self.results.forget(tombstone.key)
            expiry = TombstoneExpireData(up_id=tombstone.key, age_s=round(tombstone.age(now), 3))
            self._recorder.emit(Kind.TOMBSTONE_EXPIRE, request_id=tombstone.request_id, tool=tombstone.tool, **expiry)
        return len(expired)
