"""The log writer is woken by batches, not per event: what the wrapper's loop pays per event is a deque append.

Counted, never timed: the `set()` calls on the writer's wake event (each is a lock handoff between the loop's thread
and the writer's) while many events are emitted in one go, as one loop pass does; and everything is still written.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from writer_wake import CountingWake, warning

from mcpwatch.clock import ManualClock
from mcpwatch.events import Kind
from mcpwatch.store import EventReader, EventWriter


@pytest.fixture
def writer(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setattr(EventWriter, "wake_factory", CountingWake)
    CountingWake.made.clear()
    # a long gathering window: the writer wakes for the first event of a batch and then only at its threshold
    writer = EventWriter(tmp_path / "events.db", clock=ManualClock(), queue_max=400, flush_interval=30.0)
    yield writer
    writer.close()


@pytest.mark.parametrize("count", [1, 99, 1000])
def test_events_emitted_in_one_pass_wake_the_writer_a_bounded_number_of_times(
    writer: EventWriter, tmp_path: Path, count: int
) -> None:
    (wake,) = CountingWake.made
    sid = writer.start_session(name="w", upstream="stdio: x", pid=1, config={})
    assert wake.asleep.wait(30), "the writer never went to sleep"
    before = wake.sets
    for seq in range(1, count + 1):
        writer.emit(warning(sid, seq))
    sets = wake.sets - before
    # one for the batch's first event; one at the queue's threshold (queue_max // 4 = 100): never one per event
    assert 1 <= sets <= 2, f"{count} events woke the writer {sets} times"
    assert writer.flush(30)
    with EventReader(tmp_path / "events.db") as reader:
        stored = [e for e in reader.events(sid) if e.kind == Kind.WARNING and e.data["message"].startswith("m")]
    assert len(stored) + writer.dropped == count  # past the bounded queue an event is counted as lost, never hidden
    assert len(stored) >= min(count, writer.queue_max)


def test_a_gathering_writer_is_not_woken_by_more_events(writer: EventWriter, tmp_path: Path) -> None:
    (wake,) = CountingWake.made
    sid = writer.start_session(name="w", upstream="stdio: x", pid=1, config={})
    assert wake.asleep.wait(30)
    writer.emit(warning(sid, 1))  # wakes it; it then gathers for flush_interval (30 s here)
    before = wake.sets
    for seq in range(2, 80):  # below the threshold: a deque append each, no handoff
        writer.emit(warning(sid, seq))
    assert wake.sets - before <= 1  # at most one, for an event that raced the writer back to sleep
    assert writer.flush(30)  # a flush still writes at once, without waiting out the gathering window
    with EventReader(tmp_path / "events.db") as reader:
        assert [e.data["message"] for e in reader.events(sid)] == [f"m{n}" for n in range(1, 80)]
