"""The manual (`mcpwatch/docs/*.md`, reached from README.md) against the code: every path it names exists, every
`mcpwatch` subcommand and `--flag` it names is one the command line takes, the host table says what
`host_profiles.toml` says, every link resolves, and every page can be reached from the README. A rename or a
removed flag that leaves the manual behind fails here rather than misleading a reader."""

from __future__ import annotations

import argparse
import re
import tomllib
from collections.abc import Iterable, Iterator
from pathlib import Path
from urllib.parse import unquote

from mcpwatch.cli import available_commands, build_parser

from checkout import REPO

DOCS = REPO / "mcpwatch" / "docs"
README = REPO / "README.md"
PROFILES = REPO / "mcpwatch" / "reliability" / "host_profiles.toml"

# Flags the pages name that belong to other programs, each with its program.
FOREIGN_FLAGS = {
    "--cli": "MCP Inspector",
    "--snapshot-update": "pytest-textual-snapshot",
    "--dist": "pytest-xdist",
    "--config": "lint-imports (and `mcpwatch wrap`)",
    "--check": "ruff format",
    "--detach": "git worktree add",
    "--feed": "python -m mcpwatch.bench.console",
    "--durations": "pytest",
    "--slow-guard": "the suite's slow guard (tests/slow_guard.py)",
}
# `mcpwatch WORD` that is no command: what `mcpwatch watch --serve` prints.
NOT_COMMANDS = {"console"}
REPO_PATH = re.compile(r"^(?:mcpwatch|tests|themes|\.ci)/[\w*./-]*$|^[\w/-]+\.py$")
LINK = re.compile(r"\]\(([^)\s]+)\)")
FLAG = re.compile(r"(?<![\w-])--[a-z][a-z0-9-]*")


def pages() -> list[Path]:
    return sorted(DOCS.glob("*.md"))


def texts() -> Iterator[tuple[Path, str]]:
    for page in [README, *pages()]:
        yield page, page.read_text(encoding="utf-8")


def code_spans(text: str) -> list[str]:
    """Inline code and the lines of fenced blocks: where commands, flags and paths are written."""
    blocks = re.findall(r"^```[^\n]*\n(.*?)^```", text, flags=re.S | re.M)
    prose = re.sub(r"^```[^\n]*\n.*?^```", "", text, flags=re.S | re.M)
    lines = [re.sub(r"\s#\s.*", "", line) for block in blocks for line in block.splitlines()]  # comments out
    return re.findall(r"`([^`]+)`", prose) + lines


# --- the command line ------------------------------------------------------------------------------------------------


def _flags(parser: argparse.ArgumentParser) -> set[str]:
    """Every option string of a parser and of the parsers below it."""
    found: set[str] = set()
    for action in parser._actions:  # argparse keeps no public list of a parser's options
        found.update(option for option in action.option_strings if option.startswith("--"))
        if isinstance(action, argparse._SubParsersAction):
            for child in action.choices.values():
                found |= _flags(child)
    return found


def command_line() -> tuple[set[str], dict[str, set[str]]]:
    """The top-level options and, per subcommand, the options it takes."""
    parser = build_parser(available_commands())
    commands: dict[str, set[str]] = {}
    top = {option for action in parser._actions for option in action.option_strings if option.startswith("--")}
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            commands = {name: _flags(child) for name, child in action.choices.items()}
    return top, commands


def misnamed_commands(spans: Iterable[str], commands: dict[str, set[str]], top: set[str]) -> list[str]:
    """`mcpwatch WORD` for a WORD that is no subcommand, and `--flag`s a subcommand does not take, in each span.

    Tokens after a bare `--` belong to the wrapped server's command line, until a new `mcpwatch` starts."""
    problems: list[str] = []
    for span in spans:
        tokens = span.split()
        current: str | None = None
        for index, token in enumerate(tokens):
            after = tokens[index + 1] if index + 1 < len(tokens) else ""
            before = tokens[index - 1] if index else "--"
            at_start = before in {"--", "&&", "|", ";"} or re.fullmatch(r"\w+=\S*", before) is not None
            named = token.strip("`\"'[") in {"mcpwatch", ".venv/bin/mcpwatch"} and after not in NOT_COMMANDS
            if named and at_start and re.fullmatch(r"[a-z]+", after):
                if after not in commands:
                    problems.append(f"no subcommand `mcpwatch {after}` (in `{span}`)")
                current = after if after in commands else None
            elif token == "--":
                current = None
            elif current is not None:
                for flag in FLAG.findall(token):
                    if flag not in commands[current] | top:
                        problems.append(f"`mcpwatch {current}` takes no {flag} (in `{span}`)")
    return problems


