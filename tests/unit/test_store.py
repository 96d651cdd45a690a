"""EventWriter → SQLite file → EventReader: round trips, sessions, filters, overflow, retention."""

from __future__ import annotations

import inspect
import json
import math
import os
import sqlite3
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_store_sample import dead_pid, write_sample

from mcpwatch.clock import ManualClock
from mcpwatch.events import Event, Kind
from mcpwatch.store import EventReader, EventWriter, LogError, new_session_id, pid_alive, prune

from waiting import sooner_than

# One representative data dict per kind, following the contract in events.py.
DATA_BY_KIND: dict[Kind, dict[str, Any]] = {
    Kind.SESSION_START: {"name": "s", "pid": 1, "deadline": {"budget_s": 110.0, "override_s": None}, "front": "stdio"},
    Kind.SESSION_END: {"reason": "eof", "counters": {"requests": 3, "ok": 2}},
    Kind.HOST_INFO: {"name": "claude-code", "version": "2.1", "protocol_version": "2025-06-18"},
    Kind.UPSTREAM_STATE: {"state": "backoff", "generation": 2, "exit_code": 1, "stderr_tail": ["boom", "ü"]},
    Kind.REQUEST_START: {"method": "tools/call", "up_id": 7, "budget_s": None, "arguments": '{"q": "x"}'},
    Kind.PROGRESS: {"progress": 0.5, "total": 1.0, "message": "✓ gpt (1/4) | waiting: a, b, c"},
    Kind.MODEL_STATUS: {"stage": 1, "status": "rate_limited", "latency_ms": 1234, "tier": "high"},
    Kind.REQUEST_END: {"outcome": "deadline", "duration_s": 110.01, "partial": True, "error": "deadline"},
    Kind.TOMBSTONE_ADD: {"up_id": 7, "ttl_s": 155.0, "reason": "deadline", "expires_mono": 300.5},
    Kind.TOMBSTONE_HIT: {"up_id": 7, "what": "response", "age_s": 3.25},
    Kind.TOMBSTONE_EXPIRE: {"up_id": 7, "age_s": 155.0},
    Kind.LATE_RESULT: {"up_id": 7, "delay_s": 2.5, "duration_s": 112.5, "outcome": "ok", "result": {"content": []}},
    Kind.CANCEL_ACK: {"up_id": 7, "reason": "deadline", "delay_s": 0.004, "code": 0, "error": "Request cancelled"},
    Kind.LATE_ERROR: {"up_id": 7, "reason": "deadline", "delay_s": 0.3, "code": -32000, "error": "Connection closed"},
    Kind.LATE_REUSE: {"from_request_id": "7", "delay_s": 2.5, "age_s": 40.0, "ttl_s": 60.0},
    Kind.UNKNOWN_RESPONSE: {"up_id": "abc", "reason": "stale_generation"},
    Kind.INVALIDATION: {"caused_by": "tasks.update", "patterns": ["tasks.*", "sprints.*"]},
    Kind.HEALTH_CHECK: {"ok": True, "ping_ms": 1.5, "result": {"tiers": {"quick": {"total_s": 30}}}, "error": None},
    Kind.CONFIG_CHANGE: {"key": "margin_s", "old": 10, "new": 20.5, "source": "operator"},
    Kind.WARNING: {"message": "something odd"},
    Kind.HEARTBEAT: {"progress": 2, "total": None, "message": "still working: 1m40s", "elapsed_s": 100.0},
    Kind.OPERATOR_CALL: {
        "tool": "council.models.disable",
        "arguments": '{"model": "x-ai/grok-4"}',
        "ok": True,
        "error": None,
        "result_preview": '{"changed": true}',
        "duration_s": 0.012,
    },
    Kind.TASK_CREATED: {
        "task_id": "t-1",
        "status": "working",
        "status_message": None,
        "ttl_ms": None,
        "era": "extension",
    },
    Kind.TASK_STATUS: {"task_id": "t-1", "status": "completed", "status_message": "done", "elapsed_s": 4.2, "polls": 3},
    Kind.HOST_SESSION_REFUSED: {"message": "a new host session was refused", "open": 16, "max": 16, "refused": 1},
}


def make_writer(path: Path, **kwargs) -> tuple[EventWriter, str]:
    writer = EventWriter(path, **kwargs)
    sid = writer.start_session(name="t", upstream="stdio: x", pid=123, config={"k": [1, 2]})
    return writer, sid


