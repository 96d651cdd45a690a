"""One log row per short call (`store/fold.py`): the same traffic written with folding off, with every call folded it
can be, with a real window, and as a log of the schema before (two rows a call, no `start_seq`) reads back as the
same events, and `report`, `whatif`, `sessions`, the requests view and replay answer exactly alike."""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from mcpwatch.bench.replay import SyntheticSession
from mcpwatch.cli import main
from mcpwatch.clock import ManualClock
from mcpwatch.console.headless.model import ConsoleModel
from mcpwatch.events import Event, Kind
from mcpwatch.replay.engine import ReplayEngine, ThreadIndexer
from mcpwatch.replay.recording import Recording
from mcpwatch.store import EventReader, EventWriter
from mcpwatch.store.batch import INSERT_EVENT, event_rows
from mcpwatch.store.db import connect_writer
from mcpwatch.store.encoding import encode_json
from mcpwatch.store.fold import CallFolder
from mcpwatch.store.schema import MIGRATIONS
from mcpwatch.store.session_counts import add_batch
from mcpwatch.testing.sample import EventFactory

ORIGIN = 1_767_225_600.0
SESSION = "20260101-000000000-aaaaaa"
EDGES = "20260101-000100000-bbbbbb"


def _edge_cases() -> list[Event]:
    """Calls a fold could pair wrongly or lose: an id reused in flight, an end with no start, a start with no end,
    a cut inside the window, requests without a tool, a start whose tool or model differs from its end's, a
    start without request id, and data that is empty or large."""
    f = EventFactory(EDGES, ORIGIN + 60)
    ev = [f.make(Kind.SESSION_START, 0.0, name="edges", pid=1, version="0.1.0", front="stdio")]
    start: dict[str, Any] = {
        "method": "tools/call",
        "up_id": 1,
        "budget_s": 30.0,
        "budget_source": "default",
        "arguments": "{}",
    }
    ev.append(f.make(Kind.REQUEST_START, 0.10, request_id="dup", tool="a", **start))
    ev.append(f.make(Kind.REQUEST_START, 0.11, request_id="dup", tool="a", **{**start, "up_id": 2}))
    ev.append(f.make(Kind.REQUEST_END, 0.12, request_id="dup", tool="a", outcome="ok", duration_s=0.01, method="m"))
    ev.append(f.make(Kind.REQUEST_END, 0.13, request_id="dup", tool="a", outcome="ok", duration_s=0.03, method="m"))
    ev.append(
        f.make(Kind.REQUEST_END, 0.14, request_id="orphan", tool="a", outcome="error", duration_s=0.0, method="m")
    )
    ev.append(f.make(Kind.REQUEST_START, 0.15, request_id="open", tool="slow", **{**start, "up_id": 3}))
    ev.append(f.make(Kind.REQUEST_START, 0.16, request_id="cut", tool="b", **{**start, "budget_s": 0.001}))
    ev.append(f.make(Kind.PROGRESS, 0.161, request_id="cut", tool="b", progress=1, total=2, message="half"))
    ev.append(
        f.make(Kind.TOMBSTONE_ADD, 0.162, request_id="cut", up_id=4, ttl_s=5.0, reason="deadline", expires_mono=5)
    )
    ev.append(
        f.make(Kind.REQUEST_END, 0.162, request_id="cut", tool="b", outcome="deadline", duration_s=0.002, method="m")
    )
    ev.append(f.make(Kind.REQUEST_START, 0.17, request_id="list", method="tools/list", up_id=5, budget_s=None))
    ev.append(f.make(Kind.REQUEST_END, 0.171, request_id="list", outcome="ok", duration_s=0.001, method="tools/list"))
    ev.append(f.make(Kind.REQUEST_START, 0.18, request_id="renamed", tool="before", model="gpt", **start))
    ev.append(
        f.make(Kind.REQUEST_END, 0.181, request_id="renamed", tool="after", outcome="ok", duration_s=0.001, method="m")
    )
    ev.append(f.make(Kind.REQUEST_START, 0.19, tool="nameless", **start))
    ev.append(f.make(Kind.REQUEST_END, 0.191, tool="nameless", outcome="ok", duration_s=0.001, method="m"))
    ev.append(f.make(Kind.REQUEST_START, 0.2, request_id="empty", tool="c"))
    ev.append(f.make(Kind.REQUEST_END, 0.2, request_id="empty", tool="c", outcome="ok", duration_s=0.0, method="m"))
    ev.append(f.make(Kind.REQUEST_START, 0.3, request_id="big", tool="c", **{**start, "arguments": "x" * 70_000}))
    ev.append(f.make(Kind.REQUEST_END, 0.31, request_id="big", tool="c", outcome="ok", duration_s=0.01, method="m"))
    return ev


