"""What a bridged task writes in the log when its host had stopped waiting: its result as a late result, and an
identical call answered from it (`wrapper.tasks.bridge`). The same events as `late_results` writes for an ordinary
cut call, so the report's "finished late", `whatif` and the console read them alike."""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from typing import Any

from mcpwatch.events import Kind, LateResultData, LateReuseData, Outcome
from mcpwatch.scheduler import Timer
from mcpwatch.wire import MODERN_CLIENT_META
from mcpwatch.wrapper.calls.pending import Counters, HostLink, Pending, PendingTable
from mcpwatch.wrapper.calls.recorder import Recorder
from mcpwatch.wrapper.framing import frames
from mcpwatch.wrapper.tasks.shapes import Era

PREVIEW_CHARS = 4096
REUSABLE = frozenset({Outcome.OK, Outcome.TOOL_ERROR, Outcome.ERROR})  # the task's own answer, not a failure of ours


@dataclass(eq=False, slots=True)
class BridgedInput:
    """A bridged extension task's input requests, relayed to its host as a multi round-trip question."""

    token: str  # the requestState the host's answering call must carry: unguessable, this run's alone
    host: tuple[str | None, str]  # the host connection (None: sessionless) and client name that may answer
    call: str  # the tool and arguments (canonical JSON) the answering call must repeat, as a retried call does
    asked: dict[str, Any] = field(default_factory=dict)  # every request relayed, by the upstream's key
    answered: set[str] = field(default_factory=set)  # keys whose answer went upstream (tasks/update)
    rounds: int = 0  # relays of new requests: bounded (INPUT_ROUNDS_MAX)
    timer: Timer | None = None  # the host must call again with its answer by then

    def outstanding(self) -> dict[str, Any]:
        return {k: v for k, v in self.asked.items() if k not in self.answered}


@dataclass(eq=False, slots=True)
class BridgedRun:
    """One task mcpwatch made for a host, and the host calls waiting for its answer."""

    key: tuple[str, str, str] | None  # (owner, tool, arguments digest): what an identical call matches
    maker: Pending  # the call that made it
    task_id: str
    poll_s: float
    ttl_s: float
    reuse_s: float  # how long its result waits for an identical call, once nobody has it
    waiters: list[Pending] = field(default_factory=list)
    # (the poll before its budget ends, a tie-breaker, the call) of each waiting call, soonest first (`bridge_polls`)
    leads: list[tuple[float, int, Pending]] = field(default_factory=list)
    changes: int = 0  # status changes relayed so far (the progress count the host sees)
    last: tuple[str, str | None] | None = None  # the status and message last relayed
    resolving: bool = False  # a tasks/result is under way
    cut_after_s: float | None = None  # when the maker's host stopped waiting
    cut_reason: str = "deadline"  # why: its budget, or its own cancel
    cut_mono: float | None = None
    finished_at: float | None = None
    result: dict[str, Any] | None = None  # the reply body kept for reuse: {"result": …} or {"error": …}
    outcome: Outcome | None = None
    expiry: Timer | None = None
    era: Era = "2025-11-25"
    poll_meta: dict[str, Any] | None = None  # the extension's: the 2026-era envelope every poll repeats
    input: BridgedInput | None = None  # the extension's input requests relayed to the host (`bridge_input`)
    # its polls (`bridge_polls`): the next one and when it is due, one under way, and the ends of its polling
    poll_timer: Timer | None = None
    poll_due: float | None = None
    polling: bool = False
    poll_again: bool = False  # someone asked for a poll while one was under way: the next follows at once
    ramp_s: float | None = None  # a host waits for news: the next polls come this soon, doubling to poll_s
    last_poll_at: float | None = None
    idle_timer: Timer | None = None  # no host call waits: cancelled when this fires ([tasks] reuse_s)
    life_timer: Timer | None = None  # the TTL mcpwatch asked for ([tasks] ttl_s)
    given_up: bool = False  # mcpwatch cancels it upstream
    fetch: Any = None  # the tasks/result under way (an asyncio future): given up with the task