def test_every_kind_round_trips_with_its_data(tmp_path: Path) -> None:
    assert set(DATA_BY_KIND) == set(Kind)
    path = tmp_path / "events.db"
    writer, sid = make_writer(path)
    sent = []
    for seq, (kind, data) in enumerate(DATA_BY_KIND.items(), start=1):
        event = Event(kind, sid, 1_700_000_000.0 + seq, seq * 0.5, seq, str(seq), f"tool{seq}", f"m{seq}", data)
        writer.emit(event)
        sent.append(event)
    assert writer.flush(5)
    writer.close()
    assert writer.events_written == len(sent) and writer.dropped == 0
    with EventReader(path) as reader:
        got = list(reader.events(sid))
    assert [g.to_dict() | {"id": None} for g in got] == [s.to_dict() for s in sent]
    assert all(isinstance(g.id, int) for g in got)
    assert all(type(g.kind) is str for g in got)


JSON_VALUES = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-(2**53), 2**53)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=20),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4),
    max_leaves=12,
)


@pytest.mark.slow
@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.dictionaries(st.text(max_size=10), JSON_VALUES, max_size=6))
def test_any_json_data_survives(tmp_path: Path, data: dict) -> None:
    path = tmp_path / f"{time.monotonic_ns()}.db"
    writer, sid = make_writer(path)
    writer.emit(Event("progress", sid, 1.0, 0.0, 1, data=data))
    writer.close()
    with EventReader(path) as reader:
        (event,) = reader.events(sid)
    assert event.data == data


def test_awkward_data_is_stored_as_valid_json_not_lost(tmp_path: Path) -> None:
    path = tmp_path / "events.db"
    writer, sid = make_writer(path)
    loop: list = []
    loop.append(loop)
    awkward = {"nan": math.nan, 3: Path("/p"), "s": {1}}  # a key that is not text, values JSON has no form for
    writer.emit(Event("warning", sid, 1.0, 0.0, 1, data=awkward))  # type: ignore[arg-type]  # on purpose
    writer.emit(Event("warning", sid, 1.0, 0.0, 2, data={"loop": loop}))
    writer.emit(Event("warning", sid, 1.0, 0.0, 3, request_id="bad\udc80id", data={"m": "lone \udc80 surrogate"}))
    writer.emit(Event("warning", sid, 1.0, 0.0, 4, tool=("a", "b"), data={"big": 2**80}))  # type: ignore[arg-type]
    writer.emit(Event("warning", sid, None, None, 5, data={"message": "no clock"}))  # type: ignore[arg-type]
    assert writer.flush(5)
    writer.close()
    assert writer.dropped == 0, writer.last_error
    conn = sqlite3.connect(path)
    assert conn.execute("SELECT count(*), sum(json_valid(data)) FROM events").fetchone() == (5, 5)
    with EventReader(path) as reader:
        got = {e.seq: e for e in reader.events(sid)}
    assert got[1].data == {"nan": None, "3": "/p", "s": [1]}
    assert "unencodable" in got[2].data
    assert got[3].data == {"m": "lone \udc80 surrogate"}  # escaped inside JSON: nothing lost
    assert got[3].request_id == "bad?id"
    assert got[4].tool == "('a', 'b')" and got[4].data == {"big": 2**80}
    assert (got[5].ts, got[5].mono, got[5].data) == (0.0, 0.0, {"message": "no clock"})


def test_session_ids_are_sortable_and_unique() -> None:
    ids = [new_session_id(1_700_000_000.0 + i * 0.001) for i in range(50)]
    assert ids == sorted(ids)
    assert len(set(ids)) == 50
    same_instant = {new_session_id(1_700_000_000.0) for _ in range(200)}
    assert len(same_instant) == 200
    assert new_session_id(1_700_000_000.5).startswith("20231114-221320500-")


def test_start_session_is_synchronous_and_rejects_a_duplicate_id(tmp_path: Path) -> None:
    path = tmp_path / "events.db"
    clock = ManualClock(wall=1_700_000_000.0)
    writer = EventWriter(path, clock=clock)
    sid = writer.start_session(name="n", upstream="http://u", pid=9, config={"a": 1}, session_id="fixed-id")
    assert sid == "fixed-id"
    with EventReader(path) as reader:  # visible before any flush
        info = reader.session("fixed-id")
    assert (info.name, info.upstream, info.pid, info.started_at, info.config) == ("n", "http://u", 9, 1.7e9, {"a": 1})
    with pytest.raises(LogError, match="already exists"):
        writer.start_session(name="n", upstream="u", pid=9, config={}, session_id="fixed-id")
    writer.close()