def _traffic() -> list[Event]:
    return list(SyntheticSession(SESSION, ORIGIN, seed=11, calls_per_s=6.0).events(2500)) + _edge_cases()


class _SetClock(ManualClock):
    """A manual clock set to a session time (not advanced by steps, whose sums would round differently)."""

    def set(self, mono: float) -> None:
        self._mono = mono
        self._wall = ORIGIN + mono


def _write(path: Path, events: list[Event], window: float, *, follow: bool = False) -> None:
    """The events through the real writer. `follow` moves its clock with the events, so its window decides which
    calls fold (on the writer thread, as it catches up); otherwise the clock stands and every call that ends folds."""
    clock = _SetClock(monotonic=0.0, wall=ORIGIN)
    with EventWriter(path, clock=clock, queue_max=100_000, fold_window=window) as writer:
        for sid, name in ((SESSION, "council"), (EDGES, "edges")):
            writer.start_session(name=name, upstream="stdio: x", pid=40100, config={}, session_id=sid)
        for event in events:
            if follow and event.mono > clock.monotonic():
                clock.set(event.mono)
            writer.emit(event)
        clock.set(_last_mono(events))  # the sessions end at the same time in every log
        for sid in (SESSION, EDGES):
            writer.end_session(sid, "host closed stdin")
        assert writer.flush(60)


def _last_mono(events: list[Event]) -> float:
    return max(e.mono for e in events)


def _write_schema_5(path: Path, events: list[Event]) -> None:
    """A log as an mcpwatch before folding wrote it: schema 5, two rows a call."""
    conn = connect_writer(path, steps=MIGRATIONS[:5])
    for sid, name in ((SESSION, "council"), (EDGES, "edges")):
        conn.execute(
            "INSERT INTO sessions (id, name, upstream, pid, started_at, version, config) VALUES (?,?,?,?,?,?,?)",
            (sid, name, "stdio: x", 40100, ORIGIN, "0.1.0", "{}"),
        )
    conn.execute("BEGIN")
    conn.executemany(
        "INSERT INTO events (session_id, seq, ts, mono, kind, request_id, tool, model, data)"
        " VALUES (?,?,?,?,?,?,?,?,?)",
        [
            (e.session_id, e.seq, e.ts, e.mono, e.kind, e.request_id, e.tool, e.model, encode_json(e.data))
            for e in events
        ],
    )
    conn.execute("UPDATE sessions SET ended_at = ?, end_reason = 'host closed stdin'", (ORIGIN + _last_mono(events),))
    conn.execute("COMMIT")
    conn.close()


def _write_schema_6(path: Path, events: list[Event]) -> None:
    """A log as an mcpwatch of schema 6 wrote it: folded rows, and every request's rows in `events_by_request`
    (schema 7 keeps only progress and task status there); a reader upgrades it in place."""
    conn = connect_writer(path, steps=MIGRATIONS[:6])
    for sid, name in ((SESSION, "council"), (EDGES, "edges")):
        conn.execute(
            "INSERT INTO sessions (id, name, upstream, pid, started_at, version, config) VALUES (?,?,?,?,?,?,?)",
            (sid, name, "stdio: x", 40100, ORIGIN, "0.1.0", "{}"),
        )
    folder = CallFolder(window=1e9)
    folder.admit(events, 0.0)
    rows = event_rows(folder.take(0.0, everything=True), lambda item, exc: None)
    conn.execute("BEGIN")
    conn.executemany(INSERT_EVENT, rows)
    add_batch(conn, rows)
    conn.execute("UPDATE sessions SET ended_at = ?, end_reason = 'host closed stdin'", (ORIGIN + _last_mono(events),))
    conn.execute("COMMIT")
    conn.close()


