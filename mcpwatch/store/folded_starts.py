"""Where the starts folded calls keep (`store/fold.py`) go among a page of rows: their seqs and rows, in order.

A folded row is its call's end; its start lies before it, at `start_seq`. Most lie at most `FOLD_NEAR` seqs before
their row (`schema.NEAR_START`): those come from the session's seq index, read from the page's start up to
`FOLD_NEAR` past its end; the rest (`schema.FAR_START`) from `events_by_start`. The rows are read only as far as
the page's rows given out so far need: a start before a row at seq s can only be in a row up to s + FOLD_NEAR, so
the rows past the page are read for the page's last `FOLD_NEAR` seqs alone (and a damaged page beyond it stops
the reading there, not at the page's start). A start_seq that is no integer (by hand) places its start at its row's
seq (`start_event`): such a row comes with the near ones, by its own seq, so its start is read where it is given.
"""

from __future__ import annotations

import math
from bisect import bisect_right
from collections.abc import Callable, Iterator
from heapq import merge
from operator import itemgetter
from typing import Any

from mcpwatch.store.schema import FAR_START, FOLD_NEAR, NEAR_START
from mcpwatch.store.unfold import COLUMNS, Row, sql_order

Query = Callable[[str, list[Any]], list[Row]]

MAX_ROWID = 2**63 - 1
_LAST = (3, b"")  # after every value in SQLite's order

# a start_seq of no integer places its start at its row's seq (`start_event`): a row of numeric seq holding one is
# read with the near rows, by its seq, its start_seq read as that seq (the start it makes is the same)
ODD_START = "start_seq IS NOT NULL AND typeof(start_seq) != 'integer'"
_ODD_AT_ITS_ROW = f"{ODD_START} AND typeof(seq) IN ('integer', 'real')"
_NEAR_COLUMNS = COLUMNS.replace(", start_seq", ", CASE WHEN typeof(start_seq) = 'integer' THEN start_seq ELSE seq END")
_NEAR_ROWS = (
    f"SELECT {_NEAR_COLUMNS} FROM events INDEXED BY events_by_session_seq"
    " WHERE session_id = ? AND (seq, id) > (?, ?) AND seq <= ?"
    " AND start_seq IS NOT NULL"  # (first: most rows are no folded call's, and go no further)
    f" AND ({NEAR_START} AND start_seq > ? AND start_seq <= ? OR {_ODD_AT_ITS_ROW} AND seq <= ?) ORDER BY seq, id"
    " LIMIT ?"
)
_FAR_ROWS = (  # (to the session's end; by start_seq and id: a page may end among rows sharing a start_seq, by hand)
    f"SELECT {COLUMNS} FROM events INDEXED BY events_by_start WHERE session_id = ? AND {FAR_START}"
    " AND typeof(start_seq) = 'integer' AND (start_seq, id) > (?, ?) ORDER BY start_seq, id LIMIT ?"
)
_FAR_ROWS_UPTO = _FAR_ROWS.replace(" ORDER BY", " AND start_seq <= ? ORDER BY")
# a row whose seq was made text or bytes (after every number) holding a start_seq of no integer: its start is at
# that seq, so such rows are read by seq, from the first text value on (those rows alone: nearly never any)
_ODD_ROWS = (
    f"SELECT {COLUMNS} FROM events INDEXED BY events_by_session_seq WHERE session_id = ? AND seq >= ''"
    f" AND (seq, id) > (?, ?) AND {ODD_START} ORDER BY seq, id LIMIT ?"
)
_ODD_ROWS_UPTO = _ODD_ROWS.replace(" ORDER BY", " AND seq <= ? ORDER BY")


_START_SEQ = itemgetter(10)  # a row's start_seq (COLUMNS)
Placed = tuple[Any, Row]  # a folded start's seq and its row


def _sure_below(reached: Any) -> Any:
    """reached - FOLD_NEAR - 1, exactly: a seq made a float by hand (1e300, say) loses the difference in float
    arithmetic, and rows sharing it would be taken as read."""
    if reached.__class__ is float:
        if reached.is_integer():
            return int(reached) - FOLD_NEAR - 1
        if math.isinf(reached):
            return math.nextafter(reached, -math.inf)
    return reached - FOLD_NEAR - 1


def _placed_order(placed: Placed) -> tuple[int, Any]:
    return sql_order(placed[0])


