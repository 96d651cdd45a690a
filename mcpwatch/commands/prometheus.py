"""`mcpwatch prometheus rules|dashboard`: print the alerting rules or the Grafana dashboard shipped with mcpwatch,
for the scrape endpoint (`mcpwatch wrap --metrics-port P`)."""

from __future__ import annotations

import argparse

HELP = "print the Prometheus alerting rules or the Grafana dashboard for wrappers run with --metrics-port"

FILES = {"rules": "alerts.yml", "dashboard": "dashboard.json"}


def shipped(name: str) -> str:
    """The text of one of the files shipped in mcpwatch.prometheus."""
    from importlib.resources import files

    return files("mcpwatch.prometheus").joinpath(FILES[name]).read_text(encoding="utf-8")


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "what",
        choices=list(FILES),
        help="rules: the alerting rules (Prometheus rule_files); dashboard: the Grafana dashboard JSON",
    )


def run(args: argparse.Namespace) -> int:
    import sys

    sys.stdout.write(shipped(args.what))
    sys.stdout.flush()
    return 0
