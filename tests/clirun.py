"""`mcpwatch COMMAND …` run in this process, for the log commands' tests (report, whatif, sessions, export, prune):
the same entry point (`mcpwatch.cli.main`) a subprocess would run, its stdout and stderr captured as text, without
starting an interpreter and importing the package again for every command (a third of a second of CPU each).

A test of what only a process shows (exit on a closed pipe, bytes on a terminal, signals) starts one instead
(`checkout.mcpwatch_cmd`)."""

from __future__ import annotations

import io
import subprocess
from contextlib import redirect_stderr, redirect_stdout

from mcpwatch.cli import main


def run_cli(*args: str) -> subprocess.CompletedProcess[str]:
    """What `subprocess.run(mcpwatch_cmd(*args), capture_output=True, text=True)` returns, run in this process."""
    out, err = io.StringIO(), io.StringIO()
    with redirect_stdout(out), redirect_stderr(err):
        try:
            code = main(list(args))
        except SystemExit as exc:  # argparse's usage errors and --help exit
            code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
            if isinstance(exc.code, str):
                err.write(exc.code + "\n")
    return subprocess.CompletedProcess(["mcpwatch", *args], code, out.getvalue(), err.getvalue())
