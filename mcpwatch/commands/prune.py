"""`mcpwatch prune [DB] --older-than 7d`: delete old sessions and their events."""

from __future__ import annotations

import argparse

HELP = "delete sessions that ended longer ago than --older-than (e.g. 7d, 12h, 30m)"


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("db", nargs="?", help="event log file (default: <state dir>/events.db)")
    parser.add_argument("--older-than", required=True, metavar="AGE", help="age with s, m, h or d suffix, e.g. 7d")
    parser.add_argument("--vacuum", action="store_true", help="compact the file afterwards (needs it unused)")


def run(args: argparse.Namespace) -> int:
    from mcpwatch.errors import UserError
    from mcpwatch.logview.units import format_duration, parse_age
    from mcpwatch.store import log_path, prune

    try:
        age = parse_age(args.older_than)
    except ValueError as exc:
        raise UserError(f"--older-than: {exc}") from None
    path = log_path(args.db)
    removed = prune(path, age, vacuum=args.vacuum)
    print(f"pruned {removed} session{'s' if removed != 1 else ''} older than {format_duration(age)} from {path}")
    return 0
