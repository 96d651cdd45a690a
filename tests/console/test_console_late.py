"""Late results in the console: the budget prompts' what-if line, and the detail of a cut call that finished late
or of a call answered with a stored late result."""

from __future__ import annotations

from typing import Any

import pytest
from console_helpers import SIZE, RecordingControls, ready, sample_app
from textual.content import Content
from textual.screen import Screen
from textual.widgets import Input, Static

from mcpwatch.console.headless.model import ConsoleModel
from mcpwatch.console.screens.detail import RequestDetailScreen
from mcpwatch.console.screens.main import MainScreen
from mcpwatch.console.screens.modals import SecondsPrompt
from mcpwatch.events import Event, Kind
from mcpwatch.testing.sample import EventFactory, deadline_block, session_start

from pilot_tools import current, screen_text, until

pytestmark = pytest.mark.anyio


def late_session() -> list[Event]:
    """Four calls under a 20 s budget (host 30 s − margin 10 s), one cut and answered 4 s later, one cut and never
    answered; then an identical call answered with the late result."""
    f = EventFactory()
    ev = [session_start(f)]
    ev.append(f.make(Kind.CONFIG_CHANGE, 0.5, key="margin_s", old=10.0, new=10.0, source="operator",
                     deadline=deadline_block(30.0, 10.0)))  # fmt: skip

    def call(rid: str, start: float, duration: float, outcome: str) -> None:
        ev.append(f.make(Kind.REQUEST_START, start, request_id=rid, tool="search", method="tools/call",
                         up_id=int(rid[1:]), budget_s=20.0, budget_source="derived"))  # fmt: skip
        ev.append(f.make(Kind.REQUEST_END, start + duration, request_id=rid, tool="search", outcome=outcome,
                         duration_s=duration))  # fmt: skip

    call("r1", 1.0, 5.0, "ok")
    call("r2", 2.0, 18.0, "ok")
    call("r3", 3.0, 20.0, "deadline")
    call("r4", 4.0, 20.0, "deadline")
    ev.append(f.make(Kind.LATE_RESULT, 27.0, request_id="r3", tool="search", up_id=3, reason="deadline",
                     cut_after_s=20.0, delay_s=4.0, duration_s=24.0, outcome="ok", size_bytes=61,
                     result={"content": [{"type": "text", "text": "found it after all"}]}))  # fmt: skip
    ev.append(f.make(Kind.REQUEST_START, 30.0, request_id="r5", tool="search", method="tools/call", up_id=None,
                     budget_s=None, budget_source="late_reuse"))  # fmt: skip
    ev.append(f.make(Kind.LATE_REUSE, 30.0, request_id="r5", tool="search", from_request_id="r3", delay_s=4.0,
                     age_s=3.0, ttl_s=60.0))  # fmt: skip
    ev.append(
        f.make(
            Kind.REQUEST_END,
            30.0,
            request_id="r5",
            tool="search",
            outcome="ok",
            duration_s=0.0,
            late_reuse=True,
            result_preview='{"content":[{"type":"text","text":"found it after all"}]}',
        )
    )
    return ev


KEPT = "dropped for the host, kept in the log"


async def open_prompt(pilot: Any, key: str) -> Screen[Any]:
    """The prompt `key` opens (`m` margin, `d` deadline, `t` host timeout), once it is the screen."""
    await pilot.press(key)
    await until(pilot, lambda: isinstance(pilot.app.screen, SecondsPrompt))
    return pilot.app.screen


def effect_text(prompt: Screen[Any]) -> str:
    """What a prompt says its value would have done (plain text in a Static, so drawn as Content)."""
    shown = prompt.query_one("#effect", Static).render()
    assert isinstance(shown, Content), shown
    return shown.plain


def test_the_model_keeps_late_results_and_reuses() -> None:
    model = ConsoleModel()
    model.apply_many(late_session())
    detail = model.request_detail("r3", 40.0)
    assert detail is not None
    late = detail.late
    assert late is not None and (late.delay_s, late.duration_s, late.outcome) == (4.0, 24.0, "ok")
    assert "found it after all" in (late.result or "")
    assert [t.text for t in detail.timeline][-1] == ("finished late: ok 4.0s after the cut (it took 24.0s in all)")
    reuse = model.request_detail("r5", 40.0)
    assert reuse is not None
    reused = reuse.late
    assert reused is not None and (reused.from_request_id, reused.age_s) == ("r3", 3.0)
    assert [c.request_id for c in model.recent_calls()] == ["r1", "r2", "r3", "r4"]  # r5 never went upstream
    assert [c.true_s for c in model.recent_calls()] == [5.0, 18.0, 24.0, None]
    view = model.view(40.0)
    assert (view.counters.late_results, view.counters.late_reused) == (1, 1)
    # the Events view lists both, newest first
    assert [(n.kind, n.severity, n.text) for n in view.notable[:2]] == [
        ("late_reuse", "info", "#r5 search answered with the late result of #r3, 3.0s old (reuse policy)"),
        ("late_result", "info", "#r3 search finished late: ok, 4.0s after its cut (24s in all); " + KEPT),
    ]


