"""Reading folded calls back (`store/fold.py`): a folded row is the call's `request_end` with its start kept in
`data["start"]`; a reader gives the end without that key and the start as the `request_start` event it was, each at
its own seq. Every reader of events goes through here, so a log reads the same whether its calls were folded
(schema 6 on) or written as two rows (every log before).
"""

from __future__ import annotations

import json
import math
from typing import Any, TypeVar

from mcpwatch.events import Event, Kind
from mcpwatch.store.fold import START_KEY

_START = Kind.REQUEST_START.value

COLUMNS = "id, session_id, seq, ts, mono, kind, request_id, tool, model, data, start_seq"

Row = tuple[Any, ...]  # the COLUMNS of one events row


def event_data(text: str | None) -> dict[str, Any]:
    """An event's data; a row whose JSON was damaged (by hand, or a disk) keeps its text, so nothing is lost and
    every view still opens: the readers treat the missing fields as unknown."""
    if not text:
        return {}
    try:
        data = json.loads(text)
    except ValueError:
        return {"unreadable_data": text}
    return data if isinstance(data, dict) else {"unreadable_data": text}


def row_event(row: Row) -> Event:
    """The event a row holds: for a folded row, its end (the start's key taken out of its data)."""
    eid, sid, seq, ts, mono, kind, rid, tool, model, text, start_seq = row
    data = event_data(text)
    if start_seq is not None:
        data.pop(START_KEY, None)
    return Event(kind, sid, ts, mono, seq, rid, tool, model, data, eid)


_Default = TypeVar("_Default", float, None)


def number(value: Any, default: _Default) -> float | _Default:
    """A time read back from the log as a finite number; `default` for a damaged one (text, bytes, nothing)."""
    return float(value) if isinstance(value, int | float) and math.isfinite(value) else default


def start_event(row: Row) -> Event:
    """The `request_start` a folded row keeps, at its own seq, time and data (a damaged one keeps what is left: a
    `start_seq` made text or bytes by hand places the start at its row's seq, so every reader can still order it).
    It has no row of its own, so no `id`: the row's id is its end's, and an export's ids stay unique."""
    _, sid, seq, ts, mono, _, rid, tool, _, text, start_seq = row
    if start_seq.__class__ is not int:
        start_seq = seq
    kept = event_data(text).get(START_KEY)
    if not isinstance(kept, dict):
        return Event(_START, sid, ts, mono, start_seq, rid, tool, None, {"unreadable_data": text})
    data = kept.get("data")
    return Event(
        _START,
        sid,
        number(kept.get("ts"), ts),
        number(kept.get("mono"), mono),
        start_seq,
        rid,
        kept.get("tool", tool),
        kept.get("model"),
        data if isinstance(data, dict) else {},
    )


Bounds = tuple[float | None, float | None, float | None, float | None]  # `events()`'s start/end mono, start/end ts


def in_range(event: Event, bounds: Bounds) -> bool:
    """Whether a start read from a folded row lies within `events()`'s (start_mono, end_mono, start_ts, end_ts)."""
    try:
        return _within(event.mono, event.ts, *bounds)
    except TypeError:  # its row's times made text or bytes by hand: compared as SQLite compares the row's own
        ordered = (None if bound is None else sql_order(bound) for bound in bounds)
        return _within(sql_order(event.mono), sql_order(event.ts), *ordered)


def _within(mono: Any, ts: Any, start_mono: Any, end_mono: Any, start_ts: Any, end_ts: Any) -> bool:
    return (
        (start_mono is None or mono >= start_mono)
        and (end_mono is None or mono < end_mono)
        and (start_ts is None or ts >= start_ts)
        and (end_ts is None or ts < end_ts)
    )


def sql_order(value: Any) -> tuple[int, Any]:
    """SQLite's order of values of mixed types (numbers, then text, then bytes): how a hand-edited seq compares."""
    if value is None:
        return (-1, 0)
    if isinstance(value, int | float):
        return (0, value)
    return (1, value) if isinstance(value, str) else (2, bytes(value))
