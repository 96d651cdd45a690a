"""The `mcpwatch wrap …` command line a wrapped entry runs: built from a server, and read back from an entry (so a
wrapped entry is recognised, its budget flags are known, and unwrapping can restore what it wraps)."""

from __future__ import annotations

import os
from dataclasses import dataclass, field

# flags of `mcpwatch wrap` that take a value, so reading an entry's args skips their values
_VALUED = {
    "--name",
    "--host-config",
    "--host-timeout",
    "--margin",
    "--deadline",
    "--config",
    "--log",
    "--listen",
    "--token-file",
    "--metrics-port",
    "--operator-port",
    "--url",
    "--header",
    "--header-env",
}


@dataclass(frozen=True)
class WrapLine:
    """What a wrapped entry's `mcpwatch wrap` arguments say."""

    program: str  # the mcpwatch it runs (the entry's command)
    flags: dict[str, str] = field(default_factory=dict)  # the last value of each valued flag
    headers: tuple[str, ...] = ()  # every --header, in order
    inner: tuple[str, ...] = ()  # the wrapped command line after `--`
    header_envs: tuple[str, ...] = ()  # every --header-env variable, in order

    @property
    def name(self) -> str | None:
        return self.flags.get("--name")

    @property
    def host_config(self) -> str | None:
        return self.flags.get("--host-config")

    @property
    def url(self) -> str | None:
        return self.flags.get("--url")


def _is_mcpwatch(command: str, args: list[str]) -> int | None:
    """The index in args where `wrap` is, if the entry runs `mcpwatch wrap` (directly or as `python -m mcpwatch`)."""
    base = os.path.basename(command).lower().removesuffix(".exe")
    if base == "mcpwatch":
        return 0 if args[:1] == ["wrap"] else None
    if base.startswith("python") and args[:3] == ["-m", "mcpwatch", "wrap"]:
        return 2
    if base in ("uvx", "pipx") and len(args) >= 2 and args[0] == "mcpwatch" and args[1] == "wrap":
        return 1
    return None


def read(command: object, args: object) -> WrapLine | None:
    """The wrap line of an entry whose command is mcpwatch's `wrap`, else None."""
    if not isinstance(command, str) or not isinstance(args, list) or not all(isinstance(a, str) for a in args):
        return None
    at = _is_mcpwatch(command, args)
    if at is None:
        return None
    flags: dict[str, str] = {}
    headers: list[str] = []
    header_envs: list[str] = []
    rest = args[at + 1 :]
    index = 0
    while index < len(rest):
        arg = rest[index]
        if arg == "--":
            return WrapLine(command, flags, tuple(headers), tuple(rest[index + 1 :]), tuple(header_envs))
        name, equals, value = arg.partition("=")
        if name in _VALUED:
            if not equals:
                index += 1
                value = rest[index] if index < len(rest) else ""
            if name == "--header":
                headers.append(value)
            elif name == "--header-env":
                header_envs.append(value)
            else:
                flags[name] = value
        index += 1
    return WrapLine(command, flags, tuple(headers), (), tuple(header_envs))


@dataclass(frozen=True)
class Program:
    """How an entry runs this mcpwatch: its absolute path, or the interpreter with `-m mcpwatch`."""

    command: str
    prefix: tuple[str, ...] = ()


def this_program() -> Program:
    """The running mcpwatch, by absolute path (a host's PATH often lacks the virtualenv it lives in)."""
    import shutil
    import sys
    from pathlib import Path

    beside = Path(sys.executable).parent / ("mcpwatch.exe" if os.name == "nt" else "mcpwatch")
    if beside.is_file():
        return Program(str(beside.absolute()))
    found = shutil.which("mcpwatch")
    if found:
        return Program(str(Path(found).absolute()))
    return Program(str(Path(sys.executable).absolute()), ("-m", "mcpwatch"))


def _flag(name: str, value: str) -> list[str]:
    """A flag and its value; joined with `=` when the value starts with `-`, so argparse never reads it as a flag."""
    return [f"{name}={value}"] if value.startswith("-") else [name, value]


def for_command(program: Program, key: str, ref: str, command: str, args: list[str]) -> list[str]:
    """The args of a wrapped command server (its command becomes the program)."""
    return [*program.prefix, "wrap", *_flag("--name", key), *_flag("--host-config", ref), "--", command, *args]


def header_vars(headers: dict[str, str], env: object) -> dict[str, str]:
    """Each header as a variable for the server's `env` (`MCPWATCH_HEADER_1: "Name: value"`), named clear of the
    variables `env` already has: a header value in the arguments is in the process list for every local user to
    read, while a process's environment is its owner's alone (as the host's own copy of the header is)."""
    taken = set(env) if isinstance(env, dict) else set()
    out: dict[str, str] = {}
    number = 1
    for name, value in headers.items():
        while f"MCPWATCH_HEADER_{number}" in taken:
            number += 1
        out[f"MCPWATCH_HEADER_{number}"] = f"{name}: {value}"
        number += 1
    return out


def for_url(program: Program, key: str, ref: str, url: str, variables: list[str]) -> list[str]:
    """The args of a URL server made a stdio entry running the wrapper against the URL; its headers come from the
    entry's env (`--header-env VAR`)."""
    line = [*program.prefix, "wrap", *_flag("--name", key), *_flag("--host-config", ref), *_flag("--url", url)]
    for variable in variables:
        line += _flag("--header-env", variable)
    return line


def headers_of(line: WrapLine, env: object = None) -> dict[str, str]:
    """The headers a wrap line sends: its `--header` values, then its `--header-env` variables' values in `env`."""
    out: dict[str, str] = {}
    values = env if isinstance(env, dict) else {}
    items = [*line.headers, *(str(values[v]) for v in line.header_envs if isinstance(values.get(v), str))]
    for item in items:
        name, _, value = item.partition(":")
        out[name.strip()] = value.strip()
    return out
