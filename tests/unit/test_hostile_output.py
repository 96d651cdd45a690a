"""Names from the wire and the log never reach the operator's terminal raw: every log command, fed a log whose
names hold escape sequences (OSC window title, CSI clear screen, C1 CSI, BEL, CR, bidi override), prints them as
visible escapes, on stdout and on its error lines; CSV cells never start a spreadsheet formula."""

from __future__ import annotations

import csv
import io
import json
import re
import subprocess
import sys
import time
from pathlib import Path

import pytest
from test_store_sample import SampleSession, deadline_block

from mcpwatch.clock import ManualClock
from mcpwatch.events import Kind, Outcome
from mcpwatch.store import EventWriter

from checkout import REPO, mcpwatch_cmd

# OSC (retitle the window), CSI (clear the screen), C1 CSI (0x9b), BEL, a lone CR, a bidi override, DEL
HOSTILE = "ev\x1b]0;pwned\x07il\x1b[2J\x9b31m\r\u202eX\x7f"
FORMULA = '=HYPERLINK("http://x","y")'
# raw bytes a terminal would act on: C0 but tab and LF (CR only before LF), DEL, C1 and bidi controls in UTF-8
RAW_CONTROL = re.compile(
    rb"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]|\r(?!\n)|\xc2[\x80-\x9f]|\xe2\x80[\xa8-\xae]|\xe2\x81[\xa6-\xa9]"
)


def run(*args: str, cwd: Path = REPO) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run(mcpwatch_cmd(*args), capture_output=True, cwd=cwd, timeout=60)


def write_hostile_log(path: Path) -> str:
    """One session whose every name a peer chooses (wrapper, upstream, host, tool, model, warning) is hostile."""
    t0 = time.time() - 3 * 86400
    writer = EventWriter(path, clock=ManualClock(wall=t0))
    sid = writer.start_session(name=HOSTILE, upstream=HOSTILE, pid=1, config={})
    s = SampleSession(writer, sid, t0)
    s.emit(Kind.SESSION_START, 0.0, name=HOSTILE, pid=1, version="0", front="stdio",
           upstream={"kind": "stdio", "target": HOSTILE}, config={}, deadline=deadline_block(10.0),
           state_sync={"policies": 0, "overlaps": []})  # fmt: skip
    s.emit(Kind.HOST_INFO, 0.1, name=HOSTILE, version=HOSTILE, protocol_version="2025-06-18")
    for n, tool in enumerate((HOSTILE, FORMULA, "-1+1", "@SUM(A1)")):
        s.call(f"{HOSTILE}{n}", tool, 1.0 + n, 2.0, Outcome.OK, up_id=n, progress=1)
    s.call("9", HOSTILE, 10.0, 110.0, Outcome.DEADLINE, up_id=9)
    s.model("9", HOSTILE, 11.0, "ok", 4000.0)
    s.emit(Kind.TOMBSTONE_ADD, 120.0, request_id="9", tool=HOSTILE, up_id=9, ttl_s=155.0, reason="deadline",
           expires_mono=275.0)  # fmt: skip
    s.emit(Kind.LATE_RESULT, 130.0, request_id="9", tool=HOSTILE, up_id=9, reason="deadline", cut_after_s=110.0,
           delay_s=10.0, duration_s=120.0, outcome="ok", size_bytes=10, result={"content": [{"text": HOSTILE}]},
           reuse_ttl_s=None)  # fmt: skip
    s.emit(Kind.WARNING, 140.0, message=HOSTILE)
    s.emit(Kind.SESSION_END, 150.0, reason=HOSTILE, counters={"requests": 5})
    writer.end_session(sid, HOSTILE)
    writer.close()
    return sid


