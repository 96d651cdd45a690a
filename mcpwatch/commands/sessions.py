"""`mcpwatch sessions [DB]`: the sessions in an event log, as a table (or JSON)."""

from __future__ import annotations

import argparse

HELP = "list the sessions recorded in an event log"


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("db", nargs="?", help="event log file (default: <state dir>/events.db)")
    parser.add_argument("--json", action="store_true", help="print JSON instead of a table")


def run(args: argparse.Namespace) -> int:
    import json
    import sys

    from rich.console import Console
    from rich.markup import escape
    from rich.table import Table

    from mcpwatch.logview.units import format_duration, format_time
    from mcpwatch.store import EventReader, log_path

    path = log_path(args.db)
    with EventReader(path) as reader:
        sessions = reader.sessions()
    if args.json:
        print(json.dumps([s.to_dict() for s in sessions], indent=2))
        return 0
    console = Console(width=None if sys.stdout.isatty() else 200)
    if not sessions:
        console.print(f"no sessions in {path}", markup=False)
        return 0
    table = Table(title=escape(f"{len(sessions)} sessions in {path}"), title_justify="left")
    for header in ("id", "name", "upstream", "start", "duration"):
        table.add_column(header, no_wrap=header in ("id", "start"))
    for header in ("requests", "timeouts", "late drops"):
        table.add_column(header, justify="right")
    for s in sessions:
        duration = format_duration(s.duration) + ("" if s.ended_at is not None else " (open)")
        table.add_row(
            escape(s.id),
            escape(s.name or ""),
            escape(s.upstream or ""),
            format_time(s.started_at),
            duration,
            str(s.requests),
            str(s.timeouts),
            str(s.late_drops),
        )
    console.print(table)
    return 0
