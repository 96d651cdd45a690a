"""Event handlers for cut calls: tombstones added, hit and expired, and late results kept or reused."""

from __future__ import annotations

import json

from mcpwatch.console.headless.coerce import as_int, as_num, as_text, up_key
from mcpwatch.console.headless.records import LateView, TombstoneRecord
from mcpwatch.console.headless.state import ModelCore
from mcpwatch.console.headless.views import LATE_TEXT_MAX
from mcpwatch.events import (
    CancelAckData,
    Event,
    LateResultData,
    LateReuseData,
    TombstoneAddData,
    TombstoneExpireData,
    TombstoneHitData,
)
from mcpwatch.reliability.cancel_ack import is_cancel_ack_text


class TombstoneEvents(ModelCore):
    """Folds tombstone and late-result events; a request shows its own tombstone's story."""

    def _tombstone_add(self, event: Event, mono: float, data: TombstoneAddData) -> None:
        s = self._s
        up_id = up_key(data)
        request_id = as_text(event.request_id)
        if request_id is None and up_id is not None:
            request_id = s.by_up_id.get(up_id)
        key = up_id if up_id is not None else f"req:{request_id}"
        request = s.requests.get(request_id) if request_id is not None else None
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
        if key not in s.tombstones and len(s.tombstones) >= s.limits.tombstones:
            del s.tombstones[next(iter(s.tombstones))]
        s.tombstones[key] = tomb
        if request is not None:
            request.tombstone = tomb
            ttl_text = "" if ttl is None else f", TTL {ttl:g}s"
            request.note(mono, "tombstone_add", f"tombstoned ({tomb.reason or 'no reason given'}{ttl_text})")
            if up_id is not None:
                s.by_up_id[up_id] = request.request_id

    def _tombstone(self, event: Event, data: TombstoneHitData | TombstoneExpireData) -> TombstoneRecord | None:
        s = self._s
        up_id = up_key(data)
        if up_id is not None and up_id in s.tombstones:
            return s.tombstones[up_id]
        request_id = as_text(event.request_id)
        if request_id is None and up_id is not None:
            request_id = s.by_up_id.get(up_id)
        return None if request_id is None else s.tombstones.get(f"req:{request_id}")

    def _tombstone_hit(self, event: Event, mono: float, data: TombstoneHitData) -> None:
        s = self._s
        s.counters["late_dropped"] += 1
        s.notable.late_answer(mono)
        tomb = self._tombstone(event, data)
        if tomb is None:
            return
        tomb.hits += 1
        request = s.requests.get(tomb.request_id) if tomb.request_id else None
        if request is not None and request.tombstone is tomb:
            age = as_num(data.get("age_s"))
            age_text = "" if age is None else f" {age:.1f}s after the tombstone"
            request.note(mono, "tombstone_hit", f"late {as_text(data.get('what')) or 'response'} dropped{age_text}")

    def _tombstone_expire(self, event: Event, mono: float, data: TombstoneExpireData) -> None:
        s = self._s
        tomb = self._tombstone(event, data)
        if tomb is None:
            return
        del s.tombstones[tomb.up_id]
        request = s.requests.get(tomb.request_id) if tomb.request_id else None
        if request is not None and request.tombstone is tomb:
            request.note(mono, "tombstone_expire", "tombstone expired")

    def _cancel_ack(self, event: Event, mono: float, data: CancelAckData) -> None:
        request = self._request(event)
        if request is None:
            return
        delay = as_num(data.get("delay_s"))
        after = "" if delay is None else f" {delay:.1f}s after the cut"
        request.cancel_acked = True
        request.note(mono, "cancel_ack", f"the server acknowledged the cancel{after}: it never finished")

    def _late_result(self, event: Event, mono: float, data: LateResultData) -> None:
        if is_cancel_ack_text(data.get("outcome"), data.get("error")):  # an older log's acknowledgement
            self._cancel_ack(event, mono, data)  # type: ignore[arg-type]  # an older log's cancel_ack, logged as late_result
            return
        s = self._s
        s.counters["late_results"] += 1
        s.notable.late_result(mono, as_text(event.request_id), as_text(event.tool), data)
        request = self._request(event)
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
        delay = "" if late.delay_s is None else f" {late.delay_s:.1f}s after the cut"
        took = "" if late.duration_s is None else f" (it took {late.duration_s:.1f}s in all)"
        request.note(mono, "late_result", f"finished late: {late.outcome or '?'}{delay}{took}")

    def _late_reuse(self, event: Event, mono: float, data: LateReuseData) -> None:
        s = self._s
        s.counters["late_reused"] += 1
        s.notable.late_reuse(mono, as_text(event.request_id), as_text(event.tool), data)
        request = self._request(event)
        if request is None:
            return
        late = LateView(
            mono, as_num(data.get("delay_s")), from_request_id=as_text(data.get("from_request_id")),
            age_s=as_num(data.get("age_s")),
        )  # fmt: skip
        request.late = late
        age = "" if late.age_s is None else f", {late.age_s:.0f}s old"
        request.note(mono, "late_reuse", f"answered with the late result of #{late.from_request_id}{age}")
