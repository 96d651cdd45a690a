"""An HTTP front's host sessions (open, reclaimed, refused) in the top bar, whole at 80 and 120 columns: from the
live feed's status() and from each `host_session_refused` event (was cut to `· ses…`, refusals only a warning)."""

from __future__ import annotations

import pytest
from rich.text import Text

from mcpwatch.console.headless.model import ConsoleModel
from mcpwatch.console.headless.panels.header import top_bar
from mcpwatch.console.headless.render_base import Palette
from mcpwatch.console.screens.base import COMPACT_BAR_BELOW
from mcpwatch.events import Kind
from mcpwatch.testing.sample import EventFactory, session_start


def _model() -> tuple[ConsoleModel, EventFactory]:
    f = EventFactory()
    model = ConsoleModel()
    model.apply(session_start(f, name="council"))
    model.apply(f.make(Kind.HOST_INFO, 1.0, name="claude-code", version="2.1.3"))
    model.apply(f.make(Kind.UPSTREAM_STATE, 2.0, state="ready", generation=1))
    return model, f


def _bar(model: ConsoleModel, width: int) -> str:
    view = model.view(10.0)
    text: Text = top_bar(view.header, "live", True, False, Palette({}), compact=width < COMPACT_BAR_BELOW)
    text.truncate(width)
    return text.plain


@pytest.mark.parametrize(
    ("width", "expected"),
    [
        (80, "hosts 16/16, 120 reclaimed, 1043 refused"),
        (120, "hosts 16/16, 120 reclaimed, 1043 refused │ upstream gen 1"),
        (160, "host sessions 16/16 open, 120 reclaimed, 1043 refused"),
    ],
)
def test_the_fronts_sessions_are_whole_in_the_top_bar(width: int, expected: str) -> None:
    model, _ = _model()
    model.note_status({"wrapper": {"host_sessions": {"open": 16, "max": 16, "reclaimed": 120, "refused": 1043}}})
    assert expected in _bar(model, width)


def test_a_refused_session_counts_in_the_top_bar_and_is_a_warning() -> None:
    model, f = _model()
    model.note_status({"wrapper": {"host_sessions": {"open": 2, "max": 2, "reclaimed": 0, "refused": 0}}})
    message = "host session refused: 2 of 2 open, each busy (127.0.0.1:5000)"
    model.apply(f.make(Kind.HOST_SESSION_REFUSED, 5.0, message=message, open=2, max=2, refused=3))
    assert "hosts 2/2, 0 reclaimed, 3 refused" in _bar(model, 80)
    assert any(w.message == message for w in model.view(10.0).warnings)


def test_a_stdio_front_says_nothing_about_host_sessions() -> None:
    model, _ = _model()
    model.note_status({"wrapper": {"host": {"name": "x"}}})
    assert "sessions" not in _bar(model, 120) and "hosts " not in _bar(model, 80)