def run_key(link: Any, tool: str, arguments: Any, meta: Any = None) -> tuple[str, str, str] | None:
    """What an identical call matches: the same owner (`attach_owner`), tool and arguments (canonical JSON, kept
    as a digest: a key costs the same whatever the arguments weigh)."""
    owner = attach_owner(link, meta)
    if owner is None:
        return None
    canonical = json.dumps(arguments if arguments is not None else {}, sort_keys=True, default=str)
    return (owner, tool, hashlib.sha256(canonical.encode("utf-8", "surrogatepass")).hexdigest())


def attach_owner(link: Any, meta: Any) -> str | None:
    """Whose call an identical call may attach to. A host connection's name ("stdio", "session <uuid>") where it has
    one. A sessionless 2026-era request over the HTTP front proves no connection, so its owner is what it can prove
    (the front's `sessionless_principal`: "bearer" when every request must carry the front's token, else "local",
    any process on this machine) with the client it names (`_meta` clientInfo name and version, a claim, so two
    kinds of host never meet), kept as a digest. None (no attach at all) for a request that names no client or a
    link that grants none."""
    connection = getattr(link, "connection", None)
    if connection is not None:
        return str(connection)
    principal = getattr(link, "sessionless_principal", None)
    client = meta.get(MODERN_CLIENT_META) if isinstance(meta, dict) else None
    if principal is None or not isinstance(client, dict):
        return None
    name = client.get("name")
    if not isinstance(name, str) or not name:
        return None
    claimed = json.dumps([name, client.get("version")], default=str)
    return f"sessionless {principal} {hashlib.sha256(claimed.encode('utf-8', 'surrogatepass')).hexdigest()[:32]}"


def log_late_result(recorder: Recorder, counters: Counters, run: BridgedRun, now: float) -> None:
    """The task ended after its maker's host stopped waiting: its answer, as a late result of that call."""
    assert run.result is not None and run.cut_after_s is not None and run.cut_mono is not None
    body = run.result.get("result", run.result.get("error"))
    text = json.dumps(body, ensure_ascii=False, default=str)
    outcome = run.outcome if run.outcome in REUSABLE else Outcome.ERROR
    late = LateResultData(
        up_id=run.maker.up_id,
        reason=run.cut_reason,  # type: ignore[typeddict-item]  # a TombstoneReason, as the call was cut
        cut_after_s=round(run.cut_after_s, 6),
        delay_s=round(now - run.cut_mono, 6),
        duration_s=round(now - run.maker.started, 6),
        outcome=outcome.value,  # type: ignore[typeddict-item]  # one of REUSABLE, else error
        size_bytes=len(text.encode()),
        reuse_ttl_s=run.reuse_s if run.outcome in REUSABLE else None,
        result_preview=text[:PREVIEW_CHARS],
        truncated=len(text) > PREVIEW_CHARS,
    )
    if "error" in run.result:
        late["error"] = frames.text_of(body, 1000)
    counters.late_results += 1
    recorder.emit(Kind.LATE_RESULT, request_id=run.maker.request_key, tool=run.maker.tool, **late)


def answer_from_run(
    table: PendingTable, run: BridgedRun, link: HostLink, host_id: Any, tool: str, arguments: Any, now: float
) -> None:
    """An identical call answered at once with the finished task's answer: one request, marked as a reuse (ended,
    as every call is, in the pending table)."""
    assert run.result is not None and run.finished_at is not None
    reuse = LateReuseData(
        from_request_id=run.maker.request_key,
        delay_s=round(run.finished_at - (run.cut_mono or run.finished_at), 6),
        age_s=round(now - run.finished_at, 6),
        ttl_s=run.reuse_s,
    )
    body = run.result.get("result", run.result.get("error"))
    preview = frames.text_of(body, PREVIEW_CHARS)
    reply = {"jsonrpc": "2.0", "id": host_id, **run.result}
    outcome = run.outcome or Outcome.OK
    table.answer_at_once(
        link, host_id, tool, arguments, outcome, reply, reuse, {"task_id": run.task_id, "result_preview": preview}
    )
