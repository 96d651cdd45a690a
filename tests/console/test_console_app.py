"""Pilot tests: every key and palette action of the console, over fixed data with recording controls."""

from __future__ import annotations

from typing import Any

import pytest
from console_helpers import SIZE, RecordingControls, ready, sample_app
from textual.content import Content
from textual.screen import Screen
from textual.widgets import Input, Static

from mcpwatch.console.app import ConsoleApp
from mcpwatch.console.headless.source import FeedStatus
from mcpwatch.console.screens.detail import RequestDetailScreen
from mcpwatch.console.screens.help import HelpScreen
from mcpwatch.console.screens.main import MainScreen
from mcpwatch.console.screens.modals import Confirm, SecondsPrompt
from mcpwatch.console.widgets import Line, WindowTable
from mcpwatch.events import Kind
from mcpwatch.testing.feed import StaticFeed
from mcpwatch.testing.sample import EventFactory

from pilot_tools import current, run_from_palette, screen_text, until

pytestmark = pytest.mark.anyio


def problem_line(prompt: Screen[Any]) -> str:
    """The prompt's problem line as the user reads it: a Static given plain text (markup off) draws it as Content."""
    drawn = prompt.query_one("#problem", Static).render()
    assert isinstance(drawn, Content), f"the problem line draws a {type(drawn).__name__}"
    return drawn.plain


async def test_main_screen_shows_the_session_and_reports_a_display_error(monkeypatch: pytest.MonkeyPatch) -> None:
    app = sample_app()
    async with app.run_test(size=SIZE, notifications=True) as pilot:
        await ready(pilot)
        await pilot.pause()
        assert isinstance(app.screen, MainScreen)
        text = screen_text(app)
        for expected in (
            "council",
            "budget       105s",
            "source       env",
            "Tier budgets vs 105s",
            "consult_council",
            "TTL 150s = 105s budget + 10s init + 30s backoff + 5s ε",
            "tasks.update → tasks.*, sprints.*",
            "upstream wrote 212 bytes",
            "Council · #23 · high tier · stage 1",
        ):
            assert expected in text, expected
        inflight = app.screen.query_one("#inflight", WindowTable)
        assert [key for key, _ in inflight._rows] == ["23", "24"]

        # A display error is reported, not raised.
        def broken() -> None:
            raise RuntimeError("boom")

        monkeypatch.setattr(app.screen, "refresh_view", broken)
        await until(pilot, lambda: app.tick_errors >= 1, what="a tick to meet the broken screen")
        await pilot.pause()
        assert any("display problem: RuntimeError: boom" in n.message for n in app._notifications)
        assert app.is_running


@pytest.mark.slow
async def test_margin_prompt_refuses_bad_input_sends_a_good_one_and_shows_the_wrappers_refusal() -> None:
    """One console, the margin prompt opened three times (bad values; a value the wrapper refuses; a value that
    leaves no budget), then the health-check key: `controls.calls` is emptied between the parts."""
    controls = RecordingControls()
    app = sample_app(controls=controls)
    async with app.run_test(size=SIZE) as pilot:
        await ready(pilot)
        # Bad values: each explained, the prompt stays open, nothing is sent.
        await pilot.press("m")
        await until(pilot, lambda: isinstance(app.screen, SecondsPrompt))
        prompt = current(app, SecondsPrompt)
        cases = {
            "abc": "margin must be a number of seconds, got 'abc'",
            "nan": "margin must be finite, got 'nan'",
            "inf": "margin must be finite, got 'inf'",
            "-1": "margin must not be negative, got '-1'",
            "1e309": "margin is absurdly large ('1e309' s; at most 604800 s)",
            "": "type a number of seconds",
            "900000": "margin is absurdly large ('900000' s; at most 604800 s)",
        }
        for typed, message in cases.items():
            prompt.query_one(Input).value = typed
            await pilot.press("enter")
            await pilot.pause()
            assert message in problem_line(prompt), typed
            assert app.screen is prompt
        assert controls.calls == []
        await pilot.press("escape")
        assert isinstance(app.screen, MainScreen)
        assert controls.calls == []

        # A good value the wrapper refuses: the refusal is shown, the prompt stays; enter again sends it again.
        await pilot.press("m")
        await until(pilot, lambda: isinstance(app.screen, SecondsPrompt))
        prompt = current(app, SecondsPrompt)
        prompt.query_one(Input).value = "25"
        controls.refuse = "margin must leave at least 1 s of budget"
        await pilot.press("enter")
        await until(pilot, lambda: "refused" in problem_line(prompt))
        assert "margin must leave at least 1 s of budget" in problem_line(prompt)
        assert app.screen is prompt  # still open: nothing changed, the operator can correct it
        await pilot.press("enter")
        await until(pilot, lambda: isinstance(app.screen, MainScreen), what="the prompt to close")
        assert controls.calls == [("set_margin", 25.0), ("set_margin", 25.0)]

        # A margin that leaves no budget needs a second enter.
        controls.calls.clear()
        await pilot.press("m")
        await until(pilot, lambda: isinstance(app.screen, SecondsPrompt))
        prompt = current(app, SecondsPrompt)
        prompt.query_one(Input).value = "500"
        await pilot.press("enter")
        await pilot.pause()
        problem = problem_line(prompt)
        assert "Enter sets a budget of 1s: host timeout 120s − margin 500s is under 1s" in problem
        assert controls.calls == []
        await pilot.press("enter")
        await until(pilot, lambda: controls.calls, what="the second enter to send")
        assert controls.calls == [("set_margin", 500.0)]
        await until(pilot, lambda: isinstance(app.screen, MainScreen), what="the prompt to close")

        # The health-check key asks the wrapper.
        controls.calls.clear()
        await pilot.press("h")
        await until(pilot, lambda: controls.calls, what="a health check")
        assert controls.calls == [("health_check", None)]


