"""Schema 9: a folded row whose start lies at most FOLD_NEAR seqs before it is found from its own seq in the session
index, so `events_by_start` holds only the others and a plain call's row costs the writer one b-tree entry fewer.
Every reader still gets every start in its place: near and far, across pages, from the middle, with a limit, by
kind and by time, from rows this writer made, rows an older writer keeps adding beside the upgrade and rows made
odd by hand."""

from __future__ import annotations

import json
import random
import sqlite3
from pathlib import Path
from typing import Any

import pytest
from test_log_schema7 import emit_plain_calls

from mcpwatch.store import EventReader, EventWriter
from mcpwatch.store import reader as reader_module
from mcpwatch.store.batch import INSERT_EVENT
from mcpwatch.store.db import connect_writer
from mcpwatch.store.schema import FOLD_NEAR, MIGRATIONS, SCHEMA_VERSION

SID = "20260101-000000000-bbbbbb"
TS = 1_767_225_600.0
Expected = list[tuple[int, str, str]]  # (seq, kind, request id) of every event, in order


def _index_entries(path: Path, index: str) -> int:
    """The entries of an index b-tree: the cells of all its pages (an index keeps keys in its inner pages too)."""
    with sqlite3.connect(path) as conn:
        found = conn.execute("SELECT sum(ncell) FROM dbstat WHERE name = ?", (index,))
        return int(found.fetchone()[0] or 0)


def _session(conn: sqlite3.Connection) -> None:
    conn.execute(
        "INSERT INTO sessions (id, name, upstream, pid, started_at, version, config) VALUES (?,?,?,?,?,?,?)",
        (SID, "s", "stdio: x", 1, TS, "0.1.0", "{}"),
    )


def _traffic(seed: int, calls: int, first_seq: int = 1) -> tuple[list[tuple[Any, ...]], Expected]:
    """Rows of calls whose ends come 1 to 3 × FOLD_NEAR seqs after their starts (most near, some at the bound, some
    far), unfolded calls and other events between them; and the events they stand for."""
    rng = random.Random(seed)
    slots: dict[int, tuple[Any, ...] | None] = {}  # seq → its row (None: a folded start's place)
    expected: Expected = []
    start = first_seq - 1
    for n in range(calls):
        start += 1
        while start in slots:
            start += 1
        end = start + rng.choice([1, 2, 3, FOLD_NEAR - 1, FOLD_NEAR, FOLD_NEAR + 1, 3 * FOLD_NEAR])
        while end in slots:
            end += 1
        rid = f"r{n}"
        expected += [(start, "request_start", rid), (end, "request_end", rid)]
        if rng.random() < 0.2:  # a call written as two rows
            slots[start] = (SID, start, TS + start, float(start), "request_start", rid, "t", None, "{}", None)
            slots[end] = (SID, end, TS + end, float(end), "request_end", rid, "t", None, '{"outcome":"ok"}', None)
            continue
        kept = {"ts": TS + start, "mono": float(start), "data": {"method": "tools/call"}}
        data = json.dumps({"outcome": "ok", "start": kept}, separators=(",", ":"))
        slots[start] = None  # the start's place: no row
        slots[end] = (SID, end, TS + end, float(end), "request_end", rid, "t", None, data, start)
    rows = [row for _, row in sorted(slots.items()) if row is not None]
    return rows, sorted(expected)


def _read(reader: EventReader, **options: object) -> Expected:
    return [(e.seq, str(e.kind), e.request_id or "") for e in reader.events(SID, **options)]  # type: ignore[arg-type]