def unknown_flags(text: str, every_flag: set[str]) -> list[str]:
    return sorted({flag for flag in FLAG.findall(text) if flag not in every_flag and flag not in FOREIGN_FLAGS})


def test_every_subcommand_and_flag_named_is_the_command_lines() -> None:
    top, commands = command_line()
    every_flag = top.union(*commands.values())
    assert {"wrap", "watch", "report", "whatif"} <= commands.keys() and "--host-timeout" in commands["wrap"]
    problems: list[str] = []
    named = 0
    for page, text in texts():
        spans = code_spans(text)
        named += sum(span.count("mcpwatch ") for span in spans)
        problems += [f"{page.name}: {problem}" for problem in misnamed_commands(spans, commands, top)]
        problems += [f"{page.name}: no mcpwatch command takes {flag}" for flag in unknown_flags(text, every_flag)]
    assert named > 50  # the pages name commands; finding none would prove nothing
    assert problems == []


def test_a_wrong_subcommand_or_flag_is_caught() -> None:
    top, commands = command_line()
    page = "Run `mcpwatch wrapp -- x` or `mcpwatch report --budget 4`, then\n```sh\nmcpwatch wrap --nope\n```\n"
    spans = code_spans(page)
    assert misnamed_commands(spans, commands, top) == [
        "no subcommand `mcpwatch wrapp` (in `mcpwatch wrapp -- x`)",
        "`mcpwatch report` takes no --budget (in `mcpwatch report --budget 4`)",
        "`mcpwatch wrap` takes no --nope (in `mcpwatch wrap --nope`)",
    ]
    # after `--`, the server's own flags; `mcpwatch council` then starts a command of its own
    ok = ["claude mcp add c -- mcpwatch wrap --name c -- npx -y srv --root /x -- mcpwatch council --backend openai"]
    assert misnamed_commands(ok, commands, top) == []
    assert unknown_flags("pass --host-timeout, not --host-timeuot", top.union(*commands.values())) == ["--host-timeuot"]


# --- paths and links -------------------------------------------------------------------------------------------------


def resolves(path: str) -> bool:
    """A path from the repository's root or the package's, or a file name found in the tests' folders."""
    bases = (REPO, REPO / "mcpwatch")
    return any(any(base.glob(path.rstrip("/"))) for base in bases) or any((REPO / "tests").glob(f"**/{path}"))


def missing_paths(text: str) -> list[str]:
    named = {token for token in re.findall(r"`([^`\s]+)`", text) if REPO_PATH.match(token)}
    return sorted(path for path in named if not resolves(path))


def anchors(text: str) -> set[str]:
    """GitHub's heading anchors: lower case, punctuation dropped, spaces to hyphens."""
    headings = re.findall(r"^#+ (.+)$", re.sub(r"^```.*?^```", "", text, flags=re.S | re.M), flags=re.M)
    return {re.sub(r"[^\w\- ]", "", heading.lower()).replace(" ", "-") for heading in headings}


def broken_links(page: Path, text: str) -> list[str]:
    broken: list[str] = []
    for target in LINK.findall(text):
        if re.match(r"[a-z]+:", target):
            continue  # another site
        file, _, anchor = unquote(target).partition("#")
        found = (page.parent / file).resolve()
        if file and not found.exists():
            broken.append(target)
            continue
        if anchor and anchor not in anchors(found.read_text(encoding="utf-8") if file else text):
            broken.append(target)
    return broken


def test_every_path_named_exists_and_every_link_resolves() -> None:
    named = 0
    problems: list[str] = []
    for page, text in texts():
        named += len(re.findall(r"`(?:mcpwatch|tests)/", text))
        problems += [f"{page.name}: no such path `{path}`" for path in missing_paths(text)]
        problems += [f"{page.name}: broken link ({link})" for link in broken_links(page, text)]
    assert named > 10
    assert problems == []


def test_a_missing_path_or_broken_link_is_caught(tmp_path: Path) -> None:
    assert missing_paths("see `mcpwatch/wrapper/core/pump.py`, `tests/unit/gone.py` and `~/.codex/config.toml`") == [
        "tests/unit/gone.py"
    ]
    page = tmp_path / "page.md"
    (tmp_path / "other.md").write_text("# Other\n\n## Host profiles\n", encoding="utf-8")
    text = "[a](other.md) [b](other.md#host-profiles) [c](other.md#nope) [d](gone.md) [e](#other) [f](https://x.org)"
    assert broken_links(page, text + "\n# Other\n") == ["other.md#nope", "gone.md"]


