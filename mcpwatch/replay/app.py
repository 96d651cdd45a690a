"""The replay console: the live console's app and screens over a `ReplayFeed`, plus the replay keys, a timeline
bar and a go-to-time dialog.

Everything the screens show comes from the same `ConsoleModel` fold and the same render code as live mode; replay
only decides the time. The session has no operator controls, so the actions that would change a wrapper are absent
(not in the footer, the palette or the help). `p` (pause the live view) is absent too: space plays and pauses.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any, ClassVar

from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, Vertical
from textual.screen import Screen
from textual.theme import Theme
from textual.widgets import Button, Input, Label, Static

from mcpwatch.console.app import ConsoleApp
from mcpwatch.console.headless.render_base import Palette, wall_clock
from mcpwatch.console.headless.session import WatchSession
from mcpwatch.console.screens.base import NARROW, OPERATOR_ACTIONS, WatchScreen
from mcpwatch.console.screens.detail import RequestDetailScreen
from mcpwatch.console.screens.help import HelpScreen
from mcpwatch.console.screens.main import BACK_BINDING, VIEW_BINDINGS, MainScreen
from mcpwatch.console.screens.modals import TypedAheadPrompt
from mcpwatch.console.themes import DEFAULT_THEME
from mcpwatch.console.widgets import Line
from mcpwatch.replay import timeline
from mcpwatch.replay.clock import FORMS, InvalidTime, offset_text, parse_time, speed_text
from mcpwatch.replay.feed import IndexerKind, ReplayFeed, open_replay
from mcpwatch.replay.recording import Marker

REPLAY_KEYS = [
    ("space", "play / pause"),
    ("← / →", "one event back / forward (pauses)"),
    ("shift+← / shift+→", "10 seconds back / forward"),
    ("[ / ]", "slower / faster (0.1× … 1024×)"),
    ("g", "go to a time: 90, 1:30, 01:02:03, 50%, end, +10s, @14:03"),
    ("n / N", "next / previous deadline, error or late drop"),
]
REPLAY_ACTIONS = frozenset({"toggle_play", "step", "jump", "speed", "goto", "problem"})
_STEP = Binding.Group("Step")
_SPEED = Binding.Group("Speed")
_PROBLEM = Binding.Group("Next/prev problem")


class TimelineBar(Line):
    """Three lines: where the problems are, the track with config changes and the position, then the clock."""

    DEFAULT_CSS = """
    TimelineBar {
        height: 3;
        background: $panel;
        padding: 0 1;
    }
    """


class ReplayMainScreen(MainScreen, inherit_bindings=False):
    """The live console's main screen with the timeline bar above the footer. Its keys are the view's only:
    the operator's (h, m, t, d, c) are not bound at all, since a recording cannot be changed; nor is `p`
    (pause the live view): space plays and pauses the replay's clock."""

    BINDINGS: ClassVar[list[BindingType]] = [
        *(b for b in VIEW_BINDINGS if isinstance(b, Binding) and b.action != "pause"),
        BACK_BINDING,
    ]

    def __init__(self, session: WatchSession) -> None:
        super().__init__(session)
        self._cells_key: tuple[int, int, float] | None = None
        self._cells = timeline.Cells((), ())

    @property
    def feed(self) -> ReplayFeed:
        feed = self.session.feed
        assert isinstance(feed, ReplayFeed)
        return feed

    def compose_extra(self) -> ComposeResult:
        yield TimelineBar(id="timeline")

    def refresh_view(self) -> None:
        super().refresh_view()
        self.render_timeline()

    def detail_screen(self, request_id: str) -> WatchScreen:
        return ReplayDetailScreen(self.session, request_id)

    def render_timeline(self) -> None:
        bar = self.query_one("#timeline", TimelineBar)
        feed = self.feed
        width = max(10, bar.content_region.width or bar.size.width or 80)
        compact = self.size.width < NARROW
        position = feed.position()
        markers = feed.markers()
        key = (len(markers), width, position.end)
        if key != self._cells_key:
            self._cells_key, self._cells = key, timeline.cells(markers, position.end, width)
        head = timeline.column(position.mono, position.end, width)
        counts = feed.marker_counts()
        p = Palette(self.app.theme_variables)

        def make() -> Text:
            status = timeline.status_line(position, counts, p, compact=compact)
            # Three lines, each cut at the edge: a wrapped status line would push the bar out of its box.
            return Text.assemble(timeline.bar(self._cells, head, p), "\n", status, no_wrap=True, overflow="ellipsis")

        bar.show(make, (self.app.theme, key, head, position, tuple(counts.items()), compact))

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action == "pause":
            return False  # the live view's pause (also kept out of the palette); space plays and pauses
        return super().check_action(action, parameters)