def test_end_session_is_ordered_after_emitted_events(tmp_path: Path) -> None:
    path = tmp_path / "events.db"
    clock = ManualClock(wall=1_700_000_000.0)
    writer = EventWriter(path, clock=clock, flush_interval=5.0)
    sid = writer.start_session(name="n", upstream="u", pid=1, config={})
    writer.emit(Event("warning", sid, clock.time(), 0.0, 1, data={"message": "x"}))
    clock.advance(42.0)
    writer.end_session(sid, "host closed")
    assert writer.flush(5)
    with EventReader(path) as reader:
        info = reader.session(sid)
    writer.close()
    assert (info.ended_at, info.end_reason, info.duration, info.events) == (1_700_000_042.0, "host closed", 42.0, 1)


def test_sessions_report_counts_and_open_duration(tmp_path: Path) -> None:
    path = tmp_path / "events.db"
    ended = write_sample(path, t0=1_700_000_000.0, name="first")
    open_ = write_sample(path, t0=1_700_001_000.0, name="second", end=False)
    with EventReader(path) as reader:
        first, second = reader.sessions()
        latest = reader.latest_session()
    assert (first.id, second.id, latest.id) == (ended.session_id, open_.session_id, open_.session_id)
    emitted = ended.emitted
    assert first.events == len(emitted)
    assert first.requests == sum(e.kind == "request_start" for e in emitted)
    assert first.timeouts == sum(e.kind == "request_end" and e.data["outcome"] == "deadline" for e in emitted)
    assert first.late_drops == sum(e.kind == "tombstone_hit" for e in emitted)
    assert first.duration == pytest.approx(330.0)
    assert second.ended_at is None
    assert second.duration == pytest.approx(max(e.ts for e in open_.emitted) - 1_700_001_000.0)


def test_session_lookup_by_prefix(tmp_path: Path) -> None:
    path = tmp_path / "events.db"
    writer = EventWriter(path)
    for sid in ("abc-1", "abc-2", "xyz-1"):
        writer.start_session(name=sid, upstream="u", pid=1, config={}, session_id=sid)
    writer.close()
    with EventReader(path) as reader:
        assert reader.session("xy").id == "xyz-1"
        assert reader.session("abc-2").name == "abc-2"
        with pytest.raises(LogError, match=r"ambiguous.*abc-1, abc-2"):
            reader.session("abc")
        with pytest.raises(LogError, match="no session 'nope'") as info:
            reader.session("nope")
    assert str(path) in str(info.value) and "\n" not in str(info.value)


def test_latest_session_of_an_empty_log_is_a_clear_error(tmp_path: Path) -> None:
    path = tmp_path / "events.db"
    EventWriter(path).close()
    with EventReader(path) as reader, pytest.raises(LogError, match="no sessions"):
        reader.latest_session()


def test_event_filters_and_streaming(tmp_path: Path) -> None:
    path = tmp_path / "events.db"
    writer, sid = make_writer(path)
    _, other = writer, writer.start_session(name="o", upstream="u", pid=1, config={})
    for seq in range(1, 101):
        kind = "progress" if seq % 10 else "request_end"
        writer.emit(Event(kind, sid, 1000.0 + seq, seq * 1.0, seq, data={"i": seq}))
        writer.emit(Event(kind, other, 1000.0 + seq, seq * 1.0, seq, data={"i": -seq}))
    writer.close()
    with EventReader(path) as reader:
        stream = reader.events(sid)
        is_generator = inspect.isgenerator(stream)  # (asserted apart, so `stream` keeps its element type)
        assert is_generator
        assert [e.seq for e in stream] == list(range(1, 101))
        assert [e.seq for e in reader.events(sid, after_seq=95)] == [96, 97, 98, 99, 100]
        assert [e.seq for e in reader.events(sid, start_mono=10.0, end_mono=13.0)] == [10, 11, 12]
        assert [e.seq for e in reader.events(sid, kinds=["request_end"])] == list(range(10, 101, 10))
        assert [e.seq for e in reader.events(sid, kinds=[Kind.REQUEST_END], after_seq=50, limit=2)] == [60, 70]
        assert list(reader.events(sid, kinds=[])) == []
        assert all(e.data["i"] > 0 for e in reader.events(sid))
        assert reader.count_by_kind(sid) == {"progress": 90, "request_end": 10}
        assert reader.event_count(sid) == 100
        assert reader.max_seq(sid) == 100
        assert reader.event_count("nobody") == 0


