"""The key footer is rebuilt once for a burst of key changes, and again for a change after that rebuild."""

from __future__ import annotations

from dataclasses import replace
from typing import Any, ClassVar

import pytest
from textual.app import App, ComposeResult
from textual.binding import ActiveBinding, Binding, BindingType
from textual.screen import Screen
from textual.widgets import Static

from mcpwatch.console.widgets import KeyFooter

from pilot_tools import until


class Keys(Screen[None]):
    """One key whose label follows the screen's state, as pause reads "Resume" on the console's screens."""

    BINDINGS: ClassVar[list[BindingType]] = [Binding("a", "noop", "Alpha")]
    label = "Alpha"

    def compose(self) -> ComposeResult:
        yield Static("body")
        yield KeyFooter()

    @property
    def active_bindings(self) -> dict[str, ActiveBinding]:
        keys = super().active_bindings
        return {key: k._replace(binding=replace(k.binding, description=self.label)) for key, k in keys.items()}

    def action_noop(self) -> None:
        pass


class KeysApp(App[None]):
    def on_mount(self) -> None:
        self.push_screen(Keys())


def footer_words(app: App[Any]) -> str:
    return " ".join(str(key.render()) for key in app.screen.query("FooterKey"))


@pytest.mark.anyio
async def test_a_burst_of_key_changes_rebuilds_the_footer_once_with_the_last_keys() -> None:
    app = KeysApp()
    async with app.run_test(size=(80, 10)) as pilot:
        await until(pilot, lambda: "Alpha" in footer_words(app), what="the first footer")
        screen = app.screen
        assert isinstance(screen, Keys)
        footer = screen.query_one(KeyFooter)
        rebuilds = 0
        recompose = footer.recompose

        async def counted() -> None:
            nonlocal rebuilds
            rebuilds += 1
            await recompose()

        footer.recompose = counted  # type: ignore[method-assign]  # count this footer's rebuilds
        for label in ("Beta", "Gamma", "Delta"):
            screen.label = label
            screen.refresh_bindings()
        await until(pilot, lambda: "Delta" in footer_words(app), what="the footer to show the last label")
        await pilot.pause(0.1)
        assert rebuilds == 1
        screen.label = "Omega"
        screen.refresh_bindings()  # a change after the rebuild gets one of its own
        await until(pilot, lambda: "Omega" in footer_words(app), what="a second rebuild")
        assert rebuilds == 2
