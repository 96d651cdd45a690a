"""`mcpwatch sessions | report | export | prune` on logs built with the real writer, run as the user runs them."""

from __future__ import annotations

import csv
import io
import json
import sqlite3
import statistics
import subprocess
import time
from pathlib import Path

import pytest
from clirun import run_cli
from test_store_sample import TIERS, SampleSession, write_sample

from mcpwatch import paths
from mcpwatch.cli import main
from mcpwatch.console.headless.model import ConsoleModel
from mcpwatch.logview.export import COLUMNS
from mcpwatch.replay.recording import Recording
from mcpwatch.store import EventReader, LogError
from mcpwatch.store.db import translate_errors

DAY = 86400.0


def run(*args: str) -> subprocess.CompletedProcess[str]:
    return run_cli(*args)


@pytest.fixture
def log() -> tuple[Path, SampleSession, SampleSession]:
    """The default log (in the test's state dir) with an old session and a recent one."""
    path = paths.default_log_path()
    old = write_sample(path, t0=time.time() - 30 * DAY, name="old-council")
    recent = write_sample(path, t0=time.time() - 400, name="recent-council")
    return path, old, recent


def test_sessions_table(log) -> None:
    path, old, recent = log
    result = run("sessions")
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    for sample, name in ((old, "old-council"), (recent, "recent-council")):
        (row,) = [line for line in lines if sample.session_id in line]
        assert name in row and "stdio: mcpwatch council" in row
        requests = sum(e.kind == "request_start" for e in sample.emitted)
        timeouts = sum(e.kind == "request_end" and e.data["outcome"] == "deadline" for e in sample.emitted)
        late = sum(e.kind == "tombstone_hit" for e in sample.emitted)
        cells = [cell.strip() for cell in row.split("│")]
        assert cells[-4:-1] == [str(requests), str(timeouts), str(late)]
        assert "5m 30s" in row  # 330 s from start to end
    assert str(path) in result.stdout


def test_sessions_json_and_explicit_path(log, tmp_path: Path) -> None:
    path, old, recent = log
    moved = tmp_path / "copy.db"
    src = sqlite3.connect(path)
    src.execute("VACUUM INTO ?", (str(moved),))
    src.close()
    result = run("sessions", str(moved), "--json")
    assert result.returncode == 0, result.stderr
    listed = json.loads(result.stdout)
    assert [s["id"] for s in listed] == [old.session_id, recent.session_id]
    assert listed[0]["events"] == len(old.emitted)


def test_sessions_on_an_empty_log(tmp_path: Path, capsys) -> None:
    from mcpwatch.store import EventWriter

    path = tmp_path / "empty.db"
    EventWriter(path).close()
    assert main(["sessions", str(path)]) == 0
    assert "no sessions" in capsys.readouterr().out


def test_report_json_figures(log) -> None:
    _, _, recent = log
    result = run("report", "--json")  # the latest session by default
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout)
    assert report["session"]["id"] == recent.session_id
    tools = {t["tool"]: t for t in report["tools"]}
    council = tools["consult_council"]
    durations = recent.durations["consult_council"]
    outcomes = recent.outcomes["consult_council"]
    starts = [e for e in recent.emitted if e.kind == "request_start" and e.tool == "consult_council"]
    assert council["calls"] == len(starts)
    assert council["ok"] == outcomes.count("ok")
    assert council["deadlines"] == outcomes.count("deadline")
    assert council["cancelled"] == outcomes.count("cancelled")
    assert council["unfinished"] == len(starts) - len(outcomes)
    assert council["p50_s"] == statistics.median_low(durations)
    assert council["max_s"] == max(durations)
    assert council["late_drops"] == sum(e.kind == "tombstone_hit" for e in recent.emitted)
    assert tools["tasks.update"]["errors"] == 1
    models = {m["model"]: m for m in report["models"]}
    assert set(models) == set(recent.model_latency)
    assert models["gpt"]["calls"] == len(recent.model_latency["gpt"])
    assert (models["gpt"]["ok"], models["gpt"]["rate_limited"]) == (1, 1)
    assert models["gemini"]["timeouts"] == 1
    assert models["claude"]["max_ms"] == max(recent.model_latency["claude"])
    budget = report["deadline"]["final"]["budget_s"]
    assert budget == 100.0 and report["deadline"]["initial"]["budget_s"] == 110.0
    assert report["tiers"]["budget_s"] == budget
    assert report["tiers"]["not_fitting"] == [t for t, spec in TIERS.items() if spec["total_s"] > budget]
    (change,) = report["config_changes"]
    assert (change["key"], change["old"], change["new"], change["source"]) == ("margin_s", 10.0, 20.0, "operator")
    assert report["requests"]["by_method"] == {"resources/read": 1, "tools/call": 7}
    assert report["requests"]["unknown_dropped"] == 1


