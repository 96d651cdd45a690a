"""The event vocabulary shared by the wrapper, the log, the operator stream and replay (DESIGN.md).

Data fields per kind (the contract between the wrapper, the console's view model and reports; replay rebuilds the
console from these alone, so anything the console shows must be derivable from them):

- session_start: name, pid, version, front ("stdio"|"http"), upstream {kind ("stdio"|"http"), target},
  config (Settings.snapshot()), deadline {host_timeout_s, margin_s, override_s, budget_s, source},
  tombstone_ttl {request_timeout_s, init_timeout_s, backoff_max_s, epsilon_s, total_s},
  state_sync {policies: int, overlaps: [str]}
- session_end: reason, counters {requests, ok, errors, timeouts, cancelled, late_dropped, late_results,
  late_reused, unknown_dropped, invalidations}
- host_info: name, version, protocol_version, and (from host profiles) front, profile (key or null), label,
  known (bool), clocks [{kind, seconds, setting, change, resets_on_progress, fronts, uncertain, source}],
  deciding_clock (one of clocks or null), host_session (the HTTP front's session id, when there is one)
- heartbeat: progress, total, message, elapsed_s, interval_s (progress the wrapper sent to keep the host's idle
  clock alive; not upstream progress)
- upstream_state: state (UpstreamState), generation, and where known pid, exit_code, stderr_tail [str], retry_in_s
- request_start (request_id = host id as text; tool for tools/call): method, up_id, budget_s (null when none),
  budget_source, arguments (tools/call; JSON text, truncated to 4 KiB), and with OpenTelemetry export on trace_id,
  span_id, parent_span_id (the host's span, when it sent a traceparent)
- progress: progress, total, message
- model_status (model set): stage, status ("pending"|"ok"|"timeout"|"rate_limited"|"auth_error"|"error"),
  latency_ms, per_model_s, tier
- request_end: outcome (Outcome), duration_s, and where known error (text), result_preview (text, ≤ 4 KiB),
  partial (bool), late_reuse (true when answered from a stored late result)
- tombstone_add: up_id, ttl_s, reason ("deadline"|"host_cancel"|"operator_cancel"|"upstream_lost"|"shutdown"),
  expires_mono
- tombstone_hit: up_id, what ("response"|"progress"), age_s
- tombstone_expire: up_id, age_s
- late_result (a cut tools/call's response arrived; its tombstone_hit comes first): up_id, reason (the
  tombstone's), cut_after_s (elapsed when cut), delay_s (after the cut), duration_s (the true duration: cut + delay),
  outcome ("ok"|"tool_error"|"error"), size_bytes, and result (whole, up to [late_results] keep_bytes) or
  result_preview (text, ≤ 4 KiB) with truncated true, or error (text); reuse_ttl_s when kept for reuse
- late_reuse (a call answered at once with a stored late result; between its request_start and request_end):
  from_request_id (the cut call), delay_s, age_s (since the late result arrived), ttl_s
- unknown_response: up_id, reason ("unknown_id"|"stale_generation")
- invalidation (tool = caused_by): caused_by, patterns [str]
- health_check: ok, ping_ms, tool, result (the upstream health tool's JSON, e.g. the council's, with
  "tiers" {tier: {total_s, per_model_s, models}} and "timeout_multiplier"), error
- config_change: key, old, new, source ("operator"|"reset"), deadline (the new deadline block)
- warning: message
- operator_call (the operator's tools/call to the upstream, e.g. the console disabling a council model; tool set):
  tool, arguments (JSON text, ≤ 4 KiB), ok, error (text or null), result_preview (text, ≤ 4 KiB), duration_s
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any


class Kind(StrEnum):
    SESSION_START = "session_start"  # data: config snapshot
    SESSION_END = "session_end"
    HOST_INFO = "host_info"  # data: name, version, protocol_version
    UPSTREAM_STATE = "upstream_state"  # data: state (connecting|ready|backoff|closed), generation
    REQUEST_START = "request_start"  # data: method, budget_s
    PROGRESS = "progress"  # data: progress, total, message
    MODEL_STATUS = "model_status"  # data: status, latency_ms, stage
    REQUEST_END = "request_end"  # data: outcome, duration_s
    TOMBSTONE_ADD = "tombstone_add"  # data: ttl_s, reason
    TOMBSTONE_HIT = "tombstone_hit"  # a late response (or progress) dropped
    TOMBSTONE_EXPIRE = "tombstone_expire"
    LATE_RESULT = "late_result"  # data: delay_s, duration_s, outcome, size_bytes, result (bounded)
    LATE_REUSE = "late_reuse"  # data: from_request_id, delay_s, age_s, ttl_s
    UNKNOWN_RESPONSE = "unknown_response"
    INVALIDATION = "invalidation"  # data: caused_by, patterns
    HEALTH_CHECK = "health_check"
    CONFIG_CHANGE = "config_change"  # data: key, old, new, source
    WARNING = "warning"  # data: message
    HEARTBEAT = "heartbeat"  # data: progress, total, message, elapsed_s, interval_s
    OPERATOR_CALL = "operator_call"  # data: tool, arguments, ok, error, result_preview, duration_s


class UpstreamState(StrEnum):
    CONNECTING = "connecting"
    READY = "ready"
    BACKOFF = "backoff"
    CLOSED = "closed"


class Outcome(StrEnum):
    OK = "ok"
    TOOL_ERROR = "tool_error"
    ERROR = "error"
    DEADLINE = "deadline"
    CANCELLED = "cancelled"
    UPSTREAM_LOST = "upstream_lost"


KINDS: frozenset[str] = frozenset(k.value for k in Kind)


@dataclass(slots=True)
class Event:
    """One thing that happened. `seq` is monotonic within a session; `id` is assigned by the log."""

    kind: str
    session_id: str
    ts: float
    mono: float
    seq: int = 0
    request_id: str | None = None
    tool: str | None = None
    model: str | None = None
    data: dict[str, Any] = field(default_factory=dict)
    id: int | None = None

    def to_dict(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "seq": self.seq,
            "session_id": self.session_id,
            "ts": self.ts,
            "mono": self.mono,
            "kind": self.kind,
            "request_id": self.request_id,
            "tool": self.tool,
            "model": self.model,
            "data": self.data,
        }

    @classmethod
    def from_dict(cls, raw: dict[str, Any]) -> Event:
        data = raw.get("data") or {}
        if isinstance(data, str):
            data = json.loads(data)
        return cls(
            kind=str(raw["kind"]),
            session_id=str(raw["session_id"]),
            ts=float(raw["ts"]),
            mono=float(raw["mono"]),
            seq=int(raw.get("seq") or 0),
            request_id=None if raw.get("request_id") is None else str(raw["request_id"]),
            tool=raw.get("tool"),
            model=raw.get("model"),
            data=data,
            id=raw.get("id"),
        )
