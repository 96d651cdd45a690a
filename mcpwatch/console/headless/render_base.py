"""What every console panel is drawn with: the theme `Palette`, status icons, gauges, sparklines, key/value grids,
the width of a table's tool column."""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass

from rich.console import Console, ConsoleOptions, RenderableType, RenderResult
from rich.table import Table
from rich.text import Text

from mcpwatch.console.headless import format as fmt
from mcpwatch.console.headless import words

# outcome / model status -> (icon, semantic colour). Icons are single-cell so columns stay aligned.
STATUS_STYLE: dict[str, tuple[str, str]] = {
    "ok": ("✓", "status-ok"),
    "degraded": ("✓!", "status-warn"),
    "tool_error": ("✗", "status-error"),
    "error": ("✗", "status-error"),
    "auth_error": ("✗", "status-error"),
    "upstream_lost": ("↯", "status-error"),
    "deadline": ("◷", "status-timeout"),
    "timeout": ("◷", "status-timeout"),
    "rate_limited": ("≈", "status-late"),
    "cancelled": ("⊘", "status-cancelled"),
    "pending": ("⋯", "status-pending"),
    "in flight": ("⋯", "status-pending"),
}
UPSTREAM_STYLE = {
    "ready": "status-ok",
    "connecting": "status-pending",
    "backoff": "status-warn",
    "closed": "status-error",
}


@dataclass(frozen=True, slots=True)
class Palette:
    """Semantic colours (theme variables) as Rich styles."""

    colours: Mapping[str, str]

    def __call__(self, name: str, extra: str = "") -> str:
        colour = self.colours.get(name)
        return f"{extra} {colour}".strip() if colour else extra

    @property
    def dim(self) -> str:
        return self("text-dim")


def wall_clock(origin_ts: float | None, mono: float) -> str:
    """Local time of day of a session instant (`HH:MM:SS`), or the session offset when the origin is unknown."""
    if origin_ts is None:
        return f"+{fmt.duration(mono)}"
    return time.strftime("%H:%M:%S", time.localtime(origin_ts + mono))


def status_text(status: str | None, p: Palette, *, label: str | None = None) -> Text:
    key = status or "in flight"
    icon, colour = STATUS_STYLE.get(key, ("•", "text-dim"))
    return Text(f"{icon} {label or words.outcome(key)}", style=p(colour))


def gauge(fraction: float | None, width: int, p: Palette) -> Text:
    """A bar that turns the 'over' colour past 100 % and the warning colour past 80 %."""
    if fraction is None:
        return Text(" " * width)
    filled = fmt.bar(fraction, width)
    n = filled.count("█")
    colour = "gauge-over" if fraction >= 1 else "status-warn" if fraction >= 0.8 else "gauge-fill"
    return Text.assemble(("█" * n, p(colour)), ("░" * (width - n), p("gauge-empty")))


def plain(value: Text | str) -> Text:
    """A table cell as text: Rich parses a str cell as markup, and names, messages and errors come from the wire."""
    return value if isinstance(value, Text) else Text(value)


def key_value(table: Table, key: str, value: Text | str, p: Palette) -> None:
    table.add_row(Text(key, style=p.dim), plain(value))


def kv_grid() -> Table:
    table = Table.grid(padding=(0, 1), expand=True)
    table.add_column(no_wrap=True)
    table.add_column(no_wrap=True, overflow="ellipsis", ratio=1)
    return table


def sparkline(values: tuple[float, ...], width: int) -> str:
    """Unicode block sparkline of the last `width` values, scaled to their max."""
    blocks = "▁▂▃▄▅▆▇█"
    data = values[-width:] if width > 0 else ()
    if not data:
        return ""
    top = max(data) or 1.0
    return "".join(blocks[min(7, int(v / top * 7.999))] for v in data)


TOOL_WIDTH_MIN = 12
TOOL_WIDTH_MAX = 34


def fit_tool_width(names: list[str], table_width: int, *, note: bool) -> int:
    """A table's tool column: as wide as the longest name (within bounds), and at most a quarter of the table
    (`table_width`; 0 while not laid out) when the last column has something to say."""
    longest = max((len(n) for n in names), default=TOOL_WIDTH_MIN)
    cap = TOOL_WIDTH_MAX if not note else max(TOOL_WIDTH_MIN, min(TOOL_WIDTH_MAX, (table_width or 100) // 4))
    return max(TOOL_WIDTH_MIN, min(cap, longest + 2))


class Fitted:
    """A renderable made for the width it is given: a panel that changes layout rather than cutting numbers."""

    def __init__(self, make: Callable[[int], RenderableType]) -> None:
        self.make = make

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        yield self.make(options.max_width)
