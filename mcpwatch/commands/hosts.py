"""`mcpwatch hosts [--json]`: the host profiles (built-in and from mcpwatch.toml) and the clocks each runs on;
`hosts scan` the servers each host's config file holds; `hosts wrap|unwrap` puts mcpwatch in front of them."""

from __future__ import annotations

import argparse

from mcpwatch.config import add_config_option

HELP = "list the known MCP hosts: the client names they send, their tools/call clocks, and where each value is from"


def configure(parser: argparse.ArgumentParser) -> None:
    add_config_option(parser)
    parser.add_argument("--json", action="store_true", help="print JSON instead of a table")
    actions = parser.add_subparsers(dest="action", metavar="{scan,wrap,unwrap}")
    scan = actions.add_parser("scan", help="list every MCP server in the hosts' config files, with its budget")
    _config_option(scan)
    scan.add_argument("--json", action="store_true", default=argparse.SUPPRESS, help="print JSON instead of a table")
    scan.add_argument("files", nargs="*", metavar="FILE", help="more config files to read")
    for name, what in (("wrap", "put mcpwatch in front of"), ("unwrap", "take mcpwatch away from")):
        action = actions.add_parser(name, help=f"{what} configured servers, in their hosts' config files")
        _config_option(action)
        action.add_argument("servers", nargs="*", metavar="SERVER", help="the servers' keys in the config")
        action.add_argument("--all", action="store_true", help="every server (of --host, if given)")
        action.add_argument("--host", help="only this host's files (claude-code, codex, gemini-cli, vscode, …)")
        action.add_argument("--file", action="append", default=[], metavar="PATH", help="also a config file by path")
        action.add_argument("--dry-run", action="store_true", help="print the diff; change nothing")
        action.add_argument(
            "--via-cli",
            action="store_true",
            help="change Claude Code's entries with its own `claude mcp add-json` when it is installed (the entry "
            "moves to the end of its table; the default edits in place, so unwrap restores the file exactly)",
        )


def _config_option(parser: argparse.ArgumentParser) -> None:
    """`--config` after the action too; left unset when not given there, so one given before the action stays."""
    parser.add_argument(
        "--config", metavar="PATH", default=argparse.SUPPRESS, help="mcpwatch.toml to use (as before the action)"
    )


def run(args: argparse.Namespace) -> int:
    if getattr(args, "action", None) == "scan":
        from mcpwatch.commands._hosts_config import run_scan

        return run_scan(args)
    if getattr(args, "action", None) in ("wrap", "unwrap"):
        from mcpwatch.commands._hosts_config import run_change

        return run_change(args)
    from mcpwatch.config import load_settings
    from mcpwatch.reliability.hosts import catalog

    settings = load_settings(args.config)
    profiles = catalog(settings.hosts, settings.source or "mcpwatch.toml").profiles
    if args.json:
        from mcpwatch.commands._output import print_json

        print_json([p.to_dict() for p in profiles])
        return 0
    from rich.markup import escape
    from rich.table import Table

    from mcpwatch.commands._output import stdout_console
    from mcpwatch.reliability.deadline import fmt_seconds

    table = Table(title="MCP host profiles (the budget is the earliest clock that would end a call − margin)")
    for column in ("host", "client names", "clock", "default", "set with", "source"):
        table.add_column(column, overflow="fold")
    for profile in profiles:
        names = ", ".join(profile.names) + (f" ({'/'.join(profile.fronts)} front)" if profile.fronts else "")
        clocks = profile.clocks or ()
        if not clocks:
            table.add_row(escape(profile.label), escape(names), "none known", "-", "-", escape(profile.source))
        for index, clock in enumerate(clocks):
            kind = clock.kind + (", reset by progress" if clock.resets_on_progress else "")
            if tuple(clock.fronts) != ("stdio", "http"):
                kind += f", {'/'.join(clock.fronts)} only"
            default = fmt_seconds(clock.seconds) + " s" + (" (uncertain)" if clock.uncertain else "")
            first = index == 0
            table.add_row(
                escape(profile.label) if first else "",
                escape(names) if first else "",
                escape(kind),
                escape(default),
                escape(clock.change or clock.setting),
                escape(clock.source or profile.source),
            )
        if profile.origin != "built-in":
            table.add_row("", f"[dim](from {escape(profile.origin)})[/]", "", "", "", "")
    stdout_console().print(table)
    return 0
