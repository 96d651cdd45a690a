"""The demo's start-up: its processes start at once, not one after the other, and there are fewer of them.

On a loaded machine (load 20) `mcpwatch demo` started the host, which imported the MCP SDK before it started the
wrapper, which started a relay, which started the council: each waited for the one before, and the story (a cut
call with a partial answer, a late answer dropped and kept, an invalidation) was on screen at 16-24 s. These guards
hold the shape that brought it to 12-13 s without timing anything."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from mcpwatch import cli
from mcpwatch.demo import run
from mcpwatch.demo.driver import wrapper_command
from mcpwatch.events import Event, Kind
from mcpwatch.store import EventWriter


def test_the_wrapper_and_the_host_start_before_anything_is_waited_for(monkeypatch: pytest.MonkeyPatch) -> None:
    """The host used to start the wrapper, after importing the MCP SDK: the wrapper (and the council behind it) now
    start first, the host beside them on the wrapper's pipes, and the console is imported while they start."""
    steps: list[Any] = []

    class Child:
        def __init__(self, command: list[str], **kwargs: Any) -> None:
            steps.append(("start", command, kwargs))
            self.pid = 4242
            self.stdin = open(Path("/dev/null"), "wb")  # noqa: SIM115  # closed by run_with_console
            self.stdout = open(Path("/dev/null"), "rb")  # noqa: SIM115

        def poll(self) -> int | None:
            return None

        def wait(self, timeout: float | None = None) -> int:
            steps.append("wait for exit")
            return 0

        def send_signal(self, signum: int) -> None:
            steps.append("signal")

    import mcpwatch.console

    monkeypatch.setattr(run.subprocess, "Popen", Child)
    monkeypatch.setattr(run, "write_config", lambda: Path("demo.toml"))
    monkeypatch.setattr(run, "summary", lambda *a: "")
    monkeypatch.setattr(run, "_import_the_console", lambda: steps.append("import the console"))

    def wait_for_wrapper(*args: Any) -> Child:
        steps.append("wait for the wrapper")
        return Child(["x"])

    def launch(*args: Any, **kwargs: Any) -> int:
        steps.append("console")
        return 0

    monkeypatch.setattr(run, "_wait_for_wrapper", wait_for_wrapper)
    monkeypatch.setattr(mcpwatch.console, "launch", launch)
    run.run_with_console(0.25, 7, None)

    starts = [step for step in steps if isinstance(step, tuple)][:2]
    assert [command[command.index("-m") + 1] for _, command, _ in starts] == ["mcpwatch", "mcpwatch.demo.driver"]
    wrapper, host = starts
    assert wrapper[1][3] == "wrap" and wrapper[2]["stdin"] == wrapper[2]["stdout"] == subprocess.PIPE
    assert "--read-fd" in host[1] and len(host[2]["pass_fds"]) == 2  # the host talks over the wrapper's pipes
    first_wait = next(i for i, step in enumerate(steps) if isinstance(step, str) and step.startswith("wait"))
    assert steps.index("import the console") < first_wait and steps.index(starts[1]) < first_wait
    assert steps.index("console") > first_wait


def test_the_council_is_one_process_behind_the_wrapper() -> None:
    """Three Python processes beside the demo's own (host, wrapper, council), not four: the relay that ignores
    every second cancellation runs in the council's process (`deaf_council`)."""
    command = wrapper_command("demo.toml", "demo", "default", 0.25, 7)
    upstream = command[command.index("--") + 1 :]
    assert command.count(sys.executable) == 2  # the wrapper, and the one process it starts
    assert upstream[:3] == [sys.executable, "-m", "mcpwatch.demo.deaf_council"]


def test_a_command_imports_its_own_module_only() -> None:
    """Every command imported every command's module (some import the settings loader) before it started."""
    assert list(cli.available_commands("council")) == ["council"]
    assert list(cli.available_commands("no-such-command")) == list(cli.available_commands())
    assert list(cli.available_commands(None)) == list(cli.available_commands())


