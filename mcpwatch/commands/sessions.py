"""`mcpwatch sessions [DB]`: the sessions in an event log, as a table (or JSON)."""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from rich.console import Console

    from mcpwatch.store import SessionInfo

HELP = "list the sessions recorded in an event log"


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("db", nargs="?", help="event log file (default: <state dir>/events.db)")
    parser.add_argument("--json", action="store_true", help="print JSON instead of a table")


def run(args: argparse.Namespace) -> int:
    # Imported here, each only on the path that needs it: the listing reads one row per session, so start-up is
    # most of the command's time (tests/unit/test_sessions_startup.py keeps the heavy packages out).
    from mcpwatch.registry import remove_ghosts
    from mcpwatch.store import EventReader, log_path

    path = log_path(args.db)
    remove_ghosts()
    with EventReader(path) as reader:
        sessions = reader.sessions()
    if args.json:
        import json

        print(json.dumps([s.to_dict() for s in sessions], indent=2))
        return 0
    from mcpwatch.commands._output import stdout_console

    render_sessions(stdout_console(), sessions, path)
    return 0


@dataclass(frozen=True, slots=True)
class _Column:
    """A column of the sessions table and how it gives way on a narrow terminal.

    `drop` orders the columns removed when even their shortest form does not fit (highest first; 0 never);
    a `flex` column is cut with an ellipsis to the room left, never below `min_width`.
    """

    key: str
    header: str
    short: str
    drop: int = 0
    flex: bool = False
    min_width: int = 0
    right: bool = False


# The id is what `--session` takes, so it is never cut. `start` goes first when narrow: the id holds the start
# time too (UTC). Long upstream command lines are cut to fit rather than wrapped over many lines.
_COLUMNS = (
    _Column("id", "id", "id"),
    _Column("name", "name", "name", drop=2, flex=True, min_width=6),
    _Column("upstream", "upstream", "upstream", drop=3, flex=True, min_width=10),
    _Column("start", "start", "start", drop=4),
    _Column("duration", "duration", "duration"),
    _Column("requests", "requests", "reqs", right=True),
    _Column("timeouts", "timeouts", "t/o", drop=1, right=True),
    _Column("late", "late drops", "late", drop=1, right=True),
)


def _table_width(widths: Sequence[int]) -> int:
    """The rendered width of a rich Table with the default box, edges and (0, 1) padding."""
    return sum(widths) + 3 * len(widths) + 1


def _layout(cells: dict[str, list[str]], width: int) -> list[tuple[_Column, str, int | None]]:
    """(column, header, fixed width or None) for the columns that fit in `width` characters.

    Everything at its natural width when that fits; otherwise short headers, flex columns cut to the room left,
    and columns dropped in `drop` order until the rest fits.
    """
    from rich.cells import cell_len

    def natural(column: _Column, header: str) -> int:
        return max([cell_len(header), *(cell_len(v) for v in cells[column.key])])

    if _table_width([natural(c, c.header) for c in _COLUMNS]) <= width:
        return [(c, c.header, None) for c in _COLUMNS]
    active = list(_COLUMNS)
    while True:
        need = [min(natural(c, c.short), c.min_width) if c.flex else natural(c, c.short) for c in active]
        droppable = [c for c in active if c.drop]
        if _table_width(need) <= width or not droppable:
            break
        active.remove(max(droppable, key=lambda c: c.drop))
    widths = dict(zip((c.key for c in active), need, strict=True))
    room = width - _table_width(list(widths.values()))
    for column in (c for c in active if c.flex):  # the room left goes to name, then upstream
        grow = max(0, min(room, natural(column, column.short) - widths[column.key]))
        widths[column.key] += grow
        room -= grow
    return [(c, c.short, widths[c.key]) for c in active]


def render_sessions(console: Console, sessions: Sequence[SessionInfo], path: Path) -> None:
    """The sessions table, readable at any width down to 80 columns: one line per session, the id always whole."""
    from rich.markup import escape
    from rich.table import Table

    from mcpwatch.logview.units import crashed_note, format_time, session_duration

    if not sessions:
        console.print(f"no sessions in {path}", markup=False)
        return
    cells: dict[str, list[str]] = {c.key: [] for c in _COLUMNS}
    for s in sessions:
        for key, value in (
            ("id", s.id),
            ("name", s.name or ""),
            ("upstream", s.upstream or ""),
            ("start", format_time(s.started_at)),
            ("duration", session_duration(s.duration, s.state)),
            ("requests", str(s.requests)),
            ("timeouts", str(s.timeouts)),
            ("late", str(s.late_drops)),
        ):
            cells[key].append(value)
    title = f"{len(sessions)} session{'' if len(sessions) == 1 else 's'} in {path}"
    table = Table(title=escape(title), title_justify="left")
    layout = _layout(cells, console.width)
    for column, header, width in layout:
        table.add_column(
            header,
            justify="right" if column.right else "left",
            no_wrap=width is not None or not column.flex,
            overflow="ellipsis" if column.flex else "fold",
            width=width,
        )
    for row in range(len(sessions)):
        table.add_row(*(escape(cells[column.key][row]) for column, _, _ in layout))
    console.print(table)
    for s in sessions:
        if s.state == "crashed":
            console.print(crashed_note(s.id, s.last_ts), markup=False, highlight=False)
