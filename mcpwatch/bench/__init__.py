"""Benchmarks run by `mcpwatch bench NAME`. Each module has `HELP` and `run(quick=False) -> dict` (its figures); one
that runs a baseline checkout's wrapper beside its own says `BASELINE_INSIDE = True` (else `bench.baseline.compare`
runs it from both checkouts)."""

import sys

QUICK_CALLS = (100, 20)  # calls and warm-up calls of a smoke run (`--quick`): the figures' shape, not a measurement
RAW_UPSTREAM = (sys.executable, "-m", "mcpwatch.bench.raw_upstream")  # the upstream that answers with the least work
LINE_FORWARDER = (sys.executable, "-m", "mcpwatch.bench.line_forwarder")  # the floor of any stdio wrapper
