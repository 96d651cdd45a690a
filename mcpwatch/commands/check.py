"""`mcpwatch check [wrap options] -- CMD ARGS… | --url URL`: try the wrapper before adding it to a host's configuration.

It starts `mcpwatch wrap` exactly as a host would (stdio, no log), does the MCP handshake through it, lists the
tools, pings, and prints the budget each known host would get with these options.
"""

from __future__ import annotations

import argparse

from mcpwatch.errors import UserError

HELP = "check a server through the wrapper (handshake, tools, ping) and show the budget each known host would get"
STEP_TIMEOUT_S = 60.0  # the first start of an npx server may download it


def configure(parser: argparse.ArgumentParser) -> None:
    from mcpwatch.commands.wrap import add_budget_options
    from mcpwatch.config import add_config_option

    add_config_option(parser)
    add_budget_options(parser)
    parser.add_argument("--url", help="an upstream MCP server over Streamable HTTP")
    parser.add_argument("--header", action="append", default=[], metavar="'K: V'", help="an HTTP header for --url")
    parser.add_argument("--front", choices=("stdio", "http"), default="stdio", help="the front hosts will use")
    parser.add_argument("--timeout", type=float, default=STEP_TIMEOUT_S, metavar="S", help="limit for each step")
    parser.add_argument("command", nargs=argparse.REMAINDER, help="-- the upstream server's command line")


def _wrap_argv(args: argparse.Namespace, command: list[str]) -> list[str]:
    import sys

    argv = [sys.executable, "-m", "mcpwatch", "wrap", "--no-log", "--name", "mcpwatch-check"]
    if args.config:
        argv += ["--config", args.config]
    for flag, value in (
        ("--host-timeout", args.host_timeout),
        ("--margin", args.margin),
        ("--deadline", args.deadline),
    ):
        if value is not None:
            argv += [flag, str(value)]
    if args.url:
        argv += ["--url", args.url, *(item for header in args.header for item in ("--header", header))]
    else:
        argv += ["--", *command]
    return argv


def run(args: argparse.Namespace) -> int:
    import asyncio
    import math

    from mcpwatch.commands.wrap import _check_url, apply_budget_options
    from mcpwatch.config import load_settings

    command = list(args.command)
    if command and command[0] == "--":
        command = command[1:]
    if bool(command) == bool(args.url):
        raise UserError("give the upstream either as `-- CMD ARGS…` or as `--url URL` (exactly one)")
    if args.url:
        _check_url(args.url)
    if not (math.isfinite(args.timeout) and 0 < args.timeout <= 3600):
        raise UserError(f"--timeout must be a number of seconds from 0 to 3600, got {args.timeout}")
    apply_budget_options(args)
    settings = load_settings(args.config)
    from mcpwatch.checkup import budgets_by_host, print_report, probe
    from mcpwatch.commands._output import stdout_console

    report = asyncio.run(probe(_wrap_argv(args, command), args.timeout))
    print_report(report, budgets_by_host(settings, args.front), stdout_console())
    return 0 if report.ok else 1
