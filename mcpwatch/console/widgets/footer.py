"""The key footer, rebuilt once per frame however many times the keys change in it.

Textual's `Footer` recomposes every key widget on each `bindings_updated_signal`, and a screen sends several in one
frame (mount, resize, focus, a reactive with `bindings=True`): a screen switch rebuilt it about three times where
once shows the same. Here a change schedules one rebuild after the next refresh; later changes before it runs ride
on it, since the rebuild reads the keys as they are then.
"""

from __future__ import annotations

from textual.screen import Screen
from textual.widgets import Footer


class KeyFooter(Footer):
    _rebuild_pending = False

    def bindings_changed(self, screen: Screen[object]) -> None:
        self._bindings_ready = True
        if not screen.app.app_focus or not self.is_attached or screen is not self.screen or self._rebuild_pending:
            return
        self._rebuild_pending = True
        self.call_after_refresh(self._rebuild)

    async def _rebuild(self) -> None:
        self._rebuild_pending = False  # a change from here on needs a rebuild of its own
        await self.recompose()
