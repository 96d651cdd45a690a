"""The model's calls part: every request, in flight and the finished ones kept — start, progress, the council's
per-model status, end — with the latencies and per-tool figures they make, and the what-if call list. It owns
that state; the counts go to the `Tally`. Other parts reach a call through `of`, `get` and `by_upstream`.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Mapping
from typing import Any

from mcpwatch.console.headless import format as fmt
from mcpwatch.console.headless.coerce import as_int, as_num, as_text, up_key
from mcpwatch.console.headless.records import CallRecord, ModelRun, TombstoneRecord
from mcpwatch.console.headless.tally import Tally
from mcpwatch.console.headless.tool_stats import ToolStats
from mcpwatch.console.headless.views import Limits
from mcpwatch.events import (
    Event,
    ModelStatusData,
    Outcome,
    ProgressData,
    RequestEndData,
    RequestStartData,
)
from mcpwatch.logview.timing import CallTiming
from mcpwatch.logview.whatif import call_timing
from mcpwatch.reliability.degraded import end_degraded

# Which counter a request_end bumps; every other outcome (tool_error, error, upstream_lost, unknown) is an error.
OUTCOME_COUNTER: dict[str, str] = {Outcome.OK: "ok", Outcome.DEADLINE: "timeouts", Outcome.CANCELLED: "cancelled"}


class CallsPart:
    """Folds request_start, progress, model_status and request_end into per-request records."""

    def __init__(self, limits: Limits, tally: Tally) -> None:
        self.limits = limits
        self.tally = tally
        self.requests: dict[str, CallRecord] = {}  # in flight and retained finished
        self.in_flight: dict[str, None] = {}  # insertion-ordered set
        self.finished: deque[str] = deque(maxlen=limits.requests)
        self.by_up_id: dict[str, str] = {}  # upstream id -> host request id (retained requests)
        self.latencies: deque[float] = deque(maxlen=limits.latencies)
        self.tool_stats = ToolStats()
        self.council_request: str | None = None  # the latest request that reported per-model status

    def copy(self, tally: Tally, tombstones: Mapping[int, TombstoneRecord]) -> CallsPart:
        """A copy counting into `tally`; a request's tombstone becomes its copy in `tombstones` (id of the
        original → its copy), so the tombstones part and the request still share one record."""
        clone = CallsPart(self.limits, tally)
        clone.requests = {k: r.copy(tombstones) for k, r in self.requests.items()}
        clone.in_flight = dict(self.in_flight)
        clone.finished = deque(self.finished, maxlen=self.finished.maxlen)
        clone.by_up_id = dict(self.by_up_id)
        clone.latencies = deque(self.latencies, maxlen=self.latencies.maxlen)
        clone.tool_stats = self.tool_stats.copy()
        clone.council_request = self.council_request
        return clone

    def of(self, event: Event) -> CallRecord | None:
        """The request an event is about, if the model still has it."""
        if event.request_id is None:
            return None
        return self.requests.get(str(event.request_id))

    def get(self, request_id: str | None) -> CallRecord | None:
        return None if request_id is None else self.requests.get(request_id)

    def by_upstream(self, up_id: str) -> str | None:
        """The host request id of an upstream id (see `coerce.up_key`)."""
        return self.by_up_id.get(up_id)

    def link_upstream(self, up_id: str, request_id: str) -> None:
        self.by_up_id[up_id] = request_id

    def _new_request(
        self,
        request_id: str,
        method: str,
        tool: str | None,
        up_id: str | None,
        start: float,
        budget: float | None,
        budget_source: str | None,
        arguments: str | None,
    ) -> CallRecord:
        old = self.requests.get(request_id)
        if old is not None:
            # A reused host id: forget the earlier request so the two never mix.
            if old.end_mono is not None and request_id in self.finished:
                self.finished.remove(request_id)
            if old.up_id is not None and self.by_up_id.get(old.up_id) == request_id:
                del self.by_up_id[old.up_id]
        if request_id not in self.in_flight and len(self.in_flight) >= self.limits.in_flight:
            oldest = next(iter(self.in_flight))
            self._forget_in_flight(oldest)
        request = CallRecord(
            request_id,
            method,
            tool,
            up_id,
            start,
            budget,
            budget_source,
            arguments,
            deque(maxlen=self.limits.timeline),
        )
        self.requests[request_id] = request
        self.in_flight[request_id] = None
        if up_id is not None:
            self.by_up_id[up_id] = request_id
        return request

    def _forget_in_flight(self, request_id: str) -> None:
        self.in_flight.pop(request_id, None)
        request = self.requests.pop(request_id, None)
        if request is not None and request.up_id is not None:
            self.by_up_id.pop(request.up_id, None)

    def request_start(self, event: Event, mono: float, data: RequestStartData) -> None:
        if event.request_id is None:
            raise ValueError("request_start without a request id")
        request_id = str(event.request_id)
        method = as_text(data.get("method")) or "tools/call"
        budget = as_num(data.get("budget_s"))
        source = as_text(data.get("budget_source"))
        request = self._new_request(
            request_id,
            method,
            as_text(event.tool),
            up_key(data),
            mono,
            budget,
            source,
            as_text(data.get("arguments")),
        )
        self.tally.add("requests")
        what = f"{method} {event.tool}" if event.tool else method
        budget_text = "no budget" if budget is None else f"budget {budget:g}s" + (f" ({source})" if source else "")
        request.note(mono, "request_start", f"started {what}, {budget_text}")

    def progress(self, event: Event, mono: float, data: ProgressData) -> None:
        request = self.of(event)
        if request is None:
            return
        request.progress = as_num(data.get("progress"))
        request.total = as_num(data.get("total"))
        request.message = as_text(data.get("message"))
        done, total = request.progress, request.total
        if request.end_mono is None and done is not None and total is not None and 0 < done < total:
            request.share = (done / total, mono - request.start_mono)  # as `whatif` notes it
        # The stage the council put in the progress's _meta (the wrapper passes it on); a stage never goes back.
        stage = as_int(data.get("stage"))
        if stage is not None:
            request.stage = stage if request.stage is None else max(request.stage, stage)
        amount = fmt.progress(request.progress, request.total)
        request.note(mono, "progress", " ".join(p for p in (amount, request.message or "") if p) or "progress")

    def model_status(self, event: Event, mono: float, data: ModelStatusData) -> None:
        request = self.of(event)
        if request is None or not event.model:
            return
        model = str(event.model)
        status = as_text(data.get("status")) or "pending"
        stage = as_int(data.get("stage"))
        latency = as_int(data.get("latency_ms"))
        per_model = as_num(data.get("per_model_s"))
        run = request.models.get(model)
        if run is None or (status == "pending" and run.status != "pending"):
            run = ModelRun(model, status, stage, latency, per_model, mono, mono)
            request.models[model] = run
        else:
            run.status, run.updated_mono = status, mono
            run.stage = stage if stage is not None else run.stage
            run.latency_ms = latency if latency is not None else run.latency_ms
            run.per_model_s = per_model if per_model is not None else run.per_model_s
        if per_model is not None:
            request.per_model_s = per_model
        if stage is not None:  # stages only move on: a late model_status of stage 1 does not take it back
            request.stage = stage if request.stage is None else max(request.stage, stage)
        tier = as_text(data.get("tier"))
        if tier:
            request.tier = tier
        self.council_request = request.request_id
        if status != "pending":
            took = "" if latency is None else f" in {latency} ms"
            request.note(mono, "model_status", f"{model}: {status}{took}")

    def request_end(self, event: Event, mono: float, data: RequestEndData) -> None:
        outcome = as_text(data.get("outcome")) or Outcome.ERROR
        degraded = end_degraded(data)  # type: ignore[arg-type]  # a RequestEndData is a Mapping
        self.tally.add("degraded" if degraded else OUTCOME_COUNTER.get(outcome, "errors"))
        request = self.of(event)
        if request is None or request.end_mono is not None:
            return
        duration = as_num(data.get("duration_s"))
        request.end_mono = mono
        request.outcome = outcome
        request.duration_s = duration if duration is not None else max(0.0, mono - request.start_mono)
        request.error = as_text(data.get("error"))
        request.result_preview = as_text(data.get("result_preview"))
        request.partial = bool(data.get("partial"))
        request.degraded = degraded
        if request.task is not None:  # a task's end says its terminal status and the polls counted to it
            request.task.status = as_text(data.get("task_status")) or request.task.status
            polls = as_num(data.get("polls"))
            if polls is not None:
                request.task.polls = max(request.task.polls, int(polls))
        detail = f"{outcome} after {request.duration_s:.2f}s"
        if request.partial:
            detail += " (partial result)"
        if request.error:
            detail += f": {request.error}"
        request.note(mono, "request_end", detail)
        self.in_flight.pop(request.request_id, None)
        if request.method == "tools/call":
            self.latencies.append(request.duration_s)
            self.tool_stats.record(request.tool or "?", outcome, request.duration_s)
        if len(self.finished) == self.finished.maxlen:
            evicted = self.finished[0]
            old = self.requests.get(evicted)
            if old is not None and old.end_mono is not None:
                del self.requests[evicted]
                if old.up_id is not None and self.by_up_id.get(old.up_id) == evicted:
                    del self.by_up_id[old.up_id]
        self.finished.append(request.request_id)

    def recent_calls(self, margin: float | None, last: int = 50) -> list[CallTiming]:
        """The latest finished tools/calls (not those answered from a stored late result), for what-if figures."""
        calls: list[CallTiming] = []
        for request_id in reversed(self.finished):
            r = self.requests.get(request_id)
            if r is None or r.method != "tools/call" or r.tool is None or r.budget_source == "late_reuse":
                continue
            answers = [m for m in r.models.values() if m.stage == 1 or m.stage is None]
            latencies = tuple(m.latency_ms / 1000 for m in answers if m.status == "ok" and m.latency_ms is not None)
            calls.append(call_timing(r.request_id, r.tool, r.start_mono, r.budget_s, r.outcome, r.duration_s,
                                     r.late.duration_s if r.late else None, r.late.delay_s if r.late else None,
                                     r.tier, r.budget_source, margin, degraded=r.degraded, stage=r.stage,
                                     models_ok=sum(m.status == "ok" for m in answers) if answers else None,
                                     models_total=len(answers) or None, answer_latencies_s=latencies,
                                     progress_share=r.share[0] if r.share else None,
                                     progress_at_s=r.share[1] if r.share else None,
                                     per_model_s=r.per_model_s))  # fmt: skip
            if len(calls) >= last:
                break
        return calls[::-1]

    def seed(self, items: Any, now_mono: float) -> None:
        """The calls a `status()` says are running (attaching mid-session), unless the events already have them."""
        for item in items or ():
            if not isinstance(item, Mapping) or as_text(item.get("request_id")) is None:
                continue
            request_id = str(item["request_id"])
            if request_id in self.in_flight:
                continue
            elapsed = as_num(item.get("elapsed_s")) or 0.0
            request = self._new_request(
                request_id,
                as_text(item.get("method")) or "tools/call",
                as_text(item.get("tool")),
                None,
                now_mono - elapsed,
                as_num(item.get("budget_s")),
                None,
                None,
            )
            request.progress = as_num(item.get("progress"))
            request.total = as_num(item.get("total"))
            request.message = as_text(item.get("message"))
            request.note(now_mono, "seed", f"already running for {elapsed:.1f}s when the console attached")
