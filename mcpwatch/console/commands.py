"""The command palette (ctrl+p): every console action by name, including the operator's and the themes.

Names read "category: action". What the current screen cannot do is not offered (replay has no operator actions).
"""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from typing import Protocol, cast

from textual.command import DiscoveryHit, Hit, Hits, Provider


class _ConsoleActions(Protocol):
    """What the palette calls on the console's app (the Provider knows it only as a Textual `App`)."""

    def action_set_theme(self, name: str) -> None: ...

    def action_help(self) -> None: ...


class ConsoleCommands(Provider):
    def _commands(self) -> list[tuple[str, str, Callable[[], object]]]:
        from mcpwatch.console.screens.base import WatchScreen
        from mcpwatch.console.screens.main import MainScreen

        screen = self.screen
        app = self.app
        found: list[tuple[str, str, Callable[[], object]]] = []
        if isinstance(screen, WatchScreen) and screen.session.controls is not None:
            found += [
                (
                    "operator: health check now",
                    "ping the upstream and call its health tool",
                    screen.action_health_check,
                ),
                ("operator: set margin…", "seconds kept before the host's timeout", screen.action_set_margin),
                (
                    "operator: set host timeout…",
                    "how long the host waits for a tools/call",
                    screen.action_set_host_timeout,
                ),
                (
                    "operator: set deadline override…",
                    "an explicit budget (empty clears, 0 disables)",
                    screen.action_set_deadline,
                ),
                (
                    "operator: reset the budget",
                    "undo margin, host timeout and override changes",
                    screen.action_reset_deadline,
                ),
                (
                    "operator: cancel selected call…",
                    "cut an in-flight call as a deadline would",
                    screen.action_cancel_call,
                ),
            ]
        if isinstance(screen, MainScreen):
            if screen.check_action("pause", ()) is not False:  # replay plays and pauses its clock instead
                pause = "resume the view" if screen.session.paused else "pause the view"
                found.append((f"view: {pause}", "the feed keeps recording while paused", screen.action_pause))
            found += [
                ("Events", "upstream exits, respawns, budget changes, late answers, warnings", screen.action_events),
                ("view: sort recent requests", "next column: ended, id, tool, outcome, took", screen.action_sort),
                ("view: filter requests…", "by tool, outcome or request id", screen.action_filter),
                ("view: open selected request", "timeline, arguments, result, tombstone", screen.action_open_detail),
            ]
        insights = getattr(app, "insight_commands", None)
        if insights is not None:
            found += insights()
        extra = getattr(app, "extra_commands", None)
        if extra is not None:
            found += extra(screen)
        actions = cast(_ConsoleActions, app)  # ConsoleApp has both
        for theme in getattr(app, "console_themes", ()):
            found.append(
                (f"theme: {theme.name}", "switch the console's colours", partial(actions.action_set_theme, theme.name))
            )
        found.append(("help: keys and panels", "what every key and panel does", actions.action_help))
        return found

    async def discover(self) -> Hits:
        for name, help_text, callback in self._commands():
            yield DiscoveryHit(name, callback, help=help_text)

    async def search(self, query: str) -> Hits:
        matcher = self.matcher(query)
        for name, help_text, callback in self._commands():
            score = matcher.match(name)
            if score > 0:
                yield Hit(score, matcher.highlight(name), callback, help=help_text)
