"""Instructions per exported plain call, by thread: what OTLP export adds to a call, counted where load cannot change
the count.

`bench otel` measures export's CPU against a plain wrapper's in wall-clock rounds, which two busy cores make noisy;
this counts the same work in process. The loop thread's part runs plain calls through the core of
`bench/callcount.py` with trace stamping on and the events queued as `exporter.OtelSink.emit` queues them (or, for
the base, with neither); the export thread's part folds those events as the sink's thread does, in gathering rounds
of `ROUND_CALLS` calls (`SpanBuilder.fold_round`), adds the measurements up (`OtlpMetricFold`) and encodes requests
of `SEND_CALLS` spans (`SpanEncoder.request`), with no I/O. Each part runs on a thread of its own, so callgrind
(`--separate-threads=yes`) counts them apart; the difference of two runs of `WARM_UP` + `SHORT` and `WARM_UP` +
`LONG` calls, over `LONG - SHORT`, is the instructions per call (the imports, the caches' first fill and the threads'
start cancel out). `python -m mcpwatch.bench.otelcount` runs valgrind and prints the figures
(`docs/benchmarks.md`, "OTLP export's cost"); `python -m mcpwatch.bench.otelcount run CALLS [--no-export]` is one
measured process.
"""

from __future__ import annotations

import asyncio
import json
import os
import queue
import random
import re
import shutil
import subprocess
import sys
import tempfile
import threading
from collections import deque
from pathlib import Path
from typing import Any

from mcpwatch.bench.callcount import _PlainCalls
from mcpwatch.events import Event

WARM_UP = 300
SHORT, LONG = 1000, 3000
ROUND_CALLS = 250  # a round of 0.25 s (`exporter.GATHER_S`) at 1,000 calls/s
SEND_CALLS = 1000  # a request a second (`exporter.EXPORT_INTERVAL_S`) at 1,000 calls/s
LOOP_THREAD, EXPORT_THREAD = "otelcount-loop", "otelcount-export"
RESOURCE = {"service.name": "mcpwatch", "service.version": "0"}


class _Queue:
    """The export's queue as `OtelSink.emit` fills it: the kinds export reads, appended to a deque."""

    def __init__(self) -> None:
        from mcpwatch.otel.spans import KINDS

        self.kinds = KINDS
        self.queue: deque[Event] = deque()
        self.dropped = 0
        self._sleeping = False

    def emit(self, event: Event) -> None:  # `OtelSink.emit`, its bound check and wake flag included
        if event.kind in self.kinds:
            if len(self.queue) < 1_000_000:
                self.queue.append(event)
                if self._sleeping:
                    self._sleeping = False
            else:
                self.dropped += 1


class ExportRounds:
    """The export thread's work, as `OtelSink._run` does it: each round's events folded at once, their measurements
    added up under the metrics' lock, a request encoded every `per_send` calls, with no I/O."""

    def __init__(self, per_send: int = SEND_CALLS) -> None:
        from mcpwatch.otel.encode import SpanEncoder
        from mcpwatch.otel.metric_fold import OtlpMetricFold
        from mcpwatch.otel.spans import SpanBuilder

        self.builder = SpanBuilder(lean=True)
        self.encoder = SpanEncoder(RESOURCE, "mcpwatch", "0")
        self.fold, self.lock = OtlpMetricFold(0), threading.Lock()
        self.per_send = per_send
        self.batch: list[Any] = []  # finished spans (`spans.Span`; an older checkout has no such name)
        self.requests: list[bytes] = []  # each request's bytes
        self.rounds = 0

    def round(self, events: list[Event]) -> None:
        encode = getattr(self.encoder, "record_field", None)  # None: an older checkout's (its baseline)
        spans, measures = self.builder.fold_round(events, encode) if encode else self.builder.fold_round(events)
        with self.lock:  # `MetricRecorder.record_all`
            fold = self.fold
            fold.now_ns = self.rounds
            for measure in measures:
                fold.record(measure)
        self.rounds += 1
        self.batch.extend(spans)
        if len(self.batch) >= self.per_send:
            self.send()

    def send(self) -> None:
        from mcpwatch.otel.exporter import request_chunks

        self.requests.extend(self.encoder.request(chunk) for chunk in request_chunks(self.batch))
        self.batch = []


def export_part(events: list[Event], per_round: int = ROUND_CALLS, per_send: int = SEND_CALLS) -> list[bytes]:
    """`ExportRounds` over these events in rounds of `per_round` calls' events; the requests it encoded."""
    rounds = ExportRounds(per_send)
    for at in range(0, len(events), 2 * per_round):
        rounds.round(events[at : at + 2 * per_round])
    if rounds.batch:
        rounds.send()
    return rounds.requests


