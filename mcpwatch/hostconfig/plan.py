"""The edits that wrap or unwrap servers in one config file, as text spans: pure (text in, text out), so a dry run
shows exactly what a write would do and a test checks every byte.

Wrapping a command server changes two values in place (`command` becomes mcpwatch, its `args` gain the
`wrap … --` prefix); every other byte of the entry and the file stays. A URL server becomes a stdio entry running
`mcpwatch wrap --url` (its other keys kept, in order). The entry's text before and after is remembered
(`Record`), so unwrapping an entry nobody changed since puts its original text back byte for byte; an entry
changed since is unwrapped from what its `mcpwatch wrap` line says.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any

from mcpwatch.hostconfig import jsonc, tomlspans, wrapargs
from mcpwatch.hostconfig.entries import ConfigFile, ServerEntry, parse_text, servers_in

# Codex keys a wrapped URL entry cannot carry over (the token would have to be read from a variable at run time)
_UNCARRIED = ("bearer_token_env_var", "env_http_headers")


class PlanError(ValueError):
    """A server that cannot be wrapped or unwrapped as asked; one line naming it and why."""


@dataclass(frozen=True)
class Record:
    """An entry's text before wrapping and right after, kept so unwrapping restores it exactly."""

    original: str
    wrapped: str


@dataclass(frozen=True)
class Edit:
    start: int
    end: int
    text: str


@dataclass
class Plan:
    config: ConfigFile
    text: str  # the file after the edits
    done: list[tuple[ServerEntry, str]] = field(default_factory=list)  # (entry, what happened)
    records: dict[str, Record | None] = field(default_factory=dict)  # record key → new record (None: forget it)

    @property
    def changed(self) -> bool:
        return self.text != self.config.text


def record_key(entry: ServerEntry) -> str:
    return json.dumps([str(entry.file.resolve()), *entry.where, entry.key])


_BARE_LF = re.compile(r"(?<!\r)\n")


def apply(text: str, edits: list[Edit]) -> str:
    """The text with every edit made; new lines end as the file's do (a CRLF file stays CRLF)."""
    crlf = text.count("\r\n") * 2 > text.count("\n")  # most lines end in CRLF
    out = []
    at = 0
    for edit in sorted(edits, key=lambda e: e.start):
        if edit.start < at:
            raise PlanError("two edits overlap (a bug in mcpwatch)")
        out += [text[at : edit.start], _BARE_LF.sub("\r\n", edit.text) if crlf else edit.text]
        at = edit.end
    out.append(text[at:])
    return "".join(out)


# --- where an entry is ---------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Span:
    start: int
    end: int
    values: dict[str, tuple[int, int, int, int]]  # key → (line start, value start, value end, line end)
    inline: bool  # a JSON object, or a TOML inline table (edited as a whole)
    indent: str
    tables: dict[str, tuple[int, int]] = field(default_factory=dict)  # TOML sub-tables ([x.env]) → their text


@dataclass(frozen=True)
class _TomlIndex:
    """A TOML file's layout indexed once, so finding each of N entries does not walk every header again."""

    headers: tuple[tomlspans.Header, ...]
    table_at: dict[tuple[str, ...], int]  # a [table]'s path → its first header's index
    values_of: dict[tuple[str, ...], list[tomlspans.KeyValue]]  # a table's path → its one-part keys' lines
    inline_at: dict[tuple[str, ...], tomlspans.KeyValue]  # a value's full dotted path → its first line


@lru_cache(maxsize=4)
def _toml_layout(text: str) -> _TomlIndex:
    layout = tomlspans.scan(text)
    table_at: dict[tuple[str, ...], int] = {}
    for index, header in enumerate(layout.headers):
        if not header.array:
            table_at.setdefault(header.path, index)
    values_of: dict[tuple[str, ...], list[tomlspans.KeyValue]] = {}
    inline_at: dict[tuple[str, ...], tomlspans.KeyValue] = {}
    for kv in layout.values:
        if len(kv.key) == 1:
            values_of.setdefault(kv.table, []).append(kv)
        inline_at.setdefault((*kv.table, *kv.key), kv)
    return _TomlIndex(layout.headers, table_at, values_of, inline_at)


