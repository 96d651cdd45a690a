"""The log commands' pruning and output, run as the user runs them: real SQLite files and, where a live writer or
a closed pipe matters, real processes. prune's age units and --dry-run, a live wrapper's session kept, open and
running sessions, a closed stdout, one duration format in `report`, the sessions table at 80 columns."""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
from clirun import run_cli
from rich.console import Console
from test_store_sample import dead_pid, write_sample

from mcpwatch import paths
from mcpwatch.commands.sessions import render_sessions
from mcpwatch.logview.units import format_time
from mcpwatch.store import EventReader

from checkout import REPO, mcpwatch_cmd

DAY = 86400.0

# A wrapper stand-in: writes an old-looking open session through the real EventWriter, says its id, then waits
# for a line on stdin before writing more events and ending the session, as a quiet live wrapper would.
LIVE_WRITER = """
import os, sys, time
from mcpwatch.clock import ManualClock
from mcpwatch.events import Event
from mcpwatch.store import EventWriter

clock = ManualClock(wall=time.time() - 30 * 86400)
writer = EventWriter(sys.argv[1], clock=clock)
sid = writer.start_session(name="live", upstream="stdio: x", pid=os.getpid(), config={})
for seq in range(1, 4):
    clock.advance(1.0)
    writer.emit(Event("progress", sid, clock.time(), float(seq), seq))
assert writer.flush(10)
print(sid, flush=True)
sys.stdin.readline()
for seq in range(4, 7):
    clock.advance(1.0)
    writer.emit(Event("progress", sid, clock.time(), float(seq), seq))
writer.end_session(sid, "host closed")
writer.close()
print("done", flush=True)
"""


def run(*args: str) -> subprocess.CompletedProcess[str]:
    return run_cli(*args)


@pytest.fixture
def log() -> Path:
    """The default log with a session that ended 30 days ago and one that ended minutes ago."""
    path = paths.default_log_path()
    write_sample(path, t0=time.time() - 30 * DAY, name="old-council")
    write_sample(path, t0=time.time() - 400, name="recent-council")
    return path


def session_ids(path: Path) -> list[str]:
    with EventReader(path) as reader:
        return [s.id for s in reader.sessions()]


@pytest.mark.parametrize("age", ["7", "90", "0.5"])
def test_prune_refuses_a_bare_number_and_deletes_nothing(log: Path, age: str) -> None:
    """`--older-than=7` was read as 7 seconds and pruned every session."""
    before = session_ids(log)
    result = run("prune", f"--older-than={age}")
    lines = result.stderr.strip().splitlines()
    assert result.returncode == 2 and len(lines) == 1, result.stderr
    assert "--older-than" in lines[0] and f"{age}d" in lines[0] and "Traceback" not in result.stderr
    assert result.stdout == ""
    assert session_ids(log) == before


def test_prune_accepts_weeks(log: Path) -> None:
    result = run("prune", "--older-than", "2w")
    assert result.returncode == 0, result.stderr
    assert "pruned 1 session older than 2w" in result.stdout
    assert len(session_ids(log)) == 1


def test_prune_dry_run_lists_and_keeps_everything(log: Path) -> None:
    with EventReader(log) as reader:
        old = reader.sessions()[0]
    before = session_ids(log)
    result = run("prune", "--older-than", "7d", "--dry-run")
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert lines[0].startswith("would prune 1 session older than 7d from ")
    (listed,) = lines[1:]
    assert old.id in listed and "old-council" in listed and f"{old.events} events" in listed and "ended" in listed
    assert session_ids(log) == before
    assert "pruned 1 session" in run("prune", "--older-than", "7d").stdout  # and the real run agrees


