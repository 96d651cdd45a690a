"""`mcpwatch watch`: the operator console. `headless` (Textual-free: model, feed, renderables) is what replay reuses.

`launch()` is the one way in, for `mcpwatch watch` and the demo alike; importing this package stays cheap (Textual
is imported only when a console starts).
"""

from __future__ import annotations

import logging
import logging.handlers
import os

from mcpwatch import paths, privacy, registry
from mcpwatch.errors import UserError


def launch(
    target: str | None = None,
    *,
    theme: str | None = None,
    token: str | None = None,
    config: str | os.PathLike[str] | None = None,
    serve_port: int | None = None,
    quit_note: str | None = None,
) -> int:
    """Run the live console until the operator quits: `target` is a wrapper's name, pid or operator URL (None: all
    running ones), `token` the operator token for a URL not in the registry, `config` an mcpwatch.toml to use;
    with `serve_port`, the same console is served to a browser on 127.0.0.1 instead; `quit_note` replaces what
    the quit question says happens to the wrapper (the demo stops its own).
    A problem the operator can fix (an unknown theme, a URL without a token) is a `UserError`."""
    from mcpwatch.config import load_settings

    settings = load_settings(config)
    from mcpwatch.console.headless.source import Locator, Target
    from mcpwatch.console.themes import check_theme_name, load_themes

    themes = load_themes()
    chosen = check_theme_name(theme or settings.console.theme, themes)
    parsed = Target.parse(target, token)
    if not parsed.url:
        registry.check_registry()  # a registry others can write to could point the console anywhere: refuse it
    if parsed.url and not (parsed.token or Locator(parsed).resolve().token):  # type: ignore[union-attr]  # parsed.url set: resolve() finds an entry
        raise UserError(f"no token for {parsed.url}: pass --token T (the wrapper's registry file holds it)")
    if serve_port is not None:
        from mcpwatch.console.serve import serve

        argv = [target] if target else []
        for flag, value in (("--theme", theme), ("--token", token), ("--config", config)):
            if value:
                argv += [flag, str(value)]
        serve(argv, serve_port, max_consoles=settings.console.serve_max_consoles)
        return 0
    log_to_file()

    from mcpwatch.console.app import ConsoleApp

    refresh_s = max(0.02, settings.console.refresh_ms / 1000)
    app = ConsoleApp(target=parsed, theme=chosen, themes=themes, refresh_s=refresh_s, keys=settings.console.keys)
    if quit_note:
        app.quit_note = quit_note
    app.run()
    return 0


def log_to_file() -> None:
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