def _json_span(text: str, entry: ServerEntry) -> Span:
    node = jsonc.find(jsonc.parsed(text), (*entry.where, entry.key))
    if not isinstance(node, jsonc.ObjectNode):
        raise PlanError(f"{entry.key}: not found in {entry.file} any more")
    values = {m.key: (m.key_start, m.node.start, m.node.end, m.node.end) for m in node.members}
    return Span(node.start, node.end, values, True, jsonc.indent_of(text, node.start))


def _toml_span(text: str, entry: ServerEntry) -> Span:
    layout = _toml_layout(text)
    path = (*entry.where, entry.key)
    headers = layout.headers
    index = layout.table_at.get(path)
    if index is not None:
        end = len(text)
        tables: dict[str, tuple[int, int]] = {}
        for number in range(index + 1, len(headers)):  # its sub-tables follow it
            later = headers[number]
            if later.path[: len(path)] != path:
                end = later.start
                break
            if len(later.path) == len(path) + 1 and not later.array:
                after = headers[number + 1].start if number + 1 < len(headers) else len(text)
                tables[later.path[-1]] = (later.start, after)
        values = {kv.key[0]: (kv.start, kv.value_start, kv.value_end, kv.end) for kv in layout.values_of.get(path, [])}
        return Span(headers[index].start, end, values, False, "", tables)
    kv = layout.inline_at.get(path)
    if kv is not None:
        return Span(kv.value_start, kv.value_end, {}, True, "")
    raise PlanError(f"{entry.key}: its table in {entry.file} is laid out in a way mcpwatch does not edit")


def span_of(config: ConfigFile, entry: ServerEntry) -> Span:
    return _toml_span(config.text, entry) if config.host.syntax == "toml" else _json_span(config.text, entry)


# --- rendering values -----------------------------------------------------------------------------------------


def _toml_string(value: str) -> str:
    """A TOML basic string: JSON's escapes, plus U+007F, which TOML forbids raw and JSON leaves as is."""
    return json.dumps(value, ensure_ascii=False).replace("\x7f", "\\u007f")


def _toml_key(key: str) -> str:
    bare = key and all(c.isalnum() or c in "_-" for c in key) and key.isascii()
    return key if bare else _toml_string(key)


