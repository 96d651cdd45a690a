"""The Tombstones panel: cut or cancelled calls whose late answers are dropped until their TTL passes."""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from rich.console import Group, RenderableType
from rich.table import Table
from rich.text import Text

from mcpwatch.console.headless import format as fmt
from mcpwatch.console.headless import words
from mcpwatch.console.headless.panels.deadline import DeadlineView
from mcpwatch.console.headless.records import TombstoneRecord
from mcpwatch.console.headless.render_base import Fitted, Palette, gauge

HELP: tuple[str, str] | None = (
    "Tombstones",
    "cut or cancelled calls whose late answers are dropped until the TTL expires (live first)",
)
WIDGET: str | None = "tombstones"


@dataclass(frozen=True, slots=True)
class TtlTerms:
    request_timeout_s: float | None = None
    init_timeout_s: float | None = None
    backoff_max_s: float | None = None
    epsilon_s: float | None = None
    total_s: float | None = None


@dataclass(frozen=True, slots=True)
class TombstoneView:
    up_id: str
    request_id: str | None
    tool: str | None
    reason: str | None
    ttl_s: float | None
    age_s: float
    expires_in_s: float | None  # ≤ 0: past its TTL, waiting for the sweep
    hits: int


@dataclass(frozen=True, slots=True)
class TombstonesView:
    count: int  # tombstones still inside their TTL
    awaiting_sweep: int
    ttl_s: float | None
    terms: TtlTerms
    late_dropped: int
    items: tuple[TombstoneView, ...]


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


def ttl_terms(terms: Mapping[str, float | None], deadline: DeadlineView) -> TtlTerms:
    """The TTL formula's terms; request_timeout follows the current budget (DESIGN.md, tombstones)."""
    t = terms
    if not t:
        return TtlTerms()
    request_timeout = deadline.limit_s if deadline.known else t.get("request_timeout_s")
    parts = (request_timeout, t.get("init_timeout_s"), t.get("backoff_max_s"), t.get("epsilon_s"))
    total = sum(parts) if all(p is not None for p in parts) else t.get("total_s")  # type: ignore[arg-type]  # all parts are numbers here
    return TtlTerms(request_timeout, t.get("init_timeout_s"), t.get("backoff_max_s"), t.get("epsilon_s"), total)


def tombstone_view(t: TombstoneRecord, now: float) -> TombstoneView:
    expires_in = None if t.expires_mono is None else t.expires_mono - now
    return TombstoneView(
        t.up_id, t.request_id, t.tool, t.reason, t.ttl_s, max(0.0, now - t.added_mono), expires_in, t.hits
    )


def build(records: Iterable[TombstoneRecord], terms: TtlTerms, late_dropped: int, now: float) -> TombstonesView:
    """Live ones first, soonest to expire on top; those past their TTL (awaiting the sweep) after them."""
    tombs = [tombstone_view(t, now) for t in records]
    live = sum(1 for t in tombs if t.expires_in_s is None or t.expires_in_s > 0)
    tombs.sort(key=lambda t: (t.expires_in_s is not None and t.expires_in_s <= 0, _expiry_order(t)))
    return TombstonesView(
        count=live,
        awaiting_sweep=len(tombs) - live,
        ttl_s=terms.total_s,
        terms=terms,
        late_dropped=late_dropped,
        items=tuple(tombs),
    )


def _expiry_order(t: TombstoneView) -> float:
    return math.inf if t.expires_in_s is None else t.expires_in_s
