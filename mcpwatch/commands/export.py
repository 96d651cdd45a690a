"""`mcpwatch export [DB] --session ID --format jsonl|csv|otlp [-o FILE | --endpoint URL]`: a session for other tools.

`otlp` sends the session's calls as OpenTelemetry spans, with their original times, to a collector (the same spans
the wrapper exports live when OTEL_EXPORTER_OTLP_ENDPOINT is set)."""

from __future__ import annotations

import argparse

from mcpwatch.config import add_config_option

HELP = "export a session's events as JSON lines or CSV, or its calls as OpenTelemetry spans"


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("db", nargs="?", help="event log file (default: <state dir>/events.db)")
    parser.add_argument("--session", metavar="ID", help="session id or unique prefix (default: the latest)")
    parser.add_argument(
        "--format", choices=("jsonl", "csv", "otlp"), default="jsonl", help="output format (default jsonl)"
    )
    parser.add_argument("-o", "--output", metavar="FILE", help="write here instead of stdout")
    parser.add_argument(
        "--endpoint",
        metavar="URL",
        help="with --format otlp: the collector's OTLP/HTTP base URL (default: $OTEL_EXPORTER_OTLP_ENDPOINT)",
    )
    add_config_option(parser)


def run(args: argparse.Namespace) -> int:
    import contextlib
    import csv
    import json
    import sys
    from typing import TextIO

    from mcpwatch.errors import UserError
    from mcpwatch.logview.export import COLUMNS, csv_row, export_record
    from mcpwatch.store import EventReader, log_path
    from mcpwatch.terminal import SafeStream, safe

    if args.format == "otlp":
        return _send_otlp(args)
    with EventReader(log_path(args.db)) as reader:
        session = reader.session(args.session) if args.session else reader.latest_session()
        with contextlib.ExitStack() as stack:
            out: TextIO = SafeStream(sys.stdout)  # type: ignore[assignment]  # names may hold escape sequences
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
        print(f"exported {count} events of session {safe(session.id)} to {safe(args.output)}", file=sys.stderr)
    return 0


def _send_otlp(args: argparse.Namespace) -> int:
    import dataclasses
    import os
    import sys

    from mcpwatch.config import load_settings
    from mcpwatch.errors import UserError
    from mcpwatch.otel.config import OtelConfigError, resolve
    from mcpwatch.otel.spans import session_spans
    from mcpwatch.store import EventReader, log_path
    from mcpwatch.terminal import safe

    if args.output:
        raise UserError("--format otlp sends to a collector (--endpoint URL); it writes no file")
    env = dict(os.environ)
    if args.endpoint:
        env["OTEL_EXPORTER_OTLP_ENDPOINT"] = args.endpoint
        env.pop("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", None)
    settings = load_settings(args.config).otel
    try:
        # asked for on the command line: on wherever an endpoint is given, even if the file turns live export off
        target = resolve(env, dataclasses.replace(settings, enabled=None))
    except OtelConfigError as exc:
        raise UserError(f"cannot export over OTLP: {exc}") from None
    if target is None or target.traces_url is None:
        raise UserError("--format otlp needs a collector: --endpoint URL or OTEL_EXPORTER_OTLP_ENDPOINT")
    try:
        from mcpwatch.otel.exporter import SpanSender
    except ImportError:
        raise UserError("--format otlp needs the OpenTelemetry packages: pip install 'mcpwatch[otel]'") from None
    with EventReader(log_path(args.db)) as reader:
        session = reader.session(args.session) if args.session else reader.latest_session()
        spans = session_spans(reader.events(session.id))
    sender = SpanSender(target, target.traces_url)
    sent = 0
    try:
        for start in range(0, len(spans), 512):
            batch = spans[start : start + 512]
            if not sender.send(batch):
                break  # a collector that refused (or did not answer) once is not asked 5 s per batch for the rest
            sent += len(batch)
    finally:
        sender.shutdown()
    if sent < len(spans):
        why = sender.session.last_problem or "it did not take them"
        raise UserError(f"the collector at {target.traces_url} took {sent} of {len(spans)} spans ({why})")
    print(f"sent {sent} spans of session {safe(session.id)} to {safe(target.traces_url)}", file=sys.stderr)
    return 0
