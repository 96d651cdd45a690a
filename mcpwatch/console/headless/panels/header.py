"""The top bar: the feed, the unread events, who is watched (wrapper, upstream, host) and for how long; and the
banner under it, for what must not be missed (the feed lost, the session ended, another wrapper in trouble)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from rich.text import Text

from mcpwatch.console.headless import format as fmt
from mcpwatch.console.headless.render_base import UPSTREAM_STYLE, Palette

HELP: tuple[str, str] | None = None
WIDGET: str | None = "topbar"


@dataclass(frozen=True, slots=True)
class HeaderView:
    name: str | None = None
    pid: int | None = None
    version: str | None = None
    session_id: str | None = None
    front: str | None = None
    upstream_kind: str | None = None
    upstream_target: str | None = None
    upstream_state: str | None = None
    generation: int | None = None
    retry_in_s: float | None = None
    exit_code: int | None = None
    stderr_tail: tuple[str, ...] = ()
    host_name: str | None = None
    host_version: str | None = None
    protocol_version: str | None = None
    host_profile: str | None = None  # the host profile's label ("Codex CLI", "unknown host 'x'")
    host_clock: str | None = None  # the host clock that decides the budget ("tool_timeout_sec 60 s")
    uptime_s: float = 0.0
    ended: str | None = None  # the session_end reason, once the session is over
    host_sessions: Mapping[str, int] | None = None  # an HTTP front's: open, max, reclaimed, refused


def sessions_text(s: Mapping[str, int], compact: bool) -> str:
    """An HTTP front's host sessions in full, never cut (they read `· ses…`): `host sessions 2/16 open,
    1 reclaimed, 0 refused`; `compact` (80 columns) says the same in 34 characters."""
    counts = f"{s.get('reclaimed', '?')} reclaimed, {s.get('refused', '?')} refused"
    if compact:
        return f"hosts {s.get('open', '?')}/{s.get('max', '?')}, {counts}"
    return f"host sessions {s.get('open', '?')}/{s.get('max', '?')} open, {counts}"


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
    # compact with an HTTP front's sessions: the generation follows them, so that they fit whole in 80 columns
    late_gen = compact and h.host_sessions is not None
    if h.generation is not None and not late_gen:
        t.append(f" gen {h.generation}", style=p.dim)
    if feed_ok and state == "backoff" and h.retry_in_s is not None:
        t.append(f" retry in {fmt.seconds(h.retry_in_s)}", style=p("status-warn"))
    if feed_ok and state in ("backoff", "closed") and h.exit_code is not None:
        t.append(f" exit {h.exit_code}", style=p("status-error", "bold"))
    if h.host_sessions is not None:  # before the host: an HTTP front serves many, and its sessions say how many
        t.append(sep, style=p.dim)
        warn = bool(h.host_sessions.get("refused"))
        t.append(sessions_text(h.host_sessions, compact), style=p("status-warn") if warn else "")
        if late_gen and h.generation is not None:
            t.append(f"{sep}upstream gen {h.generation}", style=p.dim)
    # The host before the upstream's command line: the line is cut at its end, and the host matters more.
    t.append(f"{sep}host ", style=p.dim)
    t.append(" ".join(x for x in (h.host_name, h.host_version) if x) or "not yet known")
    if h.host_profile:
        t.append(f" ({h.host_profile}" + (f", budget from {h.host_clock})" if h.host_clock else ")"), style=p.dim)
    t.append(f"{sep}{h.upstream_kind or '?'} ", style=p.dim)
    t.append(fmt.clip(h.upstream_target or "?", 40))
    return t


def banner(h: HeaderView, feed_ok: bool, feed_text: str, fleet_badge: str = "") -> tuple[str, str]:
    """The banner's message and its colour (a palette name); the message is "" when there is nothing to say and
    the banner is hidden. `fleet_badge`: another wrapper in trouble (the Fleet view, F, says more)."""
    message = ""
    style = "status-warn"
    if not feed_ok:
        message = f"⚠ {feed_text}  ·  showing the last state received"
        style = "status-error"
    elif h.ended:
        message = f"the wrapper's session ended: {h.ended}"
    if fleet_badge:  # on the banner, from its first column: at the end of the top bar it showed only from ~260 columns
        message = f"⚑ {fleet_badge}" + (f"  ·  {message}" if message else "")
        style = "status-error"
    return message, style


def banner_line(message: str, style: str, p: Palette) -> Text:
    """The banner as drawn: bold, in its colour, from the second column."""
    return Text(f" {message}", style=p(style, "bold"))


def build(header: Mapping[str, Any], session_id: str | None, uptime_s: float, ended: str | None) -> HeaderView:
    """The header from the model's header fields (what session_start, host_info and upstream_state said)."""
    h = header
    return HeaderView(
        name=h.get("name"),
        pid=h.get("pid"),
        version=h.get("version"),
        session_id=session_id,
        front=h.get("front"),
        upstream_kind=h.get("upstream_kind"),
        upstream_target=h.get("upstream_target"),
        upstream_state=h.get("upstream_state"),
        generation=h.get("generation"),
        retry_in_s=h.get("retry_in_s"),
        exit_code=h.get("exit_code"),
        stderr_tail=h.get("stderr_tail", ()),
        host_name=h.get("host_name"),
        host_version=h.get("host_version"),
        protocol_version=h.get("protocol_version"),
        host_profile=h.get("host_profile"),
        host_clock=h.get("host_clock"),
        uptime_s=uptime_s,
        ended=ended,
        host_sessions=h.get("host_sessions"),
    )
