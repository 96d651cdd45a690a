"""The model's record of one call (and of its tombstone and council runs), and the immutable items a record keeps
(its timeline entries, its late answer), which the detail screen shows as they are."""

from __future__ import annotations

from collections import deque
from collections.abc import Mapping
from dataclasses import dataclass, field, replace


@dataclass(frozen=True, slots=True)
class LateView:
    """A cut call's late answer (late_result), or where a reused call's answer came from (late_reuse)."""

    mono: float
    delay_s: float | None  # after the cut
    duration_s: float | None = None  # the true duration: cut + delay
    outcome: str | None = None
    size_bytes: int | None = None
    result: str | None = None  # the result (or its preview) as text
    truncated: bool = False
    from_request_id: str | None = None  # late_reuse: the cut call whose late result answered this one
    age_s: float | None = None  # late_reuse: how old that result was


@dataclass(frozen=True, slots=True)
class TimelineItem:
    mono: float
    kind: str
    text: str


@dataclass(slots=True)
class ModelRun:
    model: str
    status: str
    stage: int | None
    latency_ms: int | None
    per_model_s: float | None
    started_mono: float
    updated_mono: float


@dataclass(slots=True)
class TombstoneRecord:
    up_id: str
    request_id: str | None
    tool: str | None
    ttl_s: float | None
    reason: str | None
    added_mono: float
    expires_mono: float | None
    hits: int = 0


@dataclass(slots=True)
class TaskMark:
    """A call that runs as an MCP task: who runs it, its last status, why mcpwatch offered it, the host's polls."""

    kind: str  # "offered" (mcpwatch is the task's receiver), "bridged" (made for a host without tasks), "watched"
    task_id: str
    status: str
    reason: str | None = None  # an offered task's: the `[tasks] offer` glob, or `offer_slow` and its basis
    polls: int = 0  # the host's tasks/get, tasks/result, tasks/list for it (never calls of their own)

    def line(self) -> str:
        """`task offered · working · 12 polls · offer search*`: what marks the call in In flight and Recent."""
        parts = [f"task {self.kind}", self.status]
        if self.polls:
            parts.append(f"{self.polls} poll{'s' if self.polls != 1 else ''}")
        if self.reason:
            parts.append(self.reason)
        return " · ".join(parts)


@dataclass(slots=True)
class CallRecord:
    request_id: str
    method: str
    tool: str | None
    up_id: str | None
    start_mono: float
    budget_s: float | None
    budget_source: str | None
    arguments: str | None
    timeline: deque[TimelineItem]
    progress: float | None = None
    total: float | None = None
    message: str | None = None
    share: tuple[float, float] | None = None  # (progress/total, seconds in) while it ran: whatif's pace basis
    end_mono: float | None = None
    outcome: str | None = None
    duration_s: float | None = None
    error: str | None = None
    result_preview: str | None = None
    partial: bool = False
    degraded: str | None = None
    timeline_dropped: int = 0
    tombstone: TombstoneRecord | None = None
    models: dict[str, ModelRun] = field(default_factory=dict)
    tier: str | None = None
    per_model_s: float | None = None
    stage: int | None = None
    late: LateView | None = None
    cancel_acked: bool = False  # the server answered the cancel with an error saying so: it never finished
    ttl_end_mono: float | None = None  # a task's: when its TTL passes (its receiver may then drop it)
    task: TaskMark | None = None  # the call runs as a task (see `TaskMark`)

    def note(self, mono: float, kind: str, text: str) -> None:
        if len(self.timeline) == self.timeline.maxlen:
            self.timeline_dropped += 1
        self.timeline.append(TimelineItem(mono, kind, text))

    def copy(self, tombstones: Mapping[int, TombstoneRecord] | None = None) -> CallRecord:
        """A copy whose tombstone is the copied state's own (`tombstones`: id of the original → its copy), so
        a later hit on the state's tombstone still shows on the request, as it does on the original."""
        clone = replace(self, timeline=deque(self.timeline, maxlen=self.timeline.maxlen))
        clone.models = {k: replace(v) for k, v in self.models.items()}
        if self.task is not None:
            clone.task = replace(self.task)
        if self.tombstone is not None:
            shared = None if tombstones is None else tombstones.get(id(self.tombstone))
            clone.tombstone = shared if shared is not None else replace(self.tombstone)
        return clone
