"""Models: for council runs, per model p50/p95 latency, how each answer ended, and the last failure (Textual-free).

Read from the log (`EventReader.model_rows`: every finished `model_status`, and the operator's calls), live and in
replay alike, into a `ModelLog` that is read once and then only for what is new; `stats(end_ts)` folds what
happened before "now" (the replay position in a recording). Which models are enabled is the council's to say
(`council.models.list`, live); the log only tells what the operator changed (`operator_call`).
"""

from __future__ import annotations

import bisect
import json
import math
import threading
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from mcpwatch.console.headless.trends import percentile
from mcpwatch.console.headless.wire_text import clean
from mcpwatch.store.reader import EventReader

STATUSES = ("ok", "timeout", "rate_limited", "auth_error", "error")
DISABLE_TOOL = "council.models.disable"
ENABLE_TOOL = "council.models.enable"
LIST_TOOL = "council.models.list"
SORTS = ("model", "answers", "p50", "p95", "failures", "last failure")


@dataclass(frozen=True, slots=True)
class Failure:
    ts: float
    status: str
    request_id: str | None


@dataclass(frozen=True, slots=True)
class ModelStats:
    model: str
    counts: dict[str, int]
    p50_ms: float | None
    p95_ms: float | None
    last_failure: Failure | None
    enabled: bool | None  # None: not known (the council was not asked, or it is a recording without a change)

    @property
    def answers(self) -> int:
        return sum(self.counts.values())

    @property
    def failures(self) -> int:
        return self.answers - self.counts.get("ok", 0)


@dataclass(slots=True)
class _Series:
    ts: list[float] = field(default_factory=list)
    status: list[str] = field(default_factory=list)
    latency: list[float | None] = field(default_factory=list)
    request: list[str | None] = field(default_factory=list)


def _switch(data_text: str | None) -> tuple[str, bool] | None:
    """An operator's successful disable/enable: (model, enabled after it)."""
    try:
        data: Any = json.loads(data_text) if data_text else {}
    except ValueError:
        return None
    if not isinstance(data, dict) or data.get("ok") is not True:
        return None
    tool = data.get("tool")
    if tool not in (DISABLE_TOOL, ENABLE_TOOL):
        return None
    try:
        arguments = json.loads(data.get("arguments") or "{}")
    except (TypeError, ValueError):
        return None
    model = clean(arguments.get("model")) if isinstance(arguments, dict) else None  # decoded JSON: may hold ESC
    return (model, tool == ENABLE_TOOL) if isinstance(model, str) and model else None


class ModelLog:
    """One session's finished model answers and the operator's enable/disable calls. Thread-safe."""

    def __init__(self, path: str, session_id: str) -> None:
        self.path = path
        self.session_id = session_id
        self.after_seq = 0
        self.rows_read = 0
        self._series: dict[str, _Series] = {}
        self._switches: list[tuple[float, str, bool]] = []
        self._lock = threading.Lock()

    def update(self, reader: EventReader, *, page: int = 20_000) -> int:
        total = 0
        while True:
            rows = reader.model_rows(self.session_id, after_seq=self.after_seq, limit=page)
            self.add_rows(clean(rows))  # names from the log, made safe for the terminal
            total += len(rows)
            if len(rows) < page:
                return total

    def add_rows(self, rows: list[tuple[Any, ...]]) -> None:
        with self._lock:
            for seq, ts, kind, model, status, latency, request_id, data in rows:
                self.after_seq = max(self.after_seq, int(seq))
                self.rows_read += 1
                if kind == "operator_call":
                    found = _switch(data)
                    if found is not None:
                        self._switches.append((ts, found[0], found[1]))
                    continue
                if not model:
                    continue
                series = self._series.setdefault(model, _Series())
                at = bisect.bisect_right(series.ts, ts)  # nearly always the end
                series.ts.insert(at, ts)
                series.status.insert(at, status if status in STATUSES else "error")
                ok_latency = isinstance(latency, int | float) and math.isfinite(latency)
                series.latency.insert(at, float(latency) if ok_latency else None)
                series.request.insert(at, request_id)

    def stats(self, end_ts: float, *, enabled: dict[str, bool] | None = None) -> list[ModelStats]:
        """Every model seen before `end_ts` (and every model the council listed), by name."""
        out: list[ModelStats] = []
        with self._lock:
            switched: dict[str, bool] = {}
            for ts, model, on in self._switches:
                if ts < end_ts:
                    switched[model] = on
            names = set(self._series) | set(enabled or {})
            for name in sorted(names):
                series = self._series.get(name, _Series())
                n = bisect.bisect_left(series.ts, end_ts)
                counts = Counter(series.status[:n])
                latencies = sorted(v for v in series.latency[:n] if v is not None)
                failure = None
                for i in range(n - 1, -1, -1):
                    if series.status[i] != "ok":
                        failure = Failure(series.ts[i], series.status[i], series.request[i])
                        break
                state = (enabled or {}).get(name, _lookup(switched, name))
                out.append(
                    ModelStats(
                        name,
                        {s: counts.get(s, 0) for s in STATUSES},
                        percentile(latencies, 0.5),
                        percentile(latencies, 0.95),
                        failure,
                        state,
                    )
                )
        return out


def _lookup(switched: dict[str, bool], name: str) -> bool | None:
    """A switch logged under the model's id or its short name (the council takes either)."""
    if name in switched:
        return switched[name]
    short = name.rsplit("/", 1)[-1]
    return switched.get(short)


def sort_stats(stats: list[ModelStats], key: str, *, reverse: bool = False) -> list[ModelStats]:
    """Sorted by one of `SORTS`; numbers biggest first (unknown last), names A→Z; `reverse` flips either."""

    def number(value: float | None) -> float:
        return -value if value is not None else math.inf

    keys = {
        "model": lambda s: (s.model,),
        "answers": lambda s: (-s.answers, s.model),
        "p50": lambda s: (number(s.p50_ms), s.model),
        "p95": lambda s: (number(s.p95_ms), s.model),
        "failures": lambda s: (-s.failures, s.model),
        "last failure": lambda s: (number(s.last_failure.ts if s.last_failure else None), s.model),
    }
    ordered = sorted(stats, key=keys[key])
    return list(reversed(ordered)) if reverse else ordered


def enabled_from_list(result: Any) -> dict[str, bool]:
    """`council.models.list`'s answer as {model id: enabled} (empty for anything else)."""
    models = result.get("models") if isinstance(result, dict) else None
    out: dict[str, bool] = {}
    for item in models if isinstance(models, list) else []:
        if isinstance(item, dict) and isinstance(item.get("id"), str):
            out[item["id"]] = bool(item.get("enabled", True))
    return out


_LOGS: dict[tuple[str, str], ModelLog] = {}
_LOGS_LOCK = threading.Lock()


def model_log(path: str, session_id: str) -> ModelLog:
    """The shared `ModelLog` of a session (a few kept)."""
    key = (str(path), session_id)
    with _LOGS_LOCK:
        found = _LOGS.pop(key, None) or ModelLog(str(path), session_id)
        _LOGS[key] = found
        while len(_LOGS) > 4:
            _LOGS.pop(next(iter(_LOGS)))
        return found
