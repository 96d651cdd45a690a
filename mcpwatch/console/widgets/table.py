"""A DataTable refreshed as a bounded window: `clear()` + `add_rows()` once per tick, never per event.

Measured on Textual 8: rebuilding a capped window keeps up with floods that per-row `remove_row` cannot, and fixed
column widths avoid re-measuring. The cursor stays on the same row key across rebuilds (or on the first row,
when that is where the operator left it, so the newest stays in view).
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import ClassVar

from rich.text import Text
from textual.binding import Binding, BindingType
from textual.widgets import DataTable


class WindowTable(DataTable[Text]):
    BINDINGS: ClassVar[list[BindingType]] = [Binding("enter", "select_cursor", "Open", id="table.open")]

    DEFAULT_CSS = """
    WindowTable { height: 1fr; background: $surface; overflow-x: hidden; }
    WindowTable > .datatable--header { background: $panel; color: $text-muted; }
    """

    MIN_INTERVAL_S = 0.2  # at most 5 rebuilds a second: a flood changes the rows on every tick
    HOLD_AFTER_KEY_S = 0.4  # rows hold still while the operator moves the selection

    def __init__(self, columns: Sequence[tuple[str, int | None]], *, id: str | None = None) -> None:
        super().__init__(id=id, cursor_type="row", zebra_stripes=False, show_cursor=True)
        self._columns = list(columns)
        self._rows: list[tuple[str, tuple[Text, ...]]] = []
        self._rebuilt_at = -1e9
        self._key_at = -1e9

    def on_key(self) -> None:
        self._key_at = time.monotonic()

    def on_resize(self) -> None:
        self.show(self._rows, force=True)  # re-fit the last column

    def on_mount(self) -> None:
        if not self.columns:
            self._add_columns()

    def _add_columns(self) -> None:
        """Fixed widths, the last column taking what is left (auto width would only ever grow)."""
        for label, width in self._columns:
            self.add_column(label, width=width if width is not None else self.free_width, key=label)

    def set_width(self, label: str, width: int) -> bool:
        """Resize a fixed column (applied at the next rebuild); True when that changes anything."""
        for i, (name, old) in enumerate(self._columns):
            if name == label and old is not None and old != width:
                self._columns[i] = (name, width)
                return True
        return False

    @property
    def free_width(self) -> int:
        """Columns left for the last (unsized) column: what its text should be clipped to."""
        fixed = sum(width or 0 for _, width in self._columns)
        return max(8, self.size.width - fixed - 2 * self.cell_padding * len(self._columns) - 1)

    @property
    def selected_key(self) -> str | None:
        if not self._rows or not (0 <= self.cursor_row < len(self._rows)):
            return None
        return self._rows[self.cursor_row][0]

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
        keep = self.selected_key if old_index > 0 else None
        scroll_y = self.scroll_y
        self._rows = rows
        with self.app.batch_update():
            self.clear(columns=True)
            self._add_columns()
            self.add_rows([cells for _, cells in rows])
            index = None if keep is None else next((i for i, (key, _) in enumerate(rows) if key == keep), None)
            if index is None:
                return
            self.move_cursor(row=index, animate=False, scroll=False)
            target = max(0.0, scroll_y + (index - old_index))
            self.call_after_refresh(self._restore_scroll, target, index)

    def _restore_scroll(self, y: float, index: int) -> None:
        self.scroll_to(y=y, animate=False, immediate=True)
        if self.cursor_row == index:
            self.move_cursor(row=index, animate=False, scroll=True)  # only scrolls if it is out of view
