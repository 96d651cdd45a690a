"""An upstream's response read so that its id can be replaced in its own bytes, without encoding it again.

A plain call's answer (`core.plain`) goes to its host as the upstream wrote it with only the id changed: the
result is parsed once (the log's preview reads it) and never encoded again, which for a large result is most of
a call's work. That is only safe when the bytes are known to be exactly one response with three members,
`"jsonrpc":"2.0"`, an integer `"id"` and `"result"`, each once, so the host cannot read anything but what the
wrapper read (a duplicate `id` or `result` would let a parser that keeps the first member see another id or
result than the log). So the line is read by a small grammar: `{`, the members before the result, `"result":`,
the result, the members after it, `}`, with JSON's whitespace between; the result must then parse alone as one
JSON value (which proves where it ends). Everything else is left to `frames.decode`, and its answer is encoded
again as before: escapes in a key, another member, a duplicate, a batch, an id that is not a plain integer
(`1.0`, `"1"`, `1e0`), a raw CR or LF anywhere (legal JSON whitespace, but a line's end to a host on stdio), and
what only the standard library reads (lone surrogates, integers beyond 64 bits, numbers beyond a double), nesting
beyond the cap, bytes that are not UTF-8. A result whose brackets and colons are not exactly its containers and keys
(a key perhaps twice in one object: the wrapper reads the last, a host's parser may read the first or refuse the
frame; or a colon in a string) is read once all the same, and its message encoded again, each key once.
"""

from __future__ import annotations

import re
from typing import Any

import orjson

from mcpwatch.wrapper.framing import frames

# Below this, reading the line's shape costs more than encoding the answer again (callgrind, a 100-byte answer:
# about 13,000 instructions more; a 64 KB one: 0.7 to 1.4 million fewer): a shorter one takes `frames.decode`.
SPLICE_BYTES = 2048
_W = rb"[ \t]*+"  # JSON's whitespace but the line ends (a CR or LF: the full path); possessive, never tried shorter
_DIGITS = rb"0|[1-9][0-9]{0,17}"  # an id the wrapper gave: a plain integer, well within 64 bits
_JSONRPC = rb'"jsonrpc"' + _W + rb":" + _W + rb'"2\.0"'
_ID = rb'"id"' + _W + rb":" + _W


def _member(n: int) -> bytes:
    """`"jsonrpc":"2.0"` or `"id":<int>`; group `j<n>` says the first, `i<n>` holds the second's digits."""
    return rb"(?:(?P<j%d>" % n + _JSONRPC + rb")|" + _ID + rb"(?P<i%d>" % n + _DIGITS + rb"))"


# `{`, up to two members, `"result":` — matched at the line's start
_HEAD = re.compile(
    _W + rb"\{" + _W + rb"(?:" + _member(1) + _W + rb"," + _W + rb"(?:" + _member(2) + _W + rb"," + _W + rb")?)?"
    rb'"result"' + _W + rb":" + _W
)
# up to two members, `}` — matched at the line's end (`_tail`)
_TAIL = re.compile(_W + rb"(?:," + _W + _member(3) + _W + rb"(?:," + _W + _member(4) + _W + rb")?)?\}" + _W + rb"\Z")
# the canonical order, compact: `{"jsonrpc":"2.0","id":N,"result":`
_CANONICAL_HEAD = b'{"jsonrpc":"2.0","id":'
_ID_START = len(_CANONICAL_HEAD)
_AFTER_ID_BYTES = b',"result":'
_AFTER_ID = len(_AFTER_ID_BYTES)


# a response read by the grammar: its parsed message (as `frames.decode` gives it, members in their order), and its
# bytes with where its id's digits are in them; None there when a key of its result may be written twice (then the
# message is encoded again: a host's parser may keep the first, the message has the last)
Framed = tuple[dict[str, Any], tuple[bytes, int, int] | None]