class ReplayDetailScreen(RequestDetailScreen, inherit_bindings=False):
    """A request's detail in a recording: back, copy and export (as help lists them); nothing can be cancelled."""

    BINDINGS: ClassVar[list[BindingType]] = [
        b for b in RequestDetailScreen.BINDINGS if isinstance(b, Binding) and b.action not in OPERATOR_ACTIONS
    ]


class GotoPrompt(TypedAheadPrompt[float | None]):
    """Asks for a session time; a value that does not work is explained in the dialog, which stays open."""

    BINDINGS: ClassVar[list[BindingType]] = [Binding("escape", "cancel", "Cancel", id="goto.cancel")]

    def __init__(self, *, end: float, now: float, origin_ts: float | None) -> None:
        super().__init__()
        self._end, self._now, self._origin = end, now, origin_ts

    def compose(self) -> ComposeResult:
        span = f"The recording runs from 0:00 to {offset_text(self._end)}"
        if self._origin is not None:
            span += f" ({wall_clock(self._origin, 0)} to {wall_clock(self._origin, self._end)} local time)"
        text = f"{span}; now at {offset_text(self._now)}.\nType {FORMS}."
        with Vertical(classes="dialog"):
            yield Label("Go to a time", classes="dialog-title")
            yield Static(text, classes="dialog-text", markup=False)
            yield Input(placeholder="e.g. 1:30, 50%, end, +10s, @14:03", id="value", select_on_focus=False)
            yield Static("", id="problem", classes="dialog-problem", markup=False)
            with Horizontal(classes="dialog-buttons"):
                yield Button("Go", variant="primary", id="ok")
                yield Button("Cancel", id="cancel")

    def _problem(self, text: str) -> None:
        self.query_one("#problem", Static).update(text)
        self.set_class(bool(text), "-has-problem")

    @on(Input.Changed)
    def _typing(self) -> None:
        self._problem("")

    @on(Input.Submitted)
    @on(Button.Pressed, "#ok")
    def _accept(self) -> None:
        """The Go button (Enter comes through `take_key`)."""
        self._go()

    async def submit(self) -> None:
        self._go()

    def _go(self) -> None:
        try:
            target = parse_time(self.query_one(Input).value, end=self._end, now=self._now, origin_ts=self._origin)
        except InvalidTime as exc:
            self._problem(str(exc))
            return
        self.dismiss(target)

    @on(Button.Pressed, "#cancel")
    def _cancel(self) -> None:
        self.dismiss(None)


