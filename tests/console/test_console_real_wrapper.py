"""The console against a real `mcpwatch wrap` process around the council: actions take effect at the wrapper."""

from __future__ import annotations

import re
import sys
from typing import Any

import anyio
import pytest
from console_helpers import SIZE, ready
from textual.app import App
from textual.widgets import Input

from mcpwatch.console.app import ConsoleApp
from mcpwatch.console.headless.source import Target
from mcpwatch.console.screens.modals import Confirm, SecondsPrompt
from mcpwatch.console.widgets import WindowTable
from mcpwatch.operator.client import OperatorClient
from mcpwatch.registry import find_wrapper

from pilot_tools import run_from_palette, screen_text, until
from waiting import patience

pytestmark = [
    pytest.mark.anyio,
    pytest.mark.slow,
]

COUNCIL = [sys.executable, "-m", "mcpwatch", "council", "--scenario", "default", "--time-scale", "0.3"]


@pytest.mark.slow
async def test_margin_and_cancel_from_the_console_reach_the_real_wrapper() -> None:
    from wraptools import wrapped_client

    async with wrapped_client(COUNCIL, wrap_args=["--name", "real-council"]) as host:
        (entry,) = find_wrapper("real-council")
        app = ConsoleApp(target=Target(selector="real-council"))
        async with app.run_test(size=SIZE) as pilot:
            await ready(pilot)
            await until(pilot, lambda: "● live" in screen_text(app), what="live")

            # A margin set in the console shows in the wrapper's own status.
            await pilot.press("m")
            await until(pilot, lambda: isinstance(app.screen, SecondsPrompt))
            app.screen.query_one(Input).value = "25"
            await pilot.press("enter")
            await until(pilot, lambda: not isinstance(app.screen, SecondsPrompt), what="the prompt to close")
            async with OperatorClient.for_entry(entry) as op:
                assert (await op.status())["deadline"]["margin_s"] == 25.0
            await until(pilot, lambda: _margin_shown(app, "25s"), what="the margin on screen")

            # The palette's reset undoes it at the wrapper.
            await run_from_palette(pilot, "reset the budget")
            await until(pilot, lambda: _margin_shown(app, "10s"), what="the margin reset on screen")
            async with OperatorClient.for_entry(entry) as op:
                assert (await op.status())["deadline"]["margin_s"] == 10.0

            # A long council call, cancelled from the console: the host gets its error result at once.
            outcome: dict[str, object] = {}

            async def ask() -> None:
                result = await host.call_tool("consult_council", {"query": "q", "confidence": "high"})
                outcome["is_error"] = result.is_error

            async with anyio.create_task_group() as tg:
                tg.start_soon(ask)
                inflight = app.screen.query_one("#inflight", WindowTable)
                await until(pilot, lambda: inflight.selected_key is not None, what="the call in flight")
                inflight.focus()
                await pilot.pause()
                await pilot.press("c")
                await until(pilot, lambda: isinstance(app.screen, Confirm))
                await pilot.press("y")
                with anyio.fail_after(patience(15)):
                    while "is_error" not in outcome:
                        await anyio.sleep(0.05)
            assert outcome["is_error"] is True
            await until(pilot, lambda: "⊘ cancelled" in screen_text(app), what="the cancel in the request list")
            await until(pilot, lambda: "Tombstones 1" in screen_text(app), what="the tombstone")


def _margin_shown(app: App[Any], margin: str) -> bool:
    """The deadline panel's "host, margin" line shows this margin."""
    return re.search(rf"host, margin +\S+, {margin}\b", screen_text(app)) is not None
