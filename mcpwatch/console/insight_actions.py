"""Opening the log-backed views (Trends, Models) from anywhere in the console: the app's keys and palette entries."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from textual.binding import Binding, BindingType
from textual.screen import Screen

INSIGHT_BINDINGS: list[BindingType] = [
    Binding("T", "trends", "Trends", id="app.trends", show=False),
    Binding("M", "models", "Models", id="app.models", show=False),
]


class InsightActions:
    """Mixed into the console app: `T` opens Trends, `M` Models, over the session being watched (the palette too)."""

    session: Any
    screen: Screen[Any]

    def action_trends(self) -> None:
        from mcpwatch.console.screens.trends import TrendsScreen

        if self.session is None or isinstance(self.screen, TrendsScreen):
            return
        self.push_screen(TrendsScreen(self.session))  # type: ignore[attr-defined]

    def action_models(self) -> None:
        from mcpwatch.console.screens.models import ModelsScreen

        if self.session is None or isinstance(self.screen, ModelsScreen):
            return
        self.push_screen(ModelsScreen(self.session))  # type: ignore[attr-defined]

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
            (
                "view: Models",
                "per council model: latency, ok/timeout/rate_limited/auth_error/error, last failure; disable (M)",
                self.action_models,
            ),
        ]
