"""`mcpwatch watch [NAME|PID|URL]`: the live operator console (also what plain `mcpwatch` runs)."""

from __future__ import annotations

import argparse
import logging
import logging.handlers

from mcpwatch import paths, privacy, registry
from mcpwatch.config import add_config_option, load_settings
from mcpwatch.errors import UserError

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


def _log_to_file() -> None:
    """Library warnings must never print over the screen: they go to <state dir>/console.log instead."""
    root = logging.getLogger()
    try:
        directory = privacy.ensure_dir(paths.state_dir())
        privacy.create_file(directory / "console.log")
        handler: logging.Handler = logging.handlers.RotatingFileHandler(
            directory / "console.log", maxBytes=1_000_000, backupCount=1, encoding="utf-8"
        )
        handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
    except (OSError, UserError):
        handler = logging.NullHandler()
    root.handlers[:] = [handler]
    root.setLevel(logging.WARNING)


def run(args: argparse.Namespace) -> int:
    settings = load_settings(args.config)
    from mcpwatch.console.source import Locator, Target
    from mcpwatch.console.themes import check_theme_name, load_themes

    themes = load_themes()
    theme = check_theme_name(args.theme or settings.console.theme, themes)
    target = Target.parse(args.target, args.token)
    if not target.url:
        registry.check_registry()  # a registry others can write to could point the console anywhere: refuse it
    if target.url and not (target.token or Locator(target).resolve().token):  # type: ignore[union-attr]
        raise UserError(f"no token for {target.url}: pass --token T (the wrapper's registry file holds it)")
    if args.serve:
        from mcpwatch.console.serve import serve

        argv = [args.target] if args.target else []
        for flag, value in (("--theme", args.theme), ("--token", args.token), ("--config", args.config)):
            if value:
                argv += [flag, str(value)]
        serve(argv, args.port)
        return 0
    _log_to_file()

    from mcpwatch.console.app import ConsoleApp

    refresh_s = max(0.02, settings.console.refresh_ms / 1000)
    ConsoleApp(target=target, theme=theme, themes=themes, refresh_s=refresh_s, keys=settings.console.keys).run()
    return 0
