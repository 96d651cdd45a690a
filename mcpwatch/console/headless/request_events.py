"""Event handlers for requests: start, progress, the council's per-model status, end; and the what-if call list."""

from __future__ import annotations

from collections import deque

from mcpwatch.console.headless import format as fmt
from mcpwatch.console.headless.coerce import as_int, as_num, as_text, up_key
from mcpwatch.console.headless.records import CallRecord, ModelRun
from mcpwatch.console.headless.state import _OUTCOME_COUNTER, ModelCore
from mcpwatch.events import (
    Event,
    ModelStatusData,
    Outcome,
    ProgressData,
    RequestEndData,
    RequestStartData,
)
from mcpwatch.logview.whatif import CallTiming, call_timing
from mcpwatch.reliability.degraded import end_degraded


class RequestEvents(ModelCore):
    """Folds request_start, progress, model_status and request_end into per-request state."""

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
        s = self._s
        old = s.requests.get(request_id)
        if old is not None:
            # A reused host id: forget the earlier request so the two never mix.
            if old.end_mono is not None and request_id in s.finished:
                s.finished.remove(request_id)
            if old.up_id is not None and s.by_up_id.get(old.up_id) == request_id:
                del s.by_up_id[old.up_id]
        if request_id not in s.in_flight and len(s.in_flight) >= s.limits.in_flight:
            oldest = next(iter(s.in_flight))
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
            deque(maxlen=s.limits.timeline),
        )
        s.requests[request_id] = request
        s.in_flight[request_id] = None
        if up_id is not None:
            s.by_up_id[up_id] = request_id
        return request

    def _forget_in_flight(self, request_id: str) -> None:
        s = self._s
        s.in_flight.pop(request_id, None)
        request = s.requests.pop(request_id, None)
        if request is not None and request.up_id is not None:
            s.by_up_id.pop(request.up_id, None)

    def _request_start(self, event: Event, mono: float, data: RequestStartData) -> None:
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
        self._s.counters["requests"] += 1
        what = f"{method} {event.tool}" if event.tool else method
        budget_text = "no budget" if budget is None else f"budget {budget:g}s" + (f" ({source})" if source else "")
        request.note(mono, "request_start", f"started {what}, {budget_text}")

    def _progress(self, event: Event, mono: float, data: ProgressData) -> None:
        request = self._request(event)
        if request is None:
            return
        request.progress = as_num(data.get("progress"))
        request.total = as_num(data.get("total"))
        request.message = as_text(data.get("message"))
        # The stage the council put in the progress's _meta (the wrapper passes it on); a stage never goes back.
        stage = as_int(data.get("stage"))
        if stage is not None:
            request.stage = stage if request.stage is None else max(request.stage, stage)
        amount = fmt.progress(request.progress, request.total)
        request.note(mono, "progress", " ".join(p for p in (amount, request.message or "") if p) or "progress")

    def _model_status(self, event: Event, mono: float, data: ModelStatusData) -> None:
        request = self._request(event)
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
        self._s.council_request = request.request_id
        if status != "pending":
            took = "" if latency is None else f" in {latency} ms"
            request.note(mono, "model_status", f"{model}: {status}{took}")

    def _request_end(self, event: Event, mono: float, data: RequestEndData) -> None:
        s = self._s
        outcome = as_text(data.get("outcome")) or Outcome.ERROR
        degraded = end_degraded(data)  # type: ignore[arg-type]  # a RequestEndData is a Mapping
        s.counters["degraded" if degraded else _OUTCOME_COUNTER.get(outcome, "errors")] += 1
        request = self._request(event)
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
        detail = f"{outcome} after {request.duration_s:.2f}s"
        if request.partial:
            detail += " (partial result)"
        if request.error:
            detail += f": {request.error}"
        request.note(mono, "request_end", detail)
        s.in_flight.pop(request.request_id, None)
        if request.method == "tools/call":
            s.latencies.append(request.duration_s)
            s.tool_stats.record(request.tool or "?", outcome, request.duration_s)
        if len(s.finished) == s.finished.maxlen:
            evicted = s.finished[0]
            old = s.requests.get(evicted)
            if old is not None and old.end_mono is not None:
                del s.requests[evicted]
                if old.up_id is not None and s.by_up_id.get(old.up_id) == evicted:
                    del s.by_up_id[old.up_id]
        s.finished.append(request.request_id)

    def tier_estimates(self) -> dict[str, float]:
        """The council's own per-tier duration estimates, from the latest health check (a basis for advice)."""
        return dict(self._s.tier_estimates)

    def recent_calls(self, last: int = 50) -> list[CallTiming]:
        """The latest finished tools/calls (not those answered from a stored late result), for what-if figures."""
        calls: list[CallTiming] = []
        margin = as_num(self._s.deadline.get("margin_s"))  # the margin now (a change in between is rare)
        for request_id in reversed(self._s.finished):
            r = self._s.requests.get(request_id)
            if r is None or r.method != "tools/call" or r.tool is None or r.budget_source == "late_reuse":
                continue
            answers = [m for m in r.models.values() if m.stage == 1 or m.stage is None]
            latencies = tuple(m.latency_ms / 1000 for m in answers if m.status == "ok" and m.latency_ms is not None)
            calls.append(call_timing(r.request_id, r.tool, r.start_mono, r.budget_s, r.outcome, r.duration_s,
                                     r.late.duration_s if r.late else None, r.late.delay_s if r.late else None,
                                     r.tier, r.budget_source, margin, degraded=r.degraded, stage=r.stage,
                                     models_ok=sum(m.status == "ok" for m in answers) if answers else None,
                                     models_total=len(answers) or None, answer_latencies_s=latencies))  # fmt: skip
            if len(calls) >= last:
                break
        return calls[::-1]
