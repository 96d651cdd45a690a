"""What a wrapper says on stderr reaches it a whole line at a time. Its threads (the loop, the log writer, the
exporters) all say things; `print` wrote a line's text and its end apart, so under load a log-writer warning and
the start-up line once ran together into one line, and a host's log showed neither."""

from __future__ import annotations

import io
import sys
import threading

import pytest

from mcpwatch.prometheus.endpoint import say
from mcpwatch.wrapper.app import note, warn


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
    note("the upstream restarted")
    say("metrics on port 9464")
    assert len(stream.calls) == 3
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