def _toml_value(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return repr(value)
    if isinstance(value, str):
        return _toml_string(value)
    if isinstance(value, list):
        return "[" + ", ".join(_toml_value(v) for v in value) + "]"
    if isinstance(value, dict):
        return "{ " + ", ".join(f"{_toml_key(str(k))} = {_toml_value(v)}" for k, v in value.items()) + " }"
    raise PlanError(f"a value mcpwatch cannot write as TOML: {value!r}")


def _value(config: ConfigFile, value: Any, indent: str, step: str) -> str:
    if config.host.syntax == "toml":
        return _toml_value(value)
    return jsonc.render(value, indent, step)


# --- the two transformations ----------------------------------------------------------------------------------


def _url_to_command(entry: ServerEntry, args: list[str], program: str, variables: dict[str, str]) -> dict[str, Any]:
    host = entry.host
    dropped = {*host.url_keys, *host.sse_keys, "url", host.header_key}
    out: dict[str, Any] = {}
    for key, value in entry.raw.items():
        if key == entry.url_key:
            out["command"], out["args"] = program, args
        elif key == host.type_key:
            if host.stdio_type is not None:
                out[key] = host.stdio_type
        elif key == "env" and isinstance(value, dict):
            out[key] = {**value, **variables}
        elif key not in dropped:
            out[key] = value
    if variables and not isinstance(entry.raw.get("env"), dict):
        out["env"] = variables
    return out


def _command_to_url(entry: ServerEntry, line: wrapargs.WrapLine) -> dict[str, Any]:
    host = entry.host
    env = entry.raw.get("env")
    headers = wrapargs.headers_of(line, env)
    out: dict[str, Any] = {}
    for key, value in entry.raw.items():
        if key == "command":
            out[host.url_keys[0]] = line.url
            if headers:
                out[host.header_key] = headers
        elif key == host.type_key:
            out[key] = "http"
        elif key == "env" and isinstance(value, dict) and line.header_envs:
            rest = {k: v for k, v in value.items() if k not in line.header_envs}
            if rest:  # the variables the wrap added go; an env left empty was the wrap's own
                out[key] = rest
        elif key != "args":
            out[key] = value
    return out


def _whole(config: ConfigFile, entry: ServerEntry, span: Span, new: dict[str, Any]) -> Edit:
    """The entry's whole text replaced by `new` (a URL entry's change of shape)."""
    text = config.text
    if config.host.syntax == "json":
        return Edit(span.start, span.end, jsonc.render(new, span.indent, jsonc.unit_indent(text)))
    if span.inline:
        return Edit(span.start, span.end, _toml_value(new))
    header_end = text.index("\n", span.start) + 1 if "\n" in text[span.start : span.end] else span.end
    lines = [text[span.start : header_end]]
    for key in ("command", "args"):
        if key in new:
            lines.append(f"{key} = {_toml_value(new[key])}\n")
    for key, value in new.items():
        if key in ("command", "args") or isinstance(value, dict):
            continue
        if key in span.values and entry.raw.get(key) == value:
            line_start, _, _, line_end = span.values[key]
            lines.append(text[line_start:line_end])  # kept as written, with its comment
        else:
            lines.append(f"{_toml_key(key)} = {_toml_value(value)}\n")
    for key, value in new.items():
        if isinstance(value, dict):
            header = ".".join(_toml_key(p) for p in (*entry.where, entry.key, key))
            lines.append(
                f"\n[{header}]\n" + "".join(f"{_toml_key(str(k))} = {_toml_value(v)}\n" for k, v in value.items())
            )
    body = "".join(lines)
    tail = text[span.start : span.end]
    trailing = tail[len(tail.rstrip("\n")) :]
    return Edit(span.start, span.end, body.rstrip("\n") + (trailing or "\n"))


def _set(config: ConfigFile, span: Span, key: str, after: str, value: Any) -> Edit:
    """One value replaced in place, or (missing) inserted after the value of `after`."""
    text = config.text
    step = jsonc.unit_indent(text) if config.host.syntax == "json" else ""
    if key in span.values:
        line_start, start, end, _ = span.values[key]
        return Edit(start, end, _value(config, value, jsonc.indent_of(text, line_start), step))
    _, _, after_end, after_line_end = span.values[after]
    if config.host.syntax == "json":
        indent = jsonc.indent_of(text, span.values[after][0])
        return Edit(after_end, after_end, f",\n{indent}{json.dumps(key)}: {_value(config, value, indent, step)}")
    return Edit(after_line_end, after_line_end, f"{key} = {_toml_value(value)}\n")


def wrap_edits(config: ConfigFile, entry: ServerEntry, program: wrapargs.Program) -> list[Edit]:
    span = span_of(config, entry)
    transport = entry.transport
    if transport == "command":
        args = entry.raw.get("args", [])
        if not isinstance(args, list) or not all(isinstance(a, str) for a in args):
            raise PlanError(f"{entry.key}: its args are not a list of strings")
        new_args = wrapargs.for_command(program, entry.key, entry.ref, entry.raw["command"], args)
        if span.inline and config.host.syntax == "toml":
            return [_whole(config, entry, span, {**entry.raw, "command": program.command, "args": new_args})]
        return [_set(config, span, "command", "", program.command), _set(config, span, "args", "command", new_args)]
    if transport == "sse":
        raise PlanError(f"{entry.key}: an SSE server; mcpwatch wrap --url speaks Streamable HTTP only (wrap by hand)")
    if transport != "url":
        raise PlanError(f"{entry.key}: neither a command nor a URL; nothing to wrap")
    carried = [k for k in _UNCARRIED if k in entry.raw]
    if carried:
        raise PlanError(
            f"{entry.key}: uses {', '.join(carried)}, which a wrapped entry cannot carry (mcpwatch wrap takes "
            "headers as values); wrap it by hand"
        )
    variables = wrapargs.header_vars(entry.headers, entry.raw.get("env"))
    args = wrapargs.for_url(program, entry.key, entry.ref, str(entry.raw[entry.url_key or "url"]), list(variables))
    return [_whole(config, entry, span, _url_to_command(entry, args, program.command, variables))]


def unwrap_edits(config: ConfigFile, entry: ServerEntry, line: wrapargs.WrapLine) -> list[Edit]:
    span = span_of(config, entry)
    if line.url:
        return [_whole(config, entry, span, _command_to_url(entry, line))]
    if not line.inner:
        raise PlanError(f"{entry.key}: its mcpwatch wrap line names no server after `--`; fix it by hand")
    command, *args = line.inner
    if span.inline and config.host.syntax == "toml":
        return [_whole(config, entry, span, {**entry.raw, "command": command, "args": args})]
    return [_set(config, span, "command", "", command), _set(config, span, "args", "command", args)]


# --- a file's plan --------------------------------------------------------------------------------------------


def reread(config: ConfigFile, text: str) -> ConfigFile:
    doc = parse_text(config.host, text)
    servers = servers_in(config.host, config.scope, config.path, doc)
    return ConfigFile(config.path, config.host, config.scope, servers, None, text, config.mtime_ns)


def entry_edits(
    config: ConfigFile, entry: ServerEntry, action: str, program: wrapargs.Program, records: dict[str, Record]
) -> tuple[list[Edit], str]:
    """One entry's edits over the file as read, and what they do ("" for nothing to do); PlanError if impossible."""
    line = entry.wrap
    if action == "wrap":
        return ([], "already wrapped") if line is not None else (wrap_edits(config, entry, program), "wrapped")
    if line is None:
        return [], "not wrapped"
    span = span_of(config, entry)
    record = records.get(record_key(entry))
    if record is not None and record.wrapped == config.text[span.start : span.end]:
        return [Edit(span.start, span.end, record.original)], "unwrapped (restored as it was)"
    how = "unwrapped (rebuilt from its mcpwatch wrap line: the entry changed after wrapping)"
    return unwrap_edits(config, entry, line), how


def plan(
    config: ConfigFile,
    chosen: list[ServerEntry],
    action: str,
    program: wrapargs.Program,
    records: dict[str, Record],
) -> Plan:
    """Wrap or unwrap `chosen` (entries of `config`) in one pass over the text as read (entries do not overlap),
    then read the result back to check it and keep each entry's text before and after. PlanError when one cannot be
    done (then nothing is written)."""
    result = Plan(config, config.text)
    edits: list[Edit] = []
    for entry in chosen:
        found, what = entry_edits(config, entry, action, program, records)
        edits += found
        result.done.append((entry, what))
    if not edits:
        return result
    text = apply(config.text, edits)
    try:
        after = reread(config, text)
    except ValueError as exc:
        raise PlanError(f"the edited file does not read back ({exc}; a bug in mcpwatch)") from None
    by_place = {(s.where, s.key): s for s in after.servers}
    for entry, what in result.done:
        if what in ("already wrapped", "not wrapped"):
            continue
        new = by_place.get((entry.where, entry.key))
        if new is None or (new.wrap is None) != (action == "unwrap"):
            raise PlanError(f"{entry.key}: the edited entry does not read back as {action}ped (a bug in mcpwatch)")
        if action == "wrap":
            before = span_of(config, entry)
            now = span_of(after, new)
            original = config.text[before.start : before.end]
            result.records[record_key(entry)] = Record(original, text[now.start : now.end])
        else:
            result.records[record_key(entry)] = None
    result.text = text
    return result
