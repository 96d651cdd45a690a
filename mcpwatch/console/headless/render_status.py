"""The console's status panels as Rich renderables: the top bar, deadline, tiers, health and counters."""

from __future__ import annotations

from rich.console import RenderableType
from rich.table import Table
from rich.text import Text

from mcpwatch.console.headless import format as fmt
from mcpwatch.console.headless import words
from mcpwatch.console.headless.render_base import UPSTREAM_STYLE, Fitted, Palette, _grid, _kv, plain, sparkline
from mcpwatch.console.headless.views import ConfigChangeView, Counters, DeadlineView, HeaderView, HealthView, TierView

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


def tiers_panel(tiers: tuple[TierView, ...], d: DeadlineView, p: Palette, live: bool = True) -> RenderableType:
    """`live`: the operator can run a health check (h); a recording can only say none was recorded."""
    if not tiers:
        hint = "press h for a health check" if live else "no health check in the recording so far"
        return Text(f"no tier budgets yet — {hint}", style=p.dim)
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
            cells: tuple[Text, ...] = (plain(name), plain(total), Text(per, style=p.dim), verdict)
            if not with_per:
                cells = (cells[0], cells[1], verdict)
            g.add_row(*cells)
        return g

    return Fitted(make)


HEALTH_STATE = {
    "ok": ("✓ ok", "status-ok"),
    "not_ready": ("⚠ not ready", "status-warn"),
    "failing": ("✗ failing", "status-error"),
}


def health_panel(h: HealthView, p: Palette, live: bool = True) -> RenderableType:
    if h.state is None:
        return Text("no health check yet — " + ("press h" if live else "none in the recording so far"), style=p.dim)
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
    if c.degraded:  # ok answers that say they are not whole (fallback summaries): never counted as ok
        g.add_row(Text("degraded", style=p.dim), n(c.degraded, "status-warn"))
    return g
