"""The Council run panel: one council call's per-model state against the cap that applies to it."""

from __future__ import annotations

from dataclasses import dataclass

from rich.console import Group, RenderableType
from rich.table import Table
from rich.text import Text

from mcpwatch.console.headless import format as fmt
from mcpwatch.console.headless.records import CallRecord
from mcpwatch.console.headless.render_base import STATUS_STYLE, Palette, gauge

HELP: tuple[str, str] | None = (
    "Council run",
    "a council call's per-model state against its per-model cap (shown once a council is seen)",
)
WIDGET: str | None = "council"


def _effective_cap(per_model_s: float | None, budget_s: float | None) -> float | None:
    """A model cannot run past the call's budget, whatever the tier allows."""
    if per_model_s is None:
        return budget_s
    return per_model_s if budget_s is None else min(per_model_s, budget_s)


@dataclass(frozen=True, slots=True)
class ModelView:
    model: str
    status: str
    stage: int | None
    elapsed_s: float | None
    per_model_s: float | None  # the tier's per-model cap, as the council reports it
    latency_ms: int | None
    over_cap: bool  # elapsed past `cap_s`
    cap_s: float | None = None  # the cap that applies to this call: min(per-model cap, the call's budget)


@dataclass(frozen=True, slots=True)
class CouncilView:
    request_id: str
    tool: str | None
    tier: str | None
    per_model_s: float | None
    stage: int | None
    finished: bool
    outcome: str | None
    models: tuple[ModelView, ...]
    budget_s: float | None = None  # the call's own deadline budget (the wrapper's)

    @property
    def cap_s(self) -> float | None:
        """The per-model cap that can actually apply: the tier's, unless the call's budget ends sooner."""
        return _effective_cap(self.per_model_s, self.budget_s)

    @property
    def cap_limited_by_budget(self) -> bool:
        return self.per_model_s is not None and self.budget_s is not None and self.budget_s < self.per_model_s


def council_title(c: CouncilView | None) -> str:
    if c is None:
        return "Council run"
    parts = [f"Council · #{c.request_id}"]
    if c.tier:
        parts.append(f"{c.tier} tier")
    if c.stage is not None:
        parts.append(f"stage {c.stage}")
    if c.finished:
        parts.append(c.outcome or "finished")
    return " · ".join(parts)


def council_panel(c: CouncilView | None, p: Palette) -> RenderableType:
    if c is None:
        return Text(
            "no council run seen yet\n(per-model progress appears when a call reports model status)", style=p.dim
        )
    g = Table.grid(padding=(0, 1), expand=True)
    g.add_column(no_wrap=True, width=2)
    g.add_column(no_wrap=True, overflow="ellipsis", ratio=1, min_width=10)
    g.add_column(justify="right", no_wrap=True)
    g.add_column(no_wrap=True, width=10)
    for m in c.models:
        icon, colour = STATUS_STYLE.get(m.status, ("•", "text-dim"))
        spent = fmt.duration(m.elapsed_s)
        # Against the cap that applies to this call: the tier's per-model cap, or the call's budget if sooner.
        cap_s = m.cap_s if m.cap_s is not None else m.per_model_s
        cap = fmt.seconds(cap_s) if cap_s is not None else "—"
        fraction = None if m.elapsed_s is None or not cap_s else m.elapsed_s / cap_s
        label = Text(fmt.short_model(m.model))
        if m.status not in ("pending", "ok"):
            label.append(f" {m.status}", style=p(colour))
        g.add_row(
            Text(icon, style=p(colour, "bold")),
            label,
            Text(f"{spent}/{cap}", style=p("gauge-over") if m.over_cap else ""),
            gauge(fraction, 10, p),
        )
    if c.cap_limited_by_budget:
        note = Text(
            f"per-model cap {fmt.seconds(c.per_model_s)} ({c.tier or 'tier'}), "
            f"cut to the call's {fmt.seconds(c.budget_s)} budget",
            style=p.dim,
            no_wrap=True,
            overflow="ellipsis",
        )
        return Group(note, g)
    return g


def build(request: CallRecord, now: float) -> CouncilView:
    """One call's council run: each model against the cap that applies to it."""
    models = []
    for run in request.models.values():
        per_model = run.per_model_s if run.per_model_s is not None else request.per_model_s
        cap = _effective_cap(per_model, request.budget_s)
        if run.status == "pending":
            end = request.end_mono if request.end_mono is not None else now
            elapsed: float | None = max(0.0, end - run.started_mono)
        else:
            elapsed = None if run.latency_ms is None else run.latency_ms / 1000.0
            if elapsed is None:
                elapsed = max(0.0, run.updated_mono - run.started_mono)
        over = cap is not None and elapsed is not None and elapsed > cap
        models.append(ModelView(run.model, run.status, run.stage, elapsed, per_model, run.latency_ms, over, cap))
    return CouncilView(
        request.request_id,
        request.tool,
        request.tier,
        request.per_model_s,
        request.stage,
        request.end_mono is not None,
        request.outcome,
        tuple(models),
        request.budget_s,
    )
