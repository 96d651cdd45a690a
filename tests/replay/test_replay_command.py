"""`mcpwatch replay` refuses what it cannot replay with one line and exit code 2, before any screen appears."""

from __future__ import annotations

import sqlite3
import subprocess
from pathlib import Path

import pytest
from replay_helpers import write_log

from mcpwatch import paths
from mcpwatch.cli import main

from checkout import REPO, mcpwatch_cmd


def _bad_logs(tmp_path: Path) -> dict[str, tuple[Path, str]]:
    missing = tmp_path / "missing.db"
    text = tmp_path / "text.db"
    text.write_text("not a database at all\n" * 20)
    foreign = tmp_path / "foreign.db"
    conn = sqlite3.connect(foreign)
    conn.execute("CREATE TABLE invoices (id INTEGER PRIMARY KEY)")
    conn.commit()
    conn.close()
    newer = tmp_path / "newer.db"
    write_log(newer, 50)
    conn = sqlite3.connect(newer)
    conn.execute("PRAGMA user_version = 99")
    conn.commit()
    conn.close()
    corrupt = tmp_path / "corrupt.db"
    write_log(corrupt, 50)
    with corrupt.open("r+b") as handle:
        handle.seek(100)
        handle.write(b"\xff\x13" * 1500)
    empty = tmp_path / "empty.db"
    empty.write_bytes(b"")
    return {
        "missing": (missing, "no such event log"),
        "text": (text, "not an SQLite database"),
        "foreign": (foreign, "not an mcpwatch event log"),
        "newer": (newer, "newer than this mcpwatch understands"),
        "corrupt": (corrupt, "corrupt"),
        "empty": (empty, "an empty file"),
    }


def _one_line(capsys: pytest.CaptureFixture[str], code: int) -> str:
    captured = capsys.readouterr()
    lines = captured.err.strip().splitlines()
    assert code == 2 and len(lines) == 1 and captured.out == "", captured
    assert lines[0].startswith("mcpwatch: ")
    return lines[0]


def test_bad_files_give_one_line_and_exit_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    for kind, (path, fragment) in _bad_logs(tmp_path).items():
        line = _one_line(capsys, main(["replay", str(path)]))
        assert fragment in line and str(path) in line, (kind, line)


def test_unknown_ambiguous_and_missing_sessions(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "events.db"
    first = write_log(path, 40)
    second = write_log(path, 40, seed=6)
    assert first[:9] == second[:9]  # both start with the same day
    line = _one_line(capsys, main(["replay", str(path), "--session", "no-such-session"]))
    assert "no session 'no-such-session' (see `mcpwatch sessions`)" in line
    line = _one_line(capsys, main(["replay", str(path), "--session", first[:9]]))
    assert "is ambiguous" in line and first in line and second in line
    conn = sqlite3.connect(path)
    conn.execute("DELETE FROM events")
    conn.execute("DELETE FROM sessions")
    conn.commit()
    conn.close()
    assert "has no sessions yet" in _one_line(capsys, main(["replay", str(path)]))
    line = _one_line(capsys, main(["replay"]))  # the default log, which this test's state dir does not have
    assert str(paths.default_log_path()) in line and "no such event log" in line


def test_bad_speed_time_and_theme(shared_log: tuple[Path, str], capsys: pytest.CaptureFixture[str]) -> None:
    db = str(shared_log[0])
    assert "--speed: speed must be a number from 0.01" in _one_line(capsys, main(["replay", db, "--speed", "0"]))
    with pytest.raises(SystemExit) as exited:  # argparse's own check, one line too
        main(["replay", db, "--speed", "fast"])
    err = capsys.readouterr().err.strip().splitlines()
    assert exited.value.code == 2 and len(err) == 1 and "--speed: invalid float value: 'fast'" in err[0]
    line = _one_line(capsys, main(["replay", db, "--at", "9:00:00"]))
    assert line.startswith("mcpwatch: --at: '9:00:00' is past the end: the recording lasts")
    assert "--at: not a time: 'later'" in _one_line(capsys, main(["replay", db, "--at", "later"]))
    assert "unknown theme 'neon'" in _one_line(capsys, main(["replay", db, "--theme", "neon"]))


@pytest.mark.slow
def test_a_bad_file_in_a_real_process(tmp_path: Path) -> None:
    bad = _bad_logs(tmp_path)
    for args in (["replay", str(bad["corrupt"][0])], ["replay", str(bad["foreign"][0]), "--session", "x"]):
        result = subprocess.run(mcpwatch_cmd(*args), capture_output=True, text=True, cwd=REPO, timeout=60)
        lines = result.stderr.strip().splitlines()
        assert result.returncode == 2 and len(lines) == 1 and "Traceback" not in result.stderr, result.stderr
        assert lines[0].startswith("mcpwatch: ") and str(tmp_path) in lines[0]
