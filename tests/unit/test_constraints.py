"""`.ci/constraints.txt` holds the exact versions the suite was run with, and `.ci/run` installs from it: each of
mcpwatch's dependencies (and its extras') is there, at a version pyproject.toml's range admits."""

from __future__ import annotations

import re
import tomllib

from packaging.requirements import Requirement
from packaging.utils import canonicalize_name
from packaging.version import Version

from checkout import REPO

CONSTRAINTS = REPO / ".ci" / "constraints.txt"


def pinned(text: str) -> dict[str, Version]:
    found: dict[str, Version] = {}
    for line in text.splitlines():
        line = line.split("#", 1)[0].strip()
        if line:
            name, version = re.fullmatch(r"([A-Za-z0-9_.-]+)==(\S+)", line).groups()  # type: ignore[union-attr]
            found[canonicalize_name(name)] = Version(version)
    return found


def requirements() -> list[Requirement]:
    project = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    extras = project["optional-dependencies"]
    return [Requirement(text) for text in [*project["dependencies"], *(r for group in extras.values() for r in group)]]


def out_of_range(constraints: dict[str, Version]) -> list[str]:
    problems = []
    for requirement in requirements():
        version = constraints.get(canonicalize_name(requirement.name))
        if version is None:
            problems.append(f"{requirement.name}: not in .ci/constraints.txt")
        elif not requirement.specifier.contains(version, prereleases=True):
            problems.append(f"{requirement.name}: {version} is outside pyproject.toml's {requirement.specifier}")
    return problems


def test_every_dependency_is_pinned_within_its_range() -> None:
    constraints = pinned(CONSTRAINTS.read_text(encoding="utf-8"))
    assert "mcpwatch" not in constraints and len(constraints) > 40
    assert out_of_range(constraints) == []
    assert ".venv/bin/pip install -q -c .ci/constraints.txt '.[test]'" in (REPO / ".ci" / "run").read_text()


def test_a_pin_outside_the_range_is_caught() -> None:
    constraints = pinned(CONSTRAINTS.read_text(encoding="utf-8"))
    constraints["uvicorn"] = Version("0.60.0")
    del constraints["textual"]
    assert out_of_range(constraints) == [
        "textual: not in .ci/constraints.txt",
        "uvicorn: 0.60.0 is outside pyproject.toml's <0.55,>=0.54",
    ]
