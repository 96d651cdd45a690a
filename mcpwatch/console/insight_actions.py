"""Opening the log-backed views (Trends) from anywhere in the console: the app's keys and palette entries."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from textual.binding import Binding, BindingType
from textual.screen import Screen

INSIGHT_BINDINGS: list[BindingType] = [
    Binding("T", "trends", "Trends", id="app.trends", show=False),
]


class InsightActions:
    """Mixed into the console app: `T` (or the palette) opens Trends over the session being watched."""

    session: Any
    screen: Screen[Any]

    def action_trends(self) -> None:
        from mcpwatch.console.screens.trends import TrendsScreen

        if self.session is None or isinstance(self.screen, TrendsScreen):
            return
        self.push_screen(TrendsScreen(self.session))  # type: ignore[attr-defined]

    def insight_commands(self) -> list[tuple[str, str, Callable[[], object]]]:
        """Palette entries, as (name, help, callback); none while no session is watched."""
        if self.session is None:
            return []
        return [
            (
                "view: Trends",
                "per tool calls, deadlines, errors and p50/p95 latency over time (T)",
                self.action_trends,
            ),
        ]
