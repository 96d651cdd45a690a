"""Several wrappers running at start-up: the Fleet table as a chooser (no way back; a number or enter watches one)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from mcpwatch.console.screens.fleet import FleetScreen
from mcpwatch.registry import WrapperEntry


class ChooseWrapperScreen(FleetScreen):
    def __init__(
        self,
        entries: Callable[[], list[WrapperEntry]],
        on_choose: Callable[[WrapperEntry], None],
        client_factory: Callable[[WrapperEntry], Any] | None = None,
    ) -> None:
        super().__init__(entries, on_choose, can_go_back=False, client_factory=client_factory)
