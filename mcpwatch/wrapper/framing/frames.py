"""Raw JSON-RPC frames: parse, classify, encode, and the spec's error replies.

The wrapper forwards plain dicts, not SDK models: parsing stays cheap and the wire stays faithful. orjson does the
common case (several times faster than the standard library, which matters on every forwarded frame); the
standard library takes what orjson would change or refuse: integers beyond 64 bits (orjson reads them as floats),
lone surrogate escapes, and numbers beyond a double.
"""

from __future__ import annotations

import hashlib
import json
import math
import sys
from itertools import compress, repeat
from typing import Any

import orjson

PARSE_ERROR = -32700
INVALID_REQUEST = -32600
INTERNAL_ERROR = -32603

REQUEST = "request"
NOTIFICATION = "notification"
RESPONSE = "response"
INVALID = "invalid"

_dumps = json.JSONEncoder(separators=(",", ":"), ensure_ascii=False, allow_nan=False).encode
_ascii_dumps = json.JSONEncoder(separators=(",", ":"), allow_nan=False).encode
_log_dumps = json.JSONEncoder(separators=(",", ":"), ensure_ascii=False).encode  # text for the log, not the wire
MAX_DOUBLE = sys.float_info.max
MAX_DEPTH = 256  # JSON nesting accepted from a peer; MCP messages are nowhere near it


def _not_json(constant: str) -> Any:
    raise ValueError(f"not JSON ({constant} is no JSON value)")


def _float(text: str) -> float:
    """A JSON number as a double; one beyond a double's range (1e309) as the largest double, which any peer reads."""
    value = float(text)
    return value if math.isfinite(value) else math.copysign(MAX_DOUBLE, value)


_decoder = json.JSONDecoder(parse_constant=_not_json, parse_float=_float)


# A run of 19 digits is an integer orjson might read as a float (beyond 64 bits): with every digit made a zero by a
# translation table (one pass, no table built per call, as `translate(None, digits)` builds), a run of 19 zeros.
_DIGITS_AS_ZEROS = bytes.maketrans(b"123456789", b"000000000")
_NINETEEN_ZEROS = b"0" * 19
# the same, a CR as an LF, and a `[` or a `:` as a `{`: one pass, then a find for each, and one count of what opens
# a container or follows a key (`decode_line`)
_LINE_CHECK = bytes.maketrans(b"123456789\r[:", b"000000000\n{{")
_CONTAINER = frozenset((dict, list))
_BYTES = (bytes, bytearray)  # a tuple made once: `bytes | bytearray` in a call would make a union each time


def encode(message: Any) -> bytes:
    """One frame: compact JSON and a newline (stdio framing), always strict JSON in valid UTF-8.

    Whatever a peer sent is passed on faithfully where JSON allows: a lone surrogate (which arrived as a `\\udXXX`
    escape) leaves escaped again. A number too large for a double (1e309) was read as the largest double by
    decode(); a non-finite float of mcpwatch's own making leaves as `null` (orjson), never as `Infinity`.
    """
    try:
        return orjson.dumps(message, option=orjson.OPT_APPEND_NEWLINE)
    except (TypeError, orjson.JSONEncodeError):
        pass  # an integer beyond 64 bits, a lone surrogate, a non-str key: the standard library's turn
    try:
        text = _dumps(message)
    except ValueError:
        message = finite(message)
        text = _dumps(message)
    try:
        return text.encode("utf-8") + b"\n"
    except UnicodeEncodeError:
        return _ascii_dumps(message).encode("ascii") + b"\n"


