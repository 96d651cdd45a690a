"""The results mcpwatch writes itself when a tools/call cannot complete: useful, self-explaining, partial.

A host that gets one of these sees which tool, the budget and where it came from, how long it ran, and whatever
the upstream had streamed so far, instead of a dead call.

Bounded, never an amplifier: each text a peer chose (a progress message, the error that ended the call, a task id)
appears once in the answer, cut to `PEER_TEXT_CHARS` characters (the cut says so); free text lives in the content,
`_meta` carries only numbers and the per-model state (at most `MODELS_MAX` models, names and states cut to
`MODEL_TEXT_CHARS`). So an answer stays within tens of kilobytes, far under the frame cap, whatever the peer sent.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from mcpwatch.events import ProgressData
from mcpwatch.reliability.deadline import Budget
from mcpwatch.wire import PARTIAL_META, PartialProgress, PartialResult
from mcpwatch.wrapper.calls.pending import Pending
from mcpwatch.wrapper.framing import frames

PEER_TEXT_CHARS = 2000  # a peer's text in an answer mcpwatch writes: cut to this many characters, saying so
NAME_CHARS = 200  # a name or an id (the tool's as the host gave it, a task's as the upstream did)
MODELS_MAX = 32  # per-model states in `_meta`; the rest counted
MODEL_TEXT_CHARS = 64  # a model's name, and its status

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


def peer_text(value: Any, limit: int = PEER_TEXT_CHARS) -> str:
    """A peer's text as an answer shows it: cut to `limit` characters, the cut stated."""
    text = value if isinstance(value, str) else frames.text_of(value, limit + 1)
    if len(text) <= limit:
        return text
    return f"{text[:limit]}… [cut to {limit:,} characters]"


def _number(value: Any) -> int | float | None:
    return value if isinstance(value, int | float) and not isinstance(value, bool) else None


def _overlaps(text: Any, other: Any) -> bool:
    """One text holds the other (a failed task's status message is also its error): shown once."""
    if not isinstance(text, str) or not isinstance(other, str) or not text or not other:
        return False
    return text in other or other in text


def _progress_text(last_progress: ProgressData | None, shown: str | None = None) -> str:
    """The last progress, its message included unless `shown` (already in the answer) holds it."""
    if not last_progress:
        return "no progress was reported"
    progress, total, message = last_progress.get("progress"), last_progress.get("total"), last_progress.get("message")
    text = f"{progress:g}" if _number(progress) is not None else peer_text(progress, NAME_CHARS)
    if _number(total) is not None:
        text += f"/{total:g}"
    if message and _overlaps(message, shown):
        text += " (its message is the error above)"
    elif message:
        text += f" — {peer_text(message)}"
    return f"last progress {text}"


def _earlier_progress(progress_log: Iterable[str], last_progress: ProgressData | None, shown: str | None) -> list[str]:
    """The progress messages before the last one (which the headline shows), each once, oldest first."""
    last = last_progress.get("message") if last_progress else None
    seen = [peer_text(text) for text in (last, shown) if text] + [text for text in (last, shown) if text]
    lines: list[str] = []
    for line in progress_log:  # as `note_progress` kept them: cut already
        if line in lines or any(_overlaps(line, text) for text in seen):
            continue
        lines.append(line)
    return [peer_text(line) for line in lines]  # a log not kept by note_progress: cut here too


def _partial_progress(last_progress: ProgressData | None) -> PartialProgress | None:
    """The last progress's numbers (its message is in the content)."""
    if not last_progress:
        return None
    return {"progress": _number(last_progress.get("progress")), "total": _number(last_progress.get("total"))}


def _bounded_models(models: dict[str, dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """The per-model state for `_meta`: at most MODELS_MAX models, each name and status cut to MODEL_TEXT_CHARS."""
    bounded: dict[str, dict[str, Any]] = {}
    for model, state in list(models.items())[:MODELS_MAX]:
        status = state.get("status")
        kept: dict[str, Any] = {"status": peer_text(status, MODEL_TEXT_CHARS) if status is not None else None}
        if _number(state.get("latency_ms")) is not None:
            kept["latency_ms"] = state["latency_ms"]
        bounded[peer_text(model, MODEL_TEXT_CHARS)] = kept
    return bounded


def _models_text(models: dict[str, dict[str, Any]]) -> str | None:
    if not models:
        return None
    more = len(models) - MODELS_MAX
    extra = f", {more} more not shown" if more > 0 else ""
    return f'Per-model state when it stopped: {len(models)} models{extra}, in _meta["{PARTIAL_META}"].models.'


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
    headline = f"mcpwatch: the call to tool '{peer_text(tool, NAME_CHARS)}' {reason_text(reason)}"
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
    earlier = _earlier_progress(progress_log, last_progress, None)
    if earlier:
        blocks.append("Earlier progress, most recent last:\n" + "\n".join(f"- {line}" for line in earlier))
    models_text = _models_text(models)
    if models_text:
        blocks.append(models_text)
    meta: PartialResult = {
        "outcome": reason,
        "tool": peer_text(tool, NAME_CHARS),
        "elapsed_s": round(elapsed_s, 3),
        "budget": budget.to_dict() if budget is not None else None,
        "last_progress": _partial_progress(last_progress),
        "progress_messages": (1 if last_progress and last_progress.get("message") else 0) + len(earlier),
        "models": _bounded_models(models),
    }
    return _result(blocks, meta, modern)


def call_error_result(
    tool: str,
    text: str,
    last_progress: ProgressData | None,
    models: dict[str, dict[str, Any]],
    modern: bool = False,
) -> dict[str, Any]:
    """`text` (mcpwatch's words, which may hold a peer's) is the content's alone, cut to PEER_TEXT_CHARS."""
    progress = _progress_text(last_progress, shown=text)
    blocks = [
        f"mcpwatch: the call to tool '{peer_text(tool, NAME_CHARS)}' could not complete: {peer_text(text)}; {progress}."
    ]
    models_text = _models_text(models)
    if models_text:
        blocks.append(models_text)
    meta: PartialResult = {
        "outcome": "error",
        "tool": peer_text(tool, NAME_CHARS),
        "last_progress": _partial_progress(last_progress),
        "models": _bounded_models(models),
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
