"""Terminal output shared by the log commands (sessions, report, export, prune).

Imported only from their `run()`, so rich stays out of `mcpwatch wrap`'s start-up.
"""

from __future__ import annotations

import errno
import json
import sys
from collections.abc import Iterable
from typing import Any

from rich.console import Console
from rich.segment import Segment

from mcpwatch.terminal import safe_lines

PIPED_WIDTH = 200  # piped output is for grep and friends: one session or tool per line, not wrapped


class StdoutConsole(Console):
    """A rich Console that shows the control characters of what it prints visibly (names come from the wire and the
    log: see `mcpwatch.terminal`), and whose closed stdout (`mcpwatch report | head`) raises BrokenPipeError to the
    CLI's top level.

    Rich's own handling exits with status 1 after pointing stdout at /dev/null, which hides from the CLI that the
    pipe closed; `mcpwatch.cli.main` handles a closed stdout the same way for every command.
    """

    def on_broken_pipe(self) -> None:
        self.quiet = True
        raise BrokenPipeError(errno.EPIPE, "stdout was closed")

    def _render_buffer(self, buffer: Iterable[Segment]) -> str:
        # Every text segment, before rich adds its own styles: the one place all tables, markup and Text pass.
        return super()._render_buffer(
            segment if segment.control else Segment(safe_lines(segment.text), segment.style) for segment in buffer
        )


def stdout_console() -> StdoutConsole:
    """The terminal's width on a terminal, a wide fixed one when piped."""
    return StdoutConsole(width=None if sys.stdout.isatty() else PIPED_WIDTH)


def print_json(value: Any) -> None:
    """`--json` output: JSON escapes C0 itself; C1 and bidi controls become `\\uXXXX`, still valid JSON."""
    print(safe_lines(json.dumps(value, indent=2, ensure_ascii=False)))
