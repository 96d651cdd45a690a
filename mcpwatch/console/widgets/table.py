"""A DataTable refreshed as a bounded window: `clear()` + `add_rows()` once per tick, never per event.

Measured on Textual 8: rebuilding a capped window keeps up with floods that per-row `remove_row` cannot, and fixed
column widths avoid re-measuring. The cursor stays on the same row key across rebuilds (or on the first row,
while the table follows the newest; then new rows come in above it and are counted in `new_above`).

Keys as k9s and lazygit users expect: j/k move, g/home goes to the first row and follows it, G/end to the last.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Collection, Sequence
from typing import ClassVar

from rich.text import Text
from textual import events
from textual.binding import Binding, BindingType
from textual.widgets import DataTable

# Keys that move the selection away from where the table puts it: the operator holds the selection there.
HOLDING_KEYS = frozenset({"up", "down", "j", "k", "pageup", "pagedown", "end", "G", "ctrl+d", "ctrl+u"})


class WindowTable(DataTable[Text]):
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("enter", "select_cursor", "Open", id="table.open"),
        Binding("j", "cursor_down", "Down", show=False, id="table.down"),
        Binding("k", "cursor_up", "Up", show=False, id="table.up"),
        Binding("g,home", "first", "First", show=False, id="table.first"),
        Binding("G,end", "last", "Last", show=False, id="table.last"),
    ]

    DEFAULT_CSS = """
    WindowTable { height: 1fr; background: $surface; overflow-x: hidden; }
    WindowTable.-sideways { overflow-x: auto; }
    WindowTable > .datatable--header { background: $panel; color: $text-muted; }
    /* pinned columns (`pinned`) look like the others: they only stay put when the table scrolls sideways */
    WindowTable > .datatable--fixed { background: transparent; color: $foreground; }
    WindowTable > .datatable--fixed-cursor {
        background: $block-cursor-blurred-background;
        color: $block-cursor-blurred-foreground;
        text-style: $block-cursor-blurred-text-style;
    }
    WindowTable:focus > .datatable--fixed-cursor {
        background: $block-cursor-background;
        color: $block-cursor-foreground;
        text-style: $block-cursor-text-style;
    }
    """

    MIN_INTERVAL_S = 0.2  # at most 5 rebuilds a second: a flood changes the rows on every tick
    HOLD_AFTER_KEY_S = 0.4  # rows hold still while the operator moves the selection

    def __init__(
        self,
        columns: Sequence[tuple[str, int | None]],
        *,
        id: str | None = None,
        can_follow: bool = False,
        right_aligned: Collection[str] = (),
        sideways: int = 0,
        pinned: int = 0,
    ) -> None:
        """`sideways`: the table scrolls sideways (← →) when narrower than its columns, and its last column is
        at least this wide; 0: the columns are fitted to the width (the last one takes what is left). `pinned`:
        the first columns stay in place when it scrolls sideways (what names a row never scrolls away)."""
        # The cell's own colours win over the cursor's: a warning stays a warning on the selected row.
        super().__init__(
            id=id, cursor_type="row", zebra_stripes=False, show_cursor=True, cursor_foreground_priority="renderable"
        )
        self._columns = list(columns)
        self._right = frozenset(right_aligned)  # columns whose header sits right, over right-aligned numbers
        self._rows: list[tuple[str, tuple[Text, ...]]] = []
        self._rebuilt_at = -1e9
        self._built: list[tuple[str, tuple[Text, ...]]] = []  # see `show_built`
        self._built_from: object = None
        self._key_at = -1e9
        self.can_follow = can_follow
        self.following = can_follow  # the cursor stays on the first row (the newest) as rows come in
        self.new_above = 0  # rows that arrived above the held selection since it was held
        self.sideways = sideways
        self.fixed_columns = pinned
        self.set_class(bool(sideways), "-sideways")

    def on_key(self, event: events.Key) -> None:
        self._key_at = time.monotonic()
        if event.key in HOLDING_KEYS:
            self.hold()

    def on_click(self) -> None:
        self.hold()

    def action_cursor_right(self) -> None:
        if self.sideways:  # a third of the width a key: one cell at a time would take dozens of presses
            self.scroll_to(x=self.scroll_x + max(8, self.size.width // 3), animate=False)
        else:
            super().action_cursor_right()

    def action_cursor_left(self) -> None:
        if self.sideways:
            self.scroll_to(x=self.scroll_x - max(8, self.size.width // 3), animate=False)
        else:
            super().action_cursor_left()

    def hold(self) -> None:
        """Keep the selection on its row as new rows arrive (until `action_first`)."""
        self.following = False

    def action_first(self) -> None:
        self.move_cursor(row=0, animate=False)
        self.scroll_to(y=0, animate=False)
        self.following = self.can_follow
        self.new_above = 0

    def action_last(self) -> None:
        self.hold()
        self.move_cursor(row=max(0, self.row_count - 1), animate=False)

    def on_resize(self) -> None:
        self.show(self._rows, force=True)  # re-fit the last column

    def on_mount(self) -> None:
        if not self.columns:
            self._add_columns()

    def _add_columns(self) -> None:
        """Fixed widths, the last column taking what is left (auto width would only ever grow)."""
        for label, width in self._columns:
            header = Text(label, justify="right") if label in self._right else label
            if width is None and not self.free_width:
                header = ""  # no room for the last column's name: left empty rather than cut mid-word
            self.add_column(header, width=width if width is not None else self.free_width, key=label)

    def set_width(self, label: str, width: int) -> bool:
        """Resize a fixed column (applied at the next rebuild); True when that changes anything."""
        for i, (name, old) in enumerate(self._columns):
            if name == label and old is not None and old != width:
                self._columns[i] = (name, width)
                return True
        return False

    @property
    def free_width(self) -> int:
        """Columns left for the last (unsized) column: what its text should be clipped to; 0 when a fitted table
        has no room for its name (it read `mess` in a narrow In flight): the column then stays empty."""
        fixed = sum(width or 0 for _, width in self._columns)
        # a fitted table: without a scrollbar's cells; a sideways one keeps one cell spare
        width = self.size.width - 1 if self.sideways else self.scrollable_content_region.width
        room = width - fixed - 2 * self.cell_padding * len(self._columns)
        if not self.sideways and width and room < len(self._columns[-1][0]):
            return 0
        return max(len(self._columns[-1][0]), self.sideways, room)

    @property
    def cut(self) -> bool:
        """Columns lie beyond the right edge (a sideways table then says ← →)."""
        return self.virtual_size.width > self.scrollable_content_region.width

    @property
    def selected_key(self) -> str | None:
        if not self._rows or not (0 <= self.cursor_row < len(self._rows)):
            return None
        return self._rows[self.cursor_row][0]

    def show_built(
        self, source: object, build: Callable[[], list[tuple[str, tuple[Text, ...]]]], *, force: bool = False
    ) -> None:
        """`show(build())`, but the rows are built only when `source` (everything they are built from) changed:
        a tick with nothing new (a paused replay, an idle wrapper) hands `show` the same list, which it recognises
        at once, instead of drawing every row again to find them equal."""
        if source != self._built_from:
            self._built, self._built_from = build(), source
        self.show(self._built, force=force)

    def show(self, rows: list[tuple[str, tuple[Text, ...]]], *, force: bool = False) -> None:
        """Replace the rows (keyed), keeping the selection on the same key, at the same place on screen."""
        if not force:
            now = time.monotonic()
            if rows == self._rows or (
                self._rows
                and (now - self._rebuilt_at < self.MIN_INTERVAL_S or now - self._key_at < self.HOLD_AFTER_KEY_S)
            ):
                return
        self._rebuilt_at = time.monotonic()
        old_index = self.cursor_row
        # Following: the first row (the newest) stays selected. Otherwise the selection stays on its row.
        keep = None if self.following or (old_index == 0 and not self.can_follow) else self.selected_key
        scroll_x, scroll_y = self.scroll_x, self.scroll_y
        self._rows = rows
        with self.app.batch_update():
            self.clear(columns=True)
            self._add_columns()
            self.add_rows([cells for _, cells in rows])
            if scroll_x:
                self.call_after_refresh(self.scroll_to, x=scroll_x, animate=False, immediate=True)  # sideways stays
            index = None if keep is None else next((i for i, (key, _) in enumerate(rows) if key == keep), None)
            if index is None:
                return
            self.new_above += max(0, index - old_index)
            self.move_cursor(row=index, animate=False, scroll=False)
            target = max(0.0, scroll_y + (index - old_index))
            self.call_after_refresh(self._restore_scroll, target, index)

    def _restore_scroll(self, y: float, index: int) -> None:
        self.scroll_to(y=y, animate=False, immediate=True)
        if self.cursor_row == index:
            self.move_cursor(row=index, animate=False, scroll=True)  # only scrolls if it is out of view
