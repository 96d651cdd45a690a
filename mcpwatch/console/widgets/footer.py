"""The key footer, rebuilt once per frame however many times the keys change in it.

Textual's `Footer` recomposes every key widget on each `bindings_updated_signal`, and a screen sends several in one
frame (mount, resize, focus, a reactive with `bindings=True`): a screen switch rebuilt it about three times where
once shows the same. Here a change schedules one rebuild after the next refresh; later changes before it runs ride
on it, since the rebuild reads the keys as they are then. A rebuild whose keys are those already shown (a focus
move, a resize that still fits every key) is skipped: mounting ~20 key widgets is most of a screen's start-up.
"""

from __future__ import annotations

from typing import Any

from textual.screen import Screen
from textual.widgets import Footer


class KeyFooter(Footer):
    _rebuild_pending = False
    _shown: tuple[Any, ...] | None = None  # what the last rebuild drew (see `_keys`)

    def bindings_changed(self, screen: Screen[object]) -> None:
        self._bindings_ready = True
        if not screen.app.app_focus or not self.is_attached or screen is not self.screen or self._rebuild_pending:
            return
        self._rebuild_pending = True
        self.call_after_refresh(self._rebuild)

    async def _rebuild(self) -> None:
        self._rebuild_pending = False  # a change from here on needs a rebuild of its own
        if not self.is_attached or self._pruning:
            return  # its screen was switched away or closed before the rebuild ran (as `recompose` does)
        keys = self._keys()
        if keys == self._shown:
            return
        self._shown = keys
        await self.recompose()

    def _keys(self) -> tuple[Any, ...]:
        """Everything `Footer.compose` reads: each binding as shown, whether it is enabled, and the palette key."""
        app = self.app
        return (
            self.show_command_palette,
            tuple(
                (key, binding, app.get_key_display(binding), enabled, tooltip)
                for key, (_, binding, enabled, tooltip) in self.screen.active_bindings.items()
            ),
        )