def run(calls: int, export: bool) -> list[bytes]:
    """One measured process: `WARM_UP` + `calls` plain calls on `LOOP_THREAD`, each `ROUND_CALLS` calls' queued
    events handed to the export's work on `EXPORT_THREAD`, one thread at a time (a fixed order: the same count every
    run; the events die after their round, as in the wrapper, so the collector's work is the wrapper's). Returns the
    requests encoded."""
    from mcpwatch.otel import context

    random.seed(0)
    context.restart_ids()  # the ids already drawn (at import, unseeded) are dropped: the same ids every run
    to_export: queue.Queue[list[Event] | None] = queue.Queue(1)
    done: queue.Queue[None] = queue.Queue(1)

    def loop_thread() -> None:
        loop = asyncio.new_event_loop()
        try:
            sink = _Queue() if export else None
            rig = _PlainCalls(loop, sink=sink, trace=export)
            rig.prepare(WARM_UP + calls)
            for n in range(1, WARM_UP + calls + 1):
                rig.call()
                if sink is not None and n % ROUND_CALLS == 0:
                    taken = list(sink.queue)
                    sink.queue.clear()
                    to_export.put(taken)
                    done.get()
            if sink is not None:
                to_export.put(list(sink.queue))
                done.get()
        finally:
            loop.close()
            if export:
                to_export.put(None)

    work = ExportRounds() if export else None  # made here: its imports are not the export's work per call
    errors: list[BaseException] = []

    def export_thread() -> None:  # a round that fails still lets the loop go on: the error is raised after
        assert work is not None
        while (events := to_export.get()) is not None:
            try:
                if not errors:
                    work.round(events)
            except BaseException as exc:  # raised by `run` once both threads are done
                errors.append(exc)
            finally:
                done.put(None)
        if not errors:
            work.send()

    threads = [threading.Thread(target=loop_thread, name=LOOP_THREAD)]
    if export:
        threads.append(threading.Thread(target=export_thread, name=EXPORT_THREAD))
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    if errors:
        raise errors[0]
    if work is not None and not work.requests:
        raise RuntimeError(f"nothing was encoded for {WARM_UP + calls} calls")
    return work.requests if work is not None else []


_TOTALS = re.compile(r"^(?:summary|totals): (\d+)", re.MULTILINE)


def _thread_counts(calls: int, export: bool, folder: Path) -> list[int]:
    """Instructions of each thread of one run under callgrind, in the order the threads started (the main thread,
    the loop's, the export's)."""
    out = folder / f"cg-{calls}-{int(export)}"
    command = [
        "valgrind",
        "--tool=callgrind",
        "--separate-threads=yes",
        f"--callgrind-out-file={out}",
        sys.executable,
        "-m",
        "mcpwatch.bench.otelcount",
        "run",
        str(calls),
        *([] if export else ["--no-export"]),
    ]
    # one hash seed and one id stream: the same dict layouts and ids every run, so two runs differ by their calls only
    subprocess.run(command, check=True, capture_output=True, env={**os.environ, "PYTHONHASHSEED": "0"})
    files = sorted(folder.glob(f"{out.name}-*"), key=lambda p: int(p.name.rsplit("-", 1)[1]))
    counts = []
    for file in files:
        match = _TOTALS.search(file.read_text(errors="replace"))
        counts.append(int(match[1]) if match else 0)
    return counts


def callgrind_counts() -> dict[str, float]:
    """Instructions per call: the loop thread without export and with it, and the export thread."""
    if shutil.which("valgrind") is None:
        raise SystemExit("valgrind is not installed: apt-get install valgrind")
    with tempfile.TemporaryDirectory() as name:
        folder = Path(name)
        per_call: dict[str, float] = {}
        for export in (False, True):
            short, long = _thread_counts(SHORT, export, folder), _thread_counts(LONG, export, folder)
            if len(short) != len(long) or len(long) < (3 if export else 2):
                raise RuntimeError(f"unexpected threads under callgrind: {short} and {long}")
            per_thread = [(b - a) / (LONG - SHORT) for a, b in zip(short, long, strict=True)]
            if export:
                per_call["loop_with_export"] = round(per_thread[1])
                per_call["export_thread"] = round(per_thread[2])
            else:
                per_call["loop_no_export"] = round(per_thread[1])
        per_call["loop_extra"] = per_call["loop_with_export"] - per_call["loop_no_export"]
        per_call["export_extra"] = per_call["loop_extra"] + per_call["export_thread"]
    return per_call


def main(argv: list[str]) -> None:
    if argv[:1] == ["run"]:
        run(int(argv[1]), "--no-export" not in argv)
        return
    print(json.dumps(callgrind_counts(), indent=1))


if __name__ == "__main__":
    main(sys.argv[1:])