@pytest.mark.slow
async def test_the_margin_prompt_shows_what_the_new_budget_would_have_done() -> None:
    controls = RecordingControls()
    app = sample_app(controls=controls, events=late_session(), now=40.0)
    async with app.run_test(size=SIZE) as pilot:
        await ready(pilot)
        prompt = await open_prompt(pilot, "m")

        def effect() -> str:
            return effect_text(prompt)

        assert effect() == "budget 20 s → of the last 4 calls, 2 cut now; known: none change"
        prompt.query_one("Input", Input).value = "15"
        await until(pilot, lambda: effect().startswith("budget 15 s"))
        assert effect() == "budget 15 s → of the last 4 calls, 2 cut now; known: 1 newly cut"
        prompt.query_one("Input", Input).value = "5"
        await until(pilot, lambda: effect().startswith("budget 25 s"))
        assert effect() == (
            "budget 25 s → of the last 4 calls, 2 cut now; known: 1 saved; 1 unknown (never answered: not counted as"
            " saved)"
        )
        prompt.query_one("Input", Input).value = "abc"
        await until(pilot, lambda: effect() == "")
        await pilot.press("escape")
        assert controls.calls == []


@pytest.mark.slow
async def test_the_deadline_and_host_timeout_prompts_show_it_too() -> None:
    app = sample_app(controls=RecordingControls(), events=late_session(), now=40.0)
    async with app.run_test(size=SIZE) as pilot:
        await ready(pilot)
        prompt = await open_prompt(pilot, "d")
        prompt.query_one("Input", Input).value = "0"
        await until(pilot, lambda: effect_text(prompt).startswith("no budget"))
        assert effect_text(prompt) == (
            "no budget → of the last 4 calls, 2 cut now; known: 1 saved; 1 unknown (never answered: not counted as"
            " saved)"
        )
        await pilot.press("escape")
        prompt = await open_prompt(pilot, "t")
        prompt.query_one("Input", Input).value = "40"
        await until(pilot, lambda: effect_text(prompt).startswith("budget 30 s"))


async def test_the_detail_shows_the_late_result_and_the_reuse() -> None:
    app = sample_app(events=late_session(), now=40.0)
    async with app.run_test(size=SIZE) as pilot:
        await ready(pilot)
        current(app, MainScreen).open_request("r3")
        await until(pilot, lambda: isinstance(app.screen, RequestDetailScreen))
        await until(pilot, lambda: "finished late (ok) 4.0s after the cut" in screen_text(app), what="late result")
        text = " ".join(screen_text(app).split())
        assert "it took 24.0s in all, 61 bytes" in text and "found it after all" in text
        assert "Result · finished late" in text
        await pilot.press("escape")
        current(app, MainScreen).open_request("r5")
        await until(pilot, lambda: "answered with a stored late result" in screen_text(app), what="the reuse")
        words = " ".join(screen_text(app).split())  # the panel wraps the line where it must
        assert "of #r3: it finished 4.0s after its deadline, 3.0s before this call" in words


async def test_on_a_short_terminal_the_prompts_text_scrolls_and_its_buttons_stay_in_view() -> None:
    """On 20 rows the explanation, the value and a what-if of two lines are taller than the dialog may be (the
    demo's council prompts are at 24: a longer explanation and what-if): its text scrolls, and Set and Cancel stay
    inside it (they were drawn below its edge, cut off, with Enter the only way)."""
    app = sample_app(controls=RecordingControls(), events=late_session(), now=40.0)
    async with app.run_test(size=(80, 20)) as pilot:
        await ready(pilot)
        prompt = await open_prompt(pilot, "m")
        prompt.query_one("Input", Input).value = "5"
        await until(pilot, lambda: effect_text(prompt).startswith("budget 25 s"))
        await pilot.pause()
        dialog = prompt.query_one(".dialog")
        for name in ("#ok", "#cancel"):
            button = prompt.query_one(name)
            assert dialog.region.contains_region(button.region), (name, button.region, dialog.region)
