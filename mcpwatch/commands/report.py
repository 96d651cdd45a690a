"""`mcpwatch report [DB] [--session ID] [--json]`: per tool and per model figures for one session."""

from __future__ import annotations

import argparse
from typing import Any

HELP = (
    "summarise a session: per tool, host and model outcomes and durations, tier fit, calls that finished late, "
    "deadline changes"
)


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("db", nargs="?", help="event log file (default: <state dir>/events.db)")
    parser.add_argument("--session", metavar="ID", help="session id or unique prefix (default: the latest)")
    parser.add_argument("--json", action="store_true", help="print JSON instead of tables")


def run(args: argparse.Namespace) -> int:
    import gc

    from mcpwatch.commands._output import print_json, stdout_console
    from mcpwatch.commands._progress import Progress
    from mcpwatch.logview.report import REPORT_KINDS, build_report
    from mcpwatch.registry import remove_ghosts
    from mcpwatch.store import EventReader, log_path

    remove_ghosts()
    progress = Progress()
    gc.disable()  # the read makes millions of short-lived objects and no cycles: collecting them costs ~15 %
    try:
        with EventReader(log_path(args.db)) as reader:
            session = reader.session(args.session) if args.session else reader.latest_session()
            events = progress.reading(reader.events(session.id, kinds=REPORT_KINDS), reader.max_seq(session.id))
            report = build_report(
                events,
                session.to_dict(),
                on_phase=progress.phase,
                progress_of=lambda ids: reader.request_events(session.id, ids, "progress"),
            )
    finally:
        gc.enable()
        progress.close()
    if args.json:
        print_json(report)
        return 0

    _render(stdout_console(), report)
    return 0


def _seconds(value: float | None) -> str:
    from mcpwatch.logview.units import format_duration

    return format_duration(value)


def _render(console: Any, report: dict[str, Any]) -> None:
    """The report as tables, one section after the other (each section prints nothing when it has nothing)."""
    _render_session(console, report)
    _render_tools(console, report["tools"])
    _render_hosts(console, report.get("hosts"))
    _render_models(console, report["models"])
    _render_deadline(console, report["deadline"]["final"] or {})
    _render_tiers(console, report["tiers"])
    _render_finished_late(console, report.get("finished_late") or [])
    _render_changes(console, report["config_changes"])
    _render_warnings(console, report["warnings"])


def _render_session(console: Any, report: dict[str, Any]) -> None:
    """The session's lines: which, how long, how many requests and outcomes, the tasks."""
    from rich.markup import escape

    from mcpwatch.logview.units import crashed_note, format_time, session_duration

    s = report["session"]
    requests = report["requests"]
    state = s.get("state") or ("ended" if s["ended_at"] is not None else "crashed")
    length = session_duration(s["duration"], state)  # as `mcpwatch sessions` shows it
    if state == "ended":
        length += f" (ended: {s['end_reason'] or '-'})"
    console.print(f"[bold]session {escape(s['id'])}[/] {escape(s['name'] or '')} → {escape(s['upstream'] or '-')}")
    console.print(
        f"started {format_time(s['started_at'])}, {escape(length)}, {requests['total']} requests, {s['events']} events"
    )
    if state == "crashed":
        console.print(crashed_note(s["id"], s.get("last_event_at")), markup=False, highlight=False)
    if requests["by_outcome"]:
        outcomes = escape(", ".join(f"{k} {v}" for k, v in requests["by_outcome"].items()))
        console.print(f"outcomes: {outcomes}; unfinished {requests['unfinished']}")
    if report.get("tasks"):
        from mcpwatch.logview.tasks_report import section_lines

        for line in section_lines(report["tasks"], _seconds):
            console.print(escape(line))
    elif requests.get("tasks"):
        console.print(
            f"tasks: {requests['tasks']} calls ran as MCP tasks (each one request, creation to terminal status); "
            f"{requests['task_polls']} polls attributed to them, not counted as requests"
        )


def _render_tools(console: Any, rows: list[dict[str, Any]]) -> None:
    from rich.markup import escape
    from rich.table import Table

    tools = Table(title="tools", title_justify="left")
    for header in (
        "tool",
        "calls",
        "ok",
        "degraded",
        "errors",
        "deadlines",
        "cancelled",
        "p50",
        "p95",
        "max",
        "late drops",
    ):
        tools.add_column(header, justify="left" if header == "tool" else "right")
    for t in rows:
        tools.add_row(
            escape(t["tool"]),
            *(str(t[k]) for k in ("calls", "ok", "degraded", "errors", "deadlines", "cancelled")),
            _seconds(t["p50_s"]),
            _seconds(t["p95_s"]),
            _seconds(t["max_s"]),
            str(t["late_drops"]),
        )
    console.print(tools if rows else "no tool calls")


