"""This checkout: its root and the command line that runs its mcpwatch in a subprocess.

A module of its own rather than the root conftest, because the folders have conftests of their own and
`from conftest import …` would reach whichever was loaded last."""

from __future__ import annotations

import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent


def mcpwatch_cmd(*args: str) -> list[str]:
    """The command line that runs this checkout's mcpwatch in a subprocess."""
    return [sys.executable, "-m", "mcpwatch", *args]
