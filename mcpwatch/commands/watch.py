"""`mcpwatch watch [NAME|PID|URL]`: the live operator console (also what plain `mcpwatch` runs)."""

from __future__ import annotations

import argparse

from mcpwatch.config import add_config_option

HELP = "the live operator console for running wrappers (also plain `mcpwatch`)"


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "target",
        nargs="?",
        metavar="NAME|PID|URL",
        help="which wrapper: its name or pid in the registry, or its operator URL (default: all running ones)",
    )
    parser.add_argument("--theme", metavar="NAME", help="colour theme (default: console.theme in mcpwatch.toml)")
    parser.add_argument("--token", metavar="T", help="operator token, for a URL not in the registry")
    parser.add_argument(
        "--serve", action="store_true", help="serve the console in a browser (127.0.0.1 only, behind a printed token)"
    )
    parser.add_argument("--port", type=int, default=8765, metavar="P", help="port for --serve (default 8765)")
    add_config_option(parser)


def run(args: argparse.Namespace) -> int:
    from mcpwatch.console import launch

    return launch(
        args.target,
        theme=args.theme,
        token=args.token,
        config=args.config,
        serve_port=args.port if args.serve else None,
    )