def _render_hosts(console: Any, rows: list[dict[str, Any]] | None) -> None:
    from rich.markup import escape
    from rich.table import Table

    if not rows:
        return
    hosts = Table(title="hosts", title_justify="left")
    for header in (
        "host",
        "client names",
        "calls",
        "ok",
        "degraded",
        "errors",
        "deadlines",
        "cancelled",
        "p95",
        "budgets",
    ):
        hosts.add_column(header, justify="left" if header in ("host", "client names", "budgets") else "right")
    for h in rows:
        budgets = ", ".join(_seconds(b) for b in h["budgets_s"]) or "-"
        if h["clock"]:
            budgets += f" (from {h['clock']})"
        hosts.add_row(
            escape(h["host"]),
            escape(", ".join(h["client_names"]) or "-"),
            *(str(h[k]) for k in ("calls", "ok", "degraded", "errors", "deadlines", "cancelled")),
            _seconds(h["p95_s"]),
            escape(budgets),
        )
    console.print(hosts)


def _render_models(console: Any, rows: list[dict[str, Any]]) -> None:
    from rich.markup import escape
    from rich.table import Table

    if not rows:
        return
    models = Table(title="models", title_justify="left")
    for header in ("model", "calls", "ok", "timeouts", "rate limited", "auth errors", "errors", "p50", "p95"):
        models.add_column(header, justify="left" if header == "model" else "right")
    models.add_column("max", justify="right")
    for m in rows:
        models.add_row(
            escape(m["model"]),
            *(str(m[k]) for k in ("calls", "ok", "timeouts", "rate_limited", "auth_errors", "errors")),
            _seconds(m["p50_s"]),  # the same format as the tools' durations: one unit across the report
            _seconds(m["p95_s"]),
            _seconds(m["max_s"]),
        )
    console.print(models)


def _render_deadline(console: Any, deadline: dict[str, Any]) -> None:
    from rich.markup import escape

    if not deadline:
        return
    source = escape(str(deadline.get("source") or "-"))
    console.print(
        f"deadline budget {_seconds(deadline.get('budget_s'))} (source {source}; "
        f"host timeout {_seconds(deadline.get('host_timeout_s'))}, margin {_seconds(deadline.get('margin_s'))})"
    )


def _render_tiers(console: Any, tiers: dict[str, Any] | None) -> None:
    from rich.markup import escape
    from rich.table import Table

    from mcpwatch.logview.units import format_time

    if not tiers:
        return
    budget = f"{tiers['basis']} {_seconds(tiers['budget_s'])}"
    console.print(f"[italic]tiers vs {budget}[/] (health check at {format_time(tiers['checked_ts'])})")
    table = Table()
    for header in ("tier", "total", "per model", "fits"):
        table.add_column(header, justify="left" if header == "tier" else "right")
    for item in tiers["items"]:
        fits = {True: "yes", False: f"NO (over by {_seconds(item['over_by_s'])})", None: "?"}[item["fits"]]
        table.add_row(escape(item["tier"]), _seconds(item["total_s"]), _seconds(item["per_model_s"]), fits)
    console.print(table)
    if tiers["not_fitting"]:
        console.print(f"[bold red]tiers that do not fit the budget:[/] {escape(', '.join(tiers['not_fitting']))}")


def _render_changes(console: Any, rows: list[dict[str, Any]]) -> None:
    from rich.markup import escape
    from rich.table import Table

    from mcpwatch.logview.units import format_time

    if not rows:
        return
    changes = Table(title="configuration changes", title_justify="left")
    for header in ("time", "key", "old", "new", "source"):
        changes.add_column(header)
    for c in rows:
        cells = (str(c["key"]), str(c["old"]), str(c["new"]), str(c["source"] or ""))
        changes.add_row(format_time(c["ts"]), *(escape(cell) for cell in cells))
    console.print(changes)


def _render_warnings(console: Any, warnings: dict[str, Any]) -> None:
    from rich.markup import escape

    if warnings["count"]:
        plural = "s" if warnings["count"] != 1 else ""
        first = escape(str(warnings["first"][0]["message"]))
        console.print(f"{warnings['count']} warning{plural}; first: {first}")


def _render_finished_late(console: Any, rows: list[dict[str, Any]]) -> None:
    """Calls cut short (cut, or answered degraded): how many, what they needed (known, likely, unknown) and the
    change that would have saved them."""
    from rich.markup import escape
    from rich.table import Table

    if not rows:
        return
    table = Table(
        title="cut short (cut by the budget or degraded; finished late: answered later)", title_justify="left"
    )
    for header in (
        "tool",
        "tier",
        "cut",
        "degraded",
        "finished late",
        "p50 delay",
        "p95 delay",
        "known",
        "likely",
        "unknown",
    ):
        table.add_column(header, justify="left" if header in ("tool", "tier") else "right")
    for row in rows:
        table.add_row(
            escape(row["tool"]),
            escape(row["tier"] or "-"),
            str(row["cut"]),
            str(row["degraded"]),
            str(row["finished_late"]),
            "+" + _seconds(row["p50_delay_s"]) if row["p50_delay_s"] is not None else "-",
            "+" + _seconds(row["p95_delay_s"]) if row["p95_delay_s"] is not None else "-",
            *(str(row[k]) for k in ("known", "likely", "unknown")),
        )
    console.print(table)
    with_tiers = {row["tool"] for row in rows if row["tier"] is not None}
    for row in rows:  # a council's advice is per tier: each tier needs its own time
        if (row["tier"] is None) != (row["tool"] in with_tiers):
            console.print(escape(row["advice"]))
