"""The council's three stages under one time window, with partial results that survive cancellation.

Stage 1 asks every selected model at once; stage 2 has each model that answered rank the anonymised answers
(aggregated by Borda count); stage 3 has the chairman write the synthesis. All results land in one shared
`CouncilRun` as they arrive (the seed's shared-results pattern), so when the window closes, whatever finished
is still there to build a partial answer from. Fallbacks, as the seed lists them: no peer review in time →
the chairman works from the stage 1 answers; some models missing → synthesize from those that answered; the
chairman missing → the council's own summary; nobody answered → a tool error with per-model diagnostics.
"""

from __future__ import annotations

import hashlib
import logging
import random

import anyio

from mcpwatch.council import budget, prompts
from mcpwatch.council.backends.base import Backend
from mcpwatch.council.calls import AuthGate, CallOutcome, RetryHook, RetryPolicy, call_model, format_seconds
from mcpwatch.council.catalog import ModelSpec
from mcpwatch.council.progress import ProgressReporter
from mcpwatch.council.ranking import borda
from mcpwatch.council.run import CouncilRun

log = logging.getLogger(__name__)


class Pipeline:
    def __init__(self, backend: Backend, policy: RetryPolicy, reporter: ProgressReporter, run: CouncilRun) -> None:
        self.backend = backend
        self.policy = policy
        self.reporter = reporter
        self.run = run
        self.gate = AuthGate()

    def _retry_hook(self, stage: int) -> RetryHook:
        async def hook(model: str, attempt: int, wait_s: float, why: str) -> None:
            await self.reporter.retrying(stage, self.run.spec(model).name, attempt, wait_s, why)

        return hook

    async def execute(self) -> CouncilRun:
        """Run the stages inside the window; on its end keep what finished (cancellation-safe)."""
        run = self.run
        window = run.plan.window
        safety_net = window.end + budget.guard_grace_s(window)
        with anyio.move_on_after(max(0.0, safety_net - anyio.current_time())) as guard:
            await self.stage1()
            if not self.gate.is_tripped:
                await self.stage2()
            await self.stage3()
        if guard.cancelled_caught:
            run.window_closed = True
            self._close_pending("cut off: the run's time window closed")
        if not run.synthesis and run.ok_models():
            self._fallback("the time window closed before the chairman answered")
        if guard.cancelled_caught:
            answered = len(run.ok_models())
            await self.reporter.finished(
                f"Time is up: {answered} of {run.plan.intended} answered; returning what we have",
                limit_s=budget.guard_grace_s(window),
            )
        return run

    def _close_pending(self, note: str) -> None:
        """Mark every call still running as timed out: the window closed around it."""
        now_ms = round((anyio.current_time() - self.run.plan.window.start) * 1000)
        calls = [*self.run.answers.values(), *self.run.reviews.values()]
        if self.run.chairman_call is not None:
            calls.append(self.run.chairman_call)
        for outcome in calls:
            if not outcome.done:
                outcome.status, outcome.error, outcome.error_type = "timeout", note, "timeout"
                outcome.latency_ms = now_ms
        if self.run.review_state == "pending" and self.run.reviews:
            self.run.review_state = "timeout"

    # --- stage 1 --------------------------------------------------------------------------------------

    async def stage1(self) -> None:
        run, plan = self.run, self.run.plan
        run.stage = 1
        end = budget.stage1_end(plan.window, plan.budget.per_model_s)
        last_chance = budget.stage1_last_chance(plan.window, plan.budget.per_model_s)
        await self.reporter.stage1_started()
        messages = prompts.answer_messages(plan.query)
        hook = self._retry_hook(1)
        closed_note: str | None = None
        cut_off = False  # stage 1 closed at `end` with calls still running
        waiting_for_first = False  # past `end` with no answer: the first one to arrive closes stage 1

        # Closing stage 1 cancels the calls still running and the closing watch, never the task group: a model
        # whose answer arrived in the same instant still has its own progress line sent.
        calls = {spec.id: anyio.CancelScope() for spec in plan.queried}
        watch = anyio.CancelScope()

        def close() -> None:
            watch.cancel()
            for scope in calls.values():
                scope.cancel()

        async with anyio.create_task_group() as tg:

            async def ask(spec: ModelSpec) -> None:
                nonlocal closed_note
                outcome = run.answers[spec.id]
                with calls[spec.id]:
                    await call_model(
                        self.backend,
                        outcome,
                        messages=messages,
                        purpose="answer",
                        query=plan.query,
                        window_end=last_chance,
                        policy=self.policy,
                        gate=self.gate,
                        on_retry=hook,
                        window_s=last_chance - plan.window.start,
                    )
                if not outcome.done:
                    return  # cut off while running: settled below, once the stage has closed
                running = any(not run.answers[s.id].done for s in plan.queried)
                if self.gate.is_tripped and closed_note is None:
                    closed_note = f"stopping early: {self.gate.reason}"
                    close()
                elif plan.race and len(run.ok_models()) >= plan.intended and closed_note is None:
                    if running:
                        closed_note = f"racing: {plan.intended} answers arrived first"
                    close()
                elif waiting_for_first and outcome.status == "ok" and closed_note is None:
                    if running:
                        closed_note = f"{spec.name} answered after the others' time was up; going on with it"
                    close()
                elif not running:
                    watch.cancel()  # the closing watch below has nothing left to do
                await self.reporter.answer_settled(spec.name, outcome)

            async def close_at_end() -> None:
                nonlocal cut_off, waiting_for_first
                with watch:
                    await anyio.sleep_until(end)
                    if run.ok_models() or last_chance <= end:
                        cut_off = True
                        close()
                    else:
                        waiting_for_first = True
                        await self.reporter.stage1_closed(
                            f"no answer yet; waiting up to {last_chance - end:.3g}s more for the first one"
                        )

            for spec in plan.queried:
                tg.start_soon(ask, spec)
            tg.start_soon(close_at_end)

        now_ms = round((anyio.current_time() - plan.window.start) * 1000)
        for spec in plan.queried:
            outcome = run.answers[spec.id]
            if outcome.done:
                continue
            outcome.latency_ms = now_ms
            if self.gate.is_tripped:
                outcome.status, outcome.error_type = "auth_error", "auth"
                outcome.error = f"not completed: {self.gate.reason}; the council stopped early"
            elif cut_off or waiting_for_first:  # its time was up at `end`; a later first answer closed stage 1
                outcome.status, outcome.error_type = "timeout", "timeout"
                outcome.error = f"timeout after {format_seconds(end - plan.window.start)}"
                await self.reporter.answer_settled(spec.name, outcome)
            else:
                outcome.status, outcome.error_type = "timeout", "timeout"
                outcome.error = f"not awaited: {plan.intended} faster answers won the race"
                outcome.extra["raced_out"] = True
                run.raced_out.append(spec.id)
        run.auth_failure = self.gate.reason
        if closed_note:
            await self.reporter.stage1_closed(closed_note)

    # --- stage 2 --------------------------------------------------------------------------------------

    def _assign_labels(self, models: list[ModelSpec]) -> dict[str, str]:
        """Anonymise: a seeded shuffle, so labels reveal neither the author nor the order of arrival."""
        material = f"{self.run.plan.seed}|labels|{self.run.plan.query}"
        rng = random.Random(int.from_bytes(hashlib.sha256(material.encode()).digest()[:8], "big"))
        shuffled = list(models)
        rng.shuffle(shuffled)
        return {prompts.label_for(i): spec.id for i, spec in enumerate(shuffled)}

    async def stage2(self) -> None:
        run, plan = self.run, self.run.plan
        ok = run.ok_models()
        if len(ok) < 2:
            run.review_state = "skipped"
            run.review_note = "peer review needs at least two answers"
            await self.reporter.stage2_closed(f"skipped ({run.review_note})")
            return
        now = anyio.current_time()
        end = budget.stage2_end(plan.window, now, plan.budget.per_model_s)
        if end - now <= 0:
            run.review_state = "skipped"
            run.review_note = "no time left for peer review"
            await self.reporter.stage2_closed(f"skipped ({run.review_note})")
            return
        run.stage = 2
        run.labels = self._assign_labels(ok)
        labelled = [(label, run.answers[model].text or "") for label, model in run.labels.items()]
        messages = prompts.review_messages(plan.query, labelled)
        for spec in ok:
            run.reviews[spec.id] = CallOutcome(model=spec.id)
        await self.reporter.stage2_started([s.name for s in ok])
        hook = self._retry_hook(2)

        async with anyio.create_task_group() as tg:

            async def review(spec: ModelSpec) -> None:
                outcome = run.reviews[spec.id]
                await call_model(
                    self.backend,
                    outcome,
                    messages=messages,
                    purpose="review",
                    query=plan.query,
                    window_end=end,
                    policy=self.policy,
                    gate=self.gate,
                    on_retry=hook,
                    window_s=end - now,
                )
                if outcome.status == "ok":
                    ranking = prompts.parse_ranking(outcome.text or "", list(run.labels))
                    if ranking:
                        run.rankings[spec.id] = ranking
                        outcome.extra["ranking"] = ranking
                    else:
                        outcome.status, outcome.error_type = "error", "bad_response"
                        outcome.error = "the review contained no ranking"
                await self.reporter.review_settled(spec.name, outcome)
                if self.gate.is_tripped:
                    tg.cancel_scope.cancel()

            for spec in ok:
                tg.start_soon(review, spec)

        if self.gate.is_tripped:
            run.auth_failure = self.gate.reason
            for outcome in run.reviews.values():
                if not outcome.done:
                    outcome.status, outcome.error_type = "auth_error", "auth"
                    outcome.error = f"not completed: {self.gate.reason}"
        run.aggregate = borda(run.rankings, list(run.labels)) if run.rankings else []
        statuses = [o.status for o in run.reviews.values()]
        if len(run.rankings) == len(run.reviews):
            run.review_state = "complete"
        elif run.rankings:
            run.review_state = "partial"
            run.review_note = f"{len(run.rankings)} of {len(run.reviews)} reviews arrived"
        elif all(s == "timeout" for s in statuses):
            run.review_state = "timeout"
            run.review_note = "peer review timed out"
        else:
            run.review_state = "failed"
            run.review_note = "no reviewer returned a ranking"
        await self.reporter.stage2_closed(f"{run.review_state}" + (f" ({run.review_note})" if run.review_note else ""))

    # --- stage 3 --------------------------------------------------------------------------------------

    def _fallback(self, reason: str) -> None:
        run = self.run
        run.synthesis = prompts.fallback_synthesis(
            run.plan.query, run.ranked_answers(), run.ranking_named() or None, reason
        )
        run.synthesized_by = "fallback"
        run.synthesis_note = reason

    async def stage3(self) -> None:
        run, plan = self.run, self.run.plan
        if not run.ok_models():
            return
        chairman = plan.chairman
        own = run.answers.get(chairman.id)
        if self.gate.is_tripped:
            self._fallback(f"no chairman call: {self.gate.reason}")
            await self.reporter.finished("Stage 3: fallback summary (the council stopped early)")
            return
        if own is not None and own.status == "auth_error":
            self._fallback(f"the chairman {chairman.name} may not be used with this key")
            await self.reporter.finished("Stage 3: fallback summary (chairman unavailable)")
            return
        now = anyio.current_time()
        end = budget.stage3_end(plan.window, now, plan.budget.per_model_s)
        if end - now <= 0:
            self._fallback("no time left for the chairman")
            await self.reporter.finished("Stage 3: fallback summary (no time left)")
            return
        run.stage = 3
        ranking = run.ranking_named() or None
        source = "answers and peer review" if ranking else "stage 1 answers only"
        messages = prompts.synthesis_messages(plan.query, run.ranked_answers(), ranking)
        run.chairman_call = CallOutcome(model=chairman.id)
        await self.reporter.stage3_started(chairman.name, source)
        await call_model(
            self.backend,
            run.chairman_call,
            messages=messages,
            purpose="synthesis",
            query=plan.query,
            window_end=end,
            policy=self.policy,
            gate=self.gate,
            on_retry=self._retry_hook(3),
        )
        call = run.chairman_call
        if call.status == "ok" and (call.text or "").strip():
            run.synthesis = call.text or ""
            run.synthesized_by = "chairman"
            await self.reporter.finished(f"Stage 3: ✓ synthesis by {chairman.name}")
        else:
            detail = call.error or call.status
            self._fallback(f"the chairman {chairman.name} did not answer: {detail}")
            await self.reporter.finished(f"Stage 3: ✗ chairman {chairman.name} {call.status}; fallback summary")
