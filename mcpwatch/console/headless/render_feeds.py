"""The console's activity panels as Rich renderables: the council run, tombstones, invalidations, warnings,
and the in-flight and finished request rows.
"""

from __future__ import annotations

from rich.console import Group, RenderableType
from rich.table import Table
from rich.text import Text

from mcpwatch.console.headless import format as fmt
from mcpwatch.console.headless import words
from mcpwatch.console.headless.render_base import STATUS_STYLE, Fitted, Palette, gauge, status_text, wall_clock
from mcpwatch.console.headless.views import (
    CouncilView,
    DeadlineView,
    InFlightView,
    InvalidationView,
    RequestView,
    TombstonesView,
    TombstoneView,
    WarningView,
)

# --- council, tombstones, feeds ------------------------------------------------------------------------------


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


def tombstones_title(t: TombstonesView) -> str:
    return f"Tombstones {t.count}" + (f" (+{t.awaiting_sweep} awaiting sweep)" if t.awaiting_sweep else "")


def _tombstone_row(item: TombstoneView, p: Palette) -> tuple[Text, ...]:
    who = f"#{item.request_id}" if item.request_id else f"up {item.up_id}"
    if item.expires_in_s is None:
        left = Text("no expiry", style=p.dim)
    elif item.expires_in_s <= 0:
        left = Text("expired", style=p.dim)
    else:
        left = Text(f"{fmt.duration(item.expires_in_s)} left")
    fraction = None if not item.ttl_s or item.expires_in_s is None else max(0.0, item.expires_in_s) / item.ttl_s
    hits = Text(f"{item.hits} late", style=p("status-late", "bold")) if item.hits else Text("")
    return (
        Text(who),
        Text(fmt.clip(item.tool or "?", 18)),
        Text(words.reason(item.reason), style=p.dim),
        left,
        gauge(fraction, 8, p),
        hits,
    )


def tombstones_panel(t: TombstonesView, p: Palette, max_rows: int = 50) -> RenderableType:
    terms = t.terms
    head = Text()
    if terms.total_s is not None:
        head.append("TTL ", style=p.dim)
        head.append(fmt.seconds(terms.total_s), style="bold")
        head.append(" = ", style=p.dim)
        parts = [
            (terms.request_timeout_s, "budget"),
            (terms.init_timeout_s, "init"),
            (terms.backoff_max_s, "backoff"),
            (terms.epsilon_s, "ε"),
        ]
        head.append(" + ".join(f"{fmt.seconds(v)} {name}" for v, name in parts), style=p.dim)
    else:
        head.append("TTL not known yet", style=p.dim)
    head.append("\nlate responses dropped ", style=p.dim)
    head.append(f"{t.late_dropped:,}", style=p("status-late", "bold") if t.late_dropped else p.dim)
    if not t.items:
        return Group(head, Text("no tombstones: no call was cut or cancelled recently", style=p.dim))
    items = t.items[:max_rows]

    def make(width: int) -> RenderableType:
        # Narrow: the gauge gives way, then the tool's name shrinks; the time left is never cut.
        wide = width >= 64
        g = Table.grid(padding=(0, 1), expand=True)
        g.add_column(no_wrap=True, min_width=3)
        g.add_column(no_wrap=True, overflow="ellipsis", ratio=1, min_width=15 if wide else 6)
        g.add_column(no_wrap=True, overflow="ellipsis", max_width=18 if wide else 9)
        g.add_column(no_wrap=True, justify="right", min_width=9)
        if wide:
            g.add_column(no_wrap=True, width=8)
        g.add_column(no_wrap=True)
        for item in items:
            cells = _tombstone_row(item, p)
            g.add_row(*(cells if wide else cells[:4] + cells[5:]))
        return g

    g = Fitted(make)
    more = len(t.items) - max_rows
    if more > 0:
        return Group(head, g, Text(f"+{more:,} more (the oldest; expired ones last)", style=p.dim))
    return Group(head, g)


def invalidations_panel(
    items: tuple[InvalidationView, ...], origin_ts: float | None, p: Palette, rows: int = 50
) -> RenderableType:
    if not items:
        return Text("no invalidations yet (state-sync policies announce them here)", style=p.dim)
    # One paragraph per invalidation, wrapped between words: every pattern matters, so none is cut or split.
    return Group(
        *(
            Text.assemble(
                (wall_clock(origin_ts, item.mono), p.dim),
                " ",
                item.caused_by or "?",
                " ",
                ("→ " + ", ".join(item.patterns), p("status-pending")),
            )
            for item in items[:rows]
        )
    )


