"""The council as a service: picks the tier and the members, bounds reasoning runs, and builds the result.

Transport-free (the MCP tools in `server` are thin adapters over it), so it can be driven directly in tests.
"""

from __future__ import annotations

import logging
from dataclasses import replace
from typing import Any

import anyio

from mcpwatch.council import budget
from mcpwatch.council.backends.base import Backend
from mcpwatch.council.calls import RetryPolicy
from mcpwatch.council.catalog import ModelSpec, Roster
from mcpwatch.council.pipeline import Pipeline
from mcpwatch.council.progress import ProgressReporter, SendFn
from mcpwatch.council.result import build_result
from mcpwatch.council.run import CouncilPlan, CouncilRun
from mcpwatch.council.settings import CouncilSettings
from mcpwatch.council.tiers import AUTO, REASONING_CONCURRENCY, TIERS, resolve_confidence

log = logging.getLogger(__name__)


class CouncilError(Exception):
    """A request the council cannot run at all (shown to the caller as a tool error)."""


class Council:
    def __init__(
        self,
        settings: CouncilSettings,
        backend: Backend,
        *,
        reasoning_slots: int = REASONING_CONCURRENCY,
        policy: RetryPolicy | None = None,
    ) -> None:
        self.settings = settings
        self.backend = backend
        self.roster = Roster(list(settings.models), settings.chairman)
        self.tiers = settings.tiers
        self.policy = policy or RetryPolicy(time_scale=settings.time_scale)
        self.reasoning_slots = reasoning_slots
        self._reasoning: anyio.Semaphore | None = None
        self.reasoning_in_use = 0

    # --- planning -------------------------------------------------------------------------------------

    def tier_for(self, confidence: str | None) -> str:
        tier, _ = resolve_confidence(confidence)
        return self.roster.inferred_tier() if tier == AUTO else tier

    def members_for(self, tier: str) -> tuple[list[ModelSpec], int]:
        """(models to ask, answers wanted) for a tier, from the enabled roster."""
        candidates = self.roster.for_tier(tier)
        if not candidates:
            enabled = ", ".join(f"{m.id} (from {m.min_tier})" for m in self.roster.enabled())
            raise CouncilError(f"no enabled model fits the {tier} tier; enabled: {enabled}")
        config = self.tiers[tier]
        intended = min(config.models or len(candidates), len(candidates))
        queried = candidates if config.race else candidates[:intended]
        return queried, intended

    def plan(self, query: str, confidence: str | None, caller_deadline_ms: int | None, start: float) -> CouncilPlan:
        tier = self.tier_for(confidence)
        asked, recognised = resolve_confidence(confidence)
        note = None
        if not recognised:
            note = f"unknown confidence {confidence!r}; using {tier} (choose from {', '.join((*TIERS, AUTO))})"
        elif asked == AUTO:
            note = f"auto: {tier} is the tier the slowest enabled model needs"
        config = self.tiers[tier]
        queried, intended = self.members_for(tier)
        deadline_s = None if caller_deadline_ms is None else caller_deadline_ms / 1000.0
        return CouncilPlan(
            query=query,
            confidence=confidence if confidence is not None else "high",
            tier=tier,
            budget=config,
            queried=queried,
            intended=intended,
            race=config.race and len(queried) > intended,
            chairman=self.roster.acting_chairman,
            window=budget.run_window(start, config.total_s, deadline_s),
            caller_deadline_ms=caller_deadline_ms,
            seed=self.settings.seed,
            note=note,
        )

    # --- running --------------------------------------------------------------------------------------

    def _semaphore(self) -> anyio.Semaphore:
        if self._reasoning is None:
            self._reasoning = anyio.Semaphore(self.reasoning_slots)
        return self._reasoning

    async def consult(
        self,
        query: str,
        confidence: str | None = "high",
        *,
        include_details: bool = False,
        caller_deadline_ms: int | None = None,
        send: SendFn | None = None,
    ) -> tuple[dict[str, Any], bool]:
        """Run one council; returns (structured result, is_error). Raises CouncilError for unrunnable requests."""
        if not query or not query.strip():
            raise CouncilError("query must not be empty")
        start = anyio.current_time()
        plan = self.plan(query.strip(), confidence, caller_deadline_ms, start)
        run = CouncilRun(plan)
        reporter = ProgressReporter(run, send)
        log.info(
            "consult: tier %s, %d model(s), want %d, window %.3fs (%s)",
            plan.tier,
            len(plan.queried),
            plan.intended,
            plan.window.length_s,
            plan.window.source,
        )
        pipeline = Pipeline(self.backend, self.policy, reporter, run)
        if plan.tier == "reasoning":
            await self._run_reasoning(pipeline, reporter)
        else:
            await pipeline.execute()
        result, is_error = build_result(run, include_details=include_details)
        if is_error:  # the stages' own progress stops short of the end: say how it ended
            await reporter.finished(f"Failed: {result.get('error') or 'no council member answered'}"[:300])
        meta = result["metadata"]
        log.info("consult done: %s, %s, %d ms", meta["status"], meta["synthesis_type"], meta["elapsed_ms"])
        return result, is_error

    async def _run_reasoning(self, pipeline: Pipeline, reporter: ProgressReporter) -> None:
        """At most `reasoning_slots` reasoning runs at once, the slot held around the whole run (as the seed's
        `async with`). The wait is reported as `queued_ms` and charged to no model: the run's window starts once a
        slot is taken. Only a caller's deadline, whose clock kept running, is shortened by the wait; without one
        a call waits at most the tier's total for a slot."""
        semaphore = self._semaphore()
        run = pipeline.run
        plan = run.plan
        waited_from = anyio.current_time()
        if semaphore.value == 0:
            await reporter.queued(self.reasoning_in_use, self.reasoning_slots)
        patience = plan.budget.total_s if plan.caller_deadline_ms is None else plan.window.end - waited_from
        acquired = False
        with anyio.move_on_after(max(0.0, patience)):
            await semaphore.acquire()
            acquired = True
        started = anyio.current_time()
        run.queued_ms = round((started - waited_from) * 1000)
        if not acquired:
            run.window_closed = True
            for outcome in run.answers.values():
                outcome.status, outcome.error_type = "timeout", "timeout"
                outcome.error = f"never started: no reasoning slot freed within {patience:.3g}s"
            return
        deadline_s = None if plan.caller_deadline_ms is None else plan.caller_deadline_ms / 1000.0
        window = budget.after_queue(plan.window.start, started, plan.budget.total_s, deadline_s)
        run.plan = replace(plan, window=window)
        self.reasoning_in_use += 1
        try:
            await pipeline.execute()
        finally:
            self.reasoning_in_use -= 1
            semaphore.release()

    def describe_tiers(self) -> dict[str, dict[str, Any]]:
        """Budgets and members per tier (after multiplier and time scale), for the health check."""
        out: dict[str, dict[str, Any]] = {}
        for tier in TIERS:
            config = self.tiers[tier]
            try:
                queried, intended = self.members_for(tier)
            except CouncilError:
                queried, intended = [], 0
            out[tier] = {
                "total_s": round(config.total_s, 6),
                "per_model_s": round(config.per_model_s, 6),
                "models": [m.id for m in queried],
                "answers_wanted": intended,
                "race": config.race and len(queried) > intended,
            }
        return out
