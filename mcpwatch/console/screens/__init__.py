"""Console screens. `MainScreen` and `RequestDetailScreen` take a `WatchSession`, so replay reuses them as they are."""

from mcpwatch.console.screens.base import WatchScreen
from mcpwatch.console.screens.detail import RequestDetailScreen
from mcpwatch.console.screens.main import MainScreen

__all__ = ["MainScreen", "RequestDetailScreen", "WatchScreen"]