def test_reader_sees_new_events_while_a_writer_is_live(tmp_path: Path) -> None:
    path = tmp_path / "events.db"
    writer, sid = make_writer(path)
    reader = EventReader(path)
    writer.emit(Event("progress", sid, 1.0, 0.0, 1))
    writer.flush(5)
    assert [e.seq for e in reader.events(sid)] == [1]
    writer.emit(Event("progress", sid, 2.0, 1.0, 2))
    writer.flush(5)
    assert [e.seq for e in reader.events(sid, after_seq=1)] == [2]
    reader.close()
    writer.close()


def test_queue_overflow_is_counted_and_logged_as_a_warning(tmp_path: Path) -> None:
    path = tmp_path / "events.db"
    writer, sid = make_writer(path, queue_max=10, flush_interval=0.01)
    blocker = sqlite3.connect(path, isolation_level=None)
    blocker.execute("BEGIN IMMEDIATE")  # the writer thread now waits for the lock: its queue fills up
    total = 200
    for seq in range(1, total + 1):
        writer.emit(Event("progress", sid, 1000.0 + seq, float(seq), seq, data={"progress": seq}))
    dropped = writer.dropped
    assert dropped >= total - 2 * 10
    blocker.execute("COMMIT")
    blocker.close()
    assert writer.flush(10)
    writer.close()
    assert writer.dropped == dropped
    with EventReader(path) as reader:
        events = list(reader.events(sid))
    warnings = [e for e in events if e.kind == "warning"]
    kept = [e.seq for e in events if e.kind == "progress"]
    assert len(warnings) == 1
    warning = warnings[0]
    assert warning.data["dropped"] == dropped
    assert f"{dropped} events dropped" in warning.data["message"]
    assert len(kept) == total - dropped
    lost = sorted(set(range(1, total + 1)) - set(kept))
    assert warning.seq == lost[0] == warning.data["first_seq"]
    assert warning.data["last_seq"] == lost[-1]
    assert writer.events_written == len(events)


def test_emit_after_close_is_counted_not_raised(tmp_path: Path) -> None:
    writer, sid = make_writer(tmp_path / "events.db")
    writer.close()
    writer.emit(Event("progress", sid, 1.0, 0.0, 1))
    assert writer.dropped == 1
    assert writer.flush(1)
    writer.close()  # idempotent


def test_emit_is_cheap_and_does_not_wait_for_the_disk(tmp_path: Path) -> None:
    path = tmp_path / "events.db"
    writer, sid = make_writer(path)
    blocker = sqlite3.connect(path, isolation_level=None)
    blocker.execute("BEGIN IMMEDIATE")  # nothing can be written meanwhile
    events = [Event("progress", sid, 1.0, 0.0, i) for i in range(1, 20_001)]
    started = time.perf_counter()
    for event in events:
        writer.emit(event)
    elapsed = time.perf_counter() - started
    blocker.execute("COMMIT")
    blocker.close()
    writer.close()
    assert elapsed < sooner_than(
        30, 10
    )  # a blocking emit would wait 30 s for the lock; the emit cost is measured by bench
    assert writer.events_written == 20_000


def test_prune_removes_old_sessions_and_their_events(tmp_path: Path) -> None:
    path = tmp_path / "events.db"
    day = 86400.0
    now = 1_700_000_000.0 + 30 * day
    gone = dead_pid()
    old = write_sample(path, t0=1_700_000_000.0, name="old")  # ended 30 days ago
    crashed = write_sample(path, t0=1_700_000_000.0 + 5 * day, name="crashed", end=False, pid=gone)  # never ended
    recent = write_sample(path, t0=now - day, name="recent")
    running = write_sample(path, t0=now - 3600, name="running", end=False, pid=gone)
    with EventReader(path) as reader:
        result = reader.prune(7 * day, now=now)
        assert [c.id for c in result.pruned] == [old.session_id, crashed.session_id] and result.removed == 2
        assert result.kept_running == ()
        remaining = {s.id for s in reader.sessions()}
        assert remaining == {recent.session_id, running.session_id}
        assert reader.event_count(old.session_id) == reader.event_count(crashed.session_id) == 0
        assert reader.event_count(recent.session_id) == len(recent.emitted)
    assert prune(path, 7 * day, now=now, vacuum=True).removed == 0
    with pytest.raises(LogError, match="non-negative"):
        prune(path, -1.0)
    conn = sqlite3.connect(path)
    assert conn.execute("PRAGMA integrity_check").fetchone() == ("ok",)
    # a folded call (`start_seq` set) is one row standing for two events
    events = conn.execute("SELECT count(*) + count(start_seq) FROM events").fetchone()[0]
    assert events == len(recent.emitted) + len(running.emitted)


