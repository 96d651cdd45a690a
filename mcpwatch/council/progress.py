"""Progress notifications: the seed's text for people, structured state for the console.

Every notification carries a message such as `✓ Claude (1/4) | waiting: GPT-4o mini, Gemini, Llama` and, in
`params._meta["dev.mcpwatch/council"]`, the stage, tier, budgets and each model's status and latency, so a
console never has to scrape the text. Progress counts steps (one per answer, one per review, one for the
synthesis: 2n+1 in all) and always increases, as the protocol requires. Sending is advisory: a failure to
send is logged and the council carries on.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

import anyio

from mcpwatch.wire import COUNCIL_META

if TYPE_CHECKING:
    from mcpwatch.council.calls import CallOutcome
    from mcpwatch.council.run import CouncilRun

log = logging.getLogger(__name__)

SEND_LIMIT_S = 5.0  # a notification the client does not take in this long is dropped (progress is advisory)
SendFn = Callable[[float, float, str, dict[str, Any]], Awaitable[None]]  # progress, total, message, meta


def _names(names: list[str]) -> str:
    return ", ".join(names)


class ProgressReporter:
    def __init__(self, run: CouncilRun, send: SendFn | None) -> None:
        self.run = run
        self.send = send
        n = len(run.plan.queried)
        self.total = float(2 * n + 1)
        self._steps = 0
        self._minor = 0
        self._last = -1.0
        # whose line has been sent, per stage: answers that arrive together each get their own line, counted in
        # the order they are reported, so no two lines say the same (k/N) and none is skipped
        self._reported: dict[int, list[str]] = {1: [], 2: []}
        self.sent: list[tuple[float, str, dict[str, Any]]] = []  # what was reported (for logs and tests)

    # --- the structured state -------------------------------------------------------------------------

    def meta(self) -> dict[str, Any]:
        run = self.run
        plan = run.plan
        state: dict[str, Any] = {
            "stage": run.stage,
            "tier": plan.tier,
            "per_model_s": round(plan.budget.per_model_s, 6),
            "total_s": round(plan.budget.total_s, 6),
            "window_s": round(plan.window.length_s, 6),  # the tier's total, or less when the caller set a deadline
            "elapsed_ms": round((anyio.current_time() - plan.window.start) * 1000),
            "queued_ms": run.queued_ms,  # waiting for a reasoning slot: before the window, charged to no model
            "models": {
                spec.id: {"status": o.status, "latency_ms": o.latency_ms, "name": spec.name}
                for spec in plan.queried
                for o in (run.answers[spec.id],)
            },
        }
        if run.reviews:
            state["reviews"] = {m: {"status": o.status, "latency_ms": o.latency_ms} for m, o in run.reviews.items()}
        if run.chairman_call is not None:
            state["chairman"] = {
                "model": plan.chairman.id,
                "status": run.chairman_call.status,
                "latency_ms": run.chairman_call.latency_ms,
            }
        return state

    # --- sending --------------------------------------------------------------------------------------

    def _advance_to(self, steps: int) -> None:
        if steps > self._steps:
            self._steps = steps
            self._minor = 0

    async def emit(self, message: str, *, limit_s: float = SEND_LIMIT_S) -> None:
        self._minor += 1
        progress = self._steps + min(self._minor, 999) / 1000 if self._minor > 1 else float(self._steps)
        if progress <= self._last:
            progress = self._last + 0.0001
        self._last = progress
        meta = self.meta()
        self.sent.append((progress, message, meta))
        log.debug("progress %.3f/%g %s", progress, self.total, message)
        if self.send is None:
            return
        try:
            with anyio.move_on_after(limit_s) as scope:
                await self.send(progress, self.total, message, {COUNCIL_META: meta})
            if scope.cancelled_caught:
                log.info("progress notification dropped: not taken within %.3gs", limit_s)
        except anyio.get_cancelled_exc_class():
            raise
        except Exception as exc:  # advisory: the client may be gone or not support progress
            log.info("progress notification not sent: %s", exc)

    # --- events ---------------------------------------------------------------------------------------

    def _waiting(self, stage: int) -> list[str]:
        """Who this stage still waits for; stage 3 is the chairman alone (a retry there names no one else)."""
        plan, told = self.run.plan, self._reported.get(stage)
        if told is None:
            return []
        if stage == 1:
            return [s.name for s in plan.queried if s.id not in told]
        return [s.name for s in plan.queried if s.id in self.run.reviews and s.id not in told]

    def _settle(self, stage: int, model_id: str) -> int:
        """Count a model's line for this stage once; returns how many lines this stage has now reported."""
        told = self._reported[stage]
        if model_id not in told:
            told.append(model_id)
        return len(told)

    def _with_waiting(self, text: str, stage: int) -> str:
        waiting = self._waiting(stage)
        return f"{text} | waiting: {_names(waiting)}" if waiting else text

    async def queued(self, in_use: int, limit: int) -> None:
        await self.emit(f"Queued: waiting for a reasoning slot ({in_use} of {limit} in use)")

    async def stage1_started(self) -> None:
        n = len(self.run.plan.queried)
        await self.emit(self._with_waiting(f"Stage 1: asking {n} model{'s' if n != 1 else ''}", 1))

    async def answer_settled(self, name: str, outcome: CallOutcome) -> None:
        n = len(self.run.plan.queried)
        settled = self._settle(1, outcome.model)
        self._advance_to(settled)
        mark = f"✓ {name}" if outcome.status == "ok" else f"✗ {name} {outcome.status}"
        await self.emit(self._with_waiting(f"{mark} ({settled}/{n})", 1))

    async def retrying(self, stage: int, name: str, attempt: int, wait_s: float, why: str) -> None:
        await self.emit(self._with_waiting(f"↻ {name} {why}; attempt {attempt} in {wait_s:.2g}s", stage))

    async def stage1_closed(self, note: str) -> None:
        self._advance_to(len(self.run.plan.queried))
        await self.emit(f"Stage 1 closed: {note}")

    async def stage2_started(self, names: list[str]) -> None:
        self._advance_to(len(self.run.plan.queried))
        await self.emit(f"Stage 2: peer review by {len(names)} models | waiting: {_names(names)}")

    async def review_settled(self, name: str, outcome: CallOutcome) -> None:
        n = len(self.run.plan.queried)
        total = len(self.run.reviews)
        settled = self._settle(2, outcome.model)
        self._advance_to(n + settled)
        mark = f"✓ {name} ranked" if outcome.status == "ok" else f"✗ {name} {outcome.status}"
        await self.emit(self._with_waiting(f"Stage 2: {mark} ({settled}/{total})", 2))

    async def stage2_closed(self, note: str) -> None:
        self._advance_to(2 * len(self.run.plan.queried))
        await self.emit(f"Stage 2 {note}")

    async def stage3_started(self, name: str, source: str) -> None:
        self._advance_to(2 * len(self.run.plan.queried))
        await self.emit(f"Stage 3: chairman {name} synthesizing from {source}")

    async def finished(self, note: str, *, limit_s: float = SEND_LIMIT_S) -> None:
        self._advance_to(int(self.total))
        await self.emit(note, limit_s=limit_s)
