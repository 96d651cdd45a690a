"""The demo's summary names the command to run next as the user can run it: `mcpwatch` only when that name on the
PATH is the program that ran, else the path that was typed (after the README's set-up: `.venv/bin/mcpwatch`)."""

from __future__ import annotations

import shlex
import sys
from pathlib import Path

from mcpwatch.demo.run import invoked_as


def test_a_venv_path_not_on_the_path_is_named_as_typed(tmp_path: Path) -> None:
    program = tmp_path / ".venv" / "bin" / "mcpwatch"
    program.parent.mkdir(parents=True)
    program.write_text("")
    assert invoked_as(str(program), which=lambda name: None) == shlex.quote(str(program))
    assert invoked_as(".venv/bin/mcpwatch", which=lambda name: "/usr/bin/mcpwatch") == ".venv/bin/mcpwatch"


def test_the_same_program_on_the_path_is_just_mcpwatch(tmp_path: Path) -> None:
    program = tmp_path / "mcpwatch"
    program.write_text("")
    assert invoked_as(str(program), which=lambda name: str(program)) == "mcpwatch"


def test_python_dash_m_is_named_with_its_interpreter() -> None:
    assert (
        invoked_as("/x/mcpwatch/__main__.py", which=lambda name: None) == f"{shlex.quote(sys.executable)} -m mcpwatch"
    )
