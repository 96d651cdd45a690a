"""Fleet: every running wrapper on this machine at a glance (Textual-free).

Each row joins the wrapper's registry entry, its operator `status` (upstream state and generation, host, calls in
flight) and its log (deadlines and errors in the last five minutes, its last warning). `probe_fleet` gathers them,
each wrapper with its own short timeout, so one hung wrapper cannot hold the table; `fleet_row` is the pure join.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from mcpwatch.console.headless.wire_text import clean, shown_entry
from mcpwatch.operator.client import OperatorClient, OperatorError
from mcpwatch.registry import WrapperEntry, pid_alive
from mcpwatch.store.db import LogError
from mcpwatch.store.reader import EventReader

RECENT_S = 300.0
ERROR_OUTCOMES = ("error", "tool_error", "upstream_lost")
PROBE_TIMEOUT_S = 2.0
STALE_AFTER_S = 5.0  # a row's status older than this says its age
SLOW = "slow to answer"  # a live wrapper that did not answer in time (a loaded machine): never "unreachable"


@dataclass(frozen=True, slots=True)
class FleetRow:
    pid: int
    name: str
    host: str
    upstream: str  # connecting | ready | backoff | closed | unreachable | slow to answer (alive, busy)
    generation: int | None
    in_flight: int | None
    deadlines_5m: int | None
    errors_5m: int | None
    last_warning: str
    problem: str = ""  # why something is unknown (operator endpoint or log)
    sessions: str = ""  # an HTTP front's host sessions, in full ("2/16 open, 1 reclaimed, 0 refused"); "" on stdio
    status_ts: float | None = None  # when the status this row shows was answered (wall time; None: no status)

    def age_text(self, now: float) -> str:
        """How old the status this row shows is ("40 s old"), once older than a few probes; "" while fresh."""
        if self.status_ts is None or now - self.status_ts < STALE_AFTER_S:
            return ""
        age = now - self.status_ts
        return f"{age:.0f} s old" if age < 100 else f"{age / 60:.0f} min old"

    @property
    def trouble(self) -> str:
        """Why this wrapper needs a look ("" when it does not): not reachable, upstream not ready, or deadlines or
        errors in the last five minutes."""
        if self.upstream == "unreachable":
            return "unreachable"
        # SLOW: its process is alive and the machine busy, not a reason to look; its log still says what went wrong
        if self.upstream not in ("ready", SLOW):
            return f"upstream {self.upstream}"
        parts = []
        if self.deadlines_5m:
            parts.append(f"{self.deadlines_5m} deadline{'s' if self.deadlines_5m != 1 else ''}")
        if self.errors_5m:
            parts.append(f"{self.errors_5m} error{'s' if self.errors_5m != 1 else ''}")
        return " and ".join(parts) + " in 5 min" if parts else ""


def fleet_row(
    entry: WrapperEntry,
    status: dict[str, Any] | None,
    outcomes: dict[str, int] | None,
    warning: str | None,
    problem: str = "",
) -> FleetRow:
    """One wrapper's row from what could be learnt about it (None where that part failed). Everything in it came
    from the registry, the wrapper or its log: made safe for the terminal here."""
    entry, status, warning, problem = shown_entry(entry), clean(status), clean(warning), clean(problem)
    wrapper = (status or {}).get("wrapper") or {}
    upstream = wrapper.get("upstream") or {}
    host = wrapper.get("host") or {}
    host_text = " ".join(str(host.get(k)) for k in ("name", "version") if host.get(k)) if isinstance(host, dict) else ""
    in_flight = status.get("in_flight") if status else None
    generation = upstream.get("generation")
    host_text = host_text or ("—" if status else "?")
    sessions = wrapper.get("host_sessions")
    sessions_text = ""
    if isinstance(sessions, dict):  # an HTTP front: its host sessions, and how many were reclaimed or refused
        sessions_text = (
            f"{sessions.get('open', '?')}/{sessions.get('max', '?')} open, {sessions.get('reclaimed', '?')} reclaimed,"
            f" {sessions.get('refused', '?')} refused"
        )
    return FleetRow(
        pid=entry.pid,
        name=entry.name,
        host=host_text,
        upstream=str(upstream.get("state") or "unknown") if status else "unreachable",
        generation=generation if isinstance(generation, int) else None,
        in_flight=len(in_flight) if isinstance(in_flight, list) else None,
        deadlines_5m=None if outcomes is None else outcomes.get("deadline", 0),
        errors_5m=None if outcomes is None else sum(outcomes.get(k, 0) for k in ERROR_OUTCOMES),
        last_warning=warning or "",
        problem=problem,
        sessions=sessions_text,
    )


def log_part(entry: WrapperEntry, now: float) -> tuple[dict[str, int] | None, str | None, str]:
    """(outcomes in the last five minutes, last warning, problem) from the wrapper's log."""
    if not entry.log_path or not entry.session_id or not Path(entry.log_path).exists():
        return None, None, "no log here"
    try:
        with EventReader(entry.log_path) as reader:
            outcomes = reader.recent_outcomes(entry.session_id, now - RECENT_S)
            warning = reader.last_of_kind(entry.session_id, "warning")
    except LogError as exc:
        return None, None, str(exc)
    text = str(warning.data.get("message") or "") if warning is not None else None
    return outcomes, text, ""


