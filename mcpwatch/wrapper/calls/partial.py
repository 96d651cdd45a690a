"""The results mcpwatch writes itself when a tools/call cannot complete: useful, self-explaining, partial.

A host that gets one of these sees which tool, the budget and where it came from, how long it ran, and whatever
the upstream had streamed so far, instead of a dead call.
"""

from __future__ import annotations

from typing import Any

from mcpwatch.events import ProgressData
from mcpwatch.reliability.deadline import Budget
from mcpwatch.wire import PARTIAL_META, PartialResult
from mcpwatch.wrapper.calls.pending import Pending
from mcpwatch.wrapper.framing import frames

_REASONS = {
    "deadline": "did not finish within its deadline budget",
    "operator_cancel": "was cancelled by an operator",
    "shutdown": "was cancelled because mcpwatch is shutting down",
}


def reason_text(reason: str) -> str:
    """Why mcpwatch stopped waiting for a call, as the end of a sentence starting "the request"."""
    return _REASONS.get(reason, f"was abandoned by mcpwatch ({reason})")


def _seconds(value: float) -> str:
    return f"{value:.0f} s" if float(value).is_integer() else f"{value:.1f} s"


def _progress_text(last_progress: ProgressData | None) -> str:
    if not last_progress:
        return "no progress was reported"
    progress, total, message = last_progress.get("progress"), last_progress.get("total"), last_progress.get("message")
    text = f"{progress:g}" if isinstance(progress, int | float) else str(progress)
    if isinstance(total, int | float):
        text += f"/{total:g}"
    if message:
        text += f" — {message}"
    return f"last progress {text}"


def _models_text(models: dict[str, dict[str, Any]]) -> str | None:
    if not models:
        return None
    parts = []
    for model, state in models.items():
        status = state.get("status", "?")
        latency = state.get("latency_ms")
        parts.append(f"{model}: {status}" + (f" ({latency} ms)" if isinstance(latency, int | float) else ""))
    return "Per-model state when it stopped: " + "; ".join(parts) + "."


def _result(blocks: list[str], meta: PartialResult, modern: bool) -> dict[str, Any]:
    result: dict[str, Any] = {
        "content": [{"type": "text", "text": text} for text in blocks],
        "isError": True,
        "_meta": {PARTIAL_META: meta},
    }
    if modern:
        result["resultType"] = "complete"
    return result


def deadline_result(
    *,
    tool: str,
    budget: Budget | None,
    elapsed_s: float,
    reason: str,
    last_progress: ProgressData | None,
    progress_log: list[str],
    models: dict[str, dict[str, Any]],
    upstream_note: str | None = None,
    modern: bool = False,
) -> dict[str, Any]:
    headline = f"mcpwatch: the call to tool '{tool}' {reason_text(reason)}"
    if budget is not None and budget.seconds is not None:
        budget_text = f"{_seconds(budget.seconds)} ({budget.explanation})"
        headline += f" of {budget_text}" if reason == "deadline" else f" (its budget was {budget_text})"
    headline += f"; it was stopped after {elapsed_s:.1f} s"
    if upstream_note:
        headline += f" — {upstream_note}"
    else:
        headline += " and cancelled upstream (a late answer will be dropped)"
    headline += f"; {_progress_text(last_progress)}."
    blocks = [headline]
    if progress_log:
        blocks.append("Partial progress, most recent last:\n" + "\n".join(f"- {line}" for line in progress_log))
    models_text = _models_text(models)
    if models_text:
        blocks.append(models_text)
    meta: PartialResult = {
        "outcome": reason,
        "tool": tool,
        "elapsed_s": round(elapsed_s, 3),
        "budget": budget.to_dict() if budget is not None else None,
        "last_progress": last_progress,
        "progress_log": progress_log,
        "models": models,
    }
    return _result(blocks, meta, modern)


def call_error_result(
    tool: str,
    text: str,
    last_progress: ProgressData | None,
    models: dict[str, dict[str, Any]],
    modern: bool = False,
) -> dict[str, Any]:
    blocks = [f"mcpwatch: the call to tool '{tool}' could not complete: {text}; {_progress_text(last_progress)}."]
    models_text = _models_text(models)
    if models_text:
        blocks.append(models_text)
    meta: PartialResult = {
        "outcome": "error",
        "tool": tool,
        "error": text,
        "last_progress": last_progress,
        "models": models,
    }
    return _result(blocks, meta, modern)


def abandoned_reply(
    pending: Pending, reason: str, elapsed_s: float, upstream_note: str | None, modern: bool
) -> dict[str, Any]:
    """The host's answer for a call mcpwatch stopped waiting for (deadline, operator cancel, shutdown)."""
    if pending.method != "tools/call":
        return frames.error_response(pending.host_id, frames.INTERNAL_ERROR, f"the request {reason_text(reason)}")
    result = deadline_result(
        tool=pending.tool or "?",
        budget=pending.budget,
        elapsed_s=elapsed_s,
        reason=reason,
        last_progress=pending.last_progress,
        progress_log=list(pending.progress_log),
        models=pending.models,
        upstream_note=upstream_note,
        modern=modern,
    )
    return {"jsonrpc": "2.0", "id": pending.host_id, "result": result}


def failed_reply(pending: Pending, text: str, modern: bool) -> dict[str, Any]:
    """The host's answer for a call that cannot complete (the upstream is gone or stuck)."""
    if pending.method != "tools/call":
        return frames.error_response(pending.host_id, frames.INTERNAL_ERROR, text)
    result = call_error_result(pending.tool or "?", text, pending.last_progress, pending.models, modern)
    return {"jsonrpc": "2.0", "id": pending.host_id, "result": result}
