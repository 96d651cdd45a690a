"""Progress from the upstream, as events: the progress itself, and the council's structured `_meta` state turned
into `model_status` events (one per model whose status changed), so the console never reads the message text."""

from __future__ import annotations

from typing import Any

from mcpwatch.events import Kind, ModelStatusData, ProgressData
from mcpwatch.wire import COUNCIL_META
from mcpwatch.wrapper.calls.partial import MODEL_TEXT_CHARS, MODELS_MAX, peer_text
from mcpwatch.wrapper.calls.pending import Pending
from mcpwatch.wrapper.calls.recorder import Recorder


def note_progress(recorder: Recorder, pending: Pending, params: dict[str, Any]) -> None:
    """Keep a call's latest progress (for a partial result) and log it, with the council's stage when it says."""
    progress = ProgressData(progress=params.get("progress"), total=params.get("total"), message=params.get("message"))
    pending.last_progress = progress
    if progress["message"]:
        pending.progress_log.append(peer_text(progress["message"]))  # kept cut: five huge messages are no memory
    meta = params.get("_meta")
    council = meta.get(COUNCIL_META) if isinstance(meta, dict) else None
    if not isinstance(council, dict):
        recorder.emit(Kind.PROGRESS, request_id=pending.request_key, tool=pending.tool, **progress)
        return
    stage = council.get("stage")
    extra = {"stage": stage} if stage is not None else {}
    recorder.emit(Kind.PROGRESS, request_id=pending.request_key, tool=pending.tool, **progress, **extra)
    if isinstance(council.get("models"), dict):
        _note_models(recorder, pending, council)


def _note_models(recorder: Recorder, pending: Pending, council: dict[str, Any]) -> None:
    for raw_model, state in council["models"].items():
        if not isinstance(state, dict):
            continue
        model = peer_text(raw_model, MODEL_TEXT_CHARS)
        if model not in pending.models and len(pending.models) >= MODELS_MAX:
            continue  # a call follows MODELS_MAX models at most: a peer's thousands are no memory, no log flood
        raw_status = state.get("status")
        status_text = peer_text(raw_status, MODEL_TEXT_CHARS) if isinstance(raw_status, str) else raw_status
        previous = pending.models.get(model)
        if previous is not None and previous.get("status") == status_text:
            continue
        pending.models[model] = {"status": status_text, "latency_ms": state.get("latency_ms")}
        status = ModelStatusData(
            stage=council.get("stage"),
            status=status_text,
            latency_ms=state.get("latency_ms"),
            per_model_s=council.get("per_model_s"),
            tier=council.get("tier"),
        )
        recorder.emit(Kind.MODEL_STATUS, request_id=pending.request_key, tool=pending.tool, model=str(model), **status)