@pytest.mark.slow
def test_prune_never_deletes_a_live_writers_open_session(tmp_path: Path) -> None:
    """The wrapper keeps writing to its session after a prune; none of its events may end up orphaned."""
    path = tmp_path / "events.db"
    crashed = write_sample(path, t0=time.time() - 30 * DAY, name="crashed", end=False, pid=dead_pid())
    child = subprocess.Popen(
        [sys.executable, "-c", LIVE_WRITER, str(path)],
        cwd=REPO,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert child.stdout is not None and child.stdin is not None
        live_id = child.stdout.readline().strip()
        assert live_id, "the writer did not start"

        listed = run("sessions", str(path))
        (row,) = [line for line in listed.stdout.splitlines() if live_id in line]
        assert "running" in row
        (row,) = [line for line in listed.stdout.splitlines() if line.startswith("│") and crashed.session_id in line]
        assert "5m 21s (crashed)" in row  # its start to its last event (321 s)
        (note,) = [line for line in listed.stdout.splitlines() if line.startswith(f"{crashed.session_id}: crashed")]
        assert note.endswith(format_time(crashed.emitted[-1].ts))

        result = run("prune", str(path), "--older-than", "7d")
        assert result.returncode == 0, result.stderr
        assert "pruned 1 session older than 7d" in result.stdout
        assert f"kept 1 open session older than 7d: its wrapper is still running (pid {child.pid})" in result.stdout
        assert session_ids(path) == [live_id]

        child.stdin.write("go on\n")
        child.stdin.flush()
        assert child.stdout.readline().strip() == "done"
        assert child.wait(30) == 0
    finally:
        if child.poll() is None:
            child.kill()
            child.wait(30)
    with EventReader(path) as reader:
        (session,) = reader.sessions()
        assert session.id == live_id and session.state == "ended" and session.end_reason == "host closed"
        assert [e.seq for e in reader.events(live_id)] == [1, 2, 3, 4, 5, 6]
    import sqlite3

    conn = sqlite3.connect(path)
    try:
        orphans = conn.execute("SELECT count(*) FROM events WHERE session_id NOT IN (SELECT id FROM sessions)")
        assert orphans.fetchone()[0] == 0
    finally:
        conn.close()


@pytest.mark.parametrize(
    "args",
    [["sessions"], ["sessions", "--json"], ["report"], ["report", "--json"], ["export"], ["export", "--format", "csv"]],
)
def test_a_closed_stdout_ends_quietly(log: Path, args: list[str]) -> None:
    """`mcpwatch report | head`: the reader went away. Exit 0, nothing on stderr, no traceback.

    The pipe's read end is closed before the command starts, so its first write fails however little it writes.
    """
    read_end, write_end = os.pipe()
    os.close(read_end)
    try:
        child = subprocess.Popen(mcpwatch_cmd(*args), cwd=REPO, stdout=write_end, stderr=subprocess.PIPE, text=True)
    finally:
        os.close(write_end)
    _, err = child.communicate(timeout=60)
    assert (child.returncode, err) == (0, ""), err


def test_a_broken_pipe_that_is_not_stdout_is_still_an_error(monkeypatch, capsys) -> None:
    """Only a closed stdout is quiet: a BrokenPipeError from another pipe (an upstream's) is a real failure."""
    from mcpwatch.cli import main
    from mcpwatch.commands import sessions

    def broken(args: object) -> int:
        raise BrokenPipeError(32, "Broken pipe")

    monkeypatch.setattr(sessions, "run", broken)
    with pytest.raises(BrokenPipeError):
        main(["sessions"])


def test_report_shows_every_duration_in_one_format(tmp_path: Path) -> None:
    """Models' latencies are logged in ms and tools' durations in s; both tables show them alike."""
    path = tmp_path / "events.db"
    sample = write_sample(path)
    result = run("report", str(path))
    assert result.returncode == 0, result.stderr
    rows: dict[str, str] = {}
    for line in result.stdout.splitlines():
        if line.count("│") > 3:  # the first table naming it: the tools table before "finished late"
            rows.setdefault(line.split("│")[1].strip(), line)
    assert "6.00s" in rows["claude"] and "6000ms" not in result.stdout  # 6000 ms
    assert "45.0s" in rows["gemini"]  # 45000 ms
    assert "100ms" in rows["gpt"] and "4.00s" in rows["gpt"]  # 100 ms and 4000 ms
    assert "12.0s" in rows["consult_council"] and "500ms" in rows["tasks.update"]  # 12 s and 0.5 s
    report = json.loads(run("report", str(path), "--json").stdout)
    council = {t["tool"]: t for t in report["tools"]}["consult_council"]
    assert council["max_s"] == max(sample.durations["consult_council"])  # seconds, numeric
    claude = {m["model"]: m for m in report["models"]}["claude"]
    assert (claude["max_ms"], claude["max_s"]) == (6000.0, 6.0)


def test_report_names_a_sessions_state_as_sessions_does(tmp_path: Path) -> None:
    path = tmp_path / "events.db"
    crashed = write_sample(path, name="crashed", end=False, pid=dead_pid())
    running = write_sample(path, name="live", end=False)  # this process: alive
    ended = write_sample(path, name="ended")
    out = {s.session_id: run("report", str(path), "--session", s.session_id).stdout for s in (crashed, running, ended)}
    assert ", 5m 21s (crashed), " in out[crashed.session_id]
    assert ", running, " in out[running.session_id]
    assert ", 5m 30s (ended: host closed), " in out[ended.session_id]


def render(path: Path, width: int) -> list[str]:
    with EventReader(path) as reader:
        sessions = reader.sessions()
    console = Console(width=width, file=io.StringIO(), record=True, color_system=None)
    render_sessions(console, sessions, path)
    return console.export_text().splitlines()


def test_sessions_table_is_readable_at_80_columns(tmp_path: Path) -> None:
    """At 80 columns the headers were cut to `n… u… d…` and a long upstream command wrapped over 10 lines."""
    path = tmp_path / "events.db"
    upstream = "/work/main/.venv/bin/python3 -m mcpwatch council --scenario default --time-scale 0.4 --seed 7"
    samples = [
        write_sample(path, t0=1_700_000_000.0, name="demo", upstream=upstream),
        write_sample(
            path, t0=1_700_001_000.0, name="a-long-wrapper-name", end=False, pid=dead_pid(), upstream=upstream
        ),
        write_sample(path, t0=1_700_002_000.0, name="live", end=False),
    ]
    lines = render(path, 80)
    assert all(len(line) <= 80 for line in lines), lines
    header = next(line for line in lines if line.startswith("┃"))
    assert "…" not in header and {"id", "duration", "reqs", "t/o", "late"} <= set(header.replace("┃", " ").split())
    body = [line for line in lines if line.startswith("│")]
    assert len(body) == len(samples), lines  # one line per session: nothing wraps
    for sample, line in zip(samples, body, strict=True):
        assert sample.session_id in line  # whole: it is what --session takes
        assert line.split("│")[-4].strip() == str(sum(e.kind == "request_start" for e in sample.emitted))
    assert "5m 21s (crashed)" in body[1] and "running" in body[2]
    assert any("…" in line for line in body)  # the long upstream command is cut, not wrapped

    wide = render(path, 250)
    wide_body = [line for line in wide if line.startswith("│")]
    assert len(wide_body) == 3 and all("…" not in line for line in wide_body)
    assert upstream in wide_body[0] and upstream in wide_body[1] and "stdio: mcpwatch council" in wide_body[2]
    assert "late drops" in next(line for line in wide if line.startswith("┃"))
