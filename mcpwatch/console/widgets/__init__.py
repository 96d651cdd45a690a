"""Console widgets: panels that repaint only on change, and tables rebuilt as bounded windows."""

from mcpwatch.console.widgets.panel import Line, Panel, set_title
from mcpwatch.console.widgets.table import WindowTable

__all__ = ["Line", "Panel", "WindowTable", "set_title"]
