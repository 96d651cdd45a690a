"""One log row per short call: the writer folds a call's `request_start` into its `request_end` when the call took
at most `window` seconds (by the events' own times), so the log holds one row where it held two; a reader expands
the row back (see `store/unfold.py`), so every reader sees the same event stream whether or not a call was folded.

The folded row is the `request_end` row itself, at the end's place (seq) and with the end's columns; its `data`
carries the start under the key `start` (`{"seq", "ts", "mono", "data"}`, plus `tool` where it differs from
the end's and `model` where the start has one), and its `start_seq` column the start's seq, which the partial
index `events_by_start` orders, so a reader finds the starts a range of seqs holds without reading the rows after
it.

The rows are committed in seq order, so a reader that has seen seq N has seen every start up to N: a start still
open holds back the events after it (at most `window` on the writer's clock, or `held_max` events: past either the
start is written as its own row, as every start was before). A call whose end never comes, a flush, a session's
end and closing the writer all write the starts they hold as their own rows.
"""

from __future__ import annotations

from typing import Any

from mcpwatch.events import Event

FOLD_WINDOW_S = 0.05  # the default; `[log] fold_window_ms`
HELD_MAX = 10_000  # events held back behind open starts, at most: past it the oldest starts are written plain
START_KEY = "start"  # where a folded row's data keeps its start

Folded = tuple[Event, Event]  # (start, end): one row


def expand(items: list[Any]) -> list[Any]:
    """The events behind a list of items some of which are folded calls (to count or report them as events)."""
    out: list[Any] = []
    for item in items:
        if item.__class__ is tuple:
            out.extend(item)
        else:
            out.append(item)
    return out


class CallFolder:
    """The writer thread's fold: items go in in seq order and come out in seq order, a call's start and end as one
    item when its end came in time. Used from the writer thread only."""

    def __init__(self, window: float = FOLD_WINDOW_S, held_max: int = HELD_MAX) -> None:
        self.window = max(0.0, float(window))
        self.held_max = max(1, int(held_max))
        self._held: list[Any] = []  # items not yet committable, in seq order; a folded start's place is None
        self._base = 0  # the position (counted since the writer began) of _held[0]
        self._open: dict[tuple[str, str], tuple[int, float]] = {}  # (session, request) -> (position, seen at)
        self._folded: dict[int, int] = {}  # a folded call still held: its start's position -> its end's position
        self.taken_folded = 0  # folded calls among the items `take` gave out last (each one row, two events)

    def __len__(self) -> int:
        """Events held (a folded call counts as two)."""
        return len(self._held)

    @property
    def holding(self) -> bool:
        return bool(self._held)

    def admit(self, items: list[Any], now: float) -> None:
        """Take the next items (events in seq order, from the writer's queue), folding ends into open starts."""
        held = self._held
        opened = self._open
        base = self._base
        at = len(held)  # the place of the next item in `held`
        held.extend(items)
        window = self.window
        if window <= 0:
            return
        for item in items:
            kind = item.kind if item.__class__ is Event else None
            try:
                if kind == "request_start" and item.request_id is not None:
                    key = (item.session_id, item.request_id)
                    if key in opened:  # a host reusing an id in flight: the earlier start is written as it is
                        del opened[key]
                    opened[key] = (base + at, now)
                elif kind == "request_end" and opened and (item.session_id, item.request_id) in opened:
                    key = (item.session_id, item.request_id)
                    start_at = opened[key][0] - base
                    del opened[key]
                    start = held[start_at]
                    if item.mono - start.mono <= window:  # ended within its window: one row
                        held[at] = (start, item)
                        held[start_at] = None
                        self._folded[base + start_at] = base + at
            except TypeError:  # an id that cannot be a key, a time that is not a number: written as it is
                pass
            at += 1

    def due_in(self, now: float) -> float | None:
        """Seconds until the oldest open start's window ends (0: now); None when nothing is held back."""
        if not self._held:
            return None
        for _, seen in self._open.values():
            return 0.0 if now < seen else max(0.0, seen + self.window - now)
        return 0.0

    def take(self, now: float, *, everything: bool = False) -> list[Any]:
        """The items that may be committed now: those before the oldest start still inside its window (all of them
        with `everything`). Starts whose window ended, or that hold back too much, are given up on: written as
        their own rows."""
        opened = self._open
        if everything:
            opened.clear()
        elif opened:
            window = self.window
            over = len(self._held) - self.held_max
            for key, (position, seen) in list(opened.items()):
                if seen <= now < seen + window and position - self._base >= over:
                    break
                del opened[key]  # its window ended (or the clock went back, or too much waits behind it)
        held = self._held
        cut = len(held)
        for position, _ in opened.values():
            cut = position - self._base
            self._unfold_across(position)
            break
        if cut == 0:
            self.taken_folded = 0
            return []
        out = [item for item in held[:cut] if item is not None]
        self.taken_folded = cut - len(out)  # each folded start left its place empty
        del held[:cut]
        self._base += cut
        if self._folded:
            self._folded = {start: end for start, end in self._folded.items() if end >= self._base}
        return out

    def _unfold_across(self, cut: int) -> None:
        """Write as two rows every folded call whose start lies before the cut and its row after it: else the start's
        seq would be committed past (a kill leaves a gap; a reader tailing by seq moves beyond it and never sees it)
        while its row waits. Holding the cut back instead would chain under steady overlapping calls and hold the
        log for as long. One pass, latest end first (the order calls were folded in)."""
        held, base = self._held, self._base
        for start, end in list(reversed(self._folded.items())):
            if end < cut:
                break
            if start < cut:
                held[start - base], held[end - base] = held[end - base]
                del self._folded[start]
