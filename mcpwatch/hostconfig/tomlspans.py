"""Where things are in a TOML file: table headers and key/value lines with their offsets, so Codex's config.toml is
edited one span at a time and every other byte (comments, blank lines, key order) stays as it was.

Values are read with `tomllib` (the whole file must parse first); this scanner only finds spans. It follows TOML's
lexical rules far enough for that: strings of the four kinds, comments, and brackets nested in values.
"""

from __future__ import annotations

from dataclasses import dataclass


class TomlSpanError(ValueError):
    """A line the scanner cannot place (the file parsed, so this is a construct it does not follow)."""


@dataclass(frozen=True)
class Header:
    path: tuple[str, ...]
    start: int  # the line's first character
    end: int  # after the line's newline
    array: bool  # [[...]]


@dataclass(frozen=True)
class KeyValue:
    table: tuple[str, ...]  # the header it is under (() at the top)
    key: tuple[str, ...]  # the dotted key as written on the line
    start: int  # the line's first character
    value_start: int
    value_end: int  # the value's last character + 1 (before any trailing comment)
    end: int  # after the line's newline (a multi-line value: after the last line's)


@dataclass(frozen=True)
class Layout:
    headers: tuple[Header, ...]
    values: tuple[KeyValue, ...]


_BARE = set("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_-")


def _string_end(text: str, pos: int) -> int:
    """The index after the string starting at `pos` (any of the four kinds)."""
    for quote in ('"""', "'''"):
        if text.startswith(quote, pos):
            close = pos + 3
            while True:
                close = text.find(quote, close)
                if close < 0:
                    raise TomlSpanError("a multi-line string is never closed")
                if quote == '"""':
                    back, slashes = close - 1, 0
                    while text[back] == "\\":
                        slashes, back = slashes + 1, back - 1
                    if slashes % 2:
                        close += 1
                        continue
                while text.startswith(quote[0], close + 3):  # up to two quotes may end the content
                    close += 1
                return close + 3
    quote = text[pos]
    close = pos + 1
    while close < len(text):
        char = text[close]
        if char == "\\" and quote == '"':
            close += 2
            continue
        if char == quote:
            return close + 1
        if char == "\n":
            break
        close += 1
    raise TomlSpanError("a string is never closed")


def _key(text: str, pos: int, stop: str) -> tuple[tuple[str, ...], int]:
    """A dotted key starting at `pos`, up to `stop`; returns the parts and the index of `stop`."""
    import json

    parts: list[str] = []
    while True:
        while text[pos] in " \t":
            pos += 1
        if text[pos] in "\"'":
            end = _string_end(text, pos)
            raw = text[pos:end]
            parts.append(json.loads(raw) if raw[0] == '"' else raw[1:-1])
            pos = end
        else:
            end = pos
            while end < len(text) and text[end] in _BARE:
                end += 1
            if end == pos:
                raise TomlSpanError(f"a key was expected at offset {pos}")
            parts.append(text[pos:end])
            pos = end
        while text[pos] in " \t":
            pos += 1
        if text[pos] == ".":
            pos += 1
            continue
        if text.startswith(stop, pos):
            return tuple(parts), pos
        raise TomlSpanError(f"expected {stop!r} at offset {pos}")


def _value_end(text: str, pos: int) -> int:
    """The index after the value starting at `pos` (arrays and inline tables may span lines)."""
    depth = 0
    end = pos
    last = pos
    while end < len(text):
        char = text[end]
        if char in "\"'":
            end = _string_end(text, end)
            last = end
            continue
        if char == "#":
            newline = text.find("\n", end)
            end = len(text) if newline < 0 else newline
            continue
        if char in "[{":
            depth += 1
        elif char in "]}":
            depth -= 1
        elif char == "\n" and depth == 0:
            break
        end += 1
        if not char.isspace():
            last = end
    return last


def scan(text: str) -> Layout:
    """Every header and key/value line of a TOML document that `tomllib` accepted."""
    headers: list[Header] = []
    values: list[KeyValue] = []
    table: tuple[str, ...] = ()
    pos = 0
    while pos < len(text):
        line_start = pos
        while pos < len(text) and text[pos] in " \t":
            pos += 1
        if pos >= len(text):
            break
        char = text[pos]
        if char in "\r\n" or char == "#":
            newline = text.find("\n", pos)
            pos = len(text) if newline < 0 else newline + 1
            continue
        if char == "[":
            array = text.startswith("[[", pos)
            path, close = _key(text, pos + (2 if array else 1), "]]" if array else "]")
            newline = text.find("\n", close)
            end = len(text) if newline < 0 else newline + 1
            headers.append(Header(path, line_start, end, array))
            table = path
            pos = end
            continue
        key, equals = _key(text, pos, "=")
        value_start = equals + 1
        while text[value_start] in " \t":
            value_start += 1
        value_end = _value_end(text, value_start)
        newline = text.find("\n", value_end)
        end = len(text) if newline < 0 else newline + 1
        values.append(KeyValue(table, key, line_start, value_start, value_end, end))
        pos = end
    return Layout(tuple(headers), tuple(values))