def reachable_from(start: Path) -> set[Path]:
    """The Markdown files linked from `start`, and from those, transitively."""
    seen: set[Path] = set()
    queue = [start.resolve()]
    while queue:
        page = queue.pop()
        if page in seen or not page.exists():
            continue
        seen.add(page)
        for target in LINK.findall(page.read_text(encoding="utf-8")):
            file = target.partition("#")[0]
            if file.endswith(".md") and not re.match(r"[a-z]+:", file):
                queue.append((page.parent / file).resolve())
    return seen


def test_every_page_is_reachable_from_the_readme() -> None:
    assert len(pages()) >= 12
    unreached = sorted(page.name for page in pages() if page.resolve() not in reachable_from(README))
    assert unreached == []


def test_an_unlinked_page_is_not_reached(tmp_path: Path) -> None:
    (tmp_path / "README.md").write_text("[a](docs/a.md)\n", encoding="utf-8")
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "a.md").write_text("[b](b.md#x)\n", encoding="utf-8")
    (tmp_path / "docs" / "b.md").write_text("# b\n", encoding="utf-8")
    (tmp_path / "docs" / "c.md").write_text("# c\n", encoding="utf-8")
    reached = {page.name for page in reachable_from(tmp_path / "README.md")}
    assert reached == {"README.md", "a.md", "b.md"}


# --- the host table --------------------------------------------------------------------------------------------------


def host_rows(text: str) -> dict[str, tuple[set[str], set[tuple[str, float]]]]:
    """The host table of a page: per host label, the client names in code and the (clock, seconds) pairs.

    A row with an empty first cell continues the host above it."""
    table = text.split("| host | client names |", 1)[1].split("\n\n", 1)[0]
    rows: dict[str, tuple[set[str], set[tuple[str, float]]]] = {}
    label = ""
    for line in table.splitlines()[2:]:
        cells = [cell.strip() for cell in re.split(r"(?<!\\)\|", line.strip())[1:-1]]
        label = cells[0] or label
        names, clocks = rows.setdefault(label, (set(), set()))
        names.update(name for name in re.findall(r"`([^`]+)`", cells[1]) if not name.startswith("-"))
        parts = re.split(r"\b(wall|idle|cap|background)\b", cells[2])  # a kind, then what it says of it
        for kind, said in zip(parts[1::2], parts[2::2], strict=True):
            clocks.update((kind, float(seconds)) for seconds in re.findall(r"(\d+) s\b", said))
    return rows


def profile_rows() -> dict[str, tuple[set[str], set[tuple[str, float]]]]:
    profiles = tomllib.loads(PROFILES.read_text(encoding="utf-8"))
    return {
        profile["label"]: (
            set(profile["names"]),
            {(clock["kind"], float(clock["seconds"])) for clock in profile.get("clocks", [])},
        )
        for profile in profiles.values()
    }


def host_table_problems(text: str) -> list[str]:
    table, data = host_rows(text), profile_rows()
    problems = [f"{label}: in the table, not in host_profiles.toml" for label in table.keys() - data.keys()]
    problems += [f"{label}: in host_profiles.toml, not in the table" for label in data.keys() - table.keys()]
    for label in table.keys() & data.keys():
        (names, clocks), (known_names, known_clocks) = table[label], data[label]
        if not names or not names <= known_names:
            problems.append(f"{label}: client names {sorted(names)}, host_profiles.toml has {sorted(known_names)}")
        if clocks != known_clocks:
            problems.append(f"{label}: clocks {sorted(clocks)}, host_profiles.toml has {sorted(known_clocks)}")
    return problems


def test_the_host_table_says_what_host_profiles_toml_says() -> None:
    text = (DOCS / "wrapping.md").read_text(encoding="utf-8")
    assert len(host_rows(text)) >= 10
    assert host_rows(text)["Claude Code"][1] == {
        ("wall", 100000.0),
        ("idle", 300.0),
        ("idle", 1800.0),
        ("background", 120.0),
        ("cap", 350.0),
    }
    assert host_table_problems(text) == []


def test_a_host_table_that_drifted_is_caught() -> None:
    text = (DOCS / "wrapping.md").read_text(encoding="utf-8")
    changed = text.replace("| Cursor | `cursor-vscode` | wall 300 s", "| Cursor | `cursor-ide` | wall 200 s")
    assert changed != text
    problems = host_table_problems(changed)
    assert problems == [
        "Cursor: client names ['cursor-ide'], host_profiles.toml has ['cursor-vscode']",
        "Cursor: clocks [('wall', 200.0)], host_profiles.toml has [('wall', 300.0)]",
    ]
