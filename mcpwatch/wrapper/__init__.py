"""`mcpwatch wrap`: the transparent reliability wrapper between an MCP host and an MCP server."""
