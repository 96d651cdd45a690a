"""The `mcpwatch` entry point: one program, one subcommand per job.

Each subcommand lives in `mcpwatch.commands.<name>` with `HELP`, `configure(parser)` and `run(args) -> int`.
Command modules import only argparse-level things at module scope, and a named subcommand imports and configures
only its own module (the whole list is built for `--help` and for a name that is not a command), so `mcpwatch
sessions` or `mcpwatch wrap` pays for nothing else at start-up.
"""

from __future__ import annotations

import argparse
import importlib
import importlib.util
import sys
from collections.abc import Sequence
from types import ModuleType

from mcpwatch import __version__
from mcpwatch.errors import UserError

# Listed in the order `--help` shows them; a name appears only when its module exists.
COMMAND_NAMES = (
    "wrap",
    "check",
    "hosts",
    "council",
    "watch",
    "replay",
    "sessions",
    "report",
    "whatif",
    "export",
    "prometheus",
    "prune",
    "demo",
    "bench",
)
DEFAULT_COMMAND = "watch"


class OneLineParser(argparse.ArgumentParser):
    """argparse, but a usage error is one line on stderr and exit code 2."""

    def error(self, message: str) -> None:  # type: ignore[override]  # argparse's returns NoReturn; this one exits too
        from mcpwatch.terminal import safe

        self.exit(2, f"{self.prog}: error: {safe(message)} (see --help)\n")


def _exists(name: str) -> bool:
    return importlib.util.find_spec(f"mcpwatch.commands.{name}") is not None


def available_commands(only: str | None = None) -> dict[str, ModuleType]:
    """Every subcommand's module, or with `only` (a command's name) that one module alone."""
    names = (only,) if only in COMMAND_NAMES else COMMAND_NAMES
    return {name: importlib.import_module(f"mcpwatch.commands.{name}") for name in names if _exists(name)}


def build_parser(commands: dict[str, ModuleType]) -> OneLineParser:
    parser = OneLineParser(
        prog="mcpwatch",
        description="Make long-running MCP tool calls survivable and visible.",
    )
    parser.add_argument("--version", action="version", version=f"mcpwatch {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=OneLineParser)
    for name, module in commands.items():
        child = sub.add_parser(name, help=module.HELP, description=module.HELP)
        module.configure(child)
        child.set_defaults(_run=module.run)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args_list = list(sys.argv[1:] if argv is None else argv)
    if not args_list or (args_list[0].startswith("-") and args_list[0] not in ("-h", "--help", "--version")):
        if _exists(DEFAULT_COMMAND):
            args_list.insert(0, DEFAULT_COMMAND)
        elif not args_list:
            build_parser(available_commands()).print_help()
            return 0
    args = build_parser(available_commands(args_list[0])).parse_args(args_list)
    try:
        code = int(args._run(args) or 0)
        if sys.stdout is not None and not getattr(sys.stdout, "closed", True):
            sys.stdout.flush()  # output that fit the buffer meets a closed pipe here, not at interpreter exit
        return code
    except BrokenPipeError:
        if not _stdout_gone():
            raise  # some other pipe (an upstream's, say): a real error
        _discard_stdout()
        return 0  # `mcpwatch report | head`: the reader has seen enough, as with `git log | head`
    except UserError as exc:
        from mcpwatch.terminal import safe

        print(f"mcpwatch: {safe(str(exc))}", file=sys.stderr)
        return exc.exit_code
    except KeyboardInterrupt:
        return 130


def _stdout_gone() -> bool:
    """Whether stdout is a pipe (or socket) whose reader has closed it: poll reports POLLERR or POLLHUP."""
    import select

    try:
        fd = sys.stdout.fileno()
    except (AttributeError, OSError, ValueError):
        return False
    if not hasattr(select, "poll"):  # pragma: no cover - Windows: assume the pipe that broke was stdout
        return True
    poller = select.poll()
    poller.register(fd, select.POLLOUT)
    return any(mask & (select.POLLERR | select.POLLHUP) for _, mask in poller.poll(0))


def _discard_stdout() -> None:
    """Point stdout at /dev/null, so what is still buffered is dropped at exit instead of raising again there."""
    import os

    devnull = os.open(os.devnull, os.O_WRONLY)
    try:
        os.dup2(devnull, sys.stdout.fileno())
    finally:
        os.close(devnull)
