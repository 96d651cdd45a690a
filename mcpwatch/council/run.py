"""One council run's plan and its shared state: what the pipeline fills in as results arrive, and what progress
and the result builder read (a module of its own, so those readers do not import the pipeline)."""

from __future__ import annotations

from dataclasses import dataclass, field

from mcpwatch.council.budget import RunWindow
from mcpwatch.council.calls import CallOutcome
from mcpwatch.council.catalog import ModelSpec
from mcpwatch.council.ranking import RankEntry
from mcpwatch.council.tiers import TierBudget


@dataclass(frozen=True)
class CouncilPlan:
    query: str
    confidence: str  # as the caller gave it
    tier: str
    budget: TierBudget
    queried: list[ModelSpec]  # who is asked
    intended: int  # how many answers the tier wants (the "N of M intended models")
    race: bool  # stop stage 1 once `intended` answers arrived
    chairman: ModelSpec
    window: RunWindow  # (`budget` here would name the field above, not the module)
    caller_deadline_ms: int | None
    seed: int = 0
    note: str | None = None  # e.g. how an unknown confidence value was read


@dataclass
class CouncilRun:
    """The shared state: filled in as results arrive, read by progress and by the result builder."""

    plan: CouncilPlan
    stage: int = 1
    answers: dict[str, CallOutcome] = field(default_factory=dict)
    labels: dict[str, str] = field(default_factory=dict)  # "A" -> model id
    reviews: dict[str, CallOutcome] = field(default_factory=dict)
    rankings: dict[str, list[str]] = field(default_factory=dict)  # reviewer -> labels, best first
    aggregate: list[RankEntry] = field(default_factory=list)
    review_state: str = "pending"  # complete | partial | timeout | failed | skipped
    review_note: str | None = None
    chairman_call: CallOutcome | None = None
    synthesis: str = ""
    synthesized_by: str | None = None  # "chairman" | "fallback"
    synthesis_note: str | None = None
    raced_out: list[str] = field(default_factory=list)
    window_closed: bool = False  # the outer guard fired: the run was cut at the window's end
    queued_ms: int = 0
    auth_failure: str | None = None

    def __post_init__(self) -> None:
        for spec in self.plan.queried:
            self.answers.setdefault(spec.id, CallOutcome(model=spec.id))

    def spec(self, model_id: str) -> ModelSpec:
        for spec in (*self.plan.queried, self.plan.chairman):
            if spec.id == model_id:
                return spec
        raise KeyError(model_id)

    def ok_models(self) -> list[ModelSpec]:
        return [s for s in self.plan.queried if self.answers[s.id].status == "ok"]

    def ranked_answers(self) -> list[tuple[str, str]]:
        """(name, text) of the answers, best-ranked first when there is a ranking."""
        ok = {s.id: s for s in self.ok_models()}
        order = [self.labels[e.label] for e in self.aggregate if self.labels.get(e.label) in ok]
        order += [m for m in ok if m not in order]
        return [(ok[m].name, self.answers[m].text or "") for m in order]

    def ranking_named(self) -> list[tuple[str, int]]:
        return [(self.spec(self.labels[e.label]).name, e.points) for e in self.aggregate]