@pytest.fixture(scope="module")
def logs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    folder = tmp_path_factory.mktemp("fold")
    events = _traffic()
    paths = {name: folder / f"{name}.db" for name in ("off", "all", "window", "schema5", "schema6")}
    _write(paths["off"], events, 0.0)
    _write(paths["all"], events, 1e9)
    _write(paths["window"], events, 0.05, follow=True)
    _write_schema_5(paths["schema5"], events)
    _write_schema_6(paths["schema6"], events)
    return paths


def _rows(path: Path) -> tuple[int, int]:
    with sqlite3.connect(path) as conn:
        rows = conn.execute("SELECT count(*) FROM events").fetchone()[0]
        folded = conn.execute("SELECT count(*) FROM events WHERE start_seq IS NOT NULL").fetchone()[0]
    return rows, folded


def _plain(e: Event) -> tuple[Any, ...]:
    return (e.session_id, e.seq, e.kind, e.ts, e.mono, e.request_id, e.tool, e.model, e.data)


def test_the_log_holds_fewer_rows_when_calls_fold(logs: dict[str, Path]) -> None:
    events = _traffic()
    assert _rows(logs["off"]) == (len(events), 0)
    rows, folded = _rows(logs["all"])
    ends = {(e.session_id, e.request_id) for e in events if e.kind == Kind.REQUEST_END}
    ended = [e for e in events if e.kind == Kind.REQUEST_START and (e.session_id, e.request_id) in ends]
    # every call that ended is one row, but the id reused in flight (its first start stays a row of its own) and
    # the start without a request id
    assert folded == len(ended) - 2 and rows == len(events) - folded
    assert _rows(logs["window"])[1] > 0
    assert _rows(logs["schema6"]) == _rows(logs["all"])


