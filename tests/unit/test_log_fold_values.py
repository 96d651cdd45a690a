"""Values a direct emitter (a test, a bench, another tool writing through `EventWriter`) may give that the fold must
not change: ids equal across types (1, 1.0, True), start times JSON cannot keep (inf), a wall clock that went back
between a call's start and end, and odd values that make a batch's rows be stored as text. A log written with the
fold on must read back, and count, exactly as the same events written with it off."""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

import pytest

from mcpwatch.events import Event, Kind
from mcpwatch.store import EventReader, EventWriter
from mcpwatch.store.session_counts import AGGREGATE, READ

Emitted = tuple[Any, Any, float, float, dict[str, Any]]  # (kind, request id, ts, mono, data)
S, E = Kind.REQUEST_START, Kind.REQUEST_END
INF = float("inf")


def _strict(event: Event) -> tuple[Any, ...]:
    """An event as read back, with each value's type (1 and 1.0 are equal in Python, not in a report)."""
    values = (event.seq, event.ts, event.mono, event.request_id, event.tool, event.data)
    return (str(event.kind), *((type(v).__name__, repr(v)) for v in values))


def _read(
    tmp_path: Path, plan: list[Emitted], window: float, seqs: list[Any] | None = None
) -> tuple[list[Any], list[Any], list[Any]]:
    """The events read back, the session's counts and the aggregate over its rows, written with `window` (the
    events numbered 1, 2, … unless `seqs` says otherwise)."""
    log = tmp_path / f"events-{window}.db"
    writer = EventWriter(log, fold_window=window)
    sid = writer.start_session(name="s", upstream="u", pid=1, config={})
    for seq, (kind, rid, ts, mono, data) in zip(seqs or range(1, len(plan) + 1), plan, strict=True):
        writer.emit(Event(kind, sid, ts, mono, seq, rid, "t", None, dict(data)))
    writer.close()
    with EventReader(log) as reader:
        events = [_strict(e) for e in reader.events(sid)]
    with sqlite3.connect(log) as conn:
        counts = [row[1:] for row in conn.execute(READ)]
        aggregate = [row[1:] for row in conn.execute(AGGREGATE.format(where=""))]
    return events, counts, aggregate


PLANS: dict[str, list[Emitted]] = {
    # two calls in flight whose ids are equal in Python: the end of 1 must not take the start of 1.0
    "int and float ids": [
        (S, 1, 1e9, 0.0, {"a": 1}),
        (S, 1.0, 1e9, 0.0, {"b": 2}),
        (E, 1, 1e9, 0.001, {}),
        (E, 1.0, 1e9, 0.002, {}),
    ],
    "bool and int ids": [(S, True, 1e9, 0.0, {}), (E, 1, 1e9, 0.001, {"s": "\ud800"})],
    "a start at an infinite mono": [(S, "a", 1e9, INF, {}), (E, "a", 1e9, 0.0, {})],
    "a start at an infinite time": [(S, "a", -INF, 0.0, {}), (E, "a", 1e9, 0.001, {})],
    "a wall clock gone back": [(S, "a", 1e9 + 1, 0.0, {}), (E, "a", 1e9, 0.001, {})],
    # a lone surrogate id makes the batch's rows be stored as text: the counts are those of the rows stored
    "a batch stored as text": [
        (S, "\ud800", INF, 0.0, {}),
        (E, "\ud800", 1e9, 0.001, {}),
        (Kind.TOMBSTONE_HIT, "b", INF, 0.1, {}),
    ],
}


@pytest.mark.parametrize("name", list(PLANS))
def test_a_folded_log_reads_and_counts_as_the_unfolded_one(tmp_path: Path, name: str) -> None:
    plain = _read(tmp_path, PLANS[name], window=0.0)
    folded = _read(tmp_path, PLANS[name], window=1.0)
    assert folded[0] == plain[0]  # the events, each value of its type
    assert folded[1] == folded[2] == plain[2]  # the session's counts: the aggregate over the events
    assert plain[1] == plain[2]


def test_values_read_back_alike_whether_or_not_something_odd_shared_their_batch(tmp_path: Path) -> None:
    """A batch holding a value SQLite cannot bind (a lone surrogate in an id) is stored with its odd values made
    bindable; every other value must be stored as a batch with nothing odd stores it (a float id's text is SQLite's,
    `1.0e+308`, not Python's; True is 1; an infinite time stays one)."""
    values: list[Emitted] = [
        (S, 1e308, 1e9, 0.0, {}),
        (S, True, INF, 0.1, {}),
        (S, 0.1 + 0.2, 1e9, 0.2, {}),
        (S, 2**62, 1e9, 0.3, {}),
        (E, 7, -INF, 0.4, {}),
    ]
    alone = _read(tmp_path, values, window=0.0)[0]
    (tmp_path / "beside").mkdir()
    beside = _read(tmp_path / "beside", [(S, "\ud800", 1e9, 0.0, {}), *values], window=0.0)[0]
    assert [event[2:] for event in beside[1:]] == [event[2:] for event in alone]  # (their seqs are one further)


@pytest.mark.parametrize("seq", [2.5, True, 2**70], ids=["float", "bool", "huge"])
def test_a_start_whose_seq_is_not_an_int_reads_and_counts_as_unfolded(tmp_path: Path, seq: Any) -> None:
    """A folded row keeps its start's seq in `start_seq`, which readers and the counts take as an int only: a start
    at another seq read back at its end's and went uncounted."""
    plan: list[Emitted] = [(S, "a", 1e9, 0.0, {}), (E, "a", 1e9, 0.001, {})]
    read = []
    for window in (0.0, 1.0):
        events, counts, aggregate = _read(tmp_path, plan, window, seqs=[seq, 3])
        assert counts == aggregate
        read.append((events, counts))
    assert read[1] == read[0]
