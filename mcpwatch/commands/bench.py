"""`mcpwatch bench NAME`: run one benchmark and print its figures as JSON."""

from __future__ import annotations

import argparse
import importlib
import importlib.util
import json
import os
import sys

HELP = "run a benchmark and print its figures as JSON (mcpwatch bench --list)"

# name -> module in mcpwatch.bench; a benchmark is offered only when its module exists.
# MCPWATCH_BENCH_BASELINE=DIR runs each against DIR's own in the same run (mcpwatch.bench.baseline).
BENCHMARKS = (
    "log",
    "core",
    "wrap",
    "paced",
    "otel",
    "metrics",
    "memory",
    "sessions",
    "hosts",
    "console",
    "replay",
    "trends",
)


def _available() -> list[str]:
    return [n for n in BENCHMARKS if importlib.util.find_spec(f"mcpwatch.bench.{n}") is not None]


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("name", nargs="?", choices=[*_available(), "all"], help="which benchmark")
    parser.add_argument("--list", action="store_true", help="list the benchmarks and exit")
    parser.add_argument("--quick", action="store_true", help="fewer iterations (a smoke run, not a measurement)")


def run(args: argparse.Namespace) -> int:
    names = _available()
    if args.list or not args.name:
        for name in names:
            module = importlib.import_module(f"mcpwatch.bench.{name}")
            print(f"{name:10} {module.HELP}")
        return 0
    from mcpwatch.bench.baseline import BASELINE_ENV, compare

    baseline = os.environ.get(BASELINE_ENV)
    for name in names if args.name == "all" else [args.name]:
        module = importlib.import_module(f"mcpwatch.bench.{name}")
        if baseline and not getattr(module, "BASELINE_INSIDE", False):
            figures = compare(name, args.quick, baseline)  # others run the baseline's wrapper beside their own
        else:
            figures = module.run(quick=args.quick)
        print(json.dumps({"benchmark": name, **figures}, indent=2), flush=True)
    sys.stdout.flush()
    return 0
