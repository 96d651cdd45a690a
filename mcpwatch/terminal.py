"""Text from the wire or the log, made safe for a terminal.

A host, upstream or wrapper name is whatever a peer sent; printed raw, an escape sequence in it could retitle the
operator's window, clear the screen, recolour what follows or hide a line. `safe` shows every control character
visibly instead: C0 as `\\x1b`, DEL, C1, the Unicode controls that reorder or break lines (bidi overrides, line
and paragraph separators) and lone surrogates (legal in JSON, which no UTF-8 output can encode) as `\\u009b`,
which is also a valid escape inside JSON text. `SafeStream` applies the same to everything a command writes,
keeping only its own line ends and tabs.
"""

from __future__ import annotations

import re
import sys
from typing import Any, TextIO

# bidi and line-breaking controls, and lone surrogates (legal in JSON text, not encodable as UTF-8)
_BIDI_AND_BREAKS = "\u061c\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069\ud800-\udfff"
_CONTROL = re.compile(f"[\x00-\x1f\x7f-\x9f{_BIDI_AND_BREAKS}]")
_CONTROL_BUT_LINES = re.compile(f"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f{_BIDI_AND_BREAKS}]|\r(?!\n)")
CONTROL, CONTROL_BUT_LINES = _CONTROL, _CONTROL_BUT_LINES  # what each rewrites: a text neither matches is safe as is


def _visible(match: re.Match[str]) -> str:
    code = ord(match.group())
    return f"\\x{code:02x}" if code < 0x7F else f"\\u{code:04x}"


def safe(text: Any) -> str:
    """One value (a name, an error text) for a terminal: every control character shown as an escape."""
    return _CONTROL.sub(_visible, text if isinstance(text, str) else str(text))


def safe_lines(text: str) -> str:
    """Multi-line output: as `safe`, but line ends (LF, CR LF) and tabs stay what they are."""
    return _CONTROL_BUT_LINES.sub(_visible, text)


def say(text: str) -> None:
    """One line from mcpwatch on stderr (`mcpwatch: …`), in one write. A wrapper's threads (the loop, the log writer,
    the exporters) all say things, and `print` writes a line's text and its end apart: two threads' lines could run
    together into one. Its control characters are shown as escapes (`safe`), line ends included: a peer's text (a
    remote upstream's refusal, a collector's) with a line end in it would otherwise say a line of its own, one a
    host's log shows as mcpwatch's."""
    try:
        sys.stderr.write(f"mcpwatch: {safe(text)}\n")
        sys.stderr.flush()
    except (OSError, ValueError, AttributeError):  # a stderr closed (a host gone), or none: the line is lost, never
        pass  # the thread that said it (the log writer's, an exporter's) with it


class SafeStream:
    """A text stream whose every write goes through `safe_lines` (a command's stdout or stderr)."""

    def __init__(self, stream: TextIO) -> None:
        self._stream = stream

    def write(self, text: str) -> int:
        self._stream.write(safe_lines(text))
        return len(text)

    def writelines(self, lines: Any) -> None:
        for line in lines:
            self.write(line)

    def __getattr__(self, name: str) -> Any:
        """The stream's own flush, isatty, encoding…; never `buffer` or anything else that writes around the guard."""
        if name not in _PASSED_THROUGH:
            raise AttributeError(f"SafeStream has no {name!r}: write text through it so escapes are made visible")
        return getattr(self._stream, name)


_PASSED_THROUGH = frozenset(
    {"flush", "isatty", "fileno", "encoding", "errors", "newlines", "closed", "writable", "name", "mode"}
)