async def _status(entry: WrapperEntry, factory: Callable[[WrapperEntry], Any], timeout: float) -> dict[str, Any]:
    async def ask() -> dict[str, Any]:
        async with factory(entry) as op:
            status: dict[str, Any] = await op.status()
            return status

    return await asyncio.wait_for(ask(), timeout)


async def probe_fleet(
    entries: list[WrapperEntry],
    now: float,
    *,
    client_factory: Callable[[WrapperEntry], Any] | None = None,
    timeout: float | None = None,
    known: dict[int, tuple[dict[str, Any], float]] | None = None,
    previous: dict[int, FleetRow] | None = None,
) -> list[FleetRow]:
    """Every wrapper's row, asked in parallel; a wrapper that does not answer in `timeout` (PROBE_TIMEOUT_S, read at
    each call so a test on a loaded machine can lengthen it) and whose process is gone is `unreachable`. `known`:
    statuses already at hand (the watched wrapper's, from the live feed: never asked again). `previous`: the last
    rows; a live wrapper slow to answer keeps what its last row knew, with the time of its status."""
    timeout = PROBE_TIMEOUT_S if timeout is None else timeout
    known = known or {}
    previous = previous or {}
    factory = client_factory or (lambda e: OperatorClient.for_entry(e, call_timeout_s=timeout))

    async def one(entry: WrapperEntry) -> FleetRow:
        status: dict[str, Any] | None = None
        status_ts: float | None = None
        problem = ""
        late = False
        if entry.pid in known:
            status, status_ts = known[entry.pid]
        else:
            try:
                status, status_ts = await _status(entry, factory, timeout), now
            except TimeoutError:
                late = pid_alive(entry.pid)
                problem = f"no answer within {timeout:g} s"
            except (OperatorError, OSError) as exc:
                problem = str(exc) or type(exc).__name__
        outcomes, warning, log_problem = await asyncio.to_thread(log_part, entry, now)
        row = replace(fleet_row(entry, status, outcomes, warning, problem or log_problem), status_ts=status_ts)
        before = previous.get(entry.pid)
        if late and before is not None and before.status_ts is not None:  # what it said last, and how old
            return replace(before, deadlines_5m=row.deadlines_5m, errors_5m=row.errors_5m, problem=problem)
        return replace(row, upstream=SLOW) if late else row

    rows = await asyncio.gather(*(one(e) for e in entries), return_exceptions=True)
    out: list[FleetRow] = []
    for entry, row in zip(entries, rows, strict=True):
        if isinstance(row, BaseException):
            with contextlib.suppress(Exception):
                row = fleet_row(entry, None, None, None, str(row))
        out.append(row if isinstance(row, FleetRow) else fleet_row(entry, None, None, None, "failed"))
    return out
