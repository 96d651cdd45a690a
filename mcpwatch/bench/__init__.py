"""Benchmarks run by `mcpwatch bench NAME`. Each module has `HELP`, `configure(parser)` and `run(args) -> dict`."""
