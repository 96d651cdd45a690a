"""`mcpwatch whatif [DB] [--session ID] (--budget S | --margin S [--host-timeout S] | --host NAME) [--json]`: which
tool calls of a session another budget would have saved or cut, from their true durations (late results included)."""

from __future__ import annotations

import argparse
from typing import Any

from mcpwatch.config import add_config_option

HELP = "replay a session's tool calls against another budget: calls saved, newly cut, and the budget that saves them"
ALL_CALLS_SHOWN = 50


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("db", nargs="?", help="event log file (default: <state dir>/events.db)")
    parser.add_argument("--session", metavar="ID", help="session id or unique prefix (default: the latest)")
    which = parser.add_mutually_exclusive_group()
    which.add_argument("--budget", metavar="S", type=_seconds_arg, help="this budget for every call (≤ 0: none)")
    which.add_argument("--margin", metavar="S", type=_seconds_arg, help="host timeout − this margin")
    which.add_argument(
        "--host",
        metavar="NAME",
        help="the budget this host would give: its profile's earliest clock − the session's margin (mcpwatch hosts)",
    )
    parser.add_argument(
        "--host-timeout",
        metavar="S",
        type=_seconds_arg,
        help="this host timeout (with the log's margin, or --margin's), as the report's advice names it",
    )
    parser.add_argument("--json", action="store_true", help="print one JSON object instead of tables")
    add_config_option(parser)  # for [hosts.*] overrides


def _seconds_arg(text: str) -> float:
    """Seconds by the wrapper's own rule (`reliability.seconds`), in its words; ≤ 0 as a budget means none."""
    from mcpwatch.reliability.seconds import InvalidValue, check_seconds

    try:
        return check_seconds(text, "the value", allow_negative=True, budget=True)
    except InvalidValue as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def run(args: argparse.Namespace) -> int:
    from mcpwatch.errors import UserError
    from mcpwatch.logview.whatif import WHATIF_KINDS, CallFold, hypothetical_budget, whatif
    from mcpwatch.store import EventReader, log_path

    if args.budget is None and args.margin is None and args.host is None and args.host_timeout is None:
        raise UserError("say which budget to test: --budget S, --margin S, --host-timeout S or --host NAME")
    if args.host_timeout is not None and (args.budget is not None or args.host is not None):
        raise UserError("--host-timeout goes with --margin or alone (the budget is host timeout − margin)")
    if args.margin is not None and args.margin < 0:
        raise UserError(f"--margin must not be negative, got {args.margin:g}")
    if args.host_timeout is not None and args.host_timeout <= 0:
        raise UserError(f"--host-timeout must be greater than 0, got {args.host_timeout:g}")
    fold = CallFold()  # the session is folded as it streams, never held (a long session is millions of events)
    with EventReader(log_path(args.db)) as reader:
        session = reader.session(args.session) if args.session else reader.latest_session()
        for event in reader.events(session.id, kinds=WHATIF_KINDS):
            fold.add(event)
        for event in reader.request_events(session.id, fold.needing_progress(), "progress"):
            fold.add_progress(event)  # the few calls to estimate: their pace
        started = list(reader.events(session.id, kinds=["session_start"], limit=1))
    deadline = fold.deadline
    host_timeout, host = args.host_timeout, None
    if args.host is not None:
        host = _host_clock(args, started)
        host_timeout = host["host_timeout_s"]
    margin = args.margin if args.host is None else _session_margin(deadline, session.id)
    try:
        budget = hypothetical_budget(deadline, budget_s=args.budget, margin_s=margin, host_timeout_s=host_timeout)
    except ValueError as exc:
        raise UserError(f"session {session.id}: {exc} (--host-timeout S)") from None
    # a margin or host timeout moves only the budgets derived from them: per-tool and explicit ones stay
    # with no host timeout given, a new margin applies to each call's own host clock (each host its own)
    per_clock_margin = args.margin if args.host_timeout is None else None
    figures = whatif(
        fold.calls(),
        budget,
        keep_fixed=args.budget is None,
        margin_s=per_clock_margin,
        by_tier=fold.by_tier,
    )
    figures["session_id"] = session.id
    if host is not None:
        figures["host"] = host
    if args.json:
        from mcpwatch.commands._output import print_json

        print_json(figures)
        return 0
    from mcpwatch.commands._output import stdout_console

    _render(stdout_console(), figures, deadline)
    return 0


def _session_margin(deadline: dict[str, Any] | None, session_id: str) -> float:
    from mcpwatch.errors import UserError

    margin = (deadline or {}).get("margin_s")
    if isinstance(margin, bool) or not isinstance(margin, int | float):
        raise UserError(f"session {session_id}: the log does not say its margin; use --margin S --host-timeout S")
    return float(margin)