def test_file_is_wal_with_busy_timeout_and_the_mcpwatch_marker(tmp_path: Path) -> None:
    path = tmp_path / "deep" / "dir" / "events.db"  # directories are created
    writer, _ = make_writer(path)
    assert writer._conn is not None  # open until closed
    assert writer._conn.execute("PRAGMA busy_timeout").fetchone()[0] >= 10_000
    writer.close()
    conn = sqlite3.connect(path)
    assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    assert conn.execute("PRAGMA user_version").fetchone()[0] >= 1
    assert conn.execute("PRAGMA application_id").fetchone()[0] == 0x4D435057
    names = {r[0] for r in conn.execute("SELECT name FROM sqlite_master")}
    assert {"sessions", "events", "requests", "tombstones", "invalidations"} <= names
    plan = " ".join(
        r[3] for r in conn.execute("EXPLAIN QUERY PLAN SELECT * FROM events WHERE session_id = 'x' AND seq > 5")
    )
    assert "USING INDEX" in plan
    config = json.loads(conn.execute("SELECT config FROM sessions").fetchone()[0])
    assert config == {"k": [1, 2]}


def test_a_failed_write_is_counted_and_reported_once_the_log_recovers(tmp_path: Path) -> None:
    path = tmp_path / "events.db"
    writer, sid = make_writer(path, flush_interval=0.01)
    other = sqlite3.connect(path, isolation_level=None)
    other.execute("ALTER TABLE events RENAME TO events_away")  # inserts now fail: no such table
    for seq in range(1, 6):
        writer.emit(Event("progress", sid, 1.0, float(seq), seq))
    assert writer.flush(5)
    assert writer.dropped == 5 and writer.events_written == 0
    assert "no such table" in (writer.last_error or "")
    other.execute("ALTER TABLE events_away RENAME TO events")
    other.close()
    writer.emit(Event("progress", sid, 1.0, 6.0, 6))
    assert writer.flush(5)
    writer.close()
    with EventReader(path) as reader:
        events = list(reader.events(sid))
    assert [(e.seq, e.kind) for e in events] == [(1, "warning"), (6, "progress")]
    assert events[0].data["dropped"] == 5 and "could not be written" in events[0].data["message"]


def test_events_are_read_page_by_page_without_losing_order_or_ties(tmp_path: Path, monkeypatch) -> None:
    from mcpwatch.store import reader as reader_module

    monkeypatch.setattr(reader_module, "EVENTS_PAGE", 7)
    path = tmp_path / "events.db"
    writer, sid = make_writer(path)
    for seq in range(1, 31):
        writer.emit(Event("progress", sid, 1.0, float(seq), seq, data={"copy": 0}))
        if seq % 5 == 0:  # a duplicated seq (an emitter bug) must neither loop nor vanish
            writer.emit(Event("progress", sid, 1.0, float(seq), seq, data={"copy": 1}))
    writer.flush(5)
    with EventReader(path) as reader:
        got = [(e.seq, e.data["copy"]) for e in reader.events(sid)]
        assert got == sorted(got) and len(got) == 36
        assert [e.seq for e in reader.events(sid, after_seq=25, limit=8)] == [26, 27, 28, 29, 30, 30]
        assert len(list(reader.events(sid, limit=15))) == 15
        stream = reader.events(sid, after_seq=20)
        assert next(stream).seq == 21  # the first page is read; the end is pages away
        writer.emit(Event("progress", sid, 1.0, 31.0, 31))  # written while the stream is being read
        writer.flush(5)
        assert [e.seq for e in stream][-3:] == [30, 30, 31]
    writer.close()


