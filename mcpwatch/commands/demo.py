"""`mcpwatch demo`: the simulated council behind the wrapper, driven by a built-in host, watched live."""

from __future__ import annotations

import argparse

HELP = "everything at once: a simulated council behind the wrapper, a host driving it, and the console"


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--headless", action="store_true", help="no console: run, then print a summary")
    parser.add_argument("--duration", type=float, default=60.0, metavar="S", help="headless run length (default 60)")
    parser.add_argument(
        "--time-scale",
        type=float,
        default=0.25,
        metavar="X",
        help="speed of the simulated council (default 0.25: a council call takes about 4-30 s)",
    )
    parser.add_argument("--seed", type=int, default=7, help="seed of the simulated council and the driver")
    parser.add_argument("--theme", metavar="NAME", help="console theme")


def run(args: argparse.Namespace) -> int:
    import math

    from mcpwatch.errors import UserError

    if not (math.isfinite(args.duration) and args.duration > 0):
        raise UserError(f"--duration must be a positive number of seconds, got {args.duration}")
    if not (math.isfinite(args.time_scale) and args.time_scale > 0):
        raise UserError(f"--time-scale must be a positive number, got {args.time_scale}")
    from mcpwatch.demo.run import run_headless, run_with_console

    if args.headless:
        return run_headless(args.duration, args.time_scale, args.seed)
    return run_with_console(args.time_scale, args.seed, args.theme)