def test_report_text_for_a_chosen_session(log) -> None:
    _, old, _ = log
    result = run("report", "--session", old.session_id[:21])
    assert result.returncode == 0, result.stderr
    out = result.stdout
    assert old.session_id in out
    assert "consult_council" in out and "tasks.update" in out
    assert "tiers that do not fit the budget: high, reasoning" in out
    assert "margin_s" in out and "operator" in out
    assert "gemini" in out


def test_export_jsonl_to_stdout(log) -> None:
    _, old, _ = log
    result = run("export", "--session", old.session_id, "--format", "jsonl")
    assert result.returncode == 0, result.stderr
    records = [json.loads(line) for line in result.stdout.splitlines()]
    assert len(records) == len(old.emitted)
    assert [r["seq"] for r in records] == [e.seq for e in old.emitted]
    assert all(r["mcp.session.id"] == old.session_id for r in records)
    for record, event in zip(records, old.emitted, strict=True):
        assert (record["kind"], record["data"], record["jsonrpc.request.id"]) == (
            event.kind,
            event.data,
            event.request_id,
        )
    ends = {r["jsonrpc.request.id"]: r for r in records if r["kind"] == "request_end"}
    assert ends["3"]["error.type"] == "deadline" and ends["1"]["error.type"] is None
    starts = [r for r in records if r["kind"] == "request_start"]
    assert {r["mcp.method.name"] for r in starts} == {"tools/call", "resources/read"}
    (late,) = [r for r in records if r["kind"] == "late_result"]
    assert late["jsonrpc.request.id"] == "3" and late["error.type"] is None  # it finished ok, 10 s after its cut
    assert late["data"]["result"]["content"][0]["text"] == "the council's answer"


def test_export_csv_to_a_file(log, tmp_path: Path) -> None:
    _, _, recent = log
    out = tmp_path / "out.csv"
    result = run("export", "--session", recent.session_id, "--format", "csv", "-o", str(out))
    assert result.returncode == 0, result.stderr
    assert result.stdout == "" and str(out) in result.stderr
    rows = list(csv.reader(io.StringIO(out.read_text(encoding="utf-8"))))
    assert tuple(rows[0]) == COLUMNS
    assert len(rows) - 1 == len(recent.emitted)
    data_col = COLUMNS.index("data")
    assert [json.loads(r[data_col]) for r in rows[1:]] == [e.data for e in recent.emitted]


def test_export_to_an_unwritable_place(log, tmp_path: Path, capsys) -> None:
    code = main(["export", "--format", "csv", "-o", str(tmp_path / "no" / "such" / "dir.csv")])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and len(err) == 1 and "cannot write" in err[0]


def test_prune_old_sessions(log) -> None:
    path, old, recent = log
    result = run("prune", "--older-than", "7d")
    assert result.returncode == 0, result.stderr
    assert "pruned 1 session" in result.stdout
    with EventReader(path) as reader:
        assert [s.id for s in reader.sessions()] == [recent.session_id]
        assert reader.event_count(old.session_id) == 0
    again = run("prune", str(path), "--older-than", "1h", "--vacuum")
    assert again.returncode == 0 and "pruned 0 sessions" in again.stdout  # the recent one ended < 1 h ago


@pytest.mark.parametrize("age", ["7x", "-3d", "d", "", "1e999d"])
def test_prune_refuses_a_bad_age(log, age: str, capsys) -> None:
    code = main(["prune", f"--older-than={age}"])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and len(err) == 1 and "--older-than" in err[0], err


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
    write_sample(newer)
    conn = sqlite3.connect(newer)
    conn.execute("PRAGMA user_version = 99")
    conn.commit()
    conn.close()
    corrupt = tmp_path / "corrupt.db"
    write_sample(corrupt)
    with corrupt.open("r+b") as handle:
        handle.seek(100)
        handle.write(b"\xff\x13" * 1500)
    return {
        "missing": (missing, "no such event log"),
        "text": (text, "not an SQLite database"),
        "foreign": (foreign, "not an mcpwatch event log"),
        "newer": (newer, "newer"),
        "corrupt": (corrupt, "corrupt"),
    }


COMMANDS = {
    "sessions": [],
    "report": [],
    "export": ["--format", "csv"],
    "prune": ["--older-than", "1d"],
    "whatif": ["--budget", "30"],
}


def test_bad_files_give_one_line_and_exit_2_from_every_command(tmp_path: Path, capsys) -> None:
    for kind, (path, fragment) in _bad_logs(tmp_path).items():
        for command, extra in COMMANDS.items():
            code = main([command, str(path), *extra])
            captured = capsys.readouterr()
            lines = captured.err.strip().splitlines()
            assert code == 2, (kind, command, captured)
            assert len(lines) == 1 and fragment in lines[0] and str(path) in lines[0], (kind, command, lines)
            assert captured.out == "", (kind, command)


