"""JSON with comments (JSONC), read with the offsets of every value, so an edit replaces one span and leaves every
other byte of the file (comments, indentation, trailing commas, key order) as it was.

Hosts' config files are JSON (Claude Code, Cursor, Gemini CLI) or JSONC (VS Code, and Claude Desktop files people
annotate). Re-serialising a parsed file would drop the comments and re-flow the formatting; this module never does.
"""

from __future__ import annotations

import json
import json.decoder
import json.scanner
import re
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any

_scanstring = json.decoder.scanstring  # type: ignore[attr-defined]  # C: a string and where it ends
_NUMBER = json.scanner.NUMBER_RE  # the stdlib's own pattern for a JSON number
MAX_DEPTH = 200  # deeper nesting is refused (a recursive parser must not overflow on a hostile file)


class JsoncError(ValueError):
    """The text is not JSON(C); the message names the line and column."""


@dataclass
class Node:
    """A value and where its text is: `text[start:end]`."""

    start: int
    end: int
    value: Any  # the Python value (for objects and arrays: built from the children)


@dataclass
class Member:
    key: str
    key_start: int
    node: Node


@dataclass
class ObjectNode(Node):
    members: list[Member] = field(default_factory=list)
    _index: dict[str, Node] | None = field(default=None, repr=False)

    def get(self, key: str) -> Node | None:
        if self._index is None:  # JSON.parse keeps the last of duplicate keys; so does this index
            self._index = {m.key: m.node for m in self.members}
        return self._index.get(key)


@dataclass
class ArrayNode(Node):
    items: list[Node] = field(default_factory=list)


class _Parser:
    def __init__(self, text: str) -> None:
        self.text = text
        self.pos = 0

    def fail(self, message: str, pos: int | None = None) -> JsoncError:
        at = self.pos if pos is None else pos
        line = self.text.count("\n", 0, at) + 1
        column = at - (self.text.rfind("\n", 0, at) + 1) + 1
        return JsoncError(f"line {line} column {column}: {message}")

    def skip(self) -> None:
        """Whitespace and comments."""
        text, n = self.text, len(self.text)
        while self.pos < n:
            char = text[self.pos]
            if char in " \t\r\n\ufeff":
                self.pos += 1
            elif text.startswith("//", self.pos):
                newline = text.find("\n", self.pos)
                self.pos = n if newline < 0 else newline + 1
            elif text.startswith("/*", self.pos):
                close = text.find("*/", self.pos + 2)
                if close < 0:
                    raise self.fail("a /* comment is never closed")
                self.pos = close + 2
            else:
                return

    def value(self, depth: int) -> Node:
        if depth > MAX_DEPTH:
            raise self.fail(f"nested deeper than {MAX_DEPTH} levels")
        self.skip()
        if self.pos >= len(self.text):
            raise self.fail("the text ends where a value should be")
        char = self.text[self.pos]
        if char == "{":
            return self.object(depth)
        if char == "[":
            return self.array(depth)
        if char == '"':
            start = self.pos
            value = self.string()
            return Node(start, self.pos, value)
        return self.scalar()

    def string(self) -> str:
        start = self.pos
        try:
            value, self.pos = _scanstring(self.text, start + 1, True)
        except json.JSONDecodeError as exc:
            raise self.fail(f"a bad string ({exc.msg})", start) from None
        return str(value)

    def scalar(self) -> Node:
        start = self.pos
        text = self.text
        for word, value in (("true", True), ("false", False), ("null", None)):
            if text.startswith(word, start):
                self.pos = start + len(word)
                return Node(start, self.pos, value)
        match = _NUMBER.match(text, start)
        if match is None:
            raise self.fail(f"unexpected {text[start : start + 1] or 'end of text'!r}", start)
        integer, fraction, exponent = match.groups()
        number: Any = float(integer + (fraction or "") + (exponent or "")) if fraction or exponent else int(integer)
        self.pos = match.end()
        return Node(start, self.pos, number)

    def object(self, depth: int) -> ObjectNode:
        node = ObjectNode(self.pos, self.pos, {})
        self.pos += 1
        while True:
            self.skip()
            if self.pos >= len(self.text):
                raise self.fail("an object is never closed", node.start)
            if self.text[self.pos] == "}":
                self.pos += 1
                break
            if self.text[self.pos] != '"':
                raise self.fail("expected a quoted key or '}'")
            key_start = self.pos
            key = self.string()
            self.skip()
            if not self.text.startswith(":", self.pos):
                raise self.fail("expected ':' after a key")
            self.pos += 1
            child = self.value(depth + 1)
            node.members.append(Member(key, key_start, child))
            node.value[key] = child.value
            self.skip()
            if self.text.startswith(",", self.pos):
                self.pos += 1
            elif not self.text.startswith("}", self.pos):
                raise self.fail("expected ',' or '}'")
        node.end = self.pos
        return node

    def array(self, depth: int) -> ArrayNode:
        node = ArrayNode(self.pos, self.pos, [])
        self.pos += 1
        while True:
            self.skip()
            if self.pos >= len(self.text):
                raise self.fail("an array is never closed", node.start)
            if self.text[self.pos] == "]":
                self.pos += 1
                break
            child = self.value(depth + 1)
            node.items.append(child)
            node.value.append(child.value)
            self.skip()
            if self.text.startswith(",", self.pos):
                self.pos += 1
            elif not self.text.startswith("]", self.pos):
                raise self.fail("expected ',' or ']'")
        node.end = self.pos
        return node


