"""View state → Rich renderables for the console's panels (Rich only, no Textual: replay and reports reuse it).

Colours come from a `Palette` of the theme's semantic variables, so every panel follows the theme.
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass

from rich.console import Console, ConsoleOptions, Group, RenderableType, RenderResult
from rich.table import Table
from rich.text import Text

from mcpwatch.console import words
from mcpwatch.console.headless import format as fmt
from mcpwatch.console.headless.model import (
    ConfigChangeView,
    CouncilView,
    Counters,
    DeadlineView,
    HeaderView,
    HealthView,
    InFlightView,
    InvalidationView,
    RequestDetail,
    RequestView,
    TierView,
    TimelineItem,
    TombstonesView,
    TombstoneView,
    WarningView,
)

# outcome / model status -> (icon, semantic colour). Icons are single-cell so columns stay aligned.
STATUS_STYLE: dict[str, tuple[str, str]] = {
    "ok": ("✓", "status-ok"),
    "degraded": ("✓!", "status-warn"),
    "tool_error": ("✗", "status-error"),
    "error": ("✗", "status-error"),
    "auth_error": ("✗", "status-error"),
    "upstream_lost": ("↯", "status-error"),
    "deadline": ("◷", "status-timeout"),
    "timeout": ("◷", "status-timeout"),
    "rate_limited": ("≈", "status-late"),
    "cancelled": ("⊘", "status-cancelled"),
    "pending": ("⋯", "status-pending"),
    "in flight": ("⋯", "status-pending"),
}
UPSTREAM_STYLE = {
    "ready": "status-ok",
    "connecting": "status-pending",
    "backoff": "status-warn",
    "closed": "status-error",
}


@dataclass(frozen=True, slots=True)
class Palette:
    """Semantic colours (theme variables) as Rich styles."""

    colours: Mapping[str, str]

    def __call__(self, name: str, extra: str = "") -> str:
        colour = self.colours.get(name)
        return f"{extra} {colour}".strip() if colour else extra

    @property
    def dim(self) -> str:
        return self("text-dim")


def wall_clock(origin_ts: float | None, mono: float) -> str:
    """Local time of day of a session instant (`HH:MM:SS`), or the session offset when the origin is unknown."""
    if origin_ts is None:
        return f"+{fmt.duration(mono)}"
    return time.strftime("%H:%M:%S", time.localtime(origin_ts + mono))


def status_text(status: str | None, p: Palette, *, label: str | None = None) -> Text:
    key = status or "in flight"
    icon, colour = STATUS_STYLE.get(key, ("•", "text-dim"))
    return Text(f"{icon} {label or words.outcome(key)}", style=p(colour))


def gauge(fraction: float | None, width: int, p: Palette) -> Text:
    """A bar that turns the 'over' colour past 100 % and the warning colour past 80 %."""
    if fraction is None:
        return Text(" " * width)
    filled = fmt.bar(fraction, width)
    n = filled.count("█")
    colour = "gauge-over" if fraction >= 1 else "status-warn" if fraction >= 0.8 else "gauge-fill"
    return Text.assemble(("█" * n, p(colour)), ("░" * (width - n), p("gauge-empty")))


# --- the top bar ---------------------------------------------------------------------------------------------


def top_bar(
    h: HeaderView,
    feed_label: str,
    feed_ok: bool,
    paused: bool,
    p: Palette,
    *,
    compact: bool = False,
    unread: int = 0,
    paused_events: int = 0,
) -> Text:
    """One line: connection first (never cut off), the unread events, then who is being watched; `compact` (a
    narrower terminal) leaves out the pid and the uptime and tightens the words so the host still fits."""
    sep = " │ " if compact else "  │  "
    t = Text(no_wrap=True, overflow="ellipsis")
    t.append(" mcpwatch ", style=p("status-pending", "bold reverse"))
    t.append(" ")
    t.append(("● " if feed_ok else "○ ") + feed_label, style=p("status-ok" if feed_ok else "status-error", "bold"))
    if paused:
        since = f" — {paused_events:,} event{'s' if paused_events != 1 else ''} recorded since" if paused_events else ""
        t.append(f"  ⏸ paused{since} (p resumes)", style=p("status-warn", "bold"))
    if unread:
        what = "" if compact else f" new event{'s' if unread != 1 else ''}"
        t.append(f"  ⚑ {unread}{what} (e)", style=p("status-error", "bold"))
    t.append(sep, style=p.dim)
    if h.name is None and h.session_id is None:
        t.append("no session yet", style=p.dim)
        return t
    t.append(h.name or "?", style="bold")
    if h.pid and not compact:
        t.append(f" pid {h.pid}", style=p.dim)
    if not compact:
        t.append("  up ", style=p.dim)
        t.append(fmt.duration(h.uptime_s))
    if h.ended:
        t.append(f"  ended: {h.ended}", style=p("status-warn", "bold"))
    state = h.upstream_state or "unknown"
    t.append(" " if compact else f"{sep}upstream ", style=p.dim)
    if not feed_ok and not h.ended:
        # Cut off from the wrapper: what it last said, dimmed — never a green "ready" nobody can vouch for.
        t.append(f"○ {state}? (last known)", style=p.dim)
    else:
        t.append(f"● {state}", style=p(UPSTREAM_STYLE.get(state, "text-dim"), "bold"))
    if h.generation is not None:
        t.append(f" gen {h.generation}", style=p.dim)
    if feed_ok and state == "backoff" and h.retry_in_s is not None:
        t.append(f" retry in {fmt.seconds(h.retry_in_s)}", style=p("status-warn"))
    if feed_ok and state in ("backoff", "closed") and h.exit_code is not None:
        t.append(f" exit {h.exit_code}", style=p("status-error", "bold"))
    # The host before the upstream's command line: the line is cut at its end, and the host matters more.
    t.append(f"{sep}host ", style=p.dim)
    t.append(" ".join(x for x in (h.host_name, h.host_version) if x) or "not yet known")
    if h.host_profile:
        t.append(f" ({h.host_profile}" + (f", budget from {h.host_clock})" if h.host_clock else ")"), style=p.dim)
    t.append(f"{sep}{h.upstream_kind or '?'} ", style=p.dim)
    t.append(fmt.clip(h.upstream_target or "?", 40))
    return t


# --- small panels ------------------------------------------------------------------------------------------


def plain(value: Text | str) -> Text:
    """A table cell as text: Rich parses a str cell as markup, and names, messages and errors come from the wire."""
    return value if isinstance(value, Text) else Text(value)


def _kv(table: Table, key: str, value: Text | str, p: Palette) -> None:
    table.add_row(Text(key, style=p.dim), plain(value))


def _grid() -> Table:
    table = Table.grid(padding=(0, 1), expand=True)
    table.add_column(no_wrap=True)
    table.add_column(no_wrap=True, overflow="ellipsis", ratio=1)
    return table


def deadline_panel(d: DeadlineView, p: Palette, changed: ConfigChangeView | None = None) -> RenderableType:
    """The budget, where it comes from, and (`changed`) the last operator change to it: five short lines, so a
    quarter of an 80-column terminal shows them whole."""
    if not d.known:
        return Text("waiting for the wrapper's deadline settings…", style=p.dim)
    g = _grid()
    if d.budget_s is None:
        _kv(g, "budget", Text("DISABLED", style=p("status-warn", "bold")), p)
        _kv(g, "", Text("the host's timeout rules", style=p("status-warn")), p)
    else:
        _kv(g, "budget", Text(fmt.seconds(d.budget_s), style="bold"), p)
        _kv(g, "source", Text(words.budget_source(d.source), style=p.dim), p)
    _kv(g, "host, margin", f"{fmt.seconds(d.host_timeout_s)}, {fmt.seconds(d.margin_s)}", p)
    override = Text("none", style=p.dim) if d.override_s is None else Text(fmt.seconds(d.override_s))
    if d.override_s is not None and d.override_s <= 0:
        override.append(" (disables)", style=p("status-warn"))
    _kv(g, "override", override, p)
    if changed is not None and changed.source in ("operator", "reset"):
        who = "operator" if changed.source == "operator" else "reset"
        what = f"{words.CHANGED_KEYS.get(changed.key, changed.key)} by {who}"
        _kv(g, "changed", Text(what, style=p("status-warn")), p)
    return g


class Fitted:
    """A renderable made for the width it is given: a panel that changes layout rather than cutting numbers."""

    def __init__(self, make: Callable[[int], RenderableType]) -> None:
        self.make = make

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        yield self.make(options.max_width)


def tiers_panel(tiers: tuple[TierView, ...], d: DeadlineView, p: Palette) -> RenderableType:
    if not tiers:
        return Text("no tier budgets yet — press h for a health check", style=p.dim)
    rows = [
        (
            t.tier,
            fmt.seconds(t.total_s),
            f"×{fmt.seconds(t.per_model_s)}",
            Text("⚠", style=p("status-error", "bold")) if t.exceeds_budget else Text("✓", style=p("status-ok")),
        )
        for t in tiers
    ]
    name_w = max(len(r[0]) for r in rows)
    total_w = max(len(r[1]) for r in rows)
    per_w = max(len(r[2]) for r in rows)

    def make(width: int) -> RenderableType:
        # Narrow: the tier's name gives way first, then the per-model cap; the total and the ⚠ never do.
        with_per = width >= 3 + total_w + per_w + 4
        g = Table.grid(padding=(0, 1), expand=True)
        if name_w + total_w + per_w + 4 <= width:
            g.add_column(no_wrap=True)
        else:
            g.add_column(no_wrap=True, overflow="ellipsis", ratio=1, min_width=3)
        g.add_column(justify="right", no_wrap=True)
        if with_per:
            g.add_column(justify="right", no_wrap=True)
        g.add_column(no_wrap=True, ratio=1 if name_w + total_w + per_w + 4 <= width else None, min_width=1)
        for name, total, per, verdict in rows:
            cells = (plain(name), plain(total), Text(per, style=p.dim), verdict)
            if not with_per:
                cells = (cells[0], cells[1], verdict)
            g.add_row(*cells)
        return g

    return Fitted(make)


def sparkline(values: tuple[float, ...], width: int) -> str:
    """Unicode block sparkline of the last `width` values, scaled to their max."""
    blocks = "▁▂▃▄▅▆▇█"
    data = values[-width:] if width > 0 else ()
    if not data:
        return ""
    top = max(data) or 1.0
    return "".join(blocks[min(7, int(v / top * 7.999))] for v in data)


HEALTH_STATE = {
    "ok": ("✓ ok", "status-ok"),
    "not_ready": ("⚠ not ready", "status-warn"),
    "failing": ("✗ failing", "status-error"),
}


def health_panel(h: HealthView, p: Palette) -> RenderableType:
    if h.state is None:
        return Text("no health check yet — press h", style=p.dim)
    g = _grid()
    label, colour = HEALTH_STATE[h.state]
    state = Text(label, style=p(colour, "bold"))
    state.append(f"  {fmt.duration(h.ago_s)} ago", style=p.dim)
    _kv(g, "last", state, p)
    if h.ping_ms is None and h.latency_ms is not None:
        # The host called the health tool itself: no MCP ping, but the call's own time says as much.
        took = Text(fmt.millis(h.latency_ms))
        if h.source == "host":
            took.append("  (the host's call)", style=p.dim)
        _kv(g, "took", took, p)
    else:
        _kv(g, "ping", fmt.millis(h.ping_ms), p)
    if h.error:
        _kv(g, "error", Text(fmt.clip(h.error, 60), style=p("status-error")), p)
    else:
        tool = h.tool or "ping only"
        if h.timeout_multiplier is not None and h.timeout_multiplier != 1:
            tool += f"  ×{h.timeout_multiplier:g}"
        _kv(g, "tool", tool, p)
    if h.history:
        _kv(g, "history", Text(sparkline(h.history, 24), style=p("gauge-fill")), p)
    return g


def counters_panel(c: Counters, p: Palette) -> RenderableType:
    # Labels give way (with an ellipsis) before numbers do: a number is never cut in a narrow panel.
    g = Table.grid(padding=(0, 1), expand=True)
    for _ in range(2):
        g.add_column(no_wrap=True, overflow="ellipsis", min_width=3, ratio=1)
        g.add_column(no_wrap=True, justify="right")

    def n(value: int, colour: str) -> Text:
        return Text(f"{value:,}", style=p(colour, "bold") if value else p.dim)

    g.add_row(
        Text("requests", style=p.dim), n(c.requests, "status-pending"), Text("ok", style=p.dim), n(c.ok, "status-ok")
    )
    g.add_row(
        Text("errors", style=p.dim),
        n(c.errors, "status-error"),
        Text("deadline", style=p.dim),
        n(c.timeouts, "status-timeout"),
    )
    g.add_row(
        Text("cancelled", style=p.dim),
        n(c.cancelled, "status-cancelled"),
        Text("late drop", style=p.dim),
        n(c.late_dropped, "status-late"),
    )
    g.add_row(
        Text("unknown", style=p.dim),
        n(c.unknown_dropped, "status-late"),
        Text("invalidate", style=p.dim),
        n(c.invalidations, "status-pending"),
    )
    return g


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
    """Time left before the budget cuts the call, and the share of the budget that is left; coloured as the
    gauge is (the colour is kept on the selected row)."""
    if r.unfinished or r.remaining_s is None or not r.budget_s:
        return Text("—", style=p.dim)
    if r.remaining_s <= 0:
        return Text(f"cut {fmt.duration(-r.remaining_s)} ago", style=p("gauge-over", "bold"))
    share = r.remaining_s / r.budget_s
    colour = "status-warn" if share <= 0.2 else ""
    return Text(f"{fmt.duration(r.remaining_s)} {share:.0%}", style=p(colour, "bold") if colour else "")


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


# --- the detail screen ---------------------------------------------------------------------------------------


def pretty_json(text: str | None, limit: int = 4000) -> str:
    """Indented JSON when the text is JSON, else the text itself (both capped)."""
    if not text:
        return ""
    try:
        out = readable_json(json.loads(text))
    except ValueError:
        out = text
    return _cap(out, limit)


def readable_json(value: object, indent: str = "") -> str:
    """Indented JSON, except that a string's line breaks are shown as line breaks (continued under its opening
    quote), not as `\\n`: results are read by people here; copy and export keep the exact JSON."""
    inner = indent + "  "
    if isinstance(value, dict):
        if not value:
            return "{}"
        items = [
            f"{inner}{json.dumps(str(k), ensure_ascii=False)}: {readable_json(v, inner)}" for k, v in value.items()
        ]
        return "{\n" + ",\n".join(items) + f"\n{indent}}}"
    if isinstance(value, list):
        if not value:
            return "[]"
        return "[\n" + ",\n".join(f"{inner}{readable_json(v, inner)}" for v in value) + f"\n{indent}]"
    if isinstance(value, str) and "\n" in value:
        lines = [json.dumps(line, ensure_ascii=False)[1:-1] for line in value.split("\n")]
        return '"' + ("\n" + inner + " ").join(lines) + '"'
    return json.dumps(value, ensure_ascii=False)


def _cap(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[:limit] + "\n… (cut)"


def _pretty_text(text: str) -> str:
    """A content text as a person reads it: indented JSON when it is JSON, else the text as it is."""
    stripped = text.strip()
    if stripped[:1] in ("{", "["):
        try:
            return readable_json(json.loads(stripped))
        except ValueError:
            pass
    return text


_TEXT_FIELD = re.compile(r'"text"\s*:\s*"')


def _cut_json_string(raw: str) -> str:
    """The beginning of a JSON string literal whose end was cut off (the log keeps 4 KiB), decoded."""
    out: list[str] = []
    i = 0
    while i < len(raw):
        ch = raw[i]
        if ch == '"':
            break
        if ch != "\\":
            out.append(ch)
            i += 1
            continue
        escape = raw[i : i + 6] if raw[i + 1 : i + 2] == "u" else raw[i : i + 2]
        try:
            out.append(json.loads(f'"{escape}"'))
        except ValueError:
            break  # an escape cut in half: the text ends here
        i += len(escape)
    return "".join(out)


def result_texts(preview: str) -> tuple[list[str], bool] | None:
    """The texts of a tools/call result (or of the JSON-RPC answer that carried one), each pretty-printed, and
    whether it was an error result; None when the preview is not one. A preview cut short still yields the
    beginning of its first text."""
    try:
        value = json.loads(preview)
    except ValueError:
        match = _TEXT_FIELD.search(preview)
        if match is None or '"content"' not in preview[: match.start()]:
            return None
        text = _cut_json_string(preview[match.end() :]).rstrip("…") + "\n… (cut: the log keeps 4 KiB)"
        return [text], re.search(r'"isError"\s*:\s*true', preview) is not None
    if isinstance(value, dict) and isinstance(value.get("result"), dict):
        value = value["result"]  # the whole answer sent to the host
    if not isinstance(value, dict) or not isinstance(value.get("content"), list):
        return None
    texts: list[str] = []
    for item in value["content"]:
        if isinstance(item, dict) and item.get("type", "text") == "text" and isinstance(item.get("text"), str):
            texts.append(_pretty_text(item["text"]))
        elif isinstance(item, dict):
            texts.append(f"({item.get('type', 'unknown')} content)")
    if not texts and value.get("structuredContent") is not None:
        texts.append(readable_json(value["structuredContent"]))
    return texts, value.get("isError") is True


def result_panel(preview: str, p: Palette, limit: int = 8000) -> RenderableType:
    """A result as text: each content text shown as text (or indented JSON when it is JSON), never as escaped
    JSON inside JSON; anything else as indented JSON."""
    found = result_texts(preview)
    if found is None:
        return Text(pretty_json(preview, limit))
    texts, is_error = found
    parts: list[RenderableType] = []
    if is_error:
        parts.append(Text("isError: the host was given this as an error result", style=p("status-warn")))
    for i, text in enumerate(texts):
        if i:
            parts.append(Text("─" * 8, style=p.dim))
        parts.append(Text(_cap(text, limit)))
    if not parts:
        parts.append(Text("(an empty result)", style=p.dim))
    return Group(*parts)


def detail_summary(d: RequestDetail, origin_ts: float | None, p: Palette) -> RenderableType:
    r = d.request
    g = Table.grid(padding=(0, 1), expand=True)
    g.add_column(no_wrap=True)
    g.add_column(overflow="fold", ratio=1)  # an error or a progress message is read in full: it wraps
    _kv(g, "request", Text.assemble((f"#{r.request_id}", "bold"), (f"  upstream id {d.up_id or '—'}", p.dim)), p)
    _kv(g, "call", Text.assemble((r.method, ""), (f"  {r.tool}" if r.tool else "", "bold")), p)
    _kv(g, "started", wall_clock(origin_ts, r.started_mono), p)
    if d.unfinished:
        outcome = Text("⊘ unfinished: the session ended while it ran", style=p("status-warn"))
    else:
        outcome = status_text(r.outcome, p)
    if r.partial:
        outcome.append("  partial result", style=p("status-warn"))
    _kv(g, "outcome", outcome, p)
    budget = (
        "no budget"
        if d.budget_s is None
        else fmt.seconds(d.budget_s) + (f" ({d.budget_source})" if d.budget_source else "")
    )
    fraction = None if not d.budget_s else d.elapsed_s / d.budget_s
    spent = Text(f"{fmt.duration(d.elapsed_s)} of {budget}  ")
    spent.append_text(gauge(fraction, 20, p))
    _kv(g, "time", spent, p)
    if d.progress is not None or d.message:
        _kv(g, "last progress", f"{fmt.progress(d.progress, d.total)} {d.message or ''}".strip(), p)
    if r.error:
        _kv(g, "error", Text(r.error, style=p("status-error")), p)
    if d.tombstone is not None:
        t = d.tombstone
        left = (
            "no expiry"
            if t.expires_in_s is None
            else "expired"
            if t.expires_in_s <= 0
            else f"expires in {fmt.duration(t.expires_in_s)}"
        )
        text = Text(f"{t.reason or '?'} · TTL {fmt.seconds(t.ttl_s)} · {left} · {t.hits} late response(s) dropped")
        _kv(g, "tombstone", text, p)
    return g


def timeline_panel(
    items: tuple[TimelineItem, ...], dropped: int, origin_ts: float | None, start: float, p: Palette
) -> RenderableType:
    g = Table.grid(padding=(0, 1), expand=True)
    g.add_column(no_wrap=True)
    g.add_column(no_wrap=True, justify="right")
    g.add_column(no_wrap=True)
    g.add_column(overflow="fold", ratio=1)
    kind_colour = {
        "request_start": "status-pending",
        "progress": "text-dim",
        "model_status": "status-pending",
        "request_end": "status-ok",
        "tombstone_add": "status-cancelled",
        "tombstone_hit": "status-late",
        "tombstone_expire": "text-dim",
        "seed": "text-dim",
    }
    for item in items:
        g.add_row(
            Text(wall_clock(origin_ts, item.mono), style=p.dim),
            Text(f"+{fmt.duration(item.mono - start)}", style=p.dim),
            Text(item.kind.replace("_", " "), style=p(kind_colour.get(item.kind, "text-dim"))),
            Text(item.text),
        )
    if dropped:
        return Group(
            Text(f"({dropped:,} earlier entries dropped; the timeline keeps the latest {len(items)})", style=p.dim), g
        )
    return g
