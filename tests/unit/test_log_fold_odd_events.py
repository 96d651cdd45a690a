"""The fold (`store/fold.py`) given events it cannot pair: a time that is not a number (an injected clock's), a request
id or session id that cannot be a key. The writer stored such events before the fold (their odd values made text);
with it, the batch carrying them must still be committed whole: its session ends and flush markers included."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from mcpwatch.events import Event, Kind
from mcpwatch.store import EventReader, EventWriter
from mcpwatch.store.batch import event_rows
from mcpwatch.store.fold import CallFolder, expand

SID = "20260101-000000000-eeeeee"


def _call(first_seq: int, request_id: Any, start_mono: Any, sid: Any = SID) -> list[Event]:
    start = Event(Kind.REQUEST_START, sid, 1e9, start_mono, first_seq, request_id, "t", None, {"method": "tools/call"})
    end = Event(Kind.REQUEST_END, sid, 1e9, 0.01, first_seq + 1, request_id, "t", None, {"outcome": "ok"})
    return [start, end]


ODD = {
    "a time that is not a number": ("r", None, SID),
    "a time that is text": ("r", "0.0", SID),
    "a request id that is a list": (["r"], 0.0, SID),
    "a session id that is a dict": ("r", 0.0, {"s": 1}),
}


@pytest.mark.parametrize("name", sorted(ODD))
def test_the_folder_passes_an_odd_call_through_unfolded(name: str) -> None:
    request_id, mono, sid = ODD[name]
    folder = CallFolder(window=1.0)
    odd = _call(1, request_id, mono, sid)
    folder.admit([*odd, *_call(3, "fine", 0.02)], now=0.0)
    out = folder.take(now=0.0, everything=True)
    assert [e.seq for e in expand(out)] == [1, 2, 3, 4]
    assert out[:2] == odd  # as they were: two rows, as before the fold
    assert out[2].__class__ is tuple  # the next call still folds


@pytest.mark.parametrize("name", sorted(ODD))
def test_a_batch_with_an_odd_call_keeps_its_session_end(tmp_path: Path, name: str) -> None:
    request_id, mono, _ = ODD[name]
    log = tmp_path / "events.db"
    writer = EventWriter(log, fold_window=1.0)
    sid = writer.start_session(name="x", upstream="u", pid=1, config={})
    for event in _call(1, request_id, mono, sid):
        writer.emit(event)
    writer.end_session(sid, "done")
    writer.close()
    with EventReader(log) as reader:
        assert [e.seq for e in reader.events(sid)] == [1, 2]
        assert reader.session(sid).end_reason == "done"  # was lost with the batch: the session looked crashed


@pytest.mark.parametrize("field", ["tool", "model"])
def test_a_folded_start_keeps_an_odd_name_as_its_own_row_would(tmp_path: Path, field: str) -> None:
    """A lone surrogate in a start's tool (differing from its end's) or model: its own row's column stores it
    replaced; kept in the folded row's data it read back as other garbage (`a\\udced\\udca0\\udc80`)."""
    read: dict[float, Event] = {}
    for window in (0.0, 1.0):
        log = tmp_path / f"events-{window}.db"
        writer = EventWriter(log, fold_window=window)
        sid = writer.start_session(name="x", upstream="u", pid=1, config={}, session_id=SID)
        odd = {"tool": "a\ud800", "model": None, field: "a\ud800"}
        writer.emit(Event(Kind.REQUEST_START, sid, 1e9, 0.0, 1, "r", odd["tool"], odd["model"], {"method": "m"}))
        writer.emit(Event(Kind.REQUEST_END, sid, 1e9, 0.001, 2, "r", "b", None, {"outcome": "ok"}))
        writer.close()
        with EventReader(log) as reader:
            read[window] = next(reader.events(sid))
            assert reader.count_by_kind(sid) == {"request_start": 1, "request_end": 1}
    assert getattr(read[1.0], field) == getattr(read[0.0], field)


def test_an_unusable_item_among_folded_calls_costs_only_its_own_row() -> None:
    """`event_rows` makes a batch's rows at once; an item it cannot use sends it one item at a time, so the folded
    calls and events beside it keep their rows, in order, and only that item is reported."""
    folder = CallFolder(window=1.0)
    folder.admit([*_call(1, "a", 0.0), *_call(3, "b", 0.02)], now=0.0)
    folded = folder.take(now=0.0, everything=True)
    assert [type(item) for item in folded] == [tuple, tuple]
    lone = _call(5, "c", 0.03)[0]
    reported: list[object] = []
    rows = event_rows([folded[0], object(), lone, folded[1]], lambda item, exc: reported.append(item))
    assert [(row[1], row[4]) for row in rows] == [(2, "request_end"), (5, "request_start"), (4, "request_end")]
    assert (rows[0][9], rows[2][9]) == (1, 3)  # each folded row's start_seq
    assert len(reported) == 1 and type(reported[0]) is object
