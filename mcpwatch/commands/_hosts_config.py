"""`mcpwatch hosts scan` and `hosts wrap|unwrap`: the terminal side of `mcpwatch.hostconfig`."""

from __future__ import annotations

import argparse
import os
from pathlib import Path
from typing import TYPE_CHECKING

from mcpwatch.errors import UserError

if TYPE_CHECKING:
    from mcpwatch.hostconfig.scan import Scan


def _scan(args: argparse.Namespace, extra: list[str]) -> Scan:
    from mcpwatch.config import load_settings
    from mcpwatch.hostconfig.scan import scan
    from mcpwatch.reliability.hosts import catalog

    settings = load_settings(args.config)
    profiles = catalog(settings.hosts, settings.source or "mcpwatch.toml")
    given = [Path(f).expanduser().absolute() for f in extra]
    return scan(Path.home(), Path.cwd(), given, profiles, settings.deadline, os.environ)


def run_scan(args: argparse.Namespace) -> int:
    from mcpwatch.hostconfig.entries import display
    from mcpwatch.reliability.seconds import fmt_seconds

    found = _scan(args, args.files)
    if args.json:
        from mcpwatch.commands._output import print_json

        print_json(found.to_dict())
        return 0
    from rich.markup import escape
    from rich.table import Table

    from mcpwatch.commands._output import stdout_console

    console = stdout_console()
    table = Table(title="MCP servers in the hosts' config files (budget: with a progress token)")
    for column in ("host", "server", "scope", "transport", "wrapped", "host timeout", "budget", "file"):
        table.add_column(column, overflow="fold")
    for row in found.rows:
        entry = row.entry
        timeout = row.timeout
        host_s = "none" if timeout.seconds is None else f"{fmt_seconds(timeout.seconds)} s"
        budget = row.budget.budget.seconds
        wrapped = "no" if entry.wrap is None else ("yes" if entry.wrap.host_config else "yes (no --host-config)")
        table.add_row(
            escape(entry.host.label),
            escape(entry.key),
            escape(entry.scope),
            escape(f"{entry.transport}: {entry.target}"),
            escape(wrapped),
            escape(f"{host_s} ({timeout.source})"),
            ("[red]" if row.budget.disagrees else "")
            + escape("none" if budget is None else f"{fmt_seconds(budget)} s")
            + ("[/]" if row.budget.disagrees else ""),
            escape(display(entry.file)),
        )
    console.print(table)
    for row in found.rows:
        if row.budget.disagrees:
            console.print(
                f"[red]![/] {escape(row.entry.host.label)} {escape(row.entry.key)}: {escape(row.budget.disagrees)}"
            )
    for config in found.files:
        if config.problem:
            console.print(
                f"[yellow]unreadable[/] {escape(display(config.path))} ({escape(config.host.label)}): "
                f"{escape(config.problem)}"
            )
    if not found.files:
        console.print("No host config files found (looked in the well-known places; give a file by path).")
    return 0


def run_change(args: argparse.Namespace) -> int:
    from mcpwatch.hostconfig.change import ChangeError, carry_out, choose, prepare
    from mcpwatch.hostconfig.formats import FORMATS
    from mcpwatch.hostconfig.wrapargs import this_program

    if args.host is not None and args.host not in {f.key for f in FORMATS}:
        raise UserError(f"--host must be one of {', '.join(f.key for f in FORMATS)}, got {args.host!r}")
    if args.all and args.servers:
        raise UserError("give server names or --all, not both")
    found = _scan(args, args.file)
    try:
        chosen = choose(found.files, list(args.servers), args.all, args.host)
        outcome = prepare(chosen, args.action, this_program(), explicit=bool(args.servers))
        lines = carry_out(outcome, args.dry_run, args.via_cli, Path.home(), Path.cwd())
    except ChangeError as exc:
        raise UserError(str(exc)) from None
    from rich.markup import escape

    from mcpwatch.commands._output import stdout_console

    console = stdout_console()
    for line in lines or ["nothing to change"]:
        console.print(escape(line), highlight=False, soft_wrap=True)
    return 0
