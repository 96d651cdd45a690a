"""Terminal output shared by the log commands (sessions, report, export, prune).

Imported only from their `run()`, so rich stays out of `mcpwatch wrap`'s start-up.
"""

from __future__ import annotations

import errno
import sys

from rich.console import Console

PIPED_WIDTH = 200  # piped output is for grep and friends: one session or tool per line, not wrapped


class StdoutConsole(Console):
    """A rich Console whose closed stdout (`mcpwatch report | head`) raises BrokenPipeError to the CLI's top level.

    Rich's own handling exits with status 1 after pointing stdout at /dev/null, which hides from the CLI that the
    pipe closed; `mcpwatch.cli.main` handles a closed stdout the same way for every command.
    """

    def on_broken_pipe(self) -> None:
        self.quiet = True
        raise BrokenPipeError(errno.EPIPE, "stdout was closed")


def stdout_console() -> StdoutConsole:
    """The terminal's width on a terminal, a wide fixed one when piped."""
    return StdoutConsole(width=None if sys.stdout.isatty() else PIPED_WIDTH)
