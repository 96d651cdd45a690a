"""`mcpwatch wrap`: put the reliability wrapper between an MCP host and an MCP server."""

from __future__ import annotations

import argparse
from typing import Any

from mcpwatch.config import add_config_option
from mcpwatch.errors import UserError

HELP = "run an MCP server behind the reliability wrapper (mcpwatch wrap -- CMD ARGS… | --url URL)"


# flag → the environment variable it stands beside (a flag given wins over the variable)
BUDGET_FLAGS = {
    "host_timeout": ("--host-timeout", "MCPWATCH_HOST_TOOLS_CALL_TIMEOUT_SEC"),
    "margin": ("--margin", "MCPWATCH_TOOL_CALL_DEADLINE_MARGIN_SEC"),
    "deadline": ("--deadline", "MCPWATCH_TOOL_CALL_DEADLINE_SEC"),
}


def add_budget_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--host-timeout", metavar="S", help="the host's tools/call timeout in seconds (else the detected host's)"
    )
    parser.add_argument("--margin", metavar="S", help="seconds the budget ends before the host timeout (default 10)")
    parser.add_argument("--deadline", metavar="S", help="a fixed budget in seconds for every call (≤ 0: no budget)")


def apply_host_config(ref: str | None, host_timeout_flag: str | None, hosts: dict[str, Any]) -> str | None:
    """`--host-config FILE#SERVER`: read the host's timeout for this server from the host's own config at start,
    so the budget follows the host's setting. A flag or variable naming the host timeout wins; a file that cannot be
    read leaves the budget to the host's profile. Returns a one-line warning, or None."""
    if ref is None:
        return None
    import os
    from pathlib import Path

    from mcpwatch.hostconfig.timeouts import HostConfigError, read_ref
    from mcpwatch.reliability.deadline import ENV_HOST_TIMEOUT, SET_BY_FLAG
    from mcpwatch.reliability.hosts import catalog

    try:
        timeout = read_ref(ref, catalog(hosts), os.environ, Path.cwd())
    except HostConfigError as exc:
        return f"{exc}; the budget comes from the host's profile"
    if timeout.seconds is None or timeout.origin == "default":
        return None  # the host's profile gives the same clock
    if host_timeout_flag is not None or os.environ.get(ENV_HOST_TIMEOUT):
        return None
    os.environ[ENV_HOST_TIMEOUT] = repr(timeout.seconds)
    SET_BY_FLAG[ENV_HOST_TIMEOUT] = f"--host-config: {timeout.source}"
    return None


def apply_budget_options(args: argparse.Namespace) -> None:
    """Check the budget flags (a clear error for a bad value) and set the variables they stand for."""
    import os

    from mcpwatch.reliability.deadline import SET_BY_FLAG
    from mcpwatch.reliability.seconds import InvalidValue, check_seconds

    for attribute, (flag, variable) in BUDGET_FLAGS.items():
        value = getattr(args, attribute, None)
        if value is None:
            continue
        try:
            deadline = attribute == "deadline"  # ≤ 0 disables the budget; above 0, at least the floor
            number = check_seconds(
                value, flag, allow_zero=attribute != "host_timeout", allow_negative=deadline, budget=deadline
            )
        except InvalidValue as exc:
            raise UserError(str(exc)) from None
        os.environ[variable] = repr(number)
        SET_BY_FLAG[variable] = flag


def configure(parser: argparse.ArgumentParser) -> None:
    add_config_option(parser)
    add_budget_options(parser)
    parser.add_argument("--name", help="a name for this wrapper in the console and the log")
    parser.add_argument(
        "--host-config",
        metavar="FILE#SERVER",
        help="read the host's timeout for this server from the host's own config at start (the budget follows it)",
    )
    parser.add_argument("--log", metavar="DB", help="event log file (default: <state dir>/events.db)")
    parser.add_argument("--no-log", action="store_true", help="do not write the event log")
    parser.add_argument(
        "--listen", metavar="URL", help="serve hosts over Streamable HTTP, e.g. http://127.0.0.1:8800/mcp"
    )
    parser.add_argument(
        "--allow-remote",
        action="store_true",
        help="let --listen or [metrics] host use an address other machines reach (0.0.0.0, ::, a LAN address); "
        "hosts and scrapers then need a token",
    )
    parser.add_argument(
        "--token-file",
        metavar="PATH",
        help="the bearer token hosts (and scrapers) must send (default with --allow-remote: generated, printed once)",
    )
    parser.add_argument(
        "--metrics-port",
        type=int,
        metavar="P",
        help="serve Prometheus metrics at http://127.0.0.1:P/metrics ([metrics] host and port in mcpwatch.toml)",
    )
    parser.add_argument("--operator-port", type=int, metavar="P", help="operator endpoint port (default: ephemeral)")
    parser.add_argument("--url", help="an upstream MCP server over Streamable HTTP")
    parser.add_argument("--header", action="append", default=[], metavar="'K: V'", help="an HTTP header for --url")
    parser.add_argument(
        "--header-env",
        action="append",
        default=[],
        metavar="VAR",
        help="an HTTP header for --url read from the variable VAR ('K: V'), so a token stays out of the process list",
    )
    parser.add_argument("command", nargs=argparse.REMAINDER, help="-- the upstream server's command line")


