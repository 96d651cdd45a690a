"""The timeline bar: where in the session deadlines hit, cut calls finished late, late answers were dropped,
errors happened and margins changed, and where the replay is. Pure (Rich only): the screen hands it the markers,
the span and the width.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from rich.text import Text

from mcpwatch.console.headless.render_base import Palette, wall_clock
from mcpwatch.replay.clock import offset_text, speed_text
from mcpwatch.replay.recording import Marker

# marker kind -> (glyph, semantic colour, legend word). Problems share the upper line, the most serious kind
# winning a cell; config changes (rare, and what explains what follows them) have the track line to themselves.
PROBLEMS: dict[str, tuple[str, str, str]] = {
    "deadline": ("◷", "status-timeout", "deadline"),
    "late_result": ("↪", "status-late", "late result"),  # the same moment as its late drop: the more telling
    "late_drop": ("↩", "status-late", "late drop"),
    "error": ("✗", "status-error", "error"),
}
CONFIG = ("◆", "status-pending", "config change")
MARKS: dict[str, tuple[str, str, str]] = {**PROBLEMS, "config": CONFIG}
TRACK = "─"
HEAD = "█"


@dataclass(frozen=True, slots=True)
class Cells:
    """What each of `width` columns shows: the most serious problem there (None: none) and whether a config
    change happened there."""

    problems: tuple[str | None, ...]
    config: tuple[bool, ...]


def cells(markers: Sequence[Marker], end: float, width: int) -> Cells:
    width = max(0, width)
    problems: list[str | None] = [None] * width
    config = [False] * width
    rank = {kind: i for i, kind in enumerate(PROBLEMS)}
    for marker in markers if width else ():
        i = column(marker.mono, end, width)
        if marker.kind == "config":
            config[i] = True
            continue
        current = problems[i]
        if current is None or rank[marker.kind] < rank[current]:
            problems[i] = marker.kind
    return Cells(tuple(problems), tuple(config))


def column(mono: float, end: float, width: int) -> int:
    """The cell a session time falls in."""
    if end <= 0 or width <= 1:
        return 0
    return min(width - 1, max(0, int(mono / end * width)))


@dataclass(frozen=True, slots=True)
class Position:
    """What the second line says about where the replay is."""

    mono: float
    end: float
    playing: bool
    speed: float
    ordinal: int
    total: int
    origin_ts: float | None
    note: str = ""  # e.g. "going to 1:23:00 — indexing 43%"


def bar(marks: Cells, head: int, p: Palette) -> Text:
    """Two lines: the problems, then the track with the config changes and the current position."""
    text = Text(no_wrap=True, overflow="crop")
    for kind in marks.problems:
        if kind is None:
            text.append(" ")
        else:
            glyph, colour, _ = PROBLEMS[kind]
            text.append(glyph, style=p(colour, "bold"))
    text.append("\n")
    glyph, colour, _ = CONFIG
    for i, changed in enumerate(marks.config):
        if i == head:
            text.append(HEAD, style=p("gauge-fill", "bold"))
        elif changed:
            text.append(glyph, style=p(colour, "bold"))
        else:
            text.append(TRACK, style=p("gauge-empty"))
    return text


def status_line(pos: Position, counts: dict[str, int], p: Palette, *, compact: bool = False) -> Text:
    """`▶ 4×  0:42:10 / 19:23:01  14:42:10  event 12,345 of 1,000,000   ◷ 12 deadline …`; `compact` (a narrow
    terminal): `▶ 4×  0:42:10 / 19:23:01  #12,345  ◷12 ↩3 ✗40 ◆2`, so the counts still fit."""
    if compact:
        return _compact_status_line(pos, counts, p)
    text = _badge(pos, p)
    text.append(f"  {offset_text(pos.mono)}", style="bold")
    text.append(f" / {offset_text(pos.end)}", style=p.dim)
    if pos.origin_ts is not None:
        text.append(f"  {wall_clock(pos.origin_ts, pos.mono)}", style=p.dim)
    text.append(f"  event {pos.ordinal:,} of {pos.total:,}", style=p.dim)
    if pos.note:  # before the legend, which is what gets cut on a narrow terminal
        text.append(f"   {pos.note}", style=p("status-warn"))
    for kind, (glyph, colour, word) in MARKS.items():
        n = counts.get(kind, 0)
        if n:
            text.append(f"   {glyph} ", style=p(colour, "bold"))
            text.append(f"{n:,} {word}{'s' if n != 1 else ''}", style=p.dim)
    return text


def _badge(pos: Position, p: Palette) -> Text:
    """`▶ 4×` while playing, `⏸ 4×` while paused: the line's start."""
    text = Text(no_wrap=True, overflow="ellipsis")
    glyph, colour = ("▶", "status-ok") if pos.playing else ("⏸", "status-warn")
    text.append(f" {glyph} {speed_text(pos.speed)} ", style=p(colour, "bold reverse"))
    return text


def _compact_status_line(pos: Position, counts: dict[str, int], p: Palette) -> Text:
    text = _badge(pos, p)
    text.append(f" {offset_text(pos.mono)}", style="bold")
    text.append(f"/{offset_text(pos.end)}", style=p.dim)
    text.append(f"  #{pos.ordinal:,}", style=p.dim)
    for kind, (glyph, colour, _) in MARKS.items():
        n = counts.get(kind, 0)
        if n:
            text.append(f" {glyph}", style=p(colour, "bold"))
            text.append(f"{n:,}", style=p.dim)
    if pos.note:
        text.append(f"  {pos.note}", style=p("status-warn"))
    return text