class ReplayApp(ConsoleApp):
    """The console over a `ReplayFeed`."""

    TITLE = "mcpwatch replay"
    # On the main screen toasts sit above the timeline bar (three lines, over the one-line footer), never over
    # it: the bar is what a replay key's message is about.
    CSS = """
    ReplayMainScreen ToastRack {
        margin-bottom: 4;
    }
    """
    BINDINGS: ClassVar[list[BindingType]] = [
        *ConsoleApp.BINDINGS,
        Binding("space", "toggle_play", "Play/pause", id="replay.play", priority=True),
        Binding("left", "step(-1)", "back", id="replay.step_back", priority=True, group=_STEP, key_display="←"),
        Binding("right", "step(1)", "forward", id="replay.step", priority=True, group=_STEP, key_display="→"),
        Binding("shift+left", "jump(-10)", "−10s", id="replay.back_10s", priority=True, show=False),
        Binding("shift+right", "jump(10)", "+10s", id="replay.forward_10s", priority=True, show=False),
        Binding("left_square_bracket", "speed(-1)", "slower", id="replay.slower", priority=True, group=_SPEED),
        Binding("right_square_bracket", "speed(1)", "faster", id="replay.faster", priority=True, group=_SPEED),
        Binding("g", "goto", "Go to", id="replay.goto", priority=True),
        Binding("n", "problem(1)", "next", id="replay.next", priority=True, group=_PROBLEM),
        Binding("N", "problem(-1)", "previous", id="replay.previous", priority=True, group=_PROBLEM),
    ]

    def __init__(
        self,
        feed: ReplayFeed,
        *,
        theme: str = DEFAULT_THEME,
        themes: list[Theme] | None = None,
        refresh_s: float = 0.1,
        title: str = "",
    ) -> None:
        self.feed = feed
        session = WatchSession(feed, None, model=feed.model, title=title)
        super().__init__(session=session, theme=theme, themes=themes, refresh_s=refresh_s)

    def main_screen(self, session: WatchSession) -> MainScreen:
        return ReplayMainScreen(session)

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        # The replay keys work on the session's screens, not over a dialog, the palette or the help, and not
        # while typing in the filter.
        if action in REPLAY_ACTIONS and (not isinstance(self.screen, WatchScreen) or isinstance(self.focused, Input)):
            return False
        return super().check_action(action, parameters)

    # -- the replay keys ---------------------------------------------------------------------------------------

    def redraw(self) -> None:
        """Show the new position now rather than at the next tick."""
        for screen in reversed(self.screen_stack):
            if isinstance(screen, WatchScreen):
                screen.refresh_view()
                break

    def action_toggle_play(self) -> None:
        self.feed.toggle_play()
        self.redraw()

    def action_step(self, direction: int) -> None:
        problem = self.feed.step(direction)
        if problem:
            self.notify(problem, severity="warning", timeout=3)
        self.redraw()

    def action_jump(self, seconds: float) -> None:
        self.feed.jump(seconds)
        self.redraw()

    def action_speed(self, direction: int) -> None:
        speed = self.feed.faster() if direction > 0 else self.feed.slower()
        self.notify(f"speed {speed_text(speed)}", timeout=1.5)
        self.redraw()

    def action_problem(self, direction: int) -> None:
        found = self.feed.next_problem(direction)
        if isinstance(found, Marker):
            self.notify(f"{timeline.MARKS[found.kind][0]} {offset_text(found.mono)}  {found.text}", timeout=3)
        else:
            self.notify(found, severity="warning", timeout=3)
        self.redraw()

    def action_goto(self) -> None:
        feed = self.feed

        def chosen(target: float | None) -> None:
            if target is None:
                return
            if not feed.seek(target):
                problem = feed.problem or feed.index.error
                if problem:
                    self.notify(f"cannot go to {offset_text(target)}: {problem}", severity="error", timeout=8)
                else:
                    self.notify(f"going to {offset_text(target)} once the recording is indexed that far", timeout=4)
            self.redraw()

        prompt = GotoPrompt(end=feed.clock.end, now=feed.shown, origin_ts=feed.engine.recording.origin_ts)
        self.push_screen(prompt, chosen)

    def action_help(self) -> None:
        if isinstance(self.screen, HelpScreen):
            return
        self.push_screen(HelpScreen(False, mode_keys=("Replay", REPLAY_KEYS), omit={"p"}, recording=True))

    def extra_commands(self, screen: Screen[Any]) -> list[tuple[str, str, Callable[[], object]]]:
        if not isinstance(screen, WatchScreen):
            return []
        play = "pause" if self.feed.clock.playing else "play"
        return [
            (f"replay: {play}", "space", self.action_toggle_play),
            ("replay: go to a time…", "g: 1:30, 50%, end, @14:03…", self.action_goto),
            ("replay: next deadline, error or late drop", "n", partial(self.action_problem, 1)),
            ("replay: previous deadline, error or late drop", "N", partial(self.action_problem, -1)),
            ("replay: faster", "]", partial(self.action_speed, 1)),
            ("replay: slower", "[", partial(self.action_speed, -1)),
        ]


def build_app(
    path: str | Path,
    session: str | None = None,
    *,
    speed: float = 1.0,
    at: str | None = None,
    paused: bool = False,
    theme: str = DEFAULT_THEME,
    themes: list[Theme] | None = None,
    indexer: IndexerKind = "process",
    refresh_s: float = 0.1,
) -> ReplayApp:
    """Open the recording and make the app (LogError / InvalidTime for a bad file, session, speed or time)."""
    feed = open_replay(path, session, speed=speed, at=at, paused=paused, indexer=indexer)
    recording = feed.engine.recording
    title = recording.session.name or recording.session_id
    return ReplayApp(feed, theme=theme, themes=themes, refresh_s=refresh_s, title=title)