@pytest.mark.slow
async def test_operator_keys_and_the_palette_reach_the_wrapper() -> None:
    """One live console: the host-timeout and deadline prompts, cancel from the main screen and from a running
    call's detail, the help's operator keys, then every palette action. `controls.calls` is emptied between."""
    controls = RecordingControls()
    app = sample_app(controls=controls)
    async with app.run_test(size=SIZE) as pilot:
        await ready(pilot)
        # The host-timeout and deadline-override keys.
        await pilot.press("t")
        await until(pilot, lambda: isinstance(app.screen, SecondsPrompt))
        app.screen.query_one(Input).value = "0"
        await pilot.press("enter")
        await pilot.pause()
        assert "host timeout must be greater than 0" in problem_line(app.screen)
        app.screen.query_one(Input).value = "300s"
        await pilot.press("enter")
        await until(pilot, lambda: isinstance(app.screen, MainScreen))
        await pilot.press("d")
        await until(pilot, lambda: isinstance(app.screen, SecondsPrompt))
        app.screen.query_one(Input).value = "0.01"  # a budget below the floor would cut every call at once
        await pilot.press("enter")
        await pilot.pause()
        assert "deadline is too small ('0.01' s; at least 0.05 s)" in problem_line(app.screen)
        app.screen.query_one(Input).value = ""  # empty clears the override
        await pilot.press("enter")
        await until(pilot, lambda: isinstance(app.screen, MainScreen))
        assert controls.calls == [("set_host_timeout", 300.0), ("set_deadline", None)]

        # Cancel asks first and cancels the selected call.
        controls.calls.clear()
        inflight = app.screen.query_one("#inflight", WindowTable)
        inflight.focus()
        await pilot.pause()  # focus is applied on the next loop turn
        assert inflight.selected_key == "23"
        await pilot.press("down")  # the second in-flight call, #24
        assert inflight.selected_key == "24"
        await pilot.press("c")
        await until(pilot, lambda: isinstance(app.screen, Confirm))
        assert "Cancel #24 tasks.export" in screen_text_of_dialog(app)
        await pilot.press("n")
        await until(pilot, lambda: isinstance(app.screen, MainScreen))
        assert controls.calls == []
        await pilot.press("c")
        await until(pilot, lambda: isinstance(app.screen, Confirm))
        await pilot.press("y")
        await until(pilot, lambda: controls.calls, what="the cancel")
        assert controls.calls == [("cancel", "24")]

        # The detail of a running call offers cancel.
        controls.calls.clear()
        await until(pilot, lambda: isinstance(app.screen, MainScreen))
        await pilot.press("up")
        assert inflight.selected_key == "23"
        await pilot.press("enter")
        await until(pilot, lambda: isinstance(app.screen, RequestDetailScreen))
        assert current(app, RequestDetailScreen).request_id == "23"
        await pilot.press("c")
        await until(pilot, lambda: isinstance(app.screen, Confirm))
        await pilot.press("y")
        await until(pilot, lambda: controls.calls)
        assert controls.calls == [("cancel", "23")]
        await until(pilot, lambda: isinstance(app.screen, RequestDetailScreen))
        await pilot.press("escape")
        await until(pilot, lambda: isinstance(app.screen, MainScreen))

        # The help lists the operator keys in live mode (a recording's: see the test without controls).
        await pilot.press("question_mark")
        await until(pilot, lambda: isinstance(app.screen, HelpScreen))
        text = app.screen.query_one("#help-text", Line).plain
        assert "set the deadline margin" in text
        await pilot.press("escape")
        assert isinstance(app.screen, MainScreen)

        # The palette offers every action and runs them.
        controls.calls.clear()
        from mcpwatch.console.commands import ConsoleCommands

        names = [name for name, _, _ in ConsoleCommands(app.screen)._commands()]
        for expected in (
            "operator: health check now",
            "operator: set margin…",
            "operator: set host timeout…",
            "operator: set deadline override…",
            "operator: reset the budget",
            "operator: cancel selected call…",
            "view: pause the view",
            "view: filter requests…",
            "theme: mcpwatch-light",
            "theme: mcpwatch-high-contrast",
        ):
            assert expected in names
        await run_from_palette(pilot, "health check now")
        await until(pilot, lambda: controls.calls, what="the palette's health check")
        assert controls.calls == [("health_check", None)]
        await run_from_palette(pilot, "theme: mcpwatch-light")
        await until(pilot, lambda: app.theme == "mcpwatch-light", what="the theme to change")