def finite(value: Any) -> Any:
    """The value with every non-finite float replaced by the nearest double JSON can carry (NaN by 0)."""
    if isinstance(value, float) and not math.isfinite(value):
        return 0.0 if math.isnan(value) else math.copysign(MAX_DOUBLE, value)
    if isinstance(value, dict):
        return {k: finite(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [finite(v) for v in value]
    return value


def decode(line: bytes | str) -> Any:
    """Raises ValueError on anything that is not JSON in UTF-8: bad syntax, bad bytes, `NaN`/`Infinity` (which
    Python's parser would otherwise accept), and nesting deeper than MAX_DEPTH (which could not be encoded again
    within Python's recursion limit once wrapped in a reply). Its message says which, in words a peer's error can
    carry."""
    # `find`, not `in`: `bytes.__contains__` first tries its argument as an integer, and formats the error it catches
    if isinstance(line, _BYTES) and line.translate(_DIGITS_AS_ZEROS).find(_NINETEEN_ZEROS) < 0:
        try:
            value = orjson.loads(line)
        except orjson.JSONDecodeError:
            value = _strict_decode(line)  # a real error, or what only the standard library reads
    else:
        value = _strict_decode(line)
    if len(line) <= MAX_DEPTH:  # too short to open more than MAX_DEPTH brackets
        return value
    opening = (b"[", b"{") if isinstance(line, bytes | bytearray) else ("[", "{")
    if line.count(opening[0]) + line.count(opening[1]) > MAX_DEPTH and _depth(value) > MAX_DEPTH:  # type: ignore[arg-type]  # value is a parsed list or dict here
        raise ValueError(f"JSON nested deeper than {MAX_DEPTH} levels")
    return value


def decode_line(line: bytes, start: int, end: int) -> tuple[Any, bool]:
    """The JSON value at `line[start:end]`, a member of the object `line` holds, read as `decode` reads the whole line
    (so nested at most MAX_DEPTH - 1 levels) when orjson alone reads it so; a ValueError for anything else too (an
    integer beyond 64 bits, a lone surrogate, a number beyond a double) and for a raw CR or LF anywhere (JSON's
    whitespace, but a line's end to a peer reading lines). A caller wanting only that case (`splice`) leaves the
    rest to `decode`. The line's other bytes are checked as well, and the member is read in place. With the value,
    whether its bytes are proved to hold each key once (its brackets and colons exactly its containers and keys)."""
    checked = line.translate(_LINE_CHECK)
    if checked.find(_NINETEEN_ZEROS) >= 0 or checked.find(b"\n") >= 0:
        raise ValueError("a run of 19 digits or a line's end: the standard library's turn")
    try:
        value = orjson.loads(memoryview(line)[start:end])
    except orjson.JSONDecodeError as exc:
        raise ValueError(str(exc)) from None
    depth, written = _depth_and_marks(value)
    if depth > MAX_DEPTH - 1:
        raise ValueError(f"JSON nested deeper than {MAX_DEPTH} levels")
    # Each container written has its bracket, each key its colon (`{` all in `checked`): as many of them as the
    # parse kept proves no key was written twice (the value keeps the last; a peer given the bytes may keep the
    # first, or refuse them). More: a colon or bracket in a string, or a key twice.
    return value, checked.count(b"{", start, end) == written


def _depth_and_marks(value: Any) -> tuple[int, int]:
    """A parsed value's nesting depth, and its containers and keys counted together (the brackets and colons it was
    written with, were each key written once). Without recursion: the value may be nested deeper than the stack."""
    deepest = marks = 0
    stack = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if item.__class__ is dict:
            marks += len(item)
            item = item.values()
        elif item.__class__ is not list:
            continue
        marks += 1
        if depth > deepest:
            deepest = depth
        # the containers among the children, picked without a Python step per child (an array of a million numbers)
        stack += zip(compress(item, map(_CONTAINER.__contains__, map(type, item))), repeat(depth + 1))
    return deepest, marks


def _strict_decode(line: bytes | bytearray | str) -> Any:
    try:
        text = line.decode("utf-8") if isinstance(line, bytes | bytearray) else line
    except UnicodeDecodeError as exc:
        bad = exc.object[exc.start : exc.start + 1].hex()
        raise ValueError(f"not valid UTF-8 (byte 0x{bad} at offset {exc.start})") from None
    try:
        value = _decoder.decode(text)
    except RecursionError:
        raise ValueError(f"JSON nested deeper than {MAX_DEPTH} levels") from None
    except json.JSONDecodeError as exc:
        raise ValueError(f"not JSON ({exc})") from None
    return value


def _depth(value: Any) -> int:
    """Nesting depth of a parsed value, without recursion (the value may be nested deeper than the stack)."""
    deepest = 0
    stack = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, dict):
            item = item.values()
        elif not isinstance(item, list):
            continue
        deepest = max(deepest, depth)
        stack.extend((child, depth + 1) for child in item if isinstance(child, dict | list))
    return deepest


def kind_of(message: Any) -> str:
    """What a parsed JSON value is, as JSON-RPC 2.0 sees it."""
    if not isinstance(message, dict) or message.get("jsonrpc") != "2.0":
        return INVALID
    method = message.get("method")
    if method is not None:
        if not isinstance(method, str):
            return INVALID
        if "id" in message:  # MCP: a request id is a string or an integer, never null
            request_id = message["id"]
            return REQUEST if isinstance(request_id, str | int) and not isinstance(request_id, bool) else INVALID
        return NOTIFICATION
    if "id" in message and ("result" in message or "error" in message):
        return RESPONSE if valid_id(message["id"]) else INVALID  # anything else could not be matched, or hashed
    return INVALID


def valid_id(value: Any) -> bool:
    return (isinstance(value, str | int) and not isinstance(value, bool)) or value is None


def error_response(request_id: Any, code: int, message: str, data: Any = None) -> dict[str, Any]:
    error: dict[str, Any] = {"code": code, "message": message}
    if data is not None:
        error["data"] = data
    return {"jsonrpc": "2.0", "id": request_id, "error": error}


def id_key(value: Any) -> Any:
    """Ids as the SDK matches them: "7" and 7 are the same request."""
    if isinstance(value, str) and value.isascii() and value.isdigit():  # not "¹" or "٣": int() refuses or reads them
        return int(value)
    return value


KEY_MAX = 256  # characters of a peer's id or name kept past its request (events, finished tasks) before its digest


def bounded_key(text: str, limit: int = KEY_MAX) -> str:
    """A peer's id or name as kept past its request: whole when short, else its start and a digest of the whole,
    so equal keys stay equal and different ones apart, but a 16 MiB id costs 300 bytes in each place it is held."""
    if len(text) <= limit:
        return text
    digest = hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:24]
    return f"{text[:limit]}…#{digest}"