def test_the_deaf_council_drops_every_second_cancellation_before_the_council_reads() -> None:
    """The council reads its stdin through the relay's thread: the first, third, … cancellation never reaches it."""
    cancel = b'{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":%d}}\n'
    call = b'{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"x"}}\n'
    code = (
        "import sys; from mcpwatch.demo.deaf_council import deafen_stdin; deafen_stdin(); "
        "sys.stdout.buffer.write(sys.stdin.buffer.read())"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], input=call + cancel % 1 + cancel % 2 + cancel % 3, capture_output=True, timeout=60
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout == call + cancel % 2


def _log(path: Path, kinds: list[tuple[str, dict[str, Any]]], name: str = "demo", pid: int = 1) -> None:
    writer = EventWriter(path)
    sid = writer.start_session(name=name, upstream="council", pid=pid, config={})
    for seq, (kind, data) in enumerate(kinds, start=1):
        writer.emit(Event(kind, sid, 100.0 + seq, float(seq), seq, "1", "consult_council", None, data))
    writer.close()


CUT = (Kind.REQUEST_END.value, {"method": "tools/call", "outcome": "deadline", "duration_s": 5.0, "partial": True})
HIT = (Kind.TOMBSTONE_HIT.value, {"up_id": 1, "what": "response", "age_s": 1.0})
LATE_DATA = {"up_id": 1, "reason": "deadline", "cut_after_s": 5.0, "delay_s": 1.0, "duration_s": 6.0, "outcome": "ok"}
LATE = (Kind.LATE_RESULT.value, {**LATE_DATA, "size_bytes": 10, "reuse_ttl_s": None})
INVALIDATION = (Kind.INVALIDATION.value, {"caused_by": "council.models.disable", "patterns": ["council.models.*"]})


@pytest.mark.parametrize("missing", [None, CUT, HIT, LATE, INVALIDATION])
def test_the_story_is_told_when_every_beat_is_in_the_log(tmp_path: Path, missing: Any) -> None:
    path = tmp_path / "events.db"
    _log(path, [beat for beat in (CUT, HIT, LATE, INVALIDATION) if beat is not missing])
    assert run.story_told(path, started_at=0.0) is (missing is None)


def test_a_story_in_another_session_is_not_this_one(tmp_path: Path) -> None:
    path = tmp_path / "events.db"
    _log(path, [CUT, HIT, LATE, INVALIDATION], name="not-the-demo")
    assert run.story_told(path, started_at=0.0) is False
    assert run.story_told(tmp_path / "none.db", started_at=0.0) is False


def test_two_demos_at_once_each_read_their_own_session(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # Both are named "demo" and share the default log: each summed up, and waited for the story of, the newest one.
    path = tmp_path / "events.db"
    _log(path, [CUT, HIT, LATE, INVALIDATION], pid=101)  # this run's, told
    _log(path, [], pid=202)  # another demo started a moment later: nothing yet
    assert run.story_told(path, started_at=0.0, pid=101) is True
    assert run.story_told(path, started_at=0.0, pid=202) is False
    monkeypatch.setattr(run.paths, "default_log_path", lambda: path)
    ours = run.summary(0.0, None, 101)
    assert "deadlines hit: 1" in ours and "invalidations: 1" in ours
    assert "deadlines hit: 0" in run.summary(0.0, None, 202)


def test_the_console_watches_this_runs_wrapper_not_another_demos(monkeypatch: pytest.MonkeyPatch) -> None:
    from mcpwatch.registry import WrapperEntry

    other, ours = (WrapperEntry(pid, "demo", "http://127.0.0.1:1/mcp", "t", "", "s", "", 100.0) for pid in (202, 101))
    monkeypatch.setattr(run.registry, "find_wrapper", lambda name: [other, ours])  # oldest first
    assert run._wait_for_wrapper(100.0, {}, 101) is ours


def test_an_unknown_theme_is_refused_before_anything_starts(monkeypatch: pytest.MonkeyPatch) -> None:
    from mcpwatch.errors import UserError

    started: list[object] = []
    monkeypatch.setattr(run.subprocess, "Popen", lambda *a, **kw: started.append(a))
    monkeypatch.setattr(run, "write_config", lambda: Path("demo.toml"))
    with pytest.raises(UserError, match="unknown theme 'nope'"):
        run.run_with_console(0.25, 7, "nope")
    assert started == []
