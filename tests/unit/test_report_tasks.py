"""The report's Tasks section: created (watched, bridged, offered), how they ended, input rounds, polls and
durations, from the task events in the log. Before, `report` said nothing about tasks but one count."""

from __future__ import annotations

from typing import Any

from clirun import run_cli

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


def test_report_and_whatif_read_the_pace_of_the_calls_they_estimate_from_the_log(tmp_path) -> None:
    """Progress is most of a long session, so the commands leave it out of the stream and read only the progress of
    the calls they estimate; the pace basis must still reach their figures."""
    import json

    from mcpwatch.store import EventWriter

    path = tmp_path / "events.db"
    writer = EventWriter(path)
    sid = writer.start_session(name="n", upstream="u", pid=1, config={})
    plan: list[tuple[str, str, float, dict[str, Any]]] = []
    for n in range(3):  # three cut calls of a server reporting 1 of 5, then 2 of 5 (5 s a step)
        rid = f"c{n}"
        plan.append((Kind.REQUEST_START.value, rid, 0.0, {"method": "tools/call", "budget_s": 10.0,
                                                          "budget_source": "derived", "up_id": n}))  # fmt: skip
        plan += [
            (Kind.PROGRESS.value, rid, t, {"progress": p, "total": 5, "message": None}) for p, t in ((1, 5), (2, 10))
        ]
        plan.append(
            (Kind.REQUEST_END.value, rid, 10.0, {"method": "tools/call", "outcome": "deadline", "duration_s": 10.0})
        )
    plan.append((Kind.REQUEST_START.value, "w", 0.0, {"method": "tools/call", "budget_s": 10.0, "up_id": 9}))
    plan.append((Kind.PROGRESS.value, "w", 1.0, {"progress": 1, "total": 5, "message": None}))  # answered: not read
    plan.append((Kind.REQUEST_END.value, "w", 2.0, {"method": "tools/call", "outcome": "ok", "duration_s": 2.0}))
    for seq, (kind, rid, at, data) in enumerate(plan, start=1):
        writer.emit(Event(kind, sid, 100.0 + at + seq * 1e-3, at + seq * 1e-3, seq, rid, "slow", None, data))
    writer.close()

    def run(*args: str) -> dict[str, Any]:
        done = run_cli(*args, str(path), "--json")
        assert done.returncode == 0, done.stderr
        return json.loads(done.stdout)

    (row,) = run("report")["finished_late"]
    assert (row["likely"], row["unknown"]) == (3, 0) and "its progress: 40% done after 10 s" in row["advice"]
    figures = run("whatif", "--budget", "30")
    assert figures["likely_saved"] == 3 and figures["unknown"] == 0