@pytest.mark.slow
def test_bad_file_and_unknown_session_in_a_real_process(log, tmp_path: Path) -> None:
    bad = _bad_logs(tmp_path)
    for args in (
        ["report", str(bad["foreign"][0])],
        ["sessions", str(bad["corrupt"][0])],
        ["export", "--session", "no-such-session"],
        ["report", "--session", "2"],  # a prefix of both sessions' ids: ambiguous
    ):
        result = run(*args)
        lines = result.stderr.strip().splitlines()
        assert result.returncode == 2, (args, result.stderr)
        assert len(lines) == 1 and "Traceback" not in result.stderr, (args, result.stderr)
        assert lines[0].startswith("mcpwatch: ")


def test_missing_default_log(capsys) -> None:
    code = main(["sessions"])
    err = capsys.readouterr().err.strip()
    assert code == 2 and str(paths.default_log_path()) in err and "no such event log" in err


@pytest.mark.slow
@pytest.mark.bench
def test_bench_log_quick_runs() -> None:
    result = run("bench", "log", "--quick")
    assert result.returncode == 0, result.stderr
    figures = json.loads(result.stdout)
    assert figures["benchmark"] == "log"
    assert figures["on_disk"] == figures["events"] == figures["written"] > 0
    assert figures["dropped"] == 0
    assert figures["events_per_s"] > 0 and figures["emit_us_cpu"] > 0


def test_names_that_look_like_markup_and_an_empty_session(tmp_path: Path, capsys) -> None:
    from mcpwatch.events import Event
    from mcpwatch.store import EventWriter

    path = tmp_path / "odd.db"
    writer = EventWriter(path)
    sid = writer.start_session(name="srv[/bold]", upstream="stdio: [red]x", pid=1, config={})
    writer.emit(Event("request_start", sid, 1.0, 0.0, 1, "1", "tool[/b]", None, {"method": "tools/call"}))
    writer.emit(Event("request_end", sid, 2.0, 1.0, 2, "1", None, None, {"outcome": "ok", "duration_s": 1.0}))
    empty = writer.start_session(name="idle", upstream="u", pid=2, config={})
    writer.close()
    assert main(["sessions", str(path)]) == 0
    out = capsys.readouterr().out
    assert "srv[/bold]" in out and "stdio: [red]x" in out
    assert main(["report", str(path), "--session", sid]) == 0
    assert "tool[/b]" in capsys.readouterr().out
    assert main(["report", str(path), "--session", empty]) == 0
    assert "no tool calls" in capsys.readouterr().out
    assert main(["export", str(path), "--session", empty]) == 0
    assert capsys.readouterr().out == ""


def test_a_damaged_event_keeps_its_text_and_every_view_still_opens(tmp_path: Path, capsys) -> None:
    path = tmp_path / "damaged.db"
    sample = write_sample(path)
    conn = sqlite3.connect(path)
    damaged, folded = conn.execute(
        "SELECT id, start_seq IS NOT NULL FROM events WHERE kind = 'request_end' ORDER BY seq LIMIT 1"
    ).fetchone()
    conn.execute('UPDATE events SET data = \'{"outcome": "ok", \' WHERE id = ?', (damaged,))
    conn.commit()
    conn.close()

    assert main(["sessions", str(path)]) == 0
    assert sample.session_id in capsys.readouterr().out
    assert main(["report", str(path), "--json"]) == 0
    council = {t["tool"]: t for t in json.loads(capsys.readouterr().out)["tools"]}["consult_council"]
    assert council["calls"] == sum(e.kind == "request_start" and e.tool == "consult_council" for e in sample.emitted)
    assert main(["export", str(path), "--session", sample.session_id, "--format", "jsonl"]) == 0
    records = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert len(records) == len(sample.emitted)  # nothing lost
    kept = [r for r in records if "unreadable_data" in r["data"]]
    # the row's events keep its text: a call folded into one row (its start kept in the end's data) both of them
    assert [r["data"]["unreadable_data"] for r in kept] == ['{"outcome": "ok", '] * (2 if folded else 1)

    model = ConsoleModel()
    with EventReader(path) as reader:
        assert model.apply_many(reader.events(sample.session_id)) == len(sample.emitted)
    view = model.view(model.last_mono)
    ends = sum(e.kind == "request_end" for e in sample.emitted)
    assert view.has_session and len(view.requests) >= ends - 1  # the console shows the rest of the session
    recording = Recording(path, sample.session_id)
    try:
        assert recording.markers()  # the replay's timeline skips the damaged row's data, not the session
    finally:
        recording.close()


def test_sql_over_a_damaged_row_names_the_query_that_finds_it(tmp_path: Path, capsys) -> None:
    path = tmp_path / "damaged.db"
    write_sample(path)
    conn = sqlite3.connect(path)
    conn.execute("UPDATE events SET data = '{' WHERE kind = 'request_end'")
    conn.commit()
    conn.close()
    with pytest.raises(LogError, match=r"not valid JSON .*json_valid\(data\)"), translate_errors(path):
        conn = sqlite3.connect(path)
        try:
            conn.execute("SELECT * FROM requests").fetchall()  # the SQL view users query with sqlite-utils
        finally:
            conn.close()
