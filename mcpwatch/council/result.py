"""The structured result (the seed's schema) and the one-line warning people read.

Status: `complete` when every intended model answered, review finished and the chairman synthesized;
`failed` when nobody answered (the tool result is then an error, with diagnostics per model); else `partial`.
Synthesis type: `full` (answers + review + chairman), `stage1_only` (chairman without review), `partial`
(fewer answers than intended, or the council's own summary), `insufficient` (nothing to synthesize).
"""

from __future__ import annotations

from typing import Any

import anyio

from mcpwatch.council.run import CouncilRun

QUEUED_SAID_MS = 1  # a wait for a reasoning slot is named in a failure (it shortened the window)


def join_names(names: list[str]) -> str:
    """ "A", "A and B", "A, B and C"."""
    if len(names) <= 1:
        return "".join(names)
    return ", ".join(names[:-1]) + " and " + names[-1]


def missing_warning(completed: int, intended: int, missing: list[str]) -> str:
    """The seed's text: 'This answer is based on 2 of 4 intended models; Claude and Llama did not respond.'"""
    return f"This answer is based on {completed} of {intended} intended models; {join_names(missing)} did not respond."


def _stage1_state(run: CouncilRun) -> str:
    ok = len(run.ok_models())
    if ok == 0:
        return "failed"
    return "complete" if ok >= run.plan.intended else "partial"


def build_result(run: CouncilRun, *, include_details: bool = False) -> tuple[dict[str, Any], bool]:
    """(result, is_error)."""
    plan = run.plan
    ok = run.ok_models()
    completed = len(ok)
    intended = plan.intended
    missing = [s.name for s in plan.queried if run.answers[s.id].status != "ok" and s.id not in run.raced_out]
    warnings: list[str] = []

    if completed == 0:
        synthesis_type, status = "insufficient", "failed"
        warnings.append(f"None of the {intended} intended models responded.")
    else:
        if completed < intended:
            synthesis_type = "partial"
            warnings.append(missing_warning(completed, intended, missing))
        elif run.synthesized_by != "chairman":
            synthesis_type = "partial"
        elif run.review_state in ("complete", "partial") or completed < 2:
            synthesis_type = "full"
        else:
            synthesis_type = "stage1_only"
        review_expected = completed >= 2
        review_missing = run.review_state in ("timeout", "failed", "skipped") and review_expected
        if review_missing and run.synthesized_by == "chairman":
            warnings.append(f"No peer review ({run.review_note}); the chairman worked from the answers only.")
        elif run.review_state == "partial":
            warnings.append(f"Peer review was incomplete: {run.review_note}.")
        if run.synthesized_by == "fallback":
            warnings.append(f"No chairman synthesis ({run.synthesis_note}); this is the council's own summary.")
        status = "complete" if synthesis_type == "full" and not warnings else "partial"
    if run.auth_failure:
        warnings.append(f"The council stopped early: {run.auth_failure}.")
    cut = status != "complete" and plan.window.source == "caller"
    if cut:
        warnings.append(f"Finished early to meet the caller's deadline ({plan.caller_deadline_ms} ms).")

    elapsed_ms = round((anyio.current_time() - plan.window.start) * 1000)
    metadata: dict[str, Any] = {
        "status": status,
        "completed_models": completed,
        "requested_models": intended,
        "queried_models": len(plan.queried),
        "synthesis_type": synthesis_type,
        "warning": " ".join(warnings) if warnings else None,
        "tier": plan.tier,
        "confidence": plan.confidence,
        "tier_note": plan.note,
        "chairman": plan.chairman.id,
        "synthesized_by": run.synthesized_by,
        "racing": {"enabled": plan.race, "target": intended, "raced_out": list(run.raced_out)},
        "stages": {
            "answers": _stage1_state(run),
            "review": run.review_state if run.review_state != "pending" else "skipped",
            "synthesis": "chairman" if run.synthesized_by == "chairman" else (run.synthesized_by or "none"),
        },
        "budget": {
            "total_s": round(plan.budget.total_s, 6),
            "per_model_s": round(plan.budget.per_model_s, 6),
            "window_s": round(plan.window.length_s, 6),
            "source": plan.window.source,
            "caller_deadline_ms": plan.caller_deadline_ms,
        },
        "elapsed_ms": elapsed_ms,
        "queued_ms": run.queued_ms,
    }
    result: dict[str, Any] = {
        "synthesis": run.synthesis,
        "model_responses": {s.id: run.answers[s.id].public() for s in plan.queried},
        "ranking": [
            {
                "model": run.labels[e.label],
                "name": run.spec(run.labels[e.label]).name,
                "points": e.points,
                "average_position": e.average_position,
            }
            for e in run.aggregate
        ],
        "metadata": metadata,
    }
    if completed == 0:
        diagnostics = "; ".join(
            f"{s.name}: {run.answers[s.id].status}"
            + (f" ({run.answers[s.id].error})" if run.answers[s.id].error else "")
            for s in plan.queried
        )
        waited = (
            f", after waiting {run.queued_ms / 1000:.3g}s for a reasoning slot"
            if run.queued_ms >= QUEUED_SAID_MS
            else ""
        )  # the wait shortened the window: a failure must say so, or it reads as the models' fault
        result["error"] = (
            f"No council member answered (tier {plan.tier}, {plan.window.length_s:.3g}s{waited}): {diagnostics}"
        )
    if include_details:
        result["details"] = {
            "labels": dict(run.labels),
            "reviews": {m: o.public() for m, o in run.reviews.items()},
            "aggregate_ranking": [
                {
                    "label": e.label,
                    "model": run.labels[e.label],
                    "points": e.points,
                    "average_position": e.average_position,
                    "votes": e.votes,
                }
                for e in run.aggregate
            ],
            "chairman": run.chairman_call.public() if run.chairman_call else None,
        }
    return result, status == "failed"
