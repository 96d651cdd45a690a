"""`mcpwatch watch [NAME|PID|URL]`: the live operator console (also what plain `mcpwatch` runs)."""

from __future__ import annotations

import argparse
import os

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
    _refuse_a_log_file(args.target)
    from mcpwatch.console import launch

    return launch(
        args.target,
        theme=args.theme,
        token=args.token,
        config=args.config,
        serve_port=args.port if args.serve else None,
    )


def _refuse_a_log_file(target: str | None) -> None:
    """A path to a file is a log someone means to look at, not a wrapper to wait for: say which command opens it
    (else the console would wait, blank, for a wrapper of that name)."""
    if target and ("/" in target or target.endswith((".db", ".sqlite"))) and os.path.isfile(target):
        from mcpwatch.errors import UserError

        raise UserError(
            f"{target} is a file; `mcpwatch watch` follows running wrappers (NAME|PID|URL): "
            f"to look at a log, run `mcpwatch replay {target}`"
        )