def test_prune_keeps_an_open_session_while_its_wrapper_lives(tmp_path: Path) -> None:
    """A live wrapper's quiet session is old by its last event, but deleting it would orphan what it writes next;
    a crashed wrapper's session (no end, pid gone) goes by its last event's time."""
    path = tmp_path / "events.db"
    day = 86400.0
    now = 1_700_000_000.0 + 30 * day
    live = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        quiet = write_sample(path, t0=1_700_000_000.0, name="quiet", end=False, pid=live.pid)
        crashed = write_sample(path, t0=1_700_000_000.0, name="crashed", end=False, pid=dead_pid())
        ended = write_sample(path, t0=1_700_000_000.0, name="ended", pid=live.pid)  # ended: its pid does not matter
        result = prune(path, 7 * day, now=now)
        assert {c.id for c in result.pruned} == {crashed.session_id, ended.session_id}
        assert [(c.id, c.pid) for c in result.kept_running] == [(quiet.session_id, live.pid)]
        with EventReader(path) as reader:
            assert [s.id for s in reader.sessions()] == [quiet.session_id]
            assert reader.event_count(quiet.session_id) == len(quiet.emitted)
    finally:
        live.kill()
        live.wait(30)
    result = prune(path, 7 * day, now=now)  # its wrapper has gone now: the session is pruned like any other
    assert [c.id for c in result.pruned] == [quiet.session_id] and result.kept_running == ()


def test_prune_dry_run_lists_the_same_sessions_and_changes_nothing(tmp_path: Path) -> None:
    path = tmp_path / "events.db"
    day = 86400.0
    now = 1_700_000_000.0 + 30 * day
    old = write_sample(path, t0=1_700_000_000.0, name="old")
    crashed = write_sample(path, t0=1_700_000_000.0 + day, name="crashed", end=False, pid=dead_pid())
    kept = write_sample(path, t0=1_700_000_000.0 + day, name="live", end=False)  # this process: alive
    write_sample(path, t0=now - day, name="recent")
    before = path.read_bytes()
    dry = prune(path, 7 * day, now=now, dry_run=True, vacuum=True)
    assert dry.dry_run and [c.id for c in dry.pruned] == [old.session_id, crashed.session_id]
    assert [c.id for c in dry.kept_running] == [kept.session_id]
    assert dry.pruned[0].ended_at == dry.pruned[0].last_at == old.t0 + 330.0
    assert dry.pruned[1].ended_at is None and dry.pruned[1].last_at == crashed.emitted[-1].ts
    assert [c.events for c in dry.pruned] == [len(old.emitted), len(crashed.emitted)]
    assert path.read_bytes() == before
    with EventReader(path) as reader:
        assert len(reader.sessions()) == 4
    real = prune(path, 7 * day, now=now)
    assert (real.pruned, real.kept_running) == (dry.pruned, dry.kept_running) and not real.dry_run


def test_pid_alive() -> None:
    assert pid_alive(os.getpid())
    assert not pid_alive(dead_pid())
    for pid in (None, 0, -1, 2**70):  # 0 and -1 would signal process groups; never treat them as a process
        assert not pid_alive(pid)


def test_pid_alive_counts_a_process_we_may_not_signal_as_alive(monkeypatch) -> None:
    def refuse(pid: int, sig: int) -> None:
        raise PermissionError(1, "Operation not permitted")

    monkeypatch.setattr(os, "kill", refuse)
    assert pid_alive(4242)


def test_sessions_know_running_from_open(tmp_path: Path) -> None:
    path = tmp_path / "events.db"
    running = write_sample(path, name="live", end=False)  # this process: alive
    crashed = write_sample(path, name="crashed", end=False, pid=dead_pid())
    ended = write_sample(path, name="ended")
    with EventReader(path) as reader:
        states = {s.id: (s.state, s.to_dict()["state"]) for s in reader.sessions()}
        assert reader.session(crashed.session_id).duration == crashed.emitted[-1].mono  # to its last event
    assert states == {
        running.session_id: ("running", "running"),
        crashed.session_id: ("crashed", "crashed"),
        ended.session_id: ("ended", "ended"),
    }


def test_events_by_wall_clock_range(tmp_path: Path) -> None:
    path = tmp_path / "events.db"
    sample = write_sample(path, t0=1_700_000_000.0)
    write_sample(path, t0=1_700_000_000.0, name="other")  # the same times in another session stay out
    start, end = 1_700_000_000.0 + 20.0, 1_700_000_000.0 + 160.0
    with EventReader(path) as reader:
        got = list(reader.events(sample.session_id, start_ts=start, end_ts=end))
        assert [e.seq for e in got] == [e.seq for e in sample.emitted if start <= e.ts < end]
        assert got and got[0].ts == start  # the start is inclusive, the end exclusive
        kinds = {e.kind for e in reader.events(sample.session_id, start_ts=start, end_ts=end, kinds=["request_end"])}
        assert kinds == {"request_end"}
        assert [e.seq for e in reader.events(sample.session_id, start_ts=1_700_000_000.0 + 315.0)] == [
            e.seq for e in sample.emitted if e.ts >= 1_700_000_000.0 + 315.0
        ]
