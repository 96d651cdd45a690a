"""The fold takes an end's start by its request id alone (`store/fold.py`): attacked by the ids a host or an upstream
can choose and by whoever writes the log. Two sessions of one writer calling with the same request id, an end of one
session arriving while the other's start is open, ids that are equal across types, and a folded row as mcpwatch
wrote it before (the start's seq also in its data) must all read back as exactly the events emitted."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import Any

from mcpwatch.events import Event, Kind
from mcpwatch.store import EventReader, EventWriter
from mcpwatch.store.fold import CallFolder, expand


def _start(sid: str, seq: int, rid: Any, mono: float = 0.0) -> Event:
    data = {"method": "tools/call", "up_id": seq, "who": sid}
    return Event(Kind.REQUEST_START, sid, 1e9 + seq, mono, seq, rid, "t", None, data)


def _end(sid: str, seq: int, rid: Any, mono: float = 0.001) -> Event:
    data = {"outcome": "ok", "duration_s": 0.001, "who": sid}
    return Event(Kind.REQUEST_END, sid, 1e9 + seq, mono, seq, rid, "t", None, data)


def _plain(event: Event) -> tuple[Any, ...]:
    return (
        str(event.kind),
        event.session_id,
        event.seq,
        event.ts,
        event.mono,
        event.request_id,
        event.tool,
        event.data,
    )


def _written(tmp_path: Path, events_by_session: dict[str, list[Event]], order: list[tuple[str, int]]) -> Path:
    """Emit the sessions' events interleaved as `order` says ((session, index) pairs), through a real writer."""
    log = tmp_path / "events.db"
    writer = EventWriter(log, fold_window=1.0)
    ids = {name: writer.start_session(name=name, upstream="u", pid=1, config={}) for name in events_by_session}
    for name, index in order:
        event = events_by_session[name][index]
        event.session_id = ids[name]
        event.data["who"] = ids[name]
        writer.emit(event)
    writer.close()
    return log


def test_two_sessions_calling_with_one_request_id_read_back_as_emitted(tmp_path: Path) -> None:
    # A start of session a, then one of session b with the same id, then both ends: b's start takes the id's place,
    # a's end must not take b's start, and every event reads back as it was emitted.
    events = {"a": [_start("a", 1, "7"), _end("a", 2, "7")], "b": [_start("b", 1, "7"), _end("b", 2, "7")]}
    log = _written(tmp_path, events, [("a", 0), ("b", 0), ("a", 1), ("b", 1)])
    with EventReader(log) as reader:
        for emitted in events.values():
            sid = emitted[0].session_id
            assert [_plain(e) for e in reader.events(sid)] == [_plain(e) for e in emitted]


def test_an_end_of_another_session_never_takes_an_open_start() -> None:
    folder = CallFolder(window=1.0)
    a_start, b_end, a_end = _start("a", 1, "r"), _end("b", 1, "r"), _end("a", 2, "r")
    folder.admit([a_start, b_end, a_end], now=0.0)
    out = folder.take(now=0.0, everything=True)
    assert out[0] is b_end  # b's end alone, as it came
    assert out[1] == (a_start, a_end)  # a's call still folds, with its own start


def test_an_end_of_a_session_that_is_not_text_never_folds() -> None:
    folder = CallFolder(window=1.0)
    start, end = _start("a", 1, "r"), _end("a", 2, "r")
    start.session_id = end.session_id = 12  # type: ignore[assignment]  # an odd session id, equal on both
    folder.admit([start, end], now=0.0)
    assert folder.take(now=0.0, everything=True) == [start, end]


def test_ids_equal_across_types_fold_only_when_the_start_is_the_ends_own() -> None:
    # "1" and 1 are different ids (no fold); True and 1 are one key but not one id (a folded row keeps the end's id
    # alone, and a log may store True as text): no fold, the start stays open for its own end.
    folder = CallFolder(window=1.0)
    events = [_start("a", 1, "1"), _end("a", 2, 1), _start("a", 3, True), _end("a", 4, 1), _end("a", 5, True)]
    folder.admit(events, now=0.0)
    out = folder.take(now=0.0, everything=True)
    assert [item.__class__ is tuple for item in out] == [False, False, False, True]
    assert [e.seq for e in expand(out)] == [1, 2, 4, 3, 5]


def test_a_folded_row_written_with_its_starts_seq_in_the_data_reads_alike(tmp_path: Path) -> None:
    # mcpwatch before this version kept the start's seq in the data too, and may still be writing beside this one;
    # whoever writes the log may also make that seq disagree with the row's column: the column decides.
    events = {"a": [_start("a", 1, "x"), _end("a", 2, "x"), _start("a", 3, "y"), _end("a", 4, "y")]}
    log = _written(tmp_path, events, [("a", n) for n in range(4)])
    with EventReader(log) as reader:
        before = [_plain(e) for e in reader.events(events["a"][0].session_id)]
    with sqlite3.connect(log) as conn:
        rows = conn.execute("SELECT id, data, start_seq FROM events WHERE start_seq IS NOT NULL").fetchall()
        assert len(rows) == 2 and all('"seq"' not in data for _, data, _ in rows)  # the new rows: no seq
        seqs = {rows[0][0]: rows[0][2], rows[1][0]: rows[1][2] + 99}  # the first as before, the second damaged
        for row_id, data, _ in rows:
            decoded = json.loads(data)
            decoded["start"] = {"seq": seqs[row_id], **decoded["start"]}
            conn.execute("UPDATE events SET data = ? WHERE id = ?", (json.dumps(decoded), row_id))
    with EventReader(log) as reader:
        assert [_plain(e) for e in reader.events(events["a"][0].session_id)] == before


def test_kinds_given_as_text_fold_as_the_wrappers_own_kinds_do() -> None:
    # The wrapper's events carry `Kind` members (told apart by identity); events read back or made elsewhere carry
    # the kind's text, and fold all the same.
    as_text = [_start("a", 1, "r"), _end("a", 2, "r")]
    for event in as_text:
        event.kind = str(event.kind.value) if isinstance(event.kind, Kind) else event.kind
    folder = CallFolder(window=1.0)
    folder.admit([*as_text, _start("a", 3, "s"), _end("a", 4, "s")], now=0.0)
    out = folder.take(now=0.0, everything=True)
    assert [item.__class__ is tuple for item in out] == [True, True]
    assert out[0][0].kind.__class__ is str and out[1][0].kind is Kind.REQUEST_START
