"""The report's Tasks section: created (watched, bridged, offered), how they ended, input rounds, polls and
durations, from the task events in the log. Before, `report` said nothing about tasks but one count."""

from __future__ import annotations

from typing import Any

from mcpwatch.events import Event, Kind, payload_problems
from mcpwatch.logview.report import build_report
from mcpwatch.logview.tasks_report import section_lines


class Log:
    def __init__(self) -> None:
        self.events: list[Event] = []

    def ev(self, kind: Kind, rid: str, mono: float, **data: Any) -> None:
        assert payload_problems(kind, data) == [], (kind, data)
        self.events.append(Event(kind.value, "s", mono, mono, len(self.events) + 1, rid, "build", None, data))

    def task(self, rid: str, start: float, statuses: list[str], end: str | None, took: float, **created: Any) -> None:
        self.ev(Kind.REQUEST_START, rid, start, method="tools/call", up_id=len(self.events), budget_s=None,
                budget_source="disabled", arguments="{}")  # fmt: skip
        self.ev(Kind.TASK_CREATED, rid, start + 0.1, task_id=f"t-{rid}", status="working", status_message=None,
                ttl_ms=60_000, poll_interval_ms=500, era="2025-11-25", **created)  # fmt: skip
        for i, status in enumerate(statuses):
            self.ev(Kind.TASK_STATUS, rid, start + 1 + i, task_id=f"t-{rid}", status=status, status_message=None,
                    elapsed_s=1.0 + i, seen_by="tasks/get", polls=i + 1)  # fmt: skip
        if end is not None:
            outcome = "ok" if end == "completed" else "error" if end == "failed" else "cancelled"
            self.ev(Kind.REQUEST_END, rid, start + took, outcome=outcome, duration_s=took, method="tools/call",
                    task_id=f"t-{rid}", task_status=end, polls=len(statuses) + 2)  # fmt: skip


def test_the_tasks_section_counts_each_task_once_with_its_end_input_rounds_polls_and_durations() -> None:
    log = Log()
    log.task("a", 0.0, ["input_required", "working", "input_required", "working", "completed"], "completed", 30.0)
    log.task("b", 1.0, ["working"], "cancelled", 10.0, bridged=True)
    log.task("c", 2.0, ["input_required", "input_required"], "failed", 20.0, offered=True)  # one round, said twice
    log.task("d", 3.0, ["input_required"], None, 0.0)  # still waiting for its host
    log.task("e", 4.0, [], "completed", 40.0, bridged=True, attached_to="b")  # joined b's task: not a new one
    section = build_report(log.events)["tasks"]
    assert section is not None
    assert section["created"] == 4 and section["by_kind"] == {"watched": 2, "bridged": 1, "offered": 1}
    assert (section["completed"], section["failed"], section["cancelled"], section["unfinished"]) == (1, 1, 1, 1)
    assert (section["input_rounds"], section["asked_input"]) == (4, 3)  # a: 2, c: 1, d: 1
    assert section["polls"] == 7 + 3 + 4  # as each call's request_end attributes them
    assert (section["p50_s"], section["max_s"]) == (20.0, 30.0)
    lines = section_lines(section, lambda s: f"{s:g}s")
    assert lines[0] == (
        "tasks: 4 created (2 watched, 1 bridged, 1 offered); 1 completed, 1 failed, 1 cancelled, 1 unfinished"
    )
    assert lines[1] == "  4 input rounds (in 3 tasks); 14 host polls; durations p50 20s, p95 30s, max 30s"


def test_a_session_without_tasks_has_no_section() -> None:
    log = Log()
    log.ev(Kind.REQUEST_START, "x", 0.0, method="tools/call", up_id=1, budget_s=5.0, budget_source="derived",
           arguments="{}")  # fmt: skip
    log.ev(Kind.REQUEST_END, "x", 1.0, outcome="ok", duration_s=1.0, method="tools/call")
    assert build_report(log.events)["tasks"] is None
