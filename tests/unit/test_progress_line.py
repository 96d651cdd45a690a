"""`report`'s progress line: on a terminal it says how far the read has got, then erases itself; in a pipe, nothing."""

from __future__ import annotations

import io

from mcpwatch.commands._progress import reading
from mcpwatch.events import Event


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def _events(n: int) -> list[Event]:
    return [Event(kind="request_end", session_id="s", ts=float(i), mono=float(i), seq=i + 1) for i in range(n)]


def test_a_long_read_on_a_terminal_shows_progress_and_leaves_a_clean_line() -> None:
    """`report` on a 1,000,000-event session read for 14 s without a word."""
    ticks = iter(range(10_000))
    out = Terminal()
    events = _events(1000)
    assert list(reading(events, 1000, stream=out, clock=lambda: next(ticks) * 0.1)) == events  # unchanged
    text = out.getvalue()
    assert "\r\x1b[2Kreading the session: 5 of 1,000 events (0%)" in text
    assert "1,000 of 1,000 events (100%)" in text
    assert text.endswith("\r\x1b[2K")


def test_nothing_is_written_to_a_pipe() -> None:
    out = io.StringIO()
    ticks = iter(range(10_000))
    assert len(list(reading(_events(100), 100, stream=out, clock=lambda: float(next(ticks))))) == 100
    assert out.getvalue() == ""


def test_a_quick_read_draws_nothing() -> None:
    out = Terminal()
    assert len(list(reading(_events(100), 100, stream=out, clock=lambda: 0.0))) == 100
    assert out.getvalue() == ""


def test_the_line_says_what_comes_after_the_read_until_the_end() -> None:
    """After the read, `report` worked out its advice for about 20 s with the line gone: progress runs to the end."""
    from mcpwatch.commands._progress import Progress

    ticks = iter(range(10_000))
    out = Terminal()
    progress = Progress(stream=out, clock=lambda: next(ticks) * 0.1)
    assert len(list(progress.reading(_events(100), 100))) == 100
    progress.phase("working out the advice for 20 cut calls")
    assert out.getvalue().endswith("\r\x1b[2Kworking out the advice for 20 cut calls")
    progress.close()
    assert out.getvalue().endswith("\r\x1b[2K")


def test_a_quick_command_shows_no_phase_either() -> None:
    from mcpwatch.commands._progress import Progress

    out = Terminal()
    progress = Progress(stream=out, clock=lambda: 0.0)
    assert len(list(progress.reading(_events(10), 10))) == 10
    progress.phase("working out the advice")
    progress.close()
    assert out.getvalue() == ""