def text_of(value: Any, limit: int = 4096) -> str:
    """A JSON value as text for the log, truncated so one huge argument cannot bloat it."""
    kind = type(value)
    if kind is dict or kind is list:  # what the log is given nearly always: straight to the encoder
        try:
            encoded = orjson.dumps(value)
        except (TypeError, orjson.JSONEncodeError):
            text = _log_dumps(value)
        else:
            # a character is at most 4 bytes: of a long text only the bytes holding more than `limit` characters
            # are decoded, never a whole megabyte's result (orjson writes UTF-8: what "ignore" drops is a character
            # cut at that end, and a short text's slice is the text itself)
            text = encoded[: 4 * limit + 4].decode("utf-8", "ignore")
        return text if len(text) <= limit else text[: limit - 1] + "…"
    if kind is bytes or kind is bytearray:
        text = bytes(value[: limit * 4]).decode("utf-8", "replace")
    elif kind is str or (kind is not dict and kind is not list and isinstance(value, str)):
        text = value
    elif isinstance(value, bytes | bytearray):
        text = bytes(value[: limit * 4]).decode("utf-8", "replace")
    else:
        try:
            text = orjson.dumps(value).decode()
        except (TypeError, orjson.JSONEncodeError):
            text = _log_dumps(value)
    return text if len(text) <= limit else text[: limit - 1] + "…"