class FoldedStarts:
    """The folded starts in (after_seq, upto_seq] (upto None: to the session's end), in seq order, a stretch at a
    time (`next_stretch`), each stretch one more page of rows read."""

    def __init__(self, query: Query, session_id: str, after_seq: Any, upto_seq: Any, page: int) -> None:
        self._query, self._session_id, self._page = query, session_id, page
        self._after, self._upto_seq = after_seq, upto_seq  # (a seq as read: maybe made text or bytes by hand)
        self._near_pages = self._near_rows(upto_seq)
        self._reached: int | None = self._after  # the near rows are read up to this seq (None: all of them)
        self._waiting: list[Row] = []  # the rows read whose starts are not given out, by start (then as read)
        self._far = self._far_rows()
        self._far_next: Placed | None = None
        self._far_read = False
        self._far_held = False  # the last stretch stopped short of what the near rows made sure of

    def next_stretch(self) -> tuple[list[Placed], Any]:
        """Reads the next page of rows; gives the starts it makes sure of, in order, as (the start's seq, its row),
        and the seq up to which every start is now given (None: all of them). `start_event` makes the start: each
        only as it is given out, so a reader holds a page of rows, not of decoded events; the far rows too come at
        most a page a stretch (and those sharing its last start), however many lie before what the near ones made
        sure of (a session of long calls read by kind: to its end)."""
        if not self._far_read:
            self._far_next, self._far_read = next(self._far, None), True
        if self._reached is not None and not self._far_held:
            rows, self._reached = next(self._near_pages)
            self._waiting += rows
            self._waiting.sort(key=_START_SEQ)  # (those held over are in order, the page's nearly: two runs)
        # no unread row has a start up to `sure`: an unread row's seq is past `reached`, or equal to it (rows sharing
        # a seq, by hand, split by a page), so its start is past reached - FOLD_NEAR - 1
        sure = None if self._reached is None else _sure_below(self._reached)
        far, held_at = self._far_page(_LAST if sure is None else (0, sure))
        self._far_held = held_at is not None  # far rows before `sure` left for the next stretch
        if self._far_held:
            sure = held_at
        if sure is None or sure.__class__ not in (int, float):  # (a start of text or bytes: after every number)
            cut = len(self._waiting)
        else:
            cut = bisect_right(self._waiting, sure, key=_START_SEQ)
        near = [(row[10], row) for row in self._waiting[:cut]]
        del self._waiting[:cut]
        return (list(merge(near, far, key=_placed_order)) if far else near), sure

    def _far_page(self, order: tuple[int, Any]) -> tuple[list[Placed], Any]:
        """The far rows up to `order`, at most a page of them and those sharing the last one's start; with the
        start they stop at when more lie before `order` (None when none do)."""
        taken: list[Placed] = []
        while self._far_next is not None and _placed_order(self._far_next) <= order:
            if len(taken) >= self._page and _placed_order(self._far_next) != _placed_order(taken[-1]):
                return taken, taken[-1][0]
            taken.append(self._far_next)
            self._far_next = next(self._far, None)
        return taken, None

    def _near_rows(self, upto_seq: Any) -> Iterator[tuple[list[Row], int | None]]:
        """The rows holding a near start, in seq order, a page at a time, each with the seq the reading reached
        (None: all read): those up to `upto_seq` first, then the FOLD_NEAR seqs past it (never past int64's top). A
        near row's seqs are integers: a page ending at a seq of text or bytes (after every number) leaves none past
        it."""
        spans: list[tuple[Any, Any]]  # (the seq read up to, the seq the reading reached at its end)
        if upto_seq.__class__ is int or upto_seq.__class__ is float:
            spans = [(upto_seq, upto_seq), (min(upto_seq + FOLD_NEAR, MAX_ROWID), None)]
        else:
            spans = [(math.inf, None)]  # (every number: a seq may be a float past int64, by hand)
        upto = math.inf if upto_seq is None else upto_seq
        last_seq, last_id = self._after, MAX_ROWID  # (seq, id) > (after, max) <=> seq > after
        for until, reached_at_end in spans:
            while True:
                params = [self._session_id, last_seq, last_id, until, self._after, upto, upto, self._page]
                rows = self._query(_NEAR_ROWS, params)
                if len(rows) < self._page:
                    yield rows, reached_at_end
                    break
                last_seq, last_id = rows[-1][2], rows[-1][0]
                yield rows, last_seq
            last_seq, last_id = until, MAX_ROWID  # the next span: the rows past this one

    def _far_rows(self) -> Iterator[Placed]:
        """The starts not near their rows, in seq order: those `events_by_start` holds, by start, and those of rows
        whose seq and start_seq are both no integers (by hand), by their rows' seqs; a page at a time (usually
        none)."""
        by_start = self._paged(_FAR_ROWS, _FAR_ROWS_UPTO, 10)
        return merge(by_start, self._paged(_ODD_ROWS, _ODD_ROWS_UPTO, 2), key=_placed_order)

    def _paged(self, sql: str, sql_upto: str, placed_at: int) -> Iterator[Placed]:
        """The rows a query gives in (after_seq, upto_seq] of the column `placed_at`, a page at a time, each with
        its start's seq (that column)."""
        last, last_id, upto = self._after, MAX_ROWID, self._upto_seq
        while True:
            if upto is None:
                rows = self._query(sql, [self._session_id, last, last_id, self._page])
            else:
                rows = self._query(sql_upto, [self._session_id, last, last_id, upto, self._page])
            for row in rows:
                yield row[placed_at], row
            if len(rows) < self._page:
                return
            last, last_id = rows[-1][placed_at], rows[-1][0]
