"""The views beyond the main screen (Trends, Models, Fleet): the app's keys, palette entries and switching."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from textual.binding import Binding, BindingType
from textual.screen import Screen

INSIGHT_BINDINGS: list[BindingType] = [
    Binding("T", "trends", "Trends", id="app.trends", show=False),
    Binding("M", "models", "Models", id="app.models", show=False),
    Binding("F", "fleet", "Fleet", id="app.fleet", show=False),
]


class InsightActions:
    """Mixed into the console app: `T` Trends and `M` Models over the session watched, `F` the fleet."""

    session: Any
    screen: Screen[Any]
    fleet_every_s = 3.0
    fleet_badge = ""  # shown in the main screen's top bar: another wrapper is in trouble
    _offered_for: int | None = None  # the dead wrapper whose replacements were offered already
    _fleet_probing = False  # a fleet round is under way

    def action_trends(self) -> None:
        from mcpwatch.console.screens.trends import TrendsScreen

        if self.session is None or isinstance(self.screen, TrendsScreen):
            return
        self.push_screen(TrendsScreen(self.session))  # type: ignore[attr-defined]  # a mixin of the console's App

    def action_models(self) -> None:
        from mcpwatch.console.screens.models import ModelsScreen

        if self.session is None or isinstance(self.screen, ModelsScreen):
            return
        self.push_screen(ModelsScreen(self.session))  # type: ignore[attr-defined]  # a mixin of the console's App

    def action_fleet(self, headline: str | None = None) -> None:
        """Every running wrapper; choosing one watches it instead of the current one."""
        from mcpwatch.console.screens.fleet import FleetScreen
        from mcpwatch.registry import running_wrappers

        if isinstance(self.screen, FleetScreen):
            return
        registry_dir = getattr(self, "registry_dir", None)
        entry = self._watched_entry()
        self.push_screen(  # type: ignore[attr-defined]  # a mixin of the console's App
            FleetScreen(
                lambda: running_wrappers(registry_dir),
                self.switch_to_wrapper,
                watching=entry.pid if entry is not None else None,
                headline=headline,
                live_status=lambda: getattr(getattr(getattr(self, "session", None), "feed", None), "last_status", None),
            )
        )

    def _watched_entry(self) -> Any:
        locator = getattr(getattr(self.session, "feed", None), "locator", None)
        return getattr(locator, "last", None)

    def switch_to_wrapper(self, entry: Any) -> None:
        """Watch `entry` instead: the screens over the session close and its main screen is replaced."""
        from mcpwatch.console.headless.source import Target
        from mcpwatch.console.screens.main import MainScreen

        app: Any = self
        while len(app.screen_stack) > 2 and not isinstance(app.screen, MainScreen):
            app.pop_screen()  # the fleet, and a detail, Trends or Models over the main screen
        app.watch_target(Target(selector=str(entry.pid), token=getattr(app.target, "token", None)))

    def watch_the_fleet(self) -> None:
        """Every few seconds, live: offer the other wrappers once the watched one has died, and badge the top bar
        while another wrapper is in trouble."""
        if self.session is None or self.session.controls is None or self._fleet_probing:
            return  # a round still probing is let finish: cancelling it for the next, a slow one never badged
        self._fleet_probing = True
        self.run_worker(self._fleet_round(), group="fleet-watch", exit_on_error=False)  # type: ignore[attr-defined]  # a mixin of the console's App

    async def _fleet_round(self) -> None:
        try:
            await self._probe_the_fleet()
        finally:
            self._fleet_probing = False

    async def _probe_the_fleet(self) -> None:
        import time

        from mcpwatch.console.headless.fleet import probe_fleet
        from mcpwatch.registry import pid_alive, running_wrappers
        from mcpwatch.terminal import safe

        watched = self._watched_entry()
        others = [
            e for e in running_wrappers(getattr(self, "registry_dir", None)) if watched is None or e.pid != watched.pid
        ]
        gone = watched is not None and bool(watched.pid) and not pid_alive(watched.pid)
        if gone and others and self._offered_for != watched.pid:
            self._offered_for = watched.pid
            count = f"{len(others)} other wrapper{'s' if len(others) != 1 else ''}"
            name = safe(watched.name)
            self.action_fleet(headline=f" {name} (pid {watched.pid}) is gone — {count} running: watch one?")
        if watched is None:  # which one is watched is not known yet: a badge could name it
            self.fleet_badge = ""
            return
        rows = await probe_fleet(others, time.time()) if others else []
        # a wrapper gone while it was probed is not one to look at; the watched one never badges itself
        troubled = [r for r in rows if r.trouble and r.pid != watched.pid and pid_alive(r.pid)]
        if not troubled:
            self.fleet_badge = ""
        elif len(troubled) == 1:
            self.fleet_badge = f"{troubled[0].name}: {troubled[0].trouble} (F)"
        else:
            self.fleet_badge = f"{len(troubled)} other wrappers need a look (F)"

    def insight_commands(self) -> list[tuple[str, str, Callable[[], object]]]:
        """Palette entries, as (name, help, callback); none while no session is watched."""
        if self.session is None:
            return []
        return [
            (
                "view: Trends",
                "per tool calls, deadlines, errors and p50/p95 latency over time (T)",
                self.action_trends,
            ),
            ("view: Fleet", "every running wrapper: state, errors, warnings; a number switches (F)", self.action_fleet),
            (
                "view: Models",
                "per council model: latency, ok/timeout/rate_limited/auth_error/error, last failure; disable (M)",
                self.action_models,
            ),
        ]
