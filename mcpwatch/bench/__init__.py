"""Benchmarks run by `mcpwatch bench NAME`. Each module has `HELP`, `configure(parser)` and `run(args) -> dict`."""

QUICK_CALLS = (100, 20)  # calls and warm-up calls of a smoke run (`--quick`): the figures' shape, not a measurement