def parse(text: str) -> Node:
    """The document's root value with offsets; JsoncError for anything that is not JSON with comments."""
    parser = _Parser(text)
    root = parser.value(0)
    parser.skip()
    if parser.pos != len(text):
        raise parser.fail("unexpected text after the end of the document")
    return root


@lru_cache(maxsize=4)
def parsed(text: str) -> Node:
    """`parse`, once per text: scanning and planning read the same file's text (a str caches its own hash)."""
    return parse(text)


def find(root: Node, path: tuple[str, ...]) -> Node | None:
    """The node at a path of object keys, or None."""
    node: Node | None = root
    for key in path:
        if not isinstance(node, ObjectNode):
            return None
        node = node.get(key)
    return node


def indent_of(text: str, pos: int) -> str:
    """The whitespace that starts the line holding `pos`."""
    line_start = text.rfind("\n", 0, pos) + 1
    end = line_start
    while end < len(text) and text[end] in " \t":
        end += 1
    return text[line_start:end]


@lru_cache(maxsize=4)
def unit_indent(text: str) -> str:
    """The file's indent step (two spaces, four, a tab), read from its first indented line; two spaces if none.
    Once per text, line by line: every edit of every entry asks (splitting a file of N servers N times was
    quadratic)."""
    at = 0
    while at < len(text):
        newline = text.find("\n", at)
        end = len(text) if newline < 0 else newline
        lead = 0
        while at + lead < end and text[at + lead] in " \t":
            lead += 1
        if lead and at + lead < end and not text[at + lead].isspace():
            return "\t" if text[at] == "\t" else " " * lead
        at = end + 1
    return "  "


_SURROGATE = re.compile("[\ud800-\udfff]")


def dumps(value: Any) -> str:
    """JSON text of a scalar or a flat list, non-ASCII kept as is; a lone surrogate (legal in JSON, not in UTF-8)
    is written as its `\\u` escape, so the file stays UTF-8 and reads back the same."""
    text = json.dumps(value, ensure_ascii=False, separators=(", ", ": "))
    return json.dumps(value, separators=(", ", ": ")) if _SURROGATE.search(text) else text


def render(value: Any, indent: str, step: str) -> str:
    """A value as JSON text laid out like a hand-written file: objects one member a line, short arrays of strings
    on one line. `indent` is the indentation of the line the value starts on."""
    if isinstance(value, dict) and value:
        inner = indent + step
        body = ",\n".join(f"{inner}{dumps(k)}: {render(v, inner, step)}" for k, v in value.items())
        return "{\n" + body + "\n" + indent + "}"
    if isinstance(value, list) and value and not all(isinstance(v, str | int | float | bool) for v in value):
        inner = indent + step
        return "[\n" + ",\n".join(inner + render(v, inner, step) for v in value) + "\n" + indent + "]"
    return dumps(value)
