"""Console widgets: panels that repaint only on change, tables rebuilt as bounded windows, a footer rebuilt once a
frame."""

from mcpwatch.console.widgets.footer import KeyFooter
from mcpwatch.console.widgets.panel import Line, Panel, ScrollPanel, set_title
from mcpwatch.console.widgets.table import WindowTable

__all__ = ["KeyFooter", "Line", "Panel", "ScrollPanel", "WindowTable", "set_title"]
