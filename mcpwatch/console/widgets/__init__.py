"""Console widgets: panels that repaint only on change, and tables rebuilt as bounded windows."""

from mcpwatch.console.widgets.panel import Line, Panel, ScrollPanel, set_title
from mcpwatch.console.widgets.table import WindowTable

__all__ = ["Line", "Panel", "ScrollPanel", "WindowTable", "set_title"]
