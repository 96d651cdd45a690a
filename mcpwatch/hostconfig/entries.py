"""A host's config file read into its MCP servers: for each, where it is in the file, how it is reached (a command or
a URL), and whether it already runs through `mcpwatch wrap`. A file that cannot be read or parsed becomes a
`ConfigFile` with a one-line problem, never an exception."""

from __future__ import annotations

import json
import os
import stat
import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from mcpwatch.hostconfig import jsonc, masking, wrapargs
from mcpwatch.hostconfig.formats import CLAUDE_CODE, HostFormat

MAX_BYTES = 16 * 1024 * 1024  # a config file larger than this is not read (Claude Code's ~/.claude.json grows large)


@dataclass(frozen=True)
class ServerEntry:
    host: HostFormat
    scope: str  # "user", "project", "local: /dir" (Claude Code), "file"
    file: Path
    where: tuple[str, ...]  # the keys leading to the servers' table, e.g. ("projects", "/dir", "mcpServers")
    key: str
    raw: dict[str, Any]

    @property
    def ref(self) -> str:
        """What `--host-config` says: the file and the server's key."""
        return f"{self.file}#{self.key}"

    @property
    def wrap(self) -> wrapargs.WrapLine | None:
        return wrapargs.read(self.raw.get("command"), self.raw.get("args", []))

    @property
    def url_key(self) -> str | None:
        keys = (*self.host.url_keys, *self.host.sse_keys, "url")
        return next((k for k in keys if isinstance(self.raw.get(k), str)), None)

    @property
    def transport(self) -> str:
        """ "command", "url" (Streamable HTTP), "sse", or "unknown"."""
        if isinstance(self.raw.get("command"), str):
            return "command"
        key = self.url_key
        if key is None:
            return "unknown"
        kind = self.raw.get(self.host.type_key) if self.host.type_key else None
        return "sse" if key in self.host.sse_keys or kind == "sse" else "url"

    @property
    def target(self) -> str:
        """The command line or URL, for a person to read: its secrets (header values, `--token X`, `?api_key=`)
        shown as `***` (`masking`), since scans are read on shared screens."""
        if self.transport == "command":
            args = self.raw.get("args", [])
            parts = [str(self.raw["command"]), *(str(a) for a in args)] if isinstance(args, list) else []
            return " ".join(masking.args(parts))
        key = self.url_key
        return masking.url(str(self.raw.get(key, ""))) if key else "(no command or url)"

    @property
    def headers(self) -> dict[str, str]:
        raw = self.raw.get(self.host.header_key)
        return {str(k): str(v) for k, v in raw.items()} if isinstance(raw, dict) else {}


@dataclass(frozen=True)
class ConfigFile:
    path: Path
    host: HostFormat
    scope: str
    servers: tuple[ServerEntry, ...] = ()
    problem: str | None = None  # why it could not be read, one line
    text: str = ""  # what was read (the planner edits this text)
    mtime_ns: int = 0

    @property
    def real(self) -> Path | None:
        """The file a symlink points at (None: not a symlink)."""
        return self.path.resolve() if self.path.is_symlink() else None


def _containers(host: HostFormat, scope: str, doc: Any) -> list[tuple[str, tuple[str, ...]]]:
    """(scope, path) of each servers table in a parsed document."""
    found: list[tuple[str, tuple[str, ...]]] = [(scope, (host.container,))]
    if host is CLAUDE_CODE and isinstance(doc, dict) and isinstance(doc.get("projects"), dict):
        for project, body in doc["projects"].items():
            if isinstance(body, dict) and isinstance(body.get("mcpServers"), dict) and body["mcpServers"]:
                found.append((f"local: {project}", ("projects", project, "mcpServers")))
    return found


def _dig(doc: Any, path: tuple[str, ...]) -> Any:
    for key in path:
        if not isinstance(doc, dict):
            return None
        doc = doc.get(key)
    return doc


def _not_json(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


def parse_text(host: HostFormat, text: str) -> Any:
    """The document, or ValueError with a one-line reason."""
    if host.syntax == "toml":
        try:
            return tomllib.loads(text)
        except tomllib.TOMLDecodeError as exc:
            raise ValueError(f"not valid TOML: {exc}") from None
        except RecursionError:  # tomllib recurses per nested array or inline table
            raise ValueError("not read: its values are nested too deeply") from None
    try:  # plain JSON (most files, and Claude Code's ~/.claude.json of many MB) in C; else with comments
        return json.loads(text, parse_constant=_not_json)
    except (ValueError, RecursionError):  # too deep for C: the JSONC reader refuses it with its line and column
        pass
    try:
        return jsonc.parsed(text).value
    except jsonc.JsoncError as exc:
        raise ValueError(f"not valid JSON: {exc}") from None


def servers_in(host: HostFormat, scope: str, path: Path, doc: Any) -> tuple[ServerEntry, ...]:
    entries: list[ServerEntry] = []
    for where_scope, where in _containers(host, scope, doc):
        table = _dig(doc, where)
        if not isinstance(table, dict):
            continue
        for key, raw in table.items():
            if isinstance(raw, dict):
                entries.append(ServerEntry(host, where_scope, path, where, str(key), raw))
    return tuple(entries)


def read_text(path: Path) -> tuple[str, int]:
    """The file's text and mtime; OSError or ValueError (too large, not UTF-8) with a plain reason. The checks are
    made on the opened file, never before opening it: a FIFO swapped in after a check would block the open."""
    flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOCTTY", 0)
    fd = os.open(path, flags)
    with os.fdopen(fd, "rb") as handle:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise ValueError("not a regular file")
        if info.st_size > MAX_BYTES:
            raise ValueError(f"larger than {MAX_BYTES // (1024 * 1024)} MB")
        data = handle.read(MAX_BYTES + 1)
    if len(data) > MAX_BYTES:
        raise ValueError(f"larger than {MAX_BYTES // (1024 * 1024)} MB")
    try:
        return data.decode("utf-8"), info.st_mtime_ns
    except UnicodeDecodeError:
        raise ValueError("not UTF-8 text") from None


def read_config(path: Path, host: HostFormat, scope: str) -> ConfigFile:
    """The servers a file configures, or the file with the one-line reason it could not be read."""
    try:
        text, mtime = read_text(path)
    except OSError as exc:
        return ConfigFile(path, host, scope, problem=exc.strerror or str(exc))
    except ValueError as exc:
        return ConfigFile(path, host, scope, problem=str(exc))
    if not text.strip():
        return ConfigFile(path, host, scope, text=text, mtime_ns=mtime)
    try:
        doc = parse_text(host, text)
    except ValueError as exc:
        return ConfigFile(path, host, scope, problem=str(exc), text=text, mtime_ns=mtime)
    if not isinstance(doc, dict):
        return ConfigFile(path, host, scope, problem="not a JSON object at the top", text=text, mtime_ns=mtime)
    return ConfigFile(path, host, scope, servers_in(host, scope, path, doc), text=text, mtime_ns=mtime)


def display(path: Path) -> str:
    """A path as a person reads it: under the home directory as `~/…`."""
    home = os.path.expanduser("~")
    text = str(path)
    return "~" + text[len(home) :] if home not in ("", "/") and text.startswith(home + os.sep) else text
