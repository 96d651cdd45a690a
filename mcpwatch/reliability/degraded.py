"""Degraded answers: an ok tools/call result that says itself it is not the whole answer.

A council returns `metadata.status` "partial" (models missing) or `synthesized_by` "fallback" (its own summary in
place of the chairman's) inside an ok result. Counted as plain ok, such a session looks healthy while most answers
are stand-ins, so a degraded answer is its own outcome in every count: the wrapper marks its request_end
(`degraded`, the reason) and every reader takes that mark, or, for logs written before it, reads the preview.
"""

from __future__ import annotations

import re
from typing import Any

DEGRADED = "degraded"  # the outcome name readers show for an ok request_end that is degraded
_WORDS = ("failed", "insufficient", "partial", "degraded")
_IN_TEXT = re.compile(
    r'\\?"(?:status|synthesis_type)\\?"\s*:\s*\\?"(partial|failed|insufficient|degraded)\\?"'
    r'|\\?"synthesized_by\\?"\s*:\s*\\?"(fallback)\\?"'
)


def _verdict(found: set[str]) -> str | None:
    if "fallback" in found:
        return "fallback summary"
    for word in _WORDS:
        if word in found:
            return f"{word} answer"
    return None


def degraded_note(preview: str | None) -> str | None:
    """Why an ok result is not the whole answer, when its text says so (also inside a content text)."""
    if not preview or ("status" not in preview and "synthesi" not in preview):
        return None  # the common case, without the scan: every mark names status, synthesis_type or synthesized_by
    return _verdict({m.group(1) or m.group(2) for m in _IN_TEXT.finditer(preview)})


def degraded_of_result(result: Any, preview: str | None) -> str | None:
    """The same from a whole tools/call result: its structured content (and that content's `metadata`) first, since
    a long answer can push the marks past the preview's end; else the preview's text."""
    structured = result.get("structuredContent") if isinstance(result, dict) else None
    if isinstance(structured, dict):
        found: set[str] = set()
        for block in (structured, structured.get("metadata")):
            if not isinstance(block, dict):
                continue
            for key in ("status", "synthesis_type"):
                if block.get(key) in _WORDS:
                    found.add(block[key])
            if block.get("synthesized_by") == "fallback":
                found.add("fallback")
        if found:
            return _verdict(found)
    return degraded_note(preview)


def end_outcome(data: dict[str, Any]) -> str:
    """A request_end's outcome as readers count it: "degraded" for an ok answer that is degraded."""
    outcome = str(data.get("outcome") or "?")
    if outcome == "ok" and end_degraded(data):
        return DEGRADED
    return outcome


def end_degraded(data: dict[str, Any]) -> str | None:
    """Why an ok request_end is degraded (its `degraded` mark, else its preview), or None."""
    if data.get("outcome") != "ok":
        return None
    mark = data.get("degraded")
    if isinstance(mark, str) and mark:
        return mark
    preview = data.get("result_preview")
    return degraded_note(preview) if isinstance(preview, str) else None
