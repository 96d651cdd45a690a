"""One log row per short call: the writer folds a call's `request_start` into its `request_end` when the call took
at most `window` seconds (by the events' own times), so the log holds one row where it held two; a reader expands
the row back (see `store/unfold.py`), so every reader sees the same event stream whether or not a call was folded.

The folded row is the `request_end` row itself, at the end's place (seq) and with the end's columns; its `data`
carries the start under the key `start` (`{"ts", "mono", "data"}`, plus `tool` where it differs from
the end's and `model` where the start has one), and its `start_seq` column the start's seq. A reader finds the starts
a range of seqs holds in the rows at most `schema.FOLD_NEAR` seqs past it (a plain call's row is that near its start)
and, for any row farther from its start, in the partial index `events_by_start`.

The rows are committed in seq order, so a reader that has seen seq N has seen every start up to N: a start still
open holds back the events after it (at most `window` on the writer's clock, or `held_max` events: past either the
start is written as its own row, as every start was before). A call whose end never comes, a flush, a session's
end and closing the writer all write the starts they hold as their own rows.
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from operator import itemgetter
from typing import Any

from mcpwatch.events import Event, Kind

FOLD_WINDOW_S = 0.05  # the default; `[log] fold_window_ms`
HELD_MAX = 10_000  # events held back behind open starts, at most: past it the oldest starts are written plain
START_KEY = "start"  # where a folded row's data keeps its start

Folded = tuple[Event, Event]  # (start, end): one row

_START_KIND, _END_KIND = Kind.REQUEST_START, Kind.REQUEST_END  # what the wrapper emits: told apart by identity
_START = _START_KIND.value  # … and what another emitter may give: by value
_END = _END_KIND.value
_end_position = itemgetter(1)
_INF = float("inf")


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
        # request id -> the position of its open start, oldest first; the start's session is its event's (a start
        # of the same id in another session takes the place: the earlier one is then written as its own row)
        self._open: dict[Any, int] = {}
        # when each admitted run of items was seen: its first position and the writer's clock then, in order
        self._seen_from: list[int] = []
        self._seen_at: list[float] = []
        # the folded calls still held, (start's position, end's position) in the order they were folded, so by end
        self._folded: list[tuple[int, int]] = []
        self.taken_folded = 0  # folded calls among the items `take` gave out last (each one row, two events)

    def __len__(self) -> int:
        """Events held (a folded call counts as two)."""
        return len(self._held)

    @property
    def holding(self) -> bool:
        return bool(self._held)

    def admit(self, items: list[Any], now: float) -> None:
        """Take the next items (events in seq order, from the writer's queue), folding ends into open starts.

        The writer's work for every event it writes: a start is opened (an open start of the same request is
        written as it is), an end takes its start, by the request id alone (a string's hash is kept), with no call
        made."""
        held = self._held
        at = self._base + len(held)  # the position of the next item
        held.extend(items)
        window = self.window
        if window <= 0:
            return
        self._seen_from.append(at)
        self._seen_at.append(now)
        opened = self._open
        base = self._base
        folded = self._folded
        early, inf = -window, _INF  # (locals: read for every call)
        for item in items:
            if item.__class__ is Event:
                kind = item.kind
                try:
                    if kind is _START_KIND or (kind is not _END_KIND and kind == _START):  # the enum's own first
                        rid = item.request_id
                        if rid is not None:
                            if rid in opened:  # a host reusing an id in flight: the earlier start stays a row
                                del opened[rid]
                            opened[rid] = at  # (and goes last: `take` reads the oldest first)
                    elif (kind is _END_KIND or kind == _END) and item.request_id in opened:
                        rid = item.request_id
                        start_at = opened[rid] - base
                        start = held[start_at]
                        if (
                            start.session_id == item.session_id
                            and item.session_id.__class__ is str
                            and start.request_id.__class__ is rid.__class__  # 1, 1.0 and True are one key
                            and start.seq.__class__ is int  # a row's start_seq, which a reader takes as an int only
                        ):
                            del opened[rid]
                            # ended within its window: one row; a start whose times JSON cannot keep (inf, NaN),
                            # or a row's time could not stand for (its end's wall time earlier), stays a row
                            if early <= item.mono - start.mono <= window and 0.0 <= item.ts - start.ts < inf:
                                held[at - base] = (start, item)
                                held[start_at] = None
                                folded += ((start_at + base, at),)  # (no call: the call count stays the work's)
                except TypeError:  # an id that cannot be a key, a time that is not a number: written as it is
                    # (and a session id that is not text: an end of another session never takes a start)
                    pass
            at += 1

    def _seen(self, position: int) -> float:
        """When the item at `position` was admitted (on the writer's clock)."""
        return self._seen_at[bisect_right(self._seen_from, position) - 1]

    def due_in(self, now: float) -> float | None:
        """Seconds until the oldest open start's window ends (0: now); None when nothing is held back."""
        if not self._held:
            return None
        for position in self._open.values():
            seen = self._seen(position)
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
            for key, position in list(opened.items()):
                seen = self._seen(position)
                if seen <= now < seen + window and position - self._base >= over:
                    break
                del opened[key]  # its window ended (or the clock went back, or too much waits behind it)
        held = self._held
        cut = len(held)
        for position in opened.values():
            cut = position - self._base
            self._unfold_across(position)
            break
        if cut == 0:
            self.taken_folded = 0
            return []
        out = [item for item in held[:cut] if item is not None]
        self.taken_folded = cut - len(out)  # each folded start left its place empty
        del held[:cut]
        self._base = base = self._base + cut
        folded = self._folded
        if folded and folded[0][1] < base:  # the calls taken out: those whose end is before the new base
            del folded[: bisect_left(folded, base, key=_end_position)]
        seen_from = self._seen_from
        if len(seen_from) > 1 and seen_from[1] <= base:  # the runs wholly taken out (the last one always stays)
            runs = bisect_right(seen_from, base) - 1
            del seen_from[:runs], self._seen_at[:runs]
        return out

    def _unfold_across(self, cut: int) -> None:
        """Write as two rows every folded call whose start lies before the cut and its row after it: else the start's
        seq would be committed past (a kill leaves a gap; a reader tailing by seq moves beyond it and never sees it)
        while its row waits. Holding the cut back instead would chain under steady overlapping calls and hold the
        log for as long. One pass, latest end first (the order calls were folded in)."""
        held, base, folded = self._held, self._base, self._folded
        for index in range(len(folded) - 1, -1, -1):
            start, end = folded[index]
            if end < cut:
                break
            if start < cut:
                held[start - base], held[end - base] = held[end - base]
                del folded[index]
