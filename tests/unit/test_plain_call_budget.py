"""The plain call's cost, guarded by a count the machine's load cannot change: interpreter function calls per
`tools/call` through a real core (`mcpwatch/bench/callcount.py`). A feature that adds per-call work fails here in
the commit that adds it; raising a budget is a decision its commit explains."""

from __future__ import annotations

from pathlib import Path

import pytest

from mcpwatch.bench import callcount
from mcpwatch.bench.callcount import LOOP_BUDGET, WRITER_BUDGET, plain_call_counts
from mcpwatch.store import EventReader
from mcpwatch.wrapper.core.plain import PlainCalls


def test_a_plain_call_stays_within_its_call_budget() -> None:
    counts = plain_call_counts()
    assert counts["events_per_call"] == 2.0  # request_start and request_end: what the writer's share is made of
    assert counts["rows_per_call"] == 1.0  # … folded into one row of the log
    assert 0 < counts["loop_calls_per_call"] <= LOOP_BUDGET, counts
    assert 0 < counts["writer_calls_per_call"] <= WRITER_BUDGET, counts


def test_the_count_does_not_depend_on_how_many_calls_are_measured() -> None:
    few, many = plain_call_counts(calls=100), plain_call_counts(calls=400)
    assert few["loop_calls_per_call"] == pytest.approx(many["loop_calls_per_call"], abs=0.5)


def test_the_guard_sees_work_added_to_every_call(monkeypatch: pytest.MonkeyPatch) -> None:
    # A stand-in for a feature that adds per-call work: ten more calls on the core's path for every host frame.
    core_class = callcount.WrapperCore
    original = core_class.host_frame

    def heavier(self: object, link: object, line: bytes) -> None:
        for _ in range(10):
            len(line)
        original(self, link, line)  # type: ignore[arg-type]  # the core's own method, unchanged

    plain = plain_call_counts()["loop_calls_per_call"]
    monkeypatch.setattr(core_class, "host_frame", heavier)
    assert plain_call_counts()["loop_calls_per_call"] >= plain + 10


def test_the_guard_measures_the_plain_path(monkeypatch: pytest.MonkeyPatch) -> None:
    # The calls it counts take the plain path (`core/plain.py`): work added there shows too, and turning the path
    # off costs the count more than the budget allows.
    path = PlainCalls
    original = path.request

    def heavier(self: object, link: object, message: object) -> bool:
        for _ in range(10):
            len("")
        return original(self, link, message)  # type: ignore[arg-type]  # the path's own method, unchanged

    plain = plain_call_counts()["loop_calls_per_call"]
    monkeypatch.setattr(path, "request", heavier)
    assert plain_call_counts()["loop_calls_per_call"] >= plain + 10
    monkeypatch.setattr(path, "request", lambda self, link, message: False)
    assert plain_call_counts()["loop_calls_per_call"] > LOOP_BUDGET


def test_the_writer_guard_sees_work_added_to_every_row(monkeypatch: pytest.MonkeyPatch) -> None:
    # The writer's count is the fold's, the rows' and the counts': a call more a row shows in it.
    plain = plain_call_counts()["writer_calls_per_call"]
    original = callcount.batch_counts

    def heavier(rows: list[tuple[object, ...]]) -> list[tuple[object, ...]]:
        for row in rows:
            len(row)
        return original(rows)

    monkeypatch.setattr(callcount, "batch_counts", heavier)
    assert plain_call_counts()["writer_calls_per_call"] >= plain + 1


def test_the_writers_instruction_harness_writes_a_row_a_call(tmp_path: Path) -> None:
    # What callgrind counts per thread for the writer's instructions a call (`docs/event-log.md`): the calls' rows,
    # one each, committed into a real log that reads back as their two events each.
    log = tmp_path / "count.db"
    assert callcount.writer_work(30, log, per_batch=7) == 30
    with EventReader(log) as reader:
        (session,) = reader.sessions()
        kinds = [event.kind for event in reader.events(session.id)]
    assert kinds == ["request_start", "request_end"] * 30
