"""mcpwatch: make long-running MCP tool calls survivable and visible."""

__version__ = "0.1.0"
