"""What a wrapper says on stderr reaches it a whole line at a time. Its threads (the loop, the log writer, the
exporters) all say things; `print` wrote a line's text and its end apart, so under load a log-writer warning and
the start-up line once ran together into one line, and a host's log showed neither."""

from __future__ import annotations

import io
import sys
import threading

import pytest

from mcpwatch.terminal import say
from mcpwatch.wrapper.app import warn


class _Writes(io.StringIO):
    def __init__(self) -> None:
        super().__init__()
        self.calls: list[str] = []

    def write(self, text: str) -> int:
        self.calls.append(text)
        return len(text)


def test_every_line_is_one_write(monkeypatch: pytest.MonkeyPatch) -> None:
    stream = _Writes()
    monkeypatch.setattr(sys, "stderr", stream)
    warn("the log cannot be written\nsecond line")
    say("metrics on port 9464")
    assert len(stream.calls) == 2
    assert all(text.endswith("\n") for text in stream.calls), stream.calls


def test_two_threads_lines_never_run_together(monkeypatch: pytest.MonkeyPatch) -> None:
    stream = io.StringIO()
    monkeypatch.setattr(sys, "stderr", stream)
    start = threading.Barrier(2)

    def speak(word: str) -> None:
        start.wait()
        for _ in range(2_000):
            warn(word)

    threads = [threading.Thread(target=speak, args=(word,)) for word in ("writer", "loop")]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    lines = stream.getvalue().splitlines()
    assert sorted(set(lines)) == ["mcpwatch: warning: loop", "mcpwatch: warning: writer"]
    assert len(lines) == 4_000


FORGED = "mcpwatch: wrapping evil on stdio; log /tmp/x; watch it with `mcpwatch watch evil`"
BREAKS = ["\n", "\r\n", "\r", "\u2028", "\u0085", "\x1b[2K\r"]


@pytest.mark.parametrize("brk", BREAKS)
def test_a_peers_text_with_a_line_end_is_still_one_line(monkeypatch: pytest.MonkeyPatch, brk: str) -> None:
    """A remote upstream's refusal or a collector's answer may hold a line end: said as it is, its rest would be a line
    of its own, one a host's log shows as mcpwatch's. Every line the wrapper says stays one line, escapes visible."""
    stream = io.StringIO()
    monkeypatch.setattr(sys, "stderr", stream)
    for say_it in (warn, say):
        say_it(f"the collector said x{brk}{FORGED}")
    lines = stream.getvalue().split("\n")
    assert lines[-1] == "" and len(lines) == 3, lines
    assert not any(line.startswith(FORGED[:17]) for line in lines)
    assert all(ch == "\t" or ch.isprintable() for line in lines for ch in line)


def test_an_upstream_lost_with_line_ends_in_its_reason_is_one_line(loop, monkeypatch: pytest.MonkeyPatch) -> None:
    """The pump says an upstream's loss on stderr; an HTTP upstream's handshake refusal is the remote's own text."""
    from taskrig import CoreRig

    stream = io.StringIO()
    monkeypatch.setattr(sys, "stderr", stream)
    rig = CoreRig(loop)
    rig.core.upstream_lost(reason=f"refused the handshake (bad{BREAKS[0]}{FORGED})")
    lines = stream.getvalue().splitlines()
    assert len(lines) == 1 and lines[0].startswith("mcpwatch: the upstream MCP server refused"), lines


class _Closed(io.StringIO):
    def write(self, text: str) -> int:
        raise BrokenPipeError(32, "Broken pipe")


@pytest.mark.parametrize("stream", [_Closed(), None], ids=["closed", "none"])
def test_a_stderr_that_cannot_be_written_never_stops_the_thread_saying_a_line(
    monkeypatch: pytest.MonkeyPatch, stream: io.StringIO | None
) -> None:
    """A host that closed the wrapper's stderr (or a process started with none) must not turn a line the log writer's
    thread (whose `on_error` is `warn`) or an exporter's says into an exception that ends that thread."""
    monkeypatch.setattr(sys, "stderr", stream)
    warn("the log cannot be written")
    say("the log is written again")
    say("metrics on port 9464")
    said: list[BaseException] = []
    monkeypatch.setattr(threading, "excepthook", lambda args: said.append(args.exc_value))
    thread = threading.Thread(target=warn, args=("from another thread",))
    thread.start()
    thread.join()
    assert said == []
