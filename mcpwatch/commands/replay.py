"""`mcpwatch replay [DB] [--session ID] [--speed X] [--at T]`: the operator console over a recorded session."""

from __future__ import annotations

import argparse

from mcpwatch.config import add_config_option

HELP = "the operator console over a recorded session (space plays, ←/→ step, g goes to a time)"


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("db", nargs="?", help="event log file (default: <state dir>/events.db)")
    parser.add_argument("--session", metavar="ID", help="session id or a unique prefix (default: the latest)")
    parser.add_argument("--speed", type=float, default=1.0, metavar="X", help="times real time (default 1)")
    parser.add_argument(
        "--at", metavar="T", help="start here: seconds (90, 1m30s), h:m:s (1:02:03), 50%%, end, or @HH:MM local time"
    )
    parser.add_argument("--paused", action="store_true", help="start paused (space plays)")
    parser.add_argument("--theme", metavar="NAME", help="colour theme (default: console.theme in mcpwatch.toml)")
    add_config_option(parser)


def run(args: argparse.Namespace) -> int:
    from mcpwatch.config import load_settings
    from mcpwatch.errors import UserError
    from mcpwatch.replay.clock import InvalidTime, check_speed

    try:
        check_speed(args.speed)
    except InvalidTime as exc:
        raise UserError(f"--speed: {exc}") from None
    settings = load_settings(args.config)
    from mcpwatch.console import log_to_file
    from mcpwatch.console.themes import check_theme_name, load_themes
    from mcpwatch.replay.app import build_app
    from mcpwatch.store import log_path

    themes = load_themes()
    theme = check_theme_name(args.theme or settings.console.theme, themes)
    try:
        app = build_app(
            log_path(args.db),
            args.session,
            speed=args.speed,
            at=args.at,
            paused=args.paused,
            theme=theme,
            themes=themes,
            refresh_s=max(0.02, settings.console.refresh_ms / 1000),
        )
    except InvalidTime as exc:
        raise UserError(f"--at: {exc}") from None
    log_to_file()
    try:
        app.run()
    finally:
        app.feed.close()
    return 0
