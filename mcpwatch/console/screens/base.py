"""What screens over a `WatchSession` share: the refresh hook, the palette, and the operator actions.

Operator actions exist only when the session has `controls` (live mode); without them `check_action` hides them
from the footer, the palette and the keys, so replay shows no action that could not work.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any, ClassVar

from rich.cells import cell_len
from textual import events, work
from textual.binding import ActiveBinding
from textual.screen import Screen
from textual.widgets import Footer, Input

from mcpwatch.console.headless import format as fmt
from mcpwatch.console.headless import words
from mcpwatch.console.headless.render_base import Palette
from mcpwatch.console.headless.session import WatchSession
from mcpwatch.console.screens.modals import Confirm, SecondsPrompt
from mcpwatch.operator import OperatorError

OPERATOR_ACTIONS = frozenset(
    {"health_check", "set_margin", "set_host_timeout", "set_deadline", "reset_deadline", "cancel_call"}
)

PROMPT_ACTIONS = frozenset({"set_margin", "set_host_timeout", "set_deadline"})  # their keys are priority bindings
NARROW = 110  # below this many columns the screens stack their panels
SHORT = 34  # below this many rows the main screen's body scrolls rather than squeezing its tables

# Which footer keys give way first when the footer is too narrow for all of them (higher goes first; the same
# rank: the later one). Quit and help never do. The keys still work when their hint is not shown.
FOOTER_RANK: dict[str, int] = {
    "app.quit": 0,
    "app.help": 0,
    "detail.back": 0,
    "replay.play": 1,
    "replay.step": 1,
    "replay.step_back": 1,
    "replay.goto": 1,
    "replay.next": 1,
    "replay.previous": 1,
    "events.back": 0,
    "main.set_margin": 1,
    "main.cancel_call": 1,
    "table.open": 2,  # at 80 columns: open, filter, events, margin, cancel, deadline; the rest via ?
    "main.filter": 2,
    "main.events": 2,
    "main.set_deadline": 3,
    "detail.cancel_call": 2,
    "main.set_host_timeout": 4,
    "main.health_check": 4,
    "main.pause": 5,
    "detail.copy": 4,
    "detail.export": 4,
    "replay.slower": 6,
    "replay.faster": 6,
}
ALL_KEYS = "Keys"  # the help key's label when the footer leaves keys out (all are a `?` away); as wide as "Help"
PALETTE_CELLS = 13  # the footer's "▏^p palette", docked right
COMPACT_BAR_BELOW = 140  # columns below which the top bar is compact
PALETTE_FROM = 100  # below this width the footer leaves out its palette hint (ctrl+p still works; help says so)


def describe_deadline(block: dict[str, Any]) -> str:
    budget = block.get("budget_s")
    text = "budget DISABLED" if budget is None else f"budget now {fmt.seconds(budget)}"
    return f"{text} (host {fmt.seconds(block.get('host_timeout_s'))}, margin {fmt.seconds(block.get('margin_s'))})"


def describe_budget_now(budget_s: float | None, source: str | None, known: bool) -> str:
    """The prompt's "Now:": the budget in force and why, "disabled" said as such (never "0s")."""
    if not known:
        return "not known yet"
    if budget_s is None:
        return "the budget is DISABLED (calls run until the host gives up)"
    return f"budget {fmt.seconds(budget_s)} ({words.budget_source(source)})"