def _check_every_read(path: Path, expected: Expected) -> None:
    with EventReader(path) as reader:
        assert _read(reader) == expected
        middle = expected[len(expected) // 2][0]
        assert _read(reader, after_seq=middle) == [e for e in expected if e[0] > middle]
        assert _read(reader, after_seq=middle, limit=777) == [e for e in expected if e[0] > middle][:777]
        starts = [e for e in expected if e[1] == "request_start"]
        assert _read(reader, kinds=["request_start"]) == starts
        low, high = float(expected[100][0]), float(expected[-300][0])
        assert _read(reader, start_mono=low, end_mono=high) == [e for e in expected if low <= e[0] < high]
        upto = expected[-1][0]
        for after in (0, middle, expected[-5][0]):
            following = [e for e in expected if after < e[0] <= upto]
            for offset in [*range(1, len(following) + 3, 41), len(following)]:
                found = reader.event_at_offset(SID, after, upto, offset)
                wanted = following[offset - 1][0] if offset <= len(following) else None
                assert (found[0] if found else None) == wanted


def test_a_fresh_log_indexes_no_near_start(tmp_path: Path) -> None:
    path = tmp_path / "log.db"
    with EventWriter(path) as writer:
        sid = writer.start_session(name="w", upstream="u", pid=1, config={})
        emit_plain_calls(writer, sid, 300)
    with sqlite3.connect(path) as conn:
        assert conn.execute("SELECT count(start_seq) FROM events").fetchone()[0] == 300  # every call folded
    assert _index_entries(path, "events_by_start") == 0  # … and none of them in the index
    with EventReader(path) as reader:
        assert [e.seq for e in reader.events(sid, after_seq=100, limit=3)] == [101, 102, 103]


@pytest.mark.parametrize("page", [37, reader_module.EVENTS_PAGE])
def test_near_and_far_starts_read_in_their_places_across_pages(
    tmp_path: Path, page: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Read in pages of 37 rows as well, so that every page's edge has starts near it on both sides."""
    monkeypatch.setattr(reader_module, "EVENTS_PAGE", page)
    path = tmp_path / "log.db"
    rows, expected = _traffic(seed=9, calls=3000)
    conn = connect_writer(path)
    _session(conn)
    conn.executemany(INSERT_EVENT, rows)
    conn.close()
    far = sum(1 for row in rows if row[9] is not None and not 1 <= row[1] - row[9] <= FOLD_NEAR)
    assert far > 100 and _index_entries(path, "events_by_start") == far
    _check_every_read(path, expected)
    with sqlite3.connect(path) as conn:
        starts = conn.execute("SELECT count(*) FROM requests").fetchone()[0]
    assert starts == sum(1 for e in expected if e[1] == "request_start")


def test_an_older_writer_beside_the_upgrade_is_read_alike(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A schema-8 writer keeps its connection while a newer mcpwatch upgrades the log, and goes on writing folded
    rows near and far: the near ones take no entry now, and all read back in place."""
    path = tmp_path / "log.db"
    old = connect_writer(path, steps=MIGRATIONS[:8])
    _session(old)
    rows, expected = _traffic(seed=4, calls=1200)
    first = rows[: len(rows) // 2]
    old.executemany(INSERT_EVENT, first)
    folded = sum(1 for row in first if row[9] is not None)
    assert _index_entries(path, "events_by_start") == folded  # schema 8: every folded row
    with EventReader(path) as reader:  # the upgrade, while the older writer keeps its connection
        assert reader.event_count(SID) == len(first) + folded
    assert _index_entries(path, "events_by_start") < folded / 2  # the near ones left it
    with sqlite3.connect(path) as conn:
        assert conn.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION == 9
    old.executemany(INSERT_EVENT, rows[len(rows) // 2 :])
    old.close()
    monkeypatch.setattr(reader_module, "EVENTS_PAGE", 53)
    _check_every_read(path, expected)


def test_rows_made_odd_by_hand_keep_their_starts(tmp_path: Path) -> None:
    """Whoever writes the log can give a folded row a start_seq after its own seq, equal to it, a float, or text,
    or a seq of text: each start still reads back, where it read before (a start_seq that is no integer places the
    start at its row's seq)."""
    path = tmp_path / "log.db"
    rows, _ = _traffic(seed=2, calls=400)
    conn = connect_writer(path)
    _session(conn)
    conn.executemany(INSERT_EVENT, rows)
    last = rows[-1][1]
    kept = json.dumps({"outcome": "ok", "start": {"ts": TS, "mono": 1.0, "data": {}}})
    odd = [(last + 10, last + 20), (last + 30, last + 30), (last + 40, last + 35.5), (last + 50, "x")]
    for seq, start_seq in odd:
        conn.execute(INSERT_EVENT, (SID, seq, TS, 1.0, "request_end", f"odd{seq}", "t", None, kept, start_seq))
    conn.close()
    with EventReader(path) as reader:
        events = list(reader.events(SID, after_seq=last))
    starts = sorted(e.seq for e in events if e.kind == "request_start")
    assert starts == [last + 20, last + 30, last + 40, last + 50]
    assert _index_entries(path, "events_by_start") >= len(odd)