def screen_text_of_dialog(app: ConsoleApp) -> str:
    return "\n".join(str(w.render()) for w in app.screen.query("Static"))


async def test_cancel_with_nothing_in_flight_says_so() -> None:
    controls = RecordingControls()
    f = EventFactory()
    app = sample_app(controls=controls, events=[f.make(Kind.WARNING, 1.0, message="quiet")], now=2.0)
    async with app.run_test(size=SIZE, notifications=True) as pilot:
        await ready(pilot)
        await pilot.press("c")
        await pilot.pause()
        assert isinstance(app.screen, MainScreen)
        assert any("nothing is in flight" in n.message for n in app._notifications)
        assert controls.calls == []


@pytest.mark.slow
async def test_a_recording_has_no_operator_actions_opens_details_filters_pauses_and_quits() -> None:
    """One console without controls (a recording): the operator keys, palette commands and help entries are
    absent; enter opens a request's detail; the filter narrows the requests; pause freezes the view; q quits."""
    app = sample_app()
    async with app.run_test(size=SIZE) as pilot:
        await ready(pilot)
        # Without controls the operator actions are absent: keys, footer, palette, help.
        for key in ("h", "m", "t", "d", "c"):
            await pilot.press(key)
            await pilot.pause()
            assert isinstance(app.screen, MainScreen), key
        footer_keys = {b.binding.key for b in app.screen.active_bindings.values() if b.enabled and b.binding.show}
        assert not footer_keys & {"h", "m", "c"}
        assert {"slash", "p"} <= footer_keys
        from mcpwatch.console.commands import ConsoleCommands

        names = [name for name, _, _ in ConsoleCommands(app.screen)._commands()]
        assert not [n for n in names if n.startswith("operator:")]
        assert "view: pause the view" in names
        await pilot.press("question_mark")
        await until(pilot, lambda: isinstance(app.screen, HelpScreen))
        assert "not available here" in app.screen.query_one("#help-text", Line).plain
        await pilot.press("escape")
        await until(pilot, lambda: isinstance(app.screen, MainScreen))

        # Enter opens the detail screen and escape returns.
        requests = app.screen.query_one("#requests", WindowTable)
        requests.focus()
        await pilot.pause()  # focus is applied on the next loop turn
        await pilot.press("down")  # #20: the council run that hit its deadline
        assert requests.selected_key == "20"
        await pilot.press("enter")
        await until(pilot, lambda: isinstance(app.screen, RequestDetailScreen))
        text = screen_text(app)
        assert "Request #20 · consult_council" in text
        assert "deadline after 110.00s (partial result)" in text
        assert "late response dropped 14.5s after the tombstone" in text
        assert '"query": "Should we shard the events table?"' in text
        assert "Partial result" in text
        assert "expires in 25s" in text
        await pilot.press("escape")
        assert isinstance(app.screen, MainScreen)

        # The filter narrows the requests and escape clears it.
        assert len(requests._rows) == 10
        await pilot.press("slash")
        await pilot.press(*"tool_err")
        await pilot.pause()
        assert [key for key, _ in requests._rows] == ["4"]
        assert "matching 'tool_err': 1 of 10" in (app.screen.query_one("#requests-box").border_title or "")
        await pilot.press("escape")
        await pilot.pause()
        assert len(requests._rows) == 10
        assert not app.screen.query_one("#filter").display

        # Pause freezes the view while events keep arriving.
        await pilot.press("p")
        session = app.session
        assert session is not None and session.paused
        feed = session.feed
        assert isinstance(feed, StaticFeed)
        f = EventFactory()
        feed.push([f.make(Kind.WARNING, 299.0, message="arrived while paused")])
        await pilot.pause(0.3)
        assert "arrived while paused" not in screen_text(app)
        assert "paused — 1 event recorded since (p resumes)" in screen_text(app)
        assert session.model.view(300).warnings[0].message == "arrived while paused"  # recorded all the same
        await pilot.press("p")
        await until(pilot, lambda: "arrived while paused" in screen_text(app), what="the view to resume")

        # q quits.
        await pilot.press("q")
        await until(pilot, lambda: not app.is_running, what="q to quit")


async def test_disconnected_state_keeps_the_last_state_and_says_so() -> None:
    status = FeedStatus("disconnected", "disconnected — retrying in 3s: wrapper 'council' is not running")
    app = sample_app(status=status)
    async with app.run_test(size=SIZE) as pilot:
        await ready(pilot)
        await pilot.pause()
        text = screen_text(app)
        assert "disconnected — retrying in 3s" in text
        assert "showing the last state received" in text
        assert "consult_council" in text