def _host_clock(args: argparse.Namespace, events: list[Any]) -> dict[str, Any]:
    """The host's profile (by key or client name) and the clock that would end a call on the session's front."""
    from mcpwatch.config import load_settings
    from mcpwatch.errors import UserError
    from mcpwatch.reliability.deadline import DEFAULT_HOST_TIMEOUT_S
    from mcpwatch.reliability.hosts import catalog

    settings = load_settings(args.config)
    profiles = catalog(settings.hosts, settings.source or "mcpwatch.toml")
    front = next((e.data.get("front") for e in events if e.kind == "session_start"), None)
    front = front if front in ("stdio", "http") else "stdio"
    profile = profiles.get(args.host) or profiles.match(args.host, front)
    if profile is None:
        raise UserError(f"no host profile named {args.host!r} (mcpwatch hosts lists them)")
    clock = profile.deciding_clock(front, progress=False)  # calls without a progress token: every clock counts
    return {
        "profile": profile.key,
        "label": profile.label,
        "front": front,
        "clock": None if clock is None else clock.to_dict(),
        "host_timeout_s": DEFAULT_HOST_TIMEOUT_S if clock is None else clock.seconds,
        "text": f"the default {DEFAULT_HOST_TIMEOUT_S:g} s (no {profile.label} clock ends a call on the {front} front)"
        if clock is None
        else f"{profile.label} {clock.describe()}",
    }


def _render(console: Any, figures: dict[str, Any], deadline: dict[str, Any] | None) -> None:
    from rich.markup import escape
    from rich.table import Table

    from mcpwatch.logview.units import format_duration

    budget = figures["budget_s"]
    label = "no budget" if budget is None else f"budget {format_duration(budget)}"
    if figures.get("host"):
        label += f" ({escape(figures['host']['text'])} − the session's margin)"
    now = (deadline or {}).get("budget_s")
    now_text = "none" if now is None else format_duration(now)
    console.print(
        f"[bold]{label}[/] against {figures['calls']} tool calls of session {escape(figures['session_id'])} "
        f"(budget at the end of the session: {now_text}; {figures['cut_now']} cut by their budget)"
    )
    if figures["kept_own_budget"]:
        console.print(
            f"{figures['kept_own_budget']} calls keep their own budget (per tool or explicit: the margin and host "
            "timeout do not move it)"
        )
    if not figures["calls"]:
        console.print("no tool calls in this session")
        return
    console.print(
        f"known (true durations): saved {figures['saved']}, newly cut {figures['newly_cut']}; "
        f"likely (estimated, basis per call below): saved {figures['likely_saved']}, still cut "
        f"{figures['likely_cut']}, whole instead of degraded {figures['likely_whole']}; unknown {figures['unknown']} "
        "(never answered and no basis for an estimate: not counted as saved)"
    )
    tools = Table(title="per tool", title_justify="left")
    columns = ("calls", "cut_now", "degraded", "saved", "newly_cut", "likely_saved", "likely_cut", "likely_whole")
    for header in ("tool", *columns, "unknown"):
        tools.add_column(header.replace("_", " "), justify="left" if header == "tool" else "right")
    for name, row in figures["per_tool"].items():
        tools.add_row(escape(name), *(str(row[k]) for k in (*columns, "unknown")))
    console.print(tools)
    items = figures["items"]
    shown = items if len(items) <= ALL_CALLS_SHOWN else [i for i in items if i["change"] or i["verdict"] == "unknown"]
    calls = Table(title="calls" if shown is items else "calls whose fate changes or is unknown", title_justify="left")
    for header in ("request", "tool", "now", "true duration", "under this budget", "estimate (basis, confidence)"):
        calls.add_column(header, justify="right" if header == "true duration" else "left")
    for item in shown:
        if item["true_s"] is not None:
            true = format_duration(item["true_s"]) + (" (late)" if item["late"] else "")
        else:
            true = f"> {format_duration(item['at_least_s'])}, never answered" if item["at_least_s"] else "unknown"
        verdict = item["verdict"].replace("_", " ")
        if item["change"]:
            verdict += f" ({item['change'].replace('_', ' ')})"
        guess = item["estimate"]
        about = (
            "-" if guess is None else f"{format_duration(guess['seconds'])}: {guess['basis']}, {guess['confidence']}"
        )
        cells = (str(item["request_id"]), item["tool"], str(item["outcome"] or "unfinished"), true, verdict, about)
        calls.add_row(*(escape(cell) for cell in cells))
    console.print(calls)
    save = figures["budget_to_save"]
    if figures["cut_now"]:
        parts = [f"{name} {format_duration(save[name]) if save[name] is not None else 'unknown'}" for name in save]
        console.print(f"smallest budget saving the cut calls (known): {', '.join(parts)}")
        likely = figures["likely_budget_to_save"]
        if likely != save:
            parts = [f"{k} {format_duration(likely[k]) if likely[k] is not None else 'unknown'}" for k in likely]
            console.print(f"with the estimates (likely): {', '.join(parts)}")