def warnings_panel(
    items: tuple[WarningView, ...], origin_ts: float | None, p: Palette, rows: int = 50
) -> RenderableType:
    if not items:
        return Text("no warnings", style=p.dim)
    g = Table.grid(padding=(0, 1), expand=True)
    g.add_column(no_wrap=True)
    g.add_column(overflow="fold", ratio=1)
    for item in items[:rows]:
        g.add_row(
            Text(wall_clock(origin_ts, item.mono), style=p.dim), Text("⚠ " + item.message, style=p("status-warn"))
        )
    return g


# --- table rows ----------------------------------------------------------------------------------------------


def tiers_title(d: DeadlineView) -> str:
    return "Tier budgets" + (f" vs {fmt.seconds(d.limit_s)}" if d.limit_s is not None else "")


def time_left(r: InFlightView, p: Palette) -> Text:
    """Time left before the budget cuts the call (for a task: before its TTL passes), and the share of it that is
    left; coloured as the gauge is (the colour is kept on the selected row)."""
    if r.unfinished or r.remaining_s is None or not r.budget_s:
        return Text("—", style=p.dim)
    if r.remaining_s <= 0:
        gone = "TTL passed" if r.task else "cut"
        return Text(f"{gone} {fmt.duration(-r.remaining_s)} ago", style=p("gauge-over", "bold"))
    share = r.remaining_s / r.budget_s
    colour = "status-warn" if share <= 0.2 else ""
    label = "TTL " if r.task else ""
    return Text(f"{label}{fmt.duration(r.remaining_s)} {share:.0%}", style=p(colour, "bold") if colour else "")


def in_flight_stage(r: InFlightView, p: Palette) -> Text:
    """Progress, and for a council call its stage and whether its tier fits the call's budget."""
    text = Text(fmt.progress(r.progress, r.total))
    if r.stage is not None:
        text.append(f"{' ' if text else ''}s{r.stage}", style=p("status-pending"))
    if r.tier_total_s is not None and r.budget_s is not None and r.tier_total_s > r.budget_s:
        text.append(" ⚠", style=p("status-error", "bold"))
    return text


def in_flight_row(r: InFlightView, p: Palette, message_width: int = 80, tool_width: int = 20) -> tuple[Text, ...]:
    """id, tool, time left, budget used, progress (stage), message."""
    budget = fmt.seconds(r.budget_s) if r.budget_s is not None else "no budget"
    if r.unfinished:
        # The session ended while it ran: no gauge creeping on, the time it had when everything stopped.
        spent = Text("⊘ ended ", style=p("status-warn", "bold"))
        spent.append(f" {fmt.duration(r.elapsed_s)}/{budget}", style=p.dim)
    else:
        spent = gauge(r.fraction, 8, p)
        over = (r.fraction or 0) >= 1
        spent.append(f" {fmt.duration(r.elapsed_s)}/{budget}", style=p("gauge-over") if over else "")
    mark = " ◆" if r.has_council else ""
    tool = Text(fmt.clip(r.tool or r.method, tool_width - len(mark)))
    if mark:
        tool.append(mark, style=p("status-pending"))
    message = Text(fmt.clip(r.message, message_width), style=p.dim)
    return (Text(r.request_id), tool, time_left(r, p), spent, in_flight_stage(r, p), message)


def request_note(r: RequestView) -> str:
    """What the note column says about a finished request (empty when there is nothing to add)."""
    note = r.error or ""
    if r.partial:
        note = "partial result" + (f" · {note}" if note else "")
    if r.degraded and r.outcome == "ok":
        note = f"degraded: {r.degraded}" + (f" · {note}" if note else "")
    return note


def request_row(
    r: RequestView, origin_ts: float | None, p: Palette, note_width: int = 80, tool_width: int = 20
) -> tuple[Text, ...]:
    note = request_note(r)
    return (
        Text(wall_clock(origin_ts, r.ended_mono if r.ended_mono is not None else r.started_mono), style=p.dim),
        Text(r.request_id),
        Text(fmt.clip(r.label, tool_width)),
        status_text("degraded" if r.degraded and r.outcome == "ok" else r.outcome, p),
        Text(fmt.duration(r.duration_s), justify="right"),
        Text(fmt.clip(note, note_width), style=p.dim),
    )
