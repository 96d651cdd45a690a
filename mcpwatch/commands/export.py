"""`mcpwatch export [DB] --session ID --format jsonl|csv [-o FILE]`: a session's events for other tools."""

from __future__ import annotations

import argparse

HELP = "export a session's events as JSON lines or CSV"


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("db", nargs="?", help="event log file (default: <state dir>/events.db)")
    parser.add_argument("--session", metavar="ID", help="session id or unique prefix (default: the latest)")
    parser.add_argument("--format", choices=("jsonl", "csv"), default="jsonl", help="output format (default jsonl)")
    parser.add_argument("-o", "--output", metavar="FILE", help="write here instead of stdout")


def run(args: argparse.Namespace) -> int:
    import contextlib
    import csv
    import json
    import sys
    from typing import TextIO

    from mcpwatch.errors import UserError
    from mcpwatch.logview.export import COLUMNS, csv_row, export_record
    from mcpwatch.store import EventReader, log_path

    with EventReader(log_path(args.db)) as reader:
        session = reader.session(args.session) if args.session else reader.latest_session()
        with contextlib.ExitStack() as stack:
            out: TextIO = sys.stdout
            if args.output:
                try:
                    out = stack.enter_context(open(args.output, "w", encoding="utf-8", newline=""))
                except OSError as exc:
                    raise UserError(f"{args.output}: cannot write the export ({exc.strerror})") from None
            count = 0
            # `mcpwatch export | head`: the BrokenPipeError of a closed stdout ends the command quietly in cli.main
            if args.format == "csv":
                writer = csv.writer(out)
                writer.writerow(COLUMNS)
                for event in reader.events(session.id):
                    writer.writerow(csv_row(export_record(event)))
                    count += 1
            else:
                for event in reader.events(session.id):
                    out.write(json.dumps(export_record(event), ensure_ascii=False) + "\n")
                    count += 1
            out.flush()
    if args.output:
        print(f"exported {count} events of session {session.id} to {args.output}", file=sys.stderr)
    return 0
