"""`mcpwatch bench log`: sustained event-log write rate with one writer, and the caller-side cost of emit().

Realistic traffic: each request is a request_start, a run of progress events and a request_end, with the small
data dicts the wrapper writes. Events are built before timing, so the figures are the log's cost alone.
"""

from __future__ import annotations

import os
import tempfile
import time
from pathlib import Path
from typing import Any

from mcpwatch.events import Event, Kind, Outcome

HELP = "event log: sustained batched writes per second (one writer), emit() cost in µs"

PROGRESS_PER_REQUEST = 8


def make_events(session_id: str, count: int, *, start_ts: float | None = None) -> list[Event]:
    """`count` events shaped like real traffic: request_start, progress × 8, request_end, repeated."""
    ts = time.time() if start_ts is None else start_ts
    events: list[Event] = []
    request = 0
    while len(events) < count:
        request += 1
        rid = str(request)
        seq = len(events)
        events.append(
            Event(
                Kind.REQUEST_START.value,
                session_id,
                ts + seq * 1e-4,
                seq * 1e-4,
                seq + 1,
                rid,
                "consult_council",
                None,
                {"method": "tools/call", "up_id": request, "budget_s": 110.0, "budget_source": "host_timeout-margin"},
            )
        )
        for step in range(1, PROGRESS_PER_REQUEST + 1):
            seq = len(events)
            events.append(
                Event(
                    Kind.PROGRESS.value,
                    session_id,
                    ts + seq * 1e-4,
                    seq * 1e-4,
                    seq + 1,
                    rid,
                    "consult_council",
                    None,
                    {"progress": step, "total": PROGRESS_PER_REQUEST, "message": f"✓ model-{step} ({step}/8)"},
                )
            )
        seq = len(events)
        events.append(
            Event(
                Kind.REQUEST_END.value,
                session_id,
                ts + seq * 1e-4,
                seq * 1e-4,
                seq + 1,
                rid,
                "consult_council",
                None,
                {"outcome": Outcome.OK.value, "duration_s": 0.9, "partial": False},
            )
        )
    return events[:count]


def _burst(path: Path, total: int) -> dict[str, Any]:
    """Emit everything at once into a queue big enough for it: the writer's own top speed."""
    from mcpwatch.store import EventReader, EventWriter

    writer = EventWriter(path, queue_max=total + 1)
    session_id = writer.start_session(name="bench-burst", upstream="bench", pid=os.getpid(), config={})
    events = make_events(session_id, total)
    wall0, cpu0 = time.perf_counter(), time.thread_time()
    for event in events:
        writer.emit(event)
    wall1, cpu1 = time.perf_counter(), time.thread_time()
    writer.flush()
    wall2 = time.perf_counter()
    writer.close()
    with EventReader(path) as reader:
        on_disk = reader.event_count(session_id)
    return {
        "events": total,
        "written": writer.events_written,
        "on_disk": on_disk,
        "dropped": writer.dropped,
        "seconds": round(wall2 - wall0, 3),
        "events_per_s": round(total / (wall2 - wall0)),
        "emit_us_cpu": round((cpu1 - cpu0) / total * 1e6, 3),
        "emit_us_wall": round((wall1 - wall0) / total * 1e6, 3),
    }


def _paced(path: Path, rate: int, seconds: float) -> dict[str, Any]:
    """Emit at a steady `rate` with the default queue: does the writer keep up without dropping anything?"""
    from mcpwatch.store import EventWriter

    writer = EventWriter(path)
    session_id = writer.start_session(name="bench-paced", upstream="bench", pid=os.getpid(), config={})
    total = int(rate * seconds)
    events = make_events(session_id, total)
    chunk = max(1, rate // 100)  # 100 chunks a second
    started = time.perf_counter()
    most_pending = 0
    for index in range(0, total, chunk):
        due = started + index / rate
        pause = due - time.perf_counter()
        if pause > 0:
            time.sleep(pause)
        for event in events[index : index + chunk]:
            writer.emit(event)
        most_pending = max(most_pending, writer.pending)
    emitted = time.perf_counter()
    writer.flush()
    done = time.perf_counter()
    writer.close()
    return {
        "target_per_s": rate,
        "events": total,
        "achieved_per_s": round(total / (done - started)),
        "dropped": writer.dropped,
        "most_pending": most_pending,
        "drain_after_last_emit_s": round(done - emitted, 3),
    }


def run(quick: bool = False) -> dict[str, Any]:
    total = 20_000 if quick else 500_000
    with tempfile.TemporaryDirectory(prefix="mcpwatch-bench-log-") as tmp:
        burst = _burst(Path(tmp) / "burst.db", total)
        size = sum(p.stat().st_size for p in Path(tmp).glob("burst.db*"))
        paced = _paced(Path(tmp) / "paced.db", 100_000, 0.2 if quick else 3.0)
    return {**burst, "bytes_per_event": round(size / max(burst["on_disk"], 1), 1), "paced": paced, "quick": quick}
