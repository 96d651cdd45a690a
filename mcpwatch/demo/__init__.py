"""`mcpwatch demo`: the simulated council behind the wrapper, a driver acting as the host, and the console."""
