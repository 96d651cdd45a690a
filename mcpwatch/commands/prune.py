"""`mcpwatch prune [DB] --older-than 7d [--dry-run]`: delete old sessions and their events."""

from __future__ import annotations

import argparse

HELP = "delete sessions that ended longer ago than --older-than (e.g. 7d, 12h, 30m); live wrappers' are kept"


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("db", nargs="?", help="event log file (default: <state dir>/events.db)")
    parser.add_argument(
        "--older-than", required=True, metavar="AGE", help="age with a unit: s, m, h, d or w, e.g. 7d (required)"
    )
    parser.add_argument("--dry-run", action="store_true", help="list what would be pruned, delete nothing")
    parser.add_argument("--vacuum", action="store_true", help="compact the file afterwards (needs it unused)")


def _plural(n: int, word: str) -> str:
    return f"{n} {word}{'' if n == 1 else 's'}"


def run(args: argparse.Namespace) -> int:
    from mcpwatch.errors import UserError
    from mcpwatch.logview.units import format_time, parse_age
    from mcpwatch.store import log_path, prune
    from mcpwatch.terminal import safe

    try:
        age = parse_age(args.older_than)
    except ValueError as exc:
        raise UserError(f"--older-than: {exc}") from None
    path = log_path(args.db)
    result = prune(path, age, vacuum=args.vacuum and not args.dry_run, dry_run=args.dry_run)
    older = f"older than {args.older_than.strip()}"
    if args.dry_run:
        print(f"would prune {_plural(result.removed, 'session')} {older} from {path}")
        for c in result.pruned:
            last = (
                f"ended {format_time(c.ended_at)}" if c.ended_at is not None else f"last event {format_time(c.last_at)}"
            )
            print(f"  {safe(c.id)}  {safe(c.name or '-')}  {last}  {_plural(c.events, 'event')}")
    else:
        print(f"pruned {_plural(result.removed, 'session')} {older} from {path}")
    if result.kept_running:
        kept = len(result.kept_running)
        pids = ", ".join(sorted({str(c.pid) for c in result.kept_running}))
        whose = "its wrapper is" if kept == 1 else "their wrappers are"
        print(f"kept {_plural(kept, 'open session')} {older}: {whose} still running (pid {pids})")
    return 0