def _headers(raw: list[str]) -> dict[str, str]:
    headers: dict[str, str] = {}
    for item in raw:
        key, sep, value = item.partition(":")
        if not sep or not key.strip():
            raise UserError(f"--header must look like 'Name: value', got {item!r}")
        headers[key.strip()] = value.strip()
    return headers


def _header_lines(args: argparse.Namespace) -> list[str]:
    """`--header` values, then each `--header-env` variable's value (the host sets it in the server's `env`)."""
    import os

    lines = list(args.header)
    for name in args.header_env:
        value = os.environ.get(name)
        if value is None:
            raise UserError(
                f"--header-env {name}: the variable is not set; set it to 'Name: value' in the server's env"
            )
        lines.append(value)
    return lines


def _check_url(url: str) -> None:
    from urllib.parse import urlsplit

    parts = urlsplit(url)
    problem = UserError(f"--url must be an http:// or https:// URL of an MCP endpoint, got {url!r}")
    try:
        parts.port  # noqa: B018 - raises for a port out of range
    except ValueError:
        raise problem from None
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise problem


def _metrics_port(args: argparse.Namespace, settings: Any) -> int | None:
    """`--metrics-port`, else `[metrics] port`; None: no scrape endpoint (the default)."""
    port: int | None = args.metrics_port if args.metrics_port is not None else settings.metrics.port
    if port is not None and not 0 <= port <= 65535:
        raise UserError(f"--metrics-port must be 0-65535, got {port}")
    return port


def run(args: argparse.Namespace) -> int:
    import asyncio
    from pathlib import Path

    from mcpwatch.config import load_settings
    from mcpwatch.wrapper.app import WrapOptions, run_wrapper

    command = list(args.command)
    if command and command[0] == "--":
        command = command[1:]
    if bool(command) == bool(args.url):
        raise UserError("give the upstream either as `-- CMD ARGS…` or as `--url URL` (exactly one)")
    if (args.header or args.header_env) and not args.url:
        raise UserError("--header and --header-env only apply to an --url upstream")
    from mcpwatch.ports import check_can_listen

    if args.url:
        _check_url(args.url)
    settings = load_settings(args.config)
    metrics_port = _metrics_port(args, settings)
    if (args.allow_remote or args.token_file) and not (args.listen or metrics_port is not None):
        raise UserError("--allow-remote and --token-file only apply to --listen and --metrics-port")
    from mcpwatch.httpserve.guard import check_listen_address, read_token_file

    front_token = read_token_file(args.token_file) if args.token_file else None
    if args.listen:
        from mcpwatch.wrapper.fronts.front_http import parse_listen

        host, port, _ = parse_listen(args.listen)
        check_listen_address(host, args.allow_remote)
        check_can_listen(host, port, "--listen")
    if metrics_port is not None:
        metrics_host = settings.metrics.host
        check_listen_address(metrics_host, args.allow_remote, "[metrics] host", "scrapers")
        check_can_listen(metrics_host, metrics_port, "--metrics-port")
    if args.operator_port is not None:
        if not 0 <= args.operator_port <= 65535:
            raise UserError(f"--operator-port must be 0-65535, got {args.operator_port}")
        check_can_listen("127.0.0.1", args.operator_port, "--operator-port")
    warning = apply_host_config(args.host_config, args.host_timeout, settings.hosts)
    if warning:
        import sys

        from mcpwatch.terminal import safe

        print(f"mcpwatch wrap: {safe(warning)}", file=sys.stderr)
    apply_budget_options(args)
    options = WrapOptions(
        settings=settings,
        command=command,
        url=args.url,
        headers=_headers(_header_lines(args)),
        name=args.name,
        log_path=Path(args.log).expanduser() if args.log else None,
        no_log=args.no_log,
        listen=args.listen,
        allow_remote=args.allow_remote,
        front_token=front_token,
        token_file=args.token_file,
        operator_port=args.operator_port,
        metrics_port=metrics_port,
    )
    settle_heap()
    try:  # uvloop's pipes and timers make the wrapper's per-frame cost smaller; plain asyncio works too
        import uvloop

        return uvloop.run(run_wrapper(options))
    except ImportError:
        return asyncio.run(run_wrapper(options))


YOUNG_OBJECTS_PER_COLLECTION = 7000  # the interpreter's default is 700


def settle_heap() -> None:
    """Before the wrapper serves: what starting it made (modules, classes, settings: tens of thousands of objects,
    alive until it exits) is collected of its garbage and then frozen out of the cyclic collector's reach, and the
    youngest generation is collected every 7,000 new objects instead of 700. Every full collection otherwise walks
    all of it again, and with many hosts calls keep more objects alive at once (Little's law), so more of them
    survive young collections and full ones come more often: the collector's work per call grew with the hosts.
    Only for the `wrap` process itself: a process that runs a wrapper among other work keeps its collector as is."""
    import gc

    gc.collect()
    gc.freeze()
    _, middle, old = gc.get_threshold()
    gc.set_threshold(YOUNG_OBJECTS_PER_COLLECTION, middle, old)
