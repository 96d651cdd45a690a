"""Progress from the upstream, as events: the progress itself, and the council's structured `_meta` state turned
into `model_status` events (one per model whose status changed), so the console never reads the message text.

A host that sends no progress token still gets its calls' progress logged: the wrapper gives every upstream
tools/call a token of its own (`own_token`), so any server that reports progress leaves a basis for the advice's
estimates. That progress is logged only (`LoggedOnly`): never forwarded, never in the partial answer, so such a host
receives byte for byte what it did before."""

from __future__ import annotations

from typing import Any

from mcpwatch.events import Kind, ModelStatusData, ProgressData
from mcpwatch.wire import COUNCIL_META
from mcpwatch.wrapper.calls.partial import MODEL_TEXT_CHARS, MODELS_MAX, peer_text
from mcpwatch.wrapper.calls.pending import Pending
from mcpwatch.wrapper.calls.recorder import Recorder

OWN_TOKENS_KEPT = 256  # calls whose logged-only progress state is held before the finished ones are let go


def own_token(meta: dict[str, Any] | None, up_id: int) -> dict[str, Any]:
    """The `_meta` to send upstream for a tools/call whose host gave no progress token: the call's upstream id as a
    token of the wrapper's own (progress for it is logged, not forwarded)."""
    return {**(meta or {}), "progressToken": up_id}


def has_own_token(pending: Pending) -> bool:
    """Whether the wrapper gave this call a progress token of its own (its host asked for none)."""
    if pending.host_token is not None or pending.method != "tools/call":
        return False
    params = pending.message.get("params")
    meta = params.get("_meta") if isinstance(params, dict) else None
    return isinstance(meta, dict) and meta.get("progressToken") == pending.up_id


class LoggedOnly:
    """Progress of the calls with a token of the wrapper's own: logged as events, kept out of the call's partial
    answer (its models' states live here, bounded, not on the call)."""

    def __init__(self, recorder: Recorder) -> None:
        self._recorder = recorder
        self._models: dict[int, tuple[Pending, dict[str, dict[str, Any]]]] = {}

    def note(self, pending: Pending, params: dict[str, Any]) -> None:
        entry = self._models.get(pending.up_id)
        if entry is None:
            if len(self._models) >= OWN_TOKENS_KEPT:
                self._models = {k: v for k, v in self._models.items() if v[0].open}
            entry = self._models[pending.up_id] = (pending, {})
        _log(self._recorder, pending, params, entry[1])


def note_progress(recorder: Recorder, pending: Pending, params: dict[str, Any]) -> None:
    """Keep a call's latest progress (for a partial result) and log it, with the council's stage when it says."""
    progress = ProgressData(progress=params.get("progress"), total=params.get("total"), message=params.get("message"))
    pending.last_progress = progress
    if progress["message"]:
        pending.progress_log.append(peer_text(progress["message"]))  # kept cut: five huge messages are no memory
    _log(recorder, pending, params, pending.models, progress)


def _log(
    recorder: Recorder,
    pending: Pending,
    params: dict[str, Any],
    models: dict[str, dict[str, Any]],
    progress: ProgressData | None = None,
) -> None:
    if progress is None:
        progress = ProgressData(
            progress=params.get("progress"), total=params.get("total"), message=params.get("message")
        )
    meta = params.get("_meta")
    council = meta.get(COUNCIL_META) if isinstance(meta, dict) else None
    if not isinstance(council, dict):
        recorder.emit(Kind.PROGRESS, request_id=pending.request_key, tool=pending.tool, **progress)
        return
    stage = council.get("stage")
    extra = {"stage": stage} if stage is not None else {}
    recorder.emit(Kind.PROGRESS, request_id=pending.request_key, tool=pending.tool, **progress, **extra)
    if isinstance(council.get("models"), dict):
        _note_models(recorder, pending, council, models)


def _note_models(
    recorder: Recorder, pending: Pending, council: dict[str, Any], models: dict[str, dict[str, Any]]
) -> None:
    for raw_model, state in council["models"].items():
        if not isinstance(state, dict):
            continue
        model = peer_text(raw_model, MODEL_TEXT_CHARS)
        if model not in models and len(models) >= MODELS_MAX:
            continue  # a call follows MODELS_MAX models at most: a peer's thousands are no memory, no log flood
        raw_status = state.get("status")
        status_text = peer_text(raw_status, MODEL_TEXT_CHARS) if isinstance(raw_status, str) else raw_status
        previous = models.get(model)
        if previous is not None and previous.get("status") == status_text:
            continue
        models[model] = {"status": status_text, "latency_ms": state.get("latency_ms")}
        status = ModelStatusData(
            stage=council.get("stage"),
            status=status_text,
            latency_ms=state.get("latency_ms"),
            per_model_s=council.get("per_model_s"),
            tier=council.get("tier"),
        )
        recorder.emit(Kind.MODEL_STATUS, request_id=pending.request_key, tool=pending.tool, model=str(model), **status)