def with_id(where: tuple[bytes, int, int] | None, host_id: Any) -> bytes | None:
    """The frame for the host (newline included): the upstream's bytes with `host_id` in place of its id; None for an
    id orjson does not encode as `frames.encode` would (an integer beyond 64 bits, a lone surrogate), and for bytes
    not proved to hold each key once (`where` None)."""
    if where is None:
        return None
    try:
        encoded = orjson.dumps(host_id)
    except orjson.JSONEncodeError:
        return None
    line, start, end = where
    view = memoryview(line)  # the slices are not copied before the join
    return b"".join((view[:start], encoded, view[end:], b"\n"))


def read_response(line: bytes) -> Framed | None:
    """The line as a response whose id can be spliced, or None: then `frames.decode` reads it, as before."""
    # what orjson and pydantic write, read without a regex (a match costs more than the encoding it saves)
    if line.startswith(_CANONICAL_HEAD) and line[-2:] == b"}}":
        comma = line.find(b",", _ID_START, _ID_START + 20)
        if comma > _ID_START and line[comma : comma + _AFTER_ID] == _AFTER_ID_BYTES:
            digits = line[_ID_START:comma]
            try:
                up_id = int(digits)
            except ValueError:
                up_id = -1
            if up_id >= 0 and b"%d" % up_id == digits:  # a plain integer: no sign, space, `_` or leading zero
                try:
                    result, once = frames.decode_line(line, comma + _AFTER_ID, -1)
                except ValueError:
                    return None
                return {"jsonrpc": "2.0", "id": up_id, "result": result}, (line, _ID_START, comma) if once else None
    return _read_any_order(line)


def _tail(line: bytes, head_end: int) -> re.Match[bytes] | None:
    """The members after the result and the closing brace, matched where they can only start: at the second last or
    the last comma (the members hold none), else at the last brace. Anchored matches, each linear in the line: a
    search ending in `\\Z` would try every position, and whitespace before the end makes that quadratic."""
    close = len(line.rstrip(b" \t")) - 1
    if close < head_end or line[close : close + 1] != b"}":
        return None
    last = line.rfind(b",", head_end, close)
    if last >= 0:
        before = line.rfind(b",", head_end, last)
        tail = _TAIL.match(line, before) if before >= 0 else None
        if tail is None:
            tail = _TAIL.match(line, last)
        if tail is not None:
            return tail
    return _TAIL.match(line, close)


def _read_any_order(line: bytes) -> Framed | None:
    """`read_response` for the members in any order, with whitespace between them."""
    head = _HEAD.match(line)
    if head is None:
        return None
    head_end = head.end()
    tail = _tail(line, head_end)
    if tail is None:
        return None
    j1, i1, j2, i2 = head.groups()
    j3, i3, j4, i4 = tail.groups()
    ids = (i1 is not None) + (i2 is not None) + (i3 is not None) + (i4 is not None)
    if ids != 1 or (j1 is not None) + (j2 is not None) + (j3 is not None) + (j4 is not None) != 1:
        return None  # a member missing, or one twice: a parser that keeps the first would read another message
    if i1 is not None or i2 is not None:
        id_start, id_end = head.span("i1" if i1 is not None else "i2")
    else:
        id_start, id_end = tail.span("i3" if i3 is not None else "i4")
    up_id = int(line[id_start:id_end])
    try:
        result, once = frames.decode_line(line, head_end, tail.start())
    except ValueError:
        return None  # not one JSON value, or what only the standard library reads: `frames.decode` says which
    message: dict[str, Any] = {}  # the members in the order the line has them, as `frames.decode` gives them
    for jsonrpc, digits in ((j1, i1), (j2, i2), (None, None), (j3, i3), (j4, i4)):
        if jsonrpc is not None:
            message["jsonrpc"] = "2.0"
        elif digits is not None:
            message["id"] = up_id
        elif "result" not in message:
            message["result"] = result
    return message, (line, id_start, id_end) if once else None
