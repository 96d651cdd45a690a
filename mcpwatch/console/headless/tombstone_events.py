"""The model's cut-calls part: tombstones added, hit and expired, cancel acknowledgements, and late results kept
or reused. It owns the tombstones; a request shows its own tombstone's story through the calls part (`CallsPart`),
the counts go to the `Tally`, the notable things to the `NotableLog`.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import replace
from typing import Any

from mcpwatch.console.headless.coerce import as_int, as_num, as_text, up_key
from mcpwatch.console.headless.notable import NotableLog
from mcpwatch.console.headless.records import LateView, TombstoneRecord
from mcpwatch.console.headless.request_events import CallsPart
from mcpwatch.console.headless.tally import Tally
from mcpwatch.console.headless.views import LATE_TEXT_MAX, Limits
from mcpwatch.events import (
    CancelAckData,
    Event,
    LateErrorData,
    LateResultData,
    LateReuseData,
    TombstoneAddData,
    TombstoneExpireData,
    TombstoneHitData,
)
from mcpwatch.reliability.cancel_ack import is_cancel_ack_text


class TombstonesPart:
    """Folds tombstone, cancel-acknowledgement and late-result events."""

    def __init__(
        self,
        limits: Limits,
        calls: CallsPart,
        tally: Tally,
        notable: NotableLog,
        records: dict[str, TombstoneRecord] | None = None,
    ) -> None:
        self.limits = limits
        self.calls = calls
        self.tally = tally
        self.notable = notable
        self.records: dict[str, TombstoneRecord] = {} if records is None else records

    def copied_records(self) -> tuple[dict[str, TombstoneRecord], dict[int, TombstoneRecord]]:
        """Copies of the tombstones, and each original's copy by its id (for the calls part's copy to share)."""
        records = {k: replace(t) for k, t in self.records.items()}
        return records, {id(t): records[k] for k, t in self.records.items()}

    def add(self, event: Event, mono: float, data: TombstoneAddData) -> None:
        up_id = up_key(data)
        request_id = as_text(event.request_id)
        if request_id is None and up_id is not None:
            request_id = self.calls.by_upstream(up_id)
        key = up_id if up_id is not None else f"req:{request_id}"
        request = self.calls.get(request_id)
        ttl = as_num(data.get("ttl_s"))
        expires = as_num(data.get("expires_mono"))
        if expires is None and ttl is not None:
            expires = mono + ttl
        tomb = TombstoneRecord(
            key,
            request_id,
            as_text(event.tool) or (request.tool if request else None),
            ttl,
            as_text(data.get("reason")),
            mono,
            expires,
        )
        if key not in self.records and len(self.records) >= self.limits.tombstones:
            del self.records[next(iter(self.records))]
        self.records[key] = tomb
        if request is not None:
            request.tombstone = tomb
            ttl_text = "" if ttl is None else f", TTL {ttl:g}s"
            request.note(mono, "tombstone_add", f"tombstoned ({tomb.reason or 'no reason given'}{ttl_text})")
            if up_id is not None:
                self.calls.link_upstream(up_id, request.request_id)

    def _find(self, event: Event, data: TombstoneHitData | TombstoneExpireData) -> TombstoneRecord | None:
        up_id = up_key(data)
        if up_id is not None and up_id in self.records:
            return self.records[up_id]
        request_id = as_text(event.request_id)
        if request_id is None and up_id is not None:
            request_id = self.calls.by_upstream(up_id)
        return None if request_id is None else self.records.get(f"req:{request_id}")

    def hit(self, event: Event, mono: float, data: TombstoneHitData) -> None:
        self.tally.add("late_dropped")
        self.notable.late_answer(mono)
        tomb = self._find(event, data)
        if tomb is None:
            return
        tomb.hits += 1
        request = self.calls.get(tomb.request_id) if tomb.request_id else None
        if request is not None and request.tombstone is tomb:
            age = as_num(data.get("age_s"))
            age_text = "" if age is None else f" {age:.1f}s after the tombstone"
            request.note(mono, "tombstone_hit", f"late {as_text(data.get('what')) or 'response'} dropped{age_text}")

    def expire(self, event: Event, mono: float, data: TombstoneExpireData) -> None:
        tomb = self._find(event, data)
        if tomb is None:
            return
        del self.records[tomb.up_id]
        request = self.calls.get(tomb.request_id) if tomb.request_id else None
        if request is not None and request.tombstone is tomb:
            request.note(mono, "tombstone_expire", "tombstone expired")

    def cancel_ack(self, event: Event, mono: float, data: CancelAckData) -> None:
        request = self.calls.of(event)
        if request is None:
            return
        after = _after_the_cut(as_num(data.get("delay_s")))
        request.cancel_acked = True
        request.note(mono, "cancel_ack", f"the server acknowledged the cancel{after}: it never finished")

    def late_error(self, event: Event, mono: float, data: LateErrorData) -> None:
        """An error answer after the cut (a relay closing, a server failing): no result, so no late result."""
        request = self.calls.of(event)
        if request is None:
            return
        after = _after_the_cut(as_num(data.get("delay_s")))
        text = as_text(data.get("error")) or "an error"
        request.note(mono, "late_error", f"the server answered with an error{after} ({text[:80]}): it never finished")

    def late_result(self, event: Event, mono: float, data: LateResultData) -> None:
        if is_cancel_ack_text(data.get("outcome"), data.get("error")):  # an older log's acknowledgement
            self.cancel_ack(event, mono, data)  # type: ignore[arg-type]  # an older log's cancel_ack, logged as late_result
            return
        if data.get("outcome") == "error":  # an older log's error answer: never a result
            self.late_error(event, mono, data)  # type: ignore[arg-type]  # an older log's late_error, logged as late_result
            return
        self.tally.add("late_results")
        self.notable.late_result(mono, as_text(event.request_id), as_text(event.tool), data)
        request = self.calls.of(event)
        if request is None:
            return
        result = data.get("result")
        text = as_text(data.get("result_preview")) or as_text(data.get("error"))
        if result is not None:
            text = json.dumps(result, ensure_ascii=False)[:LATE_TEXT_MAX]
        late = LateView(
            mono,
            as_num(data.get("delay_s")),
            as_num(data.get("duration_s")),
            as_text(data.get("outcome")),
            as_int(data.get("size_bytes")),
            text,
            data.get("truncated") is True,
        )
        request.late = late
        took = "" if late.duration_s is None else f" (it took {late.duration_s:.1f}s in all)"
        request.note(mono, "late_result", f"finished late: {late.outcome or '?'}{_after_the_cut(late.delay_s)}{took}")

    def late_reuse(self, event: Event, mono: float, data: LateReuseData) -> None:
        self.tally.add("late_reused")
        self.notable.late_reuse(mono, as_text(event.request_id), as_text(event.tool), data)
        request = self.calls.of(event)
        if request is None:
            return
        late = LateView(
            mono, as_num(data.get("delay_s")), from_request_id=as_text(data.get("from_request_id")),
            age_s=as_num(data.get("age_s")),
        )  # fmt: skip
        request.late = late
        age = "" if late.age_s is None else f", {late.age_s:.0f}s old"
        request.note(mono, "late_reuse", f"answered with the late result of #{late.from_request_id}{age}")

    def seed(self, tomb: Mapping[str, Any], now_mono: float) -> None:
        """The tombstones a `status()` lists (attaching mid-session), unless the events already have them."""
        for item in tomb.get("items") or ():
            if not isinstance(item, Mapping):
                continue
            request_id = as_text(item.get("request_id"))
            key = up_key(item, "key") or f"req:{request_id}"  # the up_id, as tombstone events name it
            if key in self.records or any(t.request_id == request_id for t in self.records.values()):
                continue
            age = as_num(item.get("age_s")) or 0.0
            expires_in = as_num(item.get("expires_in_s"))
            ttl = None if expires_in is None else age + expires_in
            self.records[key] = TombstoneRecord(
                key,
                request_id,
                as_text(item.get("tool")),
                ttl if ttl is not None else as_num(tomb.get("ttl_s")),
                as_text(item.get("reason")),
                now_mono - age,
                None if expires_in is None else now_mono + expires_in,
            )


def _after_the_cut(delay_s: float | None) -> str:
    """A request note's " 2.5s after the cut", or nothing when the delay is unknown."""
    return "" if delay_s is None else f" {delay_s:.1f}s after the cut"