@pytest.fixture(scope="module")
def hostile_log(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("hostile") / "events.db"
    write_hostile_log(path)
    return path


def assert_no_raw_control(result: subprocess.CompletedProcess[bytes], what: str) -> None:
    for stream, data in (("stdout", result.stdout), ("stderr", result.stderr)):
        found = RAW_CONTROL.search(data)
        assert found is None, f"{what}: raw {found.group()!r} on {stream}: {data[:400]!r}"


COMMANDS = [
    ("sessions",),
    ("sessions", "--json"),
    ("report",),
    ("report", "--json"),
    ("whatif", "--margin", "5"),
    ("whatif", "--budget", "200", "--json"),
    ("export", "--format", "jsonl"),
    ("export", "--format", "csv"),
    ("prune", "--older-than", "1d", "--dry-run"),
    ("report", "--session", HOSTILE),  # an error line naming what the user typed
    ("replay", "--session", HOSTILE),
    ("export", "--session", HOSTILE),
]


@pytest.mark.parametrize("args", COMMANDS, ids=lambda a: " ".join(a).encode("unicode_escape").decode())
def test_no_command_prints_a_raw_control_character(hostile_log: Path, args: tuple[str, ...]) -> None:
    result = run(args[0], str(hostile_log), *args[1:])
    assert_no_raw_control(result, " ".join(args))
    shown = result.stdout + result.stderr
    assert b"\\x1b" in shown or b"\\u001b" in shown  # the name is there, visibly, not dropped
    if args[0] in ("sessions", "report", "whatif", "export") and "--session" not in args:
        assert result.returncode == 0, result.stderr
    if "--json" in args or "jsonl" in args:
        lines = result.stdout.splitlines() if "jsonl" in args else [result.stdout]
        decoded = [json.loads(line) for line in lines]  # still valid JSON, and the names decode to what was logged
        assert HOSTILE in set(strings(decoded))


def strings(value: object):
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for item in value.values():
            yield from strings(item)
    elif isinstance(value, list):
        for item in value:
            yield from strings(item)


def test_check_hosts_and_usage_errors_show_names_visibly(tmp_path: Path) -> None:
    (tmp_path / "mcpwatch.toml").write_text(f"[hosts.{json.dumps(HOSTILE)}]\nwall_s = 5\n")  # JSON escapes are TOML's
    for args in (("check", "--url", HOSTILE), ("hosts",), ("hosts", "--json"), ("report", f"--bogus={HOSTILE}")):
        result = run(*args, cwd=tmp_path)
        assert_no_raw_control(result, " ".join(args))
        assert b"\\x1b" in result.stdout + result.stderr or b"\\u001b" in result.stdout, args


HOSTILE_SERVER = r"""
import json, sys
def send(message):
    sys.stdout.write(json.dumps(message) + "\n"); sys.stdout.flush()
sys.stderr.write("server says \x1b]0;pwned\x07\x1b[2J\n"); sys.stderr.flush()
for line in sys.stdin:
    message = json.loads(line)
    if "id" not in message:
        continue
    if message["method"] == "initialize":
        info = {"name": "\x1b[31mred\x9b", "version": "\x07"}
        result = {"protocolVersion": "2025-06-18", "capabilities": {"tools": {}}, "serverInfo": info}
    elif message["method"] == "tools/list":
        result = {"tools": [{"name": "ok\x1b]0;title\x07\r\u202e", "inputSchema": {"type": "object"}}]}
    else:
        result = {}
    send({"jsonrpc": "2.0", "id": message["id"], "result": result})
"""


def test_check_shows_a_servers_names_visibly(tmp_path: Path) -> None:
    """`check` prints what the server says about itself (its name, its tools) and its stderr when a step fails."""
    server = tmp_path / "server.py"
    server.write_text(HOSTILE_SERVER)
    result = run("check", "--timeout", "20", "--", sys.executable, str(server))
    assert_no_raw_control(result, "check")
    assert b"ok\\x1b]0;title" in result.stdout, result.stdout


def test_csv_cells_never_start_a_formula(hostile_log: Path) -> None:
    rows = list(csv.reader(io.StringIO(run("export", str(hostile_log), "--format", "csv").stdout.decode())))
    cells = [cell for row in rows[1:] for cell in row]
    assert "'" + FORMULA in cells and "'@SUM(A1)" in cells and "'-1+1" in cells
    assert not [c for c in cells if c[:1] in ("=", "+", "@") or (c[:1] == "-" and not re.fullmatch(r"-[\d.]+", c))]


def test_the_sanitiser_and_the_formula_rule() -> None:
    from mcpwatch.logview.export import csv_row, spreadsheet_safe
    from mcpwatch.terminal import safe, safe_lines

    assert safe("a\x1b[2Jb\x9b\u202e\n") == "a\\x1b[2Jb\\u009b\\u202e\\x0a"
    assert safe_lines("a\r\nb\rc\td\x07\n") == "a\r\nb\\x0dc\td\\x07\n"
    # a lone surrogate (legal JSON) cannot be encoded: shown as its escape, so every output stays valid UTF-8
    assert safe("lone\ud800sur\udfff") == "lone\\ud800sur\\udfff" and safe_lines("\udc80\n") == "\\udc80\n"
    assert safe("\U0001f600é") == "\U0001f600é"  # a real astral character is not a surrogate here
    assert safe_lines(json.dumps("\x9b", ensure_ascii=False)) == '"\\u009b"' and json.loads('"\\u009b"') == "\x9b"
    # numbers stay numbers; only text that would run is neutralised
    assert [spreadsheet_safe(v) for v in (-3, -2.5, "-3", "+1.5e3", "-", "=1+1", "+A1", "\tx", "ok")] == [
        -3,
        -2.5,
        "-3",
        "+1.5e3",
        "'-",
        "'=1+1",
        "'+A1",
        "'\tx",
        "ok",
    ]
    assert csv_row({"seq": -1, "tool": "=cmd", "data": {}})[1:2] == [-1]


def test_a_safe_stream_offers_no_way_around_its_guard() -> None:
    from mcpwatch.terminal import SafeStream

    raw = io.StringIO()
    stream = SafeStream(raw)
    stream.write("name\x1b]0;owned\x07\n")
    stream.flush()
    assert raw.getvalue() == "name\\x1b]0;owned\\x07\n"
    for around in ("buffer", "detach", "reconfigure", "_stream_write"):
        with pytest.raises(AttributeError, match="write text through it"):
            getattr(stream, around)
    assert stream.isatty() is False