def test_every_reader_gets_the_same_events_back(logs: dict[str, Path]) -> None:
    events = [_plain(e) for e in _traffic()]
    for name, path in logs.items():
        with EventReader(path) as reader:
            got = [_plain(e) for sid in (SESSION, EDGES) for e in reader.events(sid)]
            assert got == events, name
            # the narrower reads: a kind, a time range, a limit, a resumption in the middle of folded calls
            for sid in (SESSION, EDGES):
                mine = [e for e in _traffic() if e.session_id == sid]
                starts = [_plain(e) for e in mine if e.kind == Kind.REQUEST_START]
                assert [_plain(e) for e in reader.events(sid, kinds=[Kind.REQUEST_START])] == starts, name
                middle = mine[len(mine) // 2]
                after = [_plain(e) for e in mine if e.seq > middle.seq][:777]
                assert [_plain(e) for e in reader.events(sid, after_seq=middle.seq, limit=777)] == after, name
                lo, hi = mine[5].mono, middle.mono
                ranged = [_plain(e) for e in mine if lo <= e.mono < hi]
                assert [_plain(e) for e in reader.events(sid, start_mono=lo, end_mono=hi)] == ranged, name
                assert reader.count_by_kind(sid) == _kinds(mine), name
                assert reader.event_count(sid) == len(mine), name
                for offset in (1, 2, 3, 50, 401):
                    expected = mine[offset - 1] if offset <= len(mine) else None
                    probe = reader.event_at_offset(sid, 0, mine[-1].seq, offset)
                    assert probe == (None if expected is None else (expected.seq, expected.mono)), (name, offset)
                last = [e for e in mine if e.kind == Kind.REQUEST_START][-1]
                assert _plain(reader.last_of_kind(sid, Kind.REQUEST_START)) == _plain(last), name  # type: ignore[arg-type]
                ids = ["dup", "cut", "open", "1", "2"]
                for kind in (Kind.REQUEST_START, Kind.REQUEST_END, Kind.PROGRESS):
                    wanted = [_plain(e) for i in ids for e in mine if e.request_id == i and e.kind == kind]
                    assert [_plain(e) for e in reader.request_events(sid, ids, kind)] == wanted, (name, kind)


def _kinds(events: list[Event]) -> dict[str, int]:
    counts: dict[str, int] = {}
    for e in events:
        counts[e.kind] = counts.get(e.kind, 0) + 1
    return counts


def _cli(capsys: pytest.CaptureFixture[str], *args: str) -> str:
    assert main(list(args)) == 0
    return capsys.readouterr().out


def test_report_whatif_and_sessions_answer_alike(logs: dict[str, Path], capsys: pytest.CaptureFixture[str]) -> None:
    answers: dict[str, list[str]] = {}
    for name, path in logs.items():
        db = str(path)
        answers[name] = [
            _cli(capsys, "report", db, "--session", sid, *flag)
            for sid in (SESSION, EDGES)
            for flag in ((), ("--json",))
        ]
        answers[name] += [
            _cli(capsys, "whatif", db, "--session", sid, *how, "--json")
            for sid in (SESSION, EDGES)
            for how in (("--budget", "5"), ("--margin", "10", "--host-timeout", "60"))
        ]
        answers[name].append(_cli(capsys, "sessions", db, "--json"))
        with sqlite3.connect(path) as conn:
            # an id reused in flight (`dup`) is paired by the log's order, and a folded call with its own row, so
            # its two calls may pair differently folded or not (the host broke JSON-RPC's rule): both ended is all
            view = conn.execute(
                "SELECT * FROM requests WHERE request_id IS NOT 'dup' ORDER BY session_id, start_seq"
            ).fetchall()
            dup_ends = conn.execute("SELECT end_seq > start_seq FROM requests WHERE request_id = 'dup'").fetchall()
        answers[name].append(repr(view))
        assert dup_ends == [(1,), (1,)], (name, dup_ends)
        with EventReader(path) as reader:
            answers[name].append(repr([reader.trend_rows(sid) for sid in (SESSION, EDGES)]))
            outcomes = ["deadline", "error", "ok"]
            answers[name].append(repr([reader.marker_rows(sid, 10**9, outcomes) for sid in (SESSION, EDGES)]))
    assert answers["all"] == answers["off"]
    assert answers["window"] == answers["off"]
    assert answers["schema5"] == answers["off"]
    assert answers["schema6"] == answers["off"]
    assert json.loads(answers["off"][-4])  # the sessions listing is not empty


def _frames(path: Path) -> Iterator[tuple[float, Any]]:
    """What replay shows at several times: its view, and the detail of every call in it."""
    recording = Recording(path, SESSION)
    engine = ReplayEngine(recording, every=200)
    ThreadIndexer(recording, engine.index).run()
    end = recording.end_mono
    try:
        for t in [end * k / 13 for k in range(14)] + [end / 2 + 0.001, end / 3]:
            assert engine.seek(t, force=True)
            view = engine.model.view(t)
            ids = [r.request_id for r in view.requests] + [r.request_id for r in view.in_flight]
            yield t, (view, [engine.model.request_detail(i, t) for i in ids], engine.ordinal)
    finally:
        engine.close()


def test_replay_shows_the_same_frames(logs: dict[str, Path]) -> None:
    reference = list(_frames(logs["off"]))
    assert any(frame[1][0].in_flight for frame in reference)  # some frames show calls in flight
    for name in ("all", "window", "schema5", "schema6"):
        assert list(_frames(logs[name])) == reference, name
    model = ConsoleModel()  # and those frames are what a fold of the emitted events shows
    events = [e for e in _traffic() if e.session_id == SESSION]
    t, (view, _, _) = reference[7]
    for e in events:
        if e.mono <= t:
            model.apply(e)
    assert model.view(t) == view