class WatchScreen(Screen[None]):
    """A screen showing a watched session; the app calls `refresh_view()` on every tick.

    The screen carries `-narrow`/`-wide` and `-short`/`-tall` classes for the terminal's size (app.tcss lays
    the panels out by them), and its footer shows the keys that fit, most important first.
    """

    # Textual declares these `ClassVar[...] | None`, which mypy reads as instance variables: hence the ignores.
    HORIZONTAL_BREAKPOINTS: ClassVar[list[tuple[int, str]] | None] = [(0, "-narrow"), (NARROW, "-wide")]  # type: ignore[misc]  # see above
    VERTICAL_BREAKPOINTS: ClassVar[list[tuple[int, str]] | None] = [(0, "-short"), (SHORT, "-tall")]  # type: ignore[misc]  # see above

    def __init__(self, session: WatchSession, *, name: str | None = None, id: str | None = None) -> None:
        super().__init__(name=name, id=id)
        self.session = session

    @property
    def compact_bar(self) -> bool:
        """The top bar leaves out the pid and tightens its separators, so the host still fits."""
        return (self.size.width or self.app.size.width) < COMPACT_BAR_BELOW

    @property
    def palette(self) -> Palette:
        return Palette(self.app.theme_variables)

    def refresh_view(self) -> None:
        """Redraw from the session's model; called by the app's timer, never per event."""

    def selected_request(self) -> str | None:
        """The request an action such as cancel applies to, if any."""
        return None

    # -- the footer ------------------------------------------------------------------------------------------

    def on_resize(self, event: events.Resize) -> None:
        for footer in self.query(Footer):
            footer.show_command_palette = event.size.width >= PALETTE_FROM
        self.refresh_bindings()  # the footer shows what fits the new width

    def binding_description(self, binding_id: str | None, description: str) -> str:
        """A key's footer label as the screen's state makes it (pause reads "Resume" while paused)."""
        if binding_id == "main.pause" and self.session.paused:
            return "Resume"
        return description

    @property
    def active_bindings(self) -> dict[str, ActiveBinding]:
        """The keys the footer shows: all that fit; when they do not, the least important are left out."""
        bindings = dict(super().active_bindings)
        for key, active in bindings.items():
            described = self.binding_description(active.binding.id, active.binding.description)
            if described != active.binding.description:
                bindings[key] = active._replace(binding=replace(active.binding, description=described))
        width = self.size.width or self.app.size.width
        if not width:
            return bindings
        shown = [key for key, active in bindings.items() if active.binding.show]
        costs = {key: self._footer_cells(bindings[key]) for key in shown}
        budget = width - (PALETTE_CELLS if width >= PALETTE_FROM else 0)
        total = sum(costs.values())
        if total <= budget:
            return bindings
        for key in shown:
            active = bindings[key]
            if active.binding.id == "app.help":
                bindings[key] = active._replace(binding=replace(active.binding, description=ALL_KEYS))
                total += self._footer_cells(bindings[key]) - costs[key]
        order = sorted(range(len(shown)), key=lambda i: (FOOTER_RANK.get(bindings[shown[i]].binding.id or "", 5), i))
        dropped: set[str] = set()
        for i in reversed(order):
            key = shown[i]
            if total <= budget or FOOTER_RANK.get(bindings[key].binding.id or "", 5) == 0:
                break
            dropped.add(key)
            total -= costs[key]
        return {key: active for key, active in bindings.items() if key not in dropped}

    def _footer_cells(self, active: ActiveBinding) -> int:
        """About how many cells the footer gives a key (Textual's Footer: padding, or the group's label)."""
        binding = active.binding
        key = cell_len(self.app.get_key_display(binding))
        if binding.group is not None:
            return key + 2 + (cell_len(binding.group.description) + 2) // 2  # two keys share one label
        return key + cell_len(binding.description) + 3

    # -- operator actions ------------------------------------------------------------------------------------

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action in PROMPT_ACTIONS and isinstance(self.focused, Input):
            return False  # a text field has the keys: `m` is a letter of the filter, not the margin prompt
        return not (action in OPERATOR_ACTIONS and self.session.controls is None)

    def _report(self, exc: Exception, doing: str) -> None:
        self.notify(f"{doing} failed: {exc}", severity="error", timeout=8)

    @work(group="operator", exit_on_error=False)
    async def action_health_check(self) -> None:
        controls = self.session.controls
        if controls is None:
            return
        self.notify("health check sent…", timeout=2)
        try:
            result = await controls.health_check()
        except OperatorError as exc:
            self._report(exc, "health check")
            return
        if result.get("ok") and result.get("error"):
            # Answered, but not healthy (e.g. no host has initialised the upstream yet): not an "ok".
            self.notify(f"health check: not ready — {result['error']}", severity="warning", timeout=8)
        elif result.get("ok"):
            self.notify(f"health check ok · ping {fmt.millis(result.get('ping_ms'))}", timeout=4)
        else:
            self.notify(f"health check failed: {result.get('error') or 'no reason given'}", severity="error", timeout=8)

    def _prompt(self, title: str, explanation: str, submit: Any, **kwargs: Any) -> None:
        def done(message: str | None) -> None:
            if message:
                self.notify(message, timeout=5)

        self.app.push_screen(SecondsPrompt(title, explanation, submit, **kwargs), done)

    def _effect(self, key: str) -> Any:
        """The prompt's what-if line: what a new value would have done to the recent calls (as `whatif` counts)."""
        from mcpwatch.logview.whatif import budget_after_change, effect_line

        model = self.session.model
        current = model.deadline_view()
        calls = model.recent_calls()
        by_tier = model.tier_estimates()

        def effect(value: float | None) -> str:
            budget = budget_after_change(
                key,
                value,
                host_timeout_s=current.host_timeout_s,
                margin_s=current.margin_s,
                budget_s=current.budget_s,
                source=current.source,
            )
            # an override applies to every call; a margin to each call's own host clock
            margin = value if key == "margin_s" else None
            return effect_line(calls, budget, keep_fixed=key != "override_s", margin_s=margin, by_tier=by_tier)

        return effect

    def action_set_margin(self) -> None:
        controls = self.session.controls
        if controls is None:
            return
        current = self.session.model.deadline_view()

        async def submit(value: float | None) -> str:
            assert value is not None
            return "margin set to " + fmt.seconds(value) + " · " + describe_deadline(await controls.set_margin(value))

        def caution(value: float | None) -> str | None:
            return clamp_caution(current.host_timeout_s, value, current.source)

        self._prompt(
            "Set the deadline margin",
            "Seconds kept in reserve before the host's timeout: budget = host timeout − margin.\n"
            f"Now: margin {fmt.seconds(current.margin_s)}, host {fmt.seconds(current.host_timeout_s)}; "
            f"{describe_budget_now(current.budget_s, current.source, current.known)}.",
            submit,
            initial="" if current.margin_s is None else f"{current.margin_s:g}",
            what="margin",
            caution=caution,
            effect=self._effect("margin_s"),
        )

    def action_set_host_timeout(self) -> None:
        controls = self.session.controls
        if controls is None:
            return
        current = self.session.model.deadline_view()

        async def submit(value: float | None) -> str:
            assert value is not None
            block = await controls.set_host_timeout(value)
            return "host timeout set to " + fmt.seconds(value) + " · " + describe_deadline(block)

        def caution(value: float | None) -> str | None:
            return clamp_caution(value, current.margin_s, current.source)

        self._prompt(
            "Set the host's tools/call timeout",
            "How long the MCP host waits for a tool call before it gives up (the deadline budget is derived "
            f"from it).\nNow: {fmt.seconds(current.host_timeout_s)}.",
            submit,
            initial="" if current.host_timeout_s is None else f"{current.host_timeout_s:g}",
            allow_zero=False,
            what="host timeout",
            caution=caution,
            effect=self._effect("host_timeout_s"),
        )

    def action_set_deadline(self) -> None:
        controls = self.session.controls
        if controls is None:
            return
        current = self.session.model.deadline_view()

        async def submit(value: float | None) -> str:
            block = await controls.set_deadline(value)
            if value is None:
                what = "override cleared"
            elif value == 0:
                what = "deadline budget DISABLED"
            else:
                what = f"override set to {fmt.seconds(value)}"
            return f"{what} · {describe_deadline(block)}"

        def caution(value: float | None) -> str | None:
            if value == 0:
                return "0 DISABLES the deadline budget: calls then run until the host gives up"
            return None

        if current.override_s is None:
            override = "no override"
        elif current.override_s <= 0:
            override = "override 0 (disabled)"
        else:
            override = f"override {fmt.seconds(current.override_s)}"
        self._prompt(
            "Override the deadline budget",
            "An explicit budget for every new tools/call, instead of host timeout − margin.\n"
            "Leave empty to clear the override; 0 disables the budget (asks again).\n"
            f"Now: {override}; {describe_budget_now(current.budget_s, current.source, current.known)}.",
            submit,
            initial="" if current.override_s is None or current.override_s <= 0 else f"{current.override_s:g}",
            allow_empty=True,
            budget=True,
            what="deadline",
            placeholder="seconds (empty clears the override)",
            effect=self._effect("override_s"),
            caution=caution,
        )

    async def action_reset_deadline(self) -> None:
        """Undo every operator change to the budget: the environment and mcpwatch.toml rule again."""
        controls = self.session.controls
        if controls is None:
            return
        try:
            block = await controls.reset_deadline()
        except OperatorError as exc:
            self._report(exc, "reset")
            return
        self.notify(f"budget reset · {describe_deadline(block)}", timeout=5)

    def action_cancel_call(self) -> None:
        controls = self.session.controls
        if controls is None:
            return
        request_id = self.selected_request()
        model = self.session.model
        if request_id is None or not model.is_in_flight(request_id):
            in_flight = model.in_flight_ids()
            if not in_flight:
                self.notify("nothing is in flight to cancel", severity="warning", timeout=3)
                return
            if request_id is not None or len(in_flight) > 1:
                self.notify("select an in-flight call first (tab to the In flight table)", severity="warning")
                return
            request_id = in_flight[0]
        detail = model.request_detail(request_id, self.session.now())
        what = f"#{request_id}"
        if detail is not None:
            what += f" {detail.request.label}, running {fmt.duration(detail.elapsed_s)}"

        def answered(yes: bool | None) -> None:
            if yes:
                self._cancel(request_id)

        self.app.push_screen(
            Confirm(
                "Cancel this call?",
                f"Cancel {what}.\nThe host gets an error result now (as if the deadline had passed), the upstream "
                "is told to stop, and a late answer will be dropped.",
                yes="Cancel it",
            ),
            answered,
        )

    @work(group="operator", exit_on_error=False)
    async def _cancel(self, request_id: str) -> None:
        controls = self.session.controls
        if controls is None:
            return
        try:
            await controls.cancel(request_id)
        except OperatorError as exc:
            self._report(exc, f"cancel #{request_id}")
            return
        self.notify(f"cancelled #{request_id}", timeout=4)


def clamp_caution(host_s: float | None, margin_s: float | None, source: str | None) -> str | None:
    """What Enter does when the host timeout is not above the margin by a second: the wrapper clamps a derived budget
    to 1 s (it never leaves calls without one), so every call would be cut after 1 s."""
    from mcpwatch.logview.timing import FIXED_SOURCES
    from mcpwatch.reliability.deadline import CLAMP_S

    if host_s is None or margin_s is None or source in FIXED_SOURCES or host_s - margin_s >= CLAMP_S:
        return None
    return (
        f"Enter sets a budget of {fmt.seconds(CLAMP_S)}: host timeout {fmt.seconds(host_s)} − margin "
        f"{fmt.seconds(margin_s)} is under {fmt.seconds(CLAMP_S)}, so the wrapper clamps it and cuts every call "
        f"after {fmt.seconds(CLAMP_S)}"
    )
