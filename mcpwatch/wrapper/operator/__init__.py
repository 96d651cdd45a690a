"""The operator endpoint's server side: the MCP server the console and scripts talk to, and the actions it may take
on a running wrapper. The contract both sides import is `mcpwatch.operator`."""
