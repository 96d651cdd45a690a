"""`mcpwatch council`: run the reference long-running MCP server (a multi-model council)."""

from __future__ import annotations

import argparse
import logging
import os
import sys

HELP = "run the reference long-running MCP server, a multi-model council (stdio, or --http HOST:PORT)"


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--scenario",
        default="default",
        metavar="NAME|FILE",
        help="members and simulated behaviour: default, fast, flaky, reasoning, or a .toml file (default: default)",
    )
    parser.add_argument(
        "--backend",
        default="simulated",
        choices=("simulated", "openai"),
        help="simulated (deterministic, no network) or openai (any OpenAI-compatible endpoint; default simulated)",
    )
    parser.add_argument(
        "--time-scale",
        default="1",
        metavar="X",
        help="multiply every simulated latency, tier budget and Retry-After wait by X (e.g. 0.01 for tests)",
    )
    parser.add_argument("--seed", type=int, default=None, metavar="N", help="seed of the simulated backend")
    parser.add_argument(
        "--http",
        default=None,
        metavar="HOST:PORT",
        help="serve Streamable HTTP at http://HOST:PORT/mcp instead of stdio",
    )
    parser.add_argument(
        "--base-url",
        default=None,
        metavar="URL",
        help="chat-completions endpoint of the openai backend (env LLM_COUNCIL_BASE_URL; default OpenRouter)",
    )
    parser.add_argument(
        "--log-level",
        default="WARNING",
        type=str.upper,
        choices=("DEBUG", "INFO", "WARNING", "ERROR"),
        help="log level on stderr (default WARNING)",
    )


def _configure_logging(level: str) -> None:
    """Log to stderr only (stdout is the protocol on stdio); done before MCPServer exists, which would
    otherwise install its own handler."""
    root = logging.getLogger()
    for handler in list(root.handlers):
        root.removeHandler(handler)
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(logging.Formatter("mcpwatch council: %(levelname)s %(name)s: %(message)s"))
    root.addHandler(handler)
    root.setLevel(level)


def run(args: argparse.Namespace) -> int:
    _configure_logging(args.log_level)
    from mcpwatch.council.settings import load_settings

    settings = load_settings(
        os.environ,
        scenario=args.scenario,
        backend=args.backend,
        time_scale=args.time_scale,
        seed=args.seed,
        http=args.http,
        base_url=args.base_url,
    )
    from mcpwatch.council.server import build_server

    mcp, council = build_server(settings)
    log = logging.getLogger("mcpwatch.council")
    names = ", ".join(m.id for m in council.roster.enabled())
    log.info(
        "backend %s, scenario %s, time scale %g: %s",
        settings.backend,
        settings.scenario.name,
        settings.time_scale,
        names,
    )
    if settings.backend == "openai" and not settings.api_key:
        log.warning("OPENROUTER_API_KEY is not set: every consult will fail with auth_error until it is")
    if settings.http is None:
        mcp.run()
        return 0
    from mcpwatch.ports import check_can_listen

    host, port = settings.http
    check_can_listen(host, port, "--http")
    print(f"mcpwatch council: serving Streamable HTTP at http://{host}:{port}/mcp", file=sys.stderr, flush=True)
    import anyio

    anyio.run(lambda: mcp.run_streamable_http_async(host=host, port=port))
    return 0
