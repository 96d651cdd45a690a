"""The console app: themes, the refresh tick, and which screen to show (wiring only; the screens do the rest).

Give it a `WatchSession` to show one session (replay, tests), or a `Target` to find live wrappers in the registry:
none → a screen saying how to start one (it notices when one appears); one → watch it; several → choose.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from pathlib import Path
from typing import ClassVar

from textual import events
from textual.app import App
from textual.binding import Binding, BindingType
from textual.css.query import NoMatches
from textual.notifications import SeverityLevel
from textual.screen import Screen
from textual.theme import Theme

from mcpwatch.clock import SYSTEM_CLOCK, Clock
from mcpwatch.console.commands import ConsoleCommands
from mcpwatch.console.headless.controls import LiveControls
from mcpwatch.console.headless.session import WatchSession
from mcpwatch.console.headless.source import LiveFeed, Locator, Target
from mcpwatch.console.insight_actions import INSIGHT_BINDINGS, InsightActions
from mcpwatch.console.key_router import KeyRouter
from mcpwatch.console.screens.base import WatchScreen
from mcpwatch.console.screens.choose import ChooseWrapperScreen
from mcpwatch.console.screens.empty import NoWrapperScreen
from mcpwatch.console.screens.help import HelpScreen
from mcpwatch.console.screens.main import MainScreen
from mcpwatch.console.themes import DEFAULT_THEME, load_themes, semantic_defaults
from mcpwatch.registry import WrapperEntry, find_wrapper
from mcpwatch.terminal import safe_lines

log = logging.getLogger(__name__)

QUIT_NOTE = "The wrapper keeps running and recording; only this console closes."


def binding_ids() -> set[str]:
    """Every binding id a `[console.keys]` entry may name."""
    from mcpwatch.console.screens.detail import RequestDetailScreen
    from mcpwatch.console.screens.events import EventsScreen
    from mcpwatch.console.widgets import WindowTable

    ids: set[str] = set()
    for owner in (ConsoleApp, MainScreen, RequestDetailScreen, EventsScreen, WindowTable):
        for binding in owner.BINDINGS:
            if isinstance(binding, Binding) and binding.id:
                ids.add(binding.id)
    return ids


class ConsoleApp(InsightActions, App[None]):
    CSS_PATH = Path(__file__).parent / "app.tcss"
    TITLE = "mcpwatch"
    COMMANDS = App.COMMANDS | {ConsoleCommands}
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("q", "ask_quit", "Quit", id="app.quit"),
        Binding("question_mark", "help", "Help", id="app.help"),
        *INSIGHT_BINDINGS,
    ]

    def __init__(
        self,
        *,
        session: WatchSession | None = None,
        target: Target | None = None,
        theme: str = DEFAULT_THEME,
        themes: list[Theme] | None = None,
        clock: Clock = SYSTEM_CLOCK,
        registry_dir: Path | None = None,
        refresh_s: float = 0.1,
        discover_every_s: float = 1.0,
        keys: dict[str, str] | None = None,
        quit_note: str = QUIT_NOTE,
    ) -> None:
        self.console_themes = themes if themes is not None else load_themes()
        super().__init__()
        for extra in self.console_themes:
            self.register_theme(extra)
        self.theme = theme
        self.fixed_session = session
        self.target = target or Target()
        self.clock = clock
        self.registry_dir = registry_dir
        self.refresh_s = refresh_s
        self.discover_every_s = discover_every_s
        self.session: WatchSession | None = None
        self.tick_errors = 0
        self.user_keys = dict(keys or {})
        self.quit_note = quit_note  # what quitting does to the wrapper (the demo's stops with it)
        if self.user_keys:
            self.set_keymap(self.user_keys)  # [console.keys]: binding id -> keys
        self.keys = KeyRouter(self, super().on_event)  # every key typed, in order, each settled before the next

    def get_theme_variable_defaults(self) -> dict[str, str]:
        """Semantic colours derived from whichever theme is current, so every theme (ours or Textual's) works."""
        return semantic_defaults(self.current_theme)

    def on_mount(self) -> None:
        unknown = sorted(set(self.user_keys) - binding_ids())
        if unknown:
            self.notify(
                f"[console.keys]: unknown binding id(s) {', '.join(unknown)} — known: see mcpwatch/docs/console.md",
                severity="warning",
                timeout=15,
                markup=False,
            )
        self.set_interval(self.refresh_s, self._tick)
        self.set_interval(self.fleet_every_s, self.watch_the_fleet)
        if self.fixed_session is not None:
            self._show_session(self.fixed_session)
        else:
            self.discover()

    # -- which screen --------------------------------------------------------------------------------------

    def discover(self) -> None:
        """Look in the registry (or use the URL) and show what fits; the empty screen calls this every second."""
        target = self.target
        if target.url:
            self.watch_target(target)
            return
        entries = find_wrapper(target.selector, self.registry_dir)
        if not entries:
            if not isinstance(self.screen, NoWrapperScreen):
                self._replace(NoWrapperScreen(target.selector, self.registry_dir))
                self.set_timer(self.discover_every_s, self._poll_for_wrappers)
            return
        if len(entries) == 1:
            self.watch_target(Target(selector=target.selector or entries[0].name, token=target.token))
        else:
            self._replace(
                ChooseWrapperScreen(lambda: find_wrapper(target.selector, self.registry_dir), self.watch_entry)
            )

    def _poll_for_wrappers(self) -> None:
        """Every second while the empty screen is in the stack, whatever is open over it (help, the palette):
        when a wrapper appears, what was open over the empty screen closes and the console moves on."""
        waiting = next((s for s in self.screen_stack if isinstance(s, NoWrapperScreen)), None)
        if waiting is None:
            return  # moved on already
        if self.target.url or find_wrapper(self.target.selector, self.registry_dir):
            while self.screen is not waiting and len(self.screen_stack) > 1:
                self.pop_screen()
            self.discover()
        if any(isinstance(s, NoWrapperScreen) for s in self.screen_stack):
            self.set_timer(self.discover_every_s, self._poll_for_wrappers)

    def _replace(self, screen: Screen[None]) -> None:
        if len(self.screen_stack) > 1:
            self.switch_screen(screen)
        else:
            self.push_screen(screen)

    def live_session(self, target: Target) -> WatchSession:
        locator = Locator(target, self.registry_dir)
        feed = LiveFeed(locator, self.clock)
        return WatchSession(feed, LiveControls(locator), title=target.describe())

    def watch_target(self, target: Target) -> None:
        """Watch one wrapper live, as the base screen."""
        self._show_session(self.live_session(target))

    def watch_entry(self, entry: WrapperEntry) -> None:
        """Watch a wrapper chosen from the list; esc comes back to the list."""
        session = self.live_session(Target(selector=str(entry.pid), token=self.target.token))
        session.feed.start()
        self.session = session

        def back(_: object = None) -> None:
            session.stop()
            if self.session is session:
                self.session = None

        self.push_screen(MainScreen(session, can_go_back=True), back)

    def main_screen(self, session: WatchSession) -> MainScreen:
        """The screen a session is shown on (replay's adds its timeline bar)."""
        return MainScreen(session)

    def extra_commands(self, screen: Screen[object]) -> list[tuple[str, str, Callable[[], object]]]:
        """Palette commands beyond the console's own, as (name, help, callback): none live; replay adds its own."""
        return []

    def _show_session(self, session: WatchSession) -> None:
        if self.session is not None and self.session is not session:
            self.session.stop()
        self.session = session
        session.feed.start()
        self._replace(self.main_screen(session))

    async def on_event(self, event: events.Event) -> None:
        """Every key typed goes through the router (see `key_router`): it reaches what has focus once the keys
        before it have done what they do; an open prompt takes its keys itself (`TypedAheadPrompt.take_key`)."""
        if isinstance(event, events.Key) and not event.is_forwarded:
            await self.keys.take(event)
            return
        await super().on_event(event)

    # -- the tick --------------------------------------------------------------------------------------------

    def _tick(self) -> None:
        """Fold what arrived and redraw the topmost session screen: the only place the UI meets the feed."""
        session = self.session
        if session is None:
            return
        try:
            session.pump()
            for screen in reversed(self.screen_stack):
                if isinstance(screen, WatchScreen):
                    if screen.is_mounted:  # one still being built draws itself once mounted
                        screen.refresh_view()
                    break
        except NoMatches:  # a screen torn down (or built) between two ticks has no widgets to draw; the next tick
            pass  # draws the screen then on top (a widget missing for good shows in every snapshot test)
        except Exception as exc:  # a display bug must not take the console down; say so once in a while
            self.tick_errors += 1
            log.exception("console refresh failed")
            if self.tick_errors in (1, 10, 100) or self.tick_errors % 1000 == 0:
                self.notify(f"display problem: {type(exc).__name__}: {exc}", severity="error", timeout=10)

    # -- app actions ---------------------------------------------------------------------------------------

    def action_help(self) -> None:
        if isinstance(self.screen, HelpScreen):
            return
        session = self.session
        live = session is not None and session.controls is not None
        # A session without controls is a recording; no session at all (the empty screen) is neither.
        self.push_screen(HelpScreen(live, recording=session is not None and not live))

    def notify(
        self,
        message: str,
        *,
        title: str = "",
        severity: SeverityLevel = "information",
        timeout: float | None = None,
        markup: bool = False,
    ) -> None:
        """Notifications are plain text unless asked: they quote ids, tool names and errors from the wire, which
        may look like markup (`[/x]`) and would fail to parse or restyle the message, or hold an escape sequence
        (shown, not obeyed)."""
        super().notify(safe_lines(message), title=title, severity=severity, timeout=timeout, markup=markup)

    def action_help_quit(self) -> None:
        """Ctrl+C does not quit (Textual's choice): say which key does. Textual's own hint is markup, shown raw
        by this console's plain notices (`Press [b]ctrl+q[/b]`)."""
        for key, active in self.active_bindings.items():
            if active.binding.action in ("quit", "app.quit"):
                self.notify(f"Press {key} to quit the app", title="Do you want to quit?")
                return

    def action_ask_quit(self) -> None:
        """Quit; while watching a live wrapper, ask first (q is easy to hit, and the view is lost)."""
        session = self.session
        if session is None or session.controls is None:
            self.exit()
            return
        from mcpwatch.console.screens.modals import Confirm

        def answered(yes: bool | None) -> None:
            if yes:
                self.exit()

        self.push_screen(
            Confirm("Quit the console?", self.quit_note, "Quit"),
            answered,
        )

    def action_screenshot(self, filename: str | None = None, path: str | None = None) -> None:
        """The palette's Screenshot: into Downloads when it exists, else mcpwatch's own folder (made if need be),
        and say where — or why it could not be saved."""
        from mcpwatch.console.headless.export import screenshot_dir

        try:
            folder = Path(path) if path else screenshot_dir()
            saved = self.save_screenshot(filename, str(folder))
        except OSError as exc:
            self.notify(f"screenshot not saved: {exc.strerror or exc} ({exc.filename or path or ''})", severity="error")
            return
        self.notify(f"screenshot saved: {saved}", timeout=8)

    def action_set_theme(self, name: str) -> None:
        self.theme = name
        self.notify(f"theme: {name}", timeout=2)

    def on_unmount(self) -> None:
        if self.session is not None:
            self.session.stop()
