"""Real processes sharing one log file: concurrent writers, readers during writes, a writer killed mid-stream."""

from __future__ import annotations

import itertools
import json
import signal
import sqlite3
import subprocess
import sys
import textwrap
import time
from pathlib import Path

from mcpwatch.events import Event
from mcpwatch.store import EventReader, EventWriter, LogError

from checkout import REPO
from waiting import patience

CONCURRENT_WRITER = textwrap.dedent(
    """
    import json, os, sys, time
    from mcpwatch.events import Event
    from mcpwatch.store import EventWriter

    path, count, go, name = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4]
    print("ready", flush=True)
    while not os.path.exists(go):  # all writers open the (new) file at the same moment, however slow their start
        time.sleep(0.002)
    writer = EventWriter(path, flush_interval=0.02)
    sid = writer.start_session(name=name, upstream="stdio: test", pid=os.getpid(), config={})
    for seq in range(1, count + 1):
        data = {"progress": seq, "total": count, "message": name}
        writer.emit(Event("progress", sid, time.time(), seq * 1e-3, seq, str(seq // 10), "tool", None, data))
        if seq % 500 == 0:
            time.sleep(0.003)  # spread the writes over time, so the processes really interleave
        if seq == count // 2:  # a barrier: every first half is on disk before any second half, however loaded
            writer.flush()
            open(f"{go}.{name}", "w").close()
            while sum(os.path.exists(f"{go}.w{i}") for i in range(4)) < 4:
                time.sleep(0.002)
    writer.close()
    print(json.dumps({"sid": sid, "written": writer.events_written, "dropped": writer.dropped,
                      "error": writer.last_error}))
    """
)

ENDLESS_WRITER = textwrap.dedent(
    """
    import os, sys, time
    from mcpwatch.events import Event
    from mcpwatch.store import EventWriter

    writer = EventWriter(sys.argv[1], flush_interval=0.01)
    sid = writer.start_session(name="doomed", upstream="u", pid=os.getpid(), config={})
    print("session", sid, flush=True)
    seq = 0
    while True:
        for _ in range(2000):
            seq += 1
            writer.emit(Event("progress", sid, time.time(), seq * 1e-3, seq, "1", "t", None, {"progress": seq}))
        if seq % 10_000 == 0:
            writer.flush()
            print("flushed", seq, flush=True)
        time.sleep(0.001)
    """
)


def spawn(script: str, *args: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-c", script, *args],
        cwd=REPO,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def test_four_processes_write_one_file_at_once(tmp_path: Path) -> None:
    path = tmp_path / "events.db"
    per_process, processes = 20_000, 4
    go = tmp_path / "go"
    children = [spawn(CONCURRENT_WRITER, str(path), str(per_process), str(go), f"w{i}") for i in range(4)]
    for child in children:
        assert child.stdout is not None and child.stdout.readline() == "ready\n"
    go.touch()
    polls = 0
    while any(c.poll() is None for c in children):  # a reader works while they write (they are quick: poll often)
        if path.exists():
            try:
                with EventReader(path) as reader:
                    assert sum(s.events for s in reader.sessions()) <= per_process * processes
                polls += 1
            except LogError as exc:  # the file may not have its schema yet in the first instant
                assert "no such event log" in str(exc) or "empty" in str(exc), exc
        time.sleep(0.005)
    results = []
    for child in children:
        out, err = child.communicate(timeout=60)
        assert child.returncode == 0, err
        assert err == "", err
        results.append(json.loads(out))
    assert all(r["written"] == per_process and r["dropped"] == 0 and r["error"] is None for r in results), results
    assert polls > 0

    conn = sqlite3.connect(path)
    assert conn.execute("SELECT count(*) FROM events").fetchone()[0] == per_process * processes
    assert conn.execute("PRAGMA integrity_check").fetchone() == ("ok",)
    order = [r[0] for r in conn.execute("SELECT session_id FROM events ORDER BY id")]
    switches = sum(1 for a, b in itertools.pairwise(order) if a != b)
    assert switches > processes, "the writers did not overlap; the test proved nothing about concurrency"
    conn.close()
    with EventReader(path) as reader:
        sessions = reader.sessions()
        assert sorted(s.id for s in sessions) == sorted(r["sid"] for r in results)
        for session in sessions:
            seqs = [e.seq for e in reader.events(session.id)]
            assert seqs == list(range(1, per_process + 1))
            assert session.events == per_process


def test_writer_killed_mid_stream_leaves_a_sound_prefix(tmp_path: Path) -> None:
    path = tmp_path / "events.db"
    child = spawn(ENDLESS_WRITER, str(path))
    assert child.stdout is not None
    session_line = child.stdout.readline().split()
    assert session_line[:1] == ["session"], child.stderr.read() if child.stderr else ""
    sid = session_line[1]
    flushed = 0
    deadline = time.monotonic() + patience(30)
    while flushed < 30_000 and time.monotonic() < deadline:
        line = child.stdout.readline()
        if line.startswith("flushed"):
            flushed = int(line.split()[1])
    child.send_signal(signal.SIGKILL)
    child.wait(timeout=10)
    child.stdout.close()
    if child.stderr:
        child.stderr.close()
    assert flushed >= 30_000

    conn = sqlite3.connect(path)
    assert conn.execute("PRAGMA integrity_check").fetchone() == ("ok",)
    conn.close()
    with EventReader(path) as reader:
        seqs = [e.seq for e in reader.events(sid)]
    assert len(seqs) >= flushed  # everything flushed before the kill is there
    assert seqs == list(range(1, len(seqs) + 1))  # and what is missing is only the tail

    writer = EventWriter(path)  # the file stays usable for the next wrapper
    writer.emit(Event("warning", sid, time.time(), 0.0, len(seqs) + 1, data={"message": "after"}))
    writer.close()
    with EventReader(path) as reader:
        assert reader.max_seq(sid) == len(seqs) + 1
