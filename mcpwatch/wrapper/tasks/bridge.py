"""MCP Tasks bridged for hosts that cannot use them: mcpwatch stands in for the host as the task's requestor.

A host that did not declare `tasks` calls a tool the upstream lists as task-only (`execution.taskSupport:
"required"`; with `[tasks] bridge = "optional"` also tools that may run as tasks): mcpwatch adds `params.task` to
the call upstream, and when the upstream answers with a task, keeps the host's call waiting while it polls
`tasks/get` at the server's `pollInterval`. Each status message reaches the host as progress when it gave a
progress token (which also keeps its idle clock alive); `input_required` is resolved through `tasks/result`, which
carries the server's elicitation to the host when it declared elicitation (an extension task's requests reach its
2026-era host as a multi round-trip question: `bridge_input`), else the task is cancelled and the host told why; the
terminal result is the host's answer. The host's tools/list no longer shows those tools as task-only.

At the host's budget (or its own cancel) the host gets the partial answer of any cut call, but the task goes on:
its result is logged as a late result, and an identical call from the same host within `[tasks] reuse_s` attaches
to the running task (answered when it ends) or takes its finished result at once, instead of starting it again.
When its polls fall due, sooner than the server's interval when a host needs news, and until when (nobody left to
use its result: then cancelled upstream, and logged): `bridge_polls`.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable, Coroutine
from typing import Any

from mcpwatch.config import TasksSettings
from mcpwatch.events import (
    Kind,
    Outcome,
    RequestEndDetail,
    TaskCreatedData,
)
from mcpwatch.scheduler import Scheduler
from mcpwatch.wire import modern_version
from mcpwatch.wrapper.calls.partial import NAME_CHARS, abandoned_reply, failed_reply, peer_text
from mcpwatch.wrapper.calls.pending import Counters, HostLink, Pending, PendingTable
from mcpwatch.wrapper.calls.progress import note_progress
from mcpwatch.wrapper.calls.recorder import Recorder
from mcpwatch.wrapper.framing import frames
from mcpwatch.wrapper.tasks.bridge_input import InputRelay
from mcpwatch.wrapper.tasks.bridge_log import (
    PREVIEW_CHARS,
    REUSABLE,
    BridgedRun,
    answer_from_run,
    log_late_result,
    run_key,
)
from mcpwatch.wrapper.tasks.bridge_polls import DEFAULT_POLL_S, BridgePolls
from mcpwatch.wrapper.tasks.shapes import (
    EXTENSION,
    TaskState,
    declares_extension,
    envelope,
    host_has_tasks,
    needs_extension,
    read_task,
    strip_related,
    tool_task_support,
    with_extension,
    without_task_support,
)
from mcpwatch.wrapper.tasks.watch import TaskWatch

POLL_TIMEOUT_S = 30.0
IDLE_RUNS_MAX = 256  # running tasks no host call waits for (kept for a retry): the oldest beyond are cancelled
KEPT_BYTES_MAX = 64 * 1024 * 1024  # finished results kept in memory for an identical call: the oldest go first
LIST_PAGES_MAX = 100  # tools/list pages read to learn a tool's task support


class TaskBridge:
    def __init__(
        self,
        *,
        settings: TasksSettings,
        table: PendingTable,
        recorder: Recorder,
        scheduler: Scheduler,
        counters: Counters,
        request: Callable[..., Any],
        upstream_capabilities: Callable[[], Any],
        on_progress: Callable[[Pending], None],
        modern: Callable[[], bool],
        warn: Callable[[str], None],
    ) -> None:
        self.settings = settings
        self.support: dict[str, str] = {}  # tool -> execution.taskSupport, from the upstream's tools/list
        self.runs: dict[tuple[str, str, str], BridgedRun] = {}
        self._by_task: dict[str, BridgedRun] = {}
        self._by_up_id: dict[int, BridgedRun] = {}  # every waiting host call (the maker and attached ones)
        self._kept: dict[
            BridgedRun, int
        ] = {}  # finished results waiting for an identical call: their sizes, oldest first
        self.kept_bytes = 0
        self._idle: dict[BridgedRun, None] = {}  # running tasks whose last waiting call was cut, oldest first
        self._hosts: dict[int, dict[str, Any]] = {}  # id(link) -> the capabilities its initialize declared
        self._table = table
        self._recorder = recorder
        self._scheduler = scheduler
        self._counters = counters
        self._request = request
        self._upstream_capabilities = upstream_capabilities
        self._on_progress = on_progress
        self._modern = modern
        self._jobs: set[asyncio.Future[None]] = set()
        self.upstream_extension = False  # the upstream's server/discover declared the tasks extension (2026 era)
        # told when what a call's path rests on was learnt (a tool's task support, the extension): the plain path's
        # verdicts (`core.plain`) are made again, also after a listing of the bridge's own, read after its answer
        self.on_learnt: Callable[[], None] = _nothing
        self.input = InputRelay(
            table=table,
            scheduler=scheduler,
            request=request,
            spawn=self._spawn,
            give_up=self._abandon,
            stop_waiting=self._stop_waiting,
            poll_soon=lambda run: self.polls.soon(run),
            wait_s=settings.reuse_s,
        )
        self.polls = BridgePolls(settings=settings, scheduler=scheduler, poll=self._poll, expire=self._expire)
        # every task-augmented call, watched; it tells this bridge of the tasks the bridge made
        self.watch = TaskWatch(
            table=table, recorder=recorder, scheduler=scheduler, request=request, warn=warn, bridge=self
        )

    # ------------------------------------------------------------------ what a host and the upstream can do

    def host_initialized(self, link: HostLink, capabilities: Any) -> None:
        self._hosts[id(link)] = capabilities if isinstance(capabilities, dict) else {}

    def forget_link(self, link: HostLink) -> None:
        """The host's session ended: its finished results are dropped, and its running tasks, which nobody else can
        take, are cancelled upstream."""
        self._hosts.pop(id(link), None)
        connection = getattr(link, "connection", None)
        for key in [k for k in self.runs if k[0] == connection]:
            run = self.runs.pop(key)
            if run.finished_at is None:
                if not any(p.open and p.link is not link for p in run.waiters):
                    why = f"the host's session ended; mcpwatch cancelled bridged task {run.task_id} upstream"
                    self._expire(run, why)
                continue
            self._drop(run)

    def forget_connection(self, connection: str) -> None:
        """A host session whose calls this core made for it (era translation: the host's link is not this core's)
        ended: its tasks here, which nobody else may take, are cancelled upstream, its finished results dropped."""
        for key in [k for k in self.runs if k[0] == connection]:
            run = self.runs.pop(key)
            if run.finished_at is None:
                self._expire(run, f"the host's session ended; mcpwatch cancelled bridged task {run.task_id} upstream")
            else:
                self._drop(run)

    def _bridges(self, tool: str | None) -> bool:
        if tool is None or self.settings.bridge == "off":
            return False
        support = self.support.get(tool)
        return support == "required" or (support == "optional" and self.settings.bridge == "optional")

    def upstream_takes_tasks(self) -> bool:
        capabilities = self._upstream_capabilities()
        tasks = capabilities.get("tasks") if isinstance(capabilities, dict) else None
        requests = tasks.get("requests") if isinstance(tasks, dict) else None
        tools = requests.get("tools") if isinstance(requests, dict) else None
        return isinstance(tools, dict) and "call" in tools

    def discovered(self, result: dict[str, Any]) -> None:
        """The upstream's `server/discover` answer: whether it takes the tasks extension."""
        capabilities = result.get("capabilities")
        extensions = capabilities.get("extensions") if isinstance(capabilities, dict) else None
        self.upstream_extension = isinstance(extensions, dict) and EXTENSION in extensions
        self.on_learnt()

    def _can_bridge(self, link: HostLink, params: dict[str, Any]) -> bool:
        """The host cannot run tasks and the upstream can: a 2026-era request (which names its capabilities itself)
        without the extension to an upstream with it, or a 2025-era host without tasks to an upstream with them."""
        if "task" in params:
            return False
        if modern_version({"params": params}) is not None:
            return self.upstream_extension and not declares_extension(params.get("_meta"))
        return self._host_lacks_tasks(link) and self.upstream_takes_tasks()

    def host_has_tasks(self, link: HostLink) -> bool:
        return host_has_tasks(self._hosts.get(id(link)))

    def _host_lacks_tasks(self, link: HostLink) -> bool:
        return not host_has_tasks(self._hosts.get(id(link)))

    def tools_listed(self, link: HostLink, result: dict[str, Any]) -> dict[str, Any]:
        """Note each tool's task support; a host without tasks sees the tools mcpwatch bridges as ordinary ones."""
        tools = result.get("tools")
        if not isinstance(tools, list):
            return result
        for tool in tools:
            if isinstance(tool, dict) and isinstance(tool.get("name"), str):
                if isinstance(tool.get("execution"), dict):
                    self.support[tool["name"]] = tool_task_support(tool)
                else:  # a 2026-era listing never says: what a refusal taught stays
                    self.support.setdefault(tool["name"], "forbidden")
        self.on_learnt()
        if not self._host_lacks_tasks(link) or not self.upstream_takes_tasks():
            return result
        shown = [without_task_support(t) if self._bridges(_name(t)) else t for t in tools]
        return {**result, "tools": shown}

    def wants(self, link: HostLink, tool: str | None, params: dict[str, Any]) -> bool:
        """Whether this call is one mcpwatch runs as a task for its host."""
        return self._bridges(tool) and self._can_bridge(link, params)

    def retry_as_task(self, pending: Pending, message: dict[str, Any]) -> bool:
        """A 2026-era call the upstream refused because it runs only as a task (`-32021` naming the tasks
        extension; its tools/list does not say so): it is made a bridged call, to be sent again with the extension
        declared, and the tool is remembered as task-only."""
        params = pending.message.get("params")
        if (
            pending.method != "tools/call"
            or pending.bridged
            or pending.tool is None
            or self.settings.bridge == "off"
            or not isinstance(params, dict)
            or not needs_extension(message.get("error"))
            or not self._can_bridge(pending.link, params)
        ):
            return False
        self.support[pending.tool] = "required"
        self.on_learnt()
        pending.bridged = True
        params = dict(params)
        self.augment(params)
        pending.message = {**pending.message, "params": params}
        return True

    def era_refusal(self, pending: Pending, error: Any) -> dict[str, Any] | None:
        """A 2025-era host's call that the upstream refused because the tool runs only as a task of the extension
        (`-32021`), which such a server takes only from 2026-era requests: the refusal, saying in one line why
        mcpwatch cannot run it for this host and what can. None for any other answer."""
        params = pending.message.get("params")
        if pending.method != "tools/call" or not isinstance(error, dict) or not needs_extension(error):
            return None
        if modern_version({"params": params}) is not None:
            return None  # a 2026-era host: the refusal is its own to read (or the bridge's to resolve)
        name = json.dumps((pending.tool or "")[:200])  # quoted, its control characters escaped
        text = (
            f"mcpwatch: tool {name} runs only as a task of the MCP tasks extension ({EXTENSION}), which this server "
            "takes only from 2026-era requests, and this host connected with initialize (2025 era); mcpwatch runs "
            "such a call for a 2025-era host only over its HTTP front (--listen), and only when the server takes the "
            'extension there: call it from a 2026-era client (the MCP Python SDK 2.x with mode="auto", FastMCP 4 with '
            "fastmcp-tasks), or wrap the server with --listen"
        )
        return {**error, "message": text}

    def must_list_first(self, link: HostLink, tool: str | None, params: dict[str, Any]) -> bool:
        """A host without tasks calls a tool whose task support is not known yet (it never listed the tools through
        mcpwatch): the tools must be listed first, or a task-only tool would fail."""
        return (
            tool is not None
            and modern_version({"params": params}) is None  # a 2026-era listing does not show task support
            and tool not in self.support
            and self.settings.bridge != "off"
            and self._can_bridge(link, params)
        )

    def list_then(self, tool: str, params: dict[str, Any], then: Callable[[], None]) -> None:
        """List the upstream's tools (all pages), note their task support, then go on with the call (a 2026-era
        call's listing carries its envelope)."""
        self._spawn(self._list_then(tool, envelope(params.get("_meta")), then))

    async def _list_then(self, tool: str, meta: dict[str, Any], then: Callable[[], None]) -> None:
        cursor: Any = None
        try:
            for _page in range(LIST_PAGES_MAX):
                page = {"cursor": cursor} if cursor else {}
                answer = await self._request(
                    "tools/list", {**page, **({"_meta": meta} if meta else {})}, POLL_TIMEOUT_S
                )
                result = answer.get("result") if isinstance(answer, dict) else None
                if not isinstance(result, dict):
                    break
                for listed in result.get("tools") or []:
                    if _name(listed) is not None:
                        self.support[listed["name"]] = tool_task_support(listed)
                cursor = result.get("nextCursor")
                if not cursor:
                    break
        except (ConnectionError, TimeoutError):
            pass  # the call goes on as it is: the upstream answers it as it would have
        self.support.setdefault(tool, "forbidden")  # not listed: not a task tool (and never listed again for it)
        self.on_learnt()
        then()

    def augment(self, params: dict[str, Any]) -> None:
        """Ask the upstream for a task: `params.task` (2025-11-25), or the extension declared in `_meta` (2026)."""
        if modern_version({"params": params}) is not None:
            params["_meta"] = with_extension(params.get("_meta"))
        else:
            params["task"] = {"ttl": int(self.settings.ttl_s * 1000)}

    # ------------------------------------------------------------------ an identical call: attach, or take the result

    def answer_at_once(self, link: HostLink, host_id: Any, tool: str, arguments: Any, meta: Any = None) -> bool:
        """An identical call whose cut predecessor's task has finished: answered now with that task's result."""
        if not self.runs:
            return False  # the common case, without canonicalising the arguments
        run = self.runs.get(run_key(link, tool, arguments, meta))  # type: ignore[arg-type]  # a None key finds no run
        if run is None or run.result is None or run.finished_at is None:
            return False
        answer_from_run(self._table, run, link, host_id, tool, arguments, self._scheduler.time())
        return True

    @property
    def attachable(self) -> bool:
        """Whether a call may join a running task: an identical call's, or one bringing its host's input."""
        return bool(self.runs or self.input.by_token)

    def attach(self, pending: Pending, arguments: Any) -> bool:
        """An identical call while the task still runs, or the call bringing the answers to its input requests
        (`bridge_input`): it waits for the same task instead of starting another."""
        params = got if isinstance(got := pending.message.get("params"), dict) else {}
        run = self.input.run_for(params)
        if run is not None:  # its refusal was checked first: it is the host's, and answers what is asked
            self.input.answered(run, params, _poll_params(run))
        elif self.runs:
            key = run_key(pending.link, pending.tool or "", arguments, params.get("_meta"))
            run = self.runs.get(key)  # type: ignore[arg-type]  # a None key finds no run
            if run is not None and run.given_up:
                return False  # being cancelled upstream: the call makes a task of its own
        if run is None or run.finished_at is not None:
            return False
        pending.bridged = True
        self.polls.waiting(run, pending)
        self._by_up_id[pending.up_id] = run
        self.polls.waiters_changed(run)
        self.polls.soon(run)  # a host waits for its news now
        state = self.watch.tasks[run.task_id].state if run.task_id in self.watch.tasks else None
        data = TaskCreatedData(
            task_id=run.task_id,
            status=state.status if state is not None else "working",
            status_message=state.status_message if state is not None else None,
            ttl_ms=state.ttl_ms if state is not None else None,
            poll_interval_ms=state.poll_interval_ms if state is not None else None,
            era=run.era,
            bridged=True,
            attached_to=run.maker.request_key,
        )
        self._recorder.emit(Kind.TASK_CREATED, request_id=pending.request_key, tool=pending.tool, **data)
        if run.input is not None and run.input.token == params.get("requestState"):
            run.maker = pending  # the host's call that waits for it now: a cut of it keeps the result as late
        return True

    # ------------------------------------------------------------------ the task's life

    def created(self, pending: Pending, state: TaskState) -> None:
        """The upstream made the task: the host's call keeps waiting, and mcpwatch polls for it."""
        ttl_s = state.ttl_ms / 1000 if state.ttl_ms is not None else self.settings.ttl_s
        params = pending.message.get("params", {})
        key = run_key(pending.link, pending.tool or "", params.get("arguments"), params.get("_meta"))
        run = BridgedRun(key, pending, state.task_id, DEFAULT_POLL_S, ttl_s, self.settings.reuse_s, era=state.era)
        if state.era == "extension":  # each poll repeats the call's 2026-era envelope, the extension declared
            run.poll_meta = envelope(pending.message.get("params", {}).get("_meta"))
        self.polls.waiting(run, pending)
        old = self.runs.get(run.key) if run.key is not None else None
        if old is not None and old.finished_at is not None:
            self._drop(old)
        if run.key is not None:  # else no identical call can find it: it only answers its own host
            self.runs[run.key] = run
        self._by_task[state.task_id] = run
        self._by_up_id[pending.up_id] = run
        self._relay(run, state)
        self.polls.start(run, state.poll_interval_ms)

    def _poll(self, run: BridgedRun) -> None:
        """A poll falls due (`bridge_polls` says when)."""
        self._spawn(self._poll_once(run))

    async def _poll_once(self, run: BridgedRun) -> None:
        again, interval_ms = False, None
        try:
            again, interval_ms = await self._get(run)
        finally:
            self.polls.done(run, interval_ms, again=again)

    async def _get(self, run: BridgedRun) -> tuple[bool, int | None]:
        """One tasks/get, observed: whether to poll again, and the interval the server suggests now."""
        try:
            answer = await self._request("tasks/get", _poll_params(run), POLL_TIMEOUT_S)
        except (ConnectionError, TimeoutError):
            answer = None  # unreachable for now: a lost upstream ends the task; else try again
        if run.finished_at is not None:
            return False, None
        if isinstance(answer, dict) and "error" in answer:
            why = f"the upstream no longer knows task {run.task_id}: {frames.text_of(answer['error'], 300)}"
            self.watch.end(run.task_id, Outcome.ERROR, why)
            return False, None
        state = read_task(answer.get("result"), run.era) if isinstance(answer, dict) else None
        if state is None or state.task_id != run.task_id:
            return True, None
        if state.status == "input_required" and not run.resolving:
            self._input_required(run, state)
        elif state.terminal and run.era == "extension":
            self.watch.observe(state, "bridge")  # its tasks/get carries the result: the watch ends it
            return False, None
        elif state.terminal and state.status != "cancelled":
            self.watch.observe(state, "bridge")
            self._resolve(run)  # the result (or error) comes by tasks/result
            return False, None
        else:
            self.watch.observe(state, "bridge")  # a change reaches the host through `changed`
            if state.terminal:
                return False, None
        return True, state.poll_interval_ms

    def _input_required(self, run: BridgedRun, state: TaskState) -> None:
        """The task asks its requestor for input: a 2025-era task through tasks/result, which carries the server's
        elicitation to a host that declared it; an extension task's requests as its 2026-era host's multi round-trip
        question (`bridge_input`). A host that cannot answer is told so, and the task is cancelled rather than left
        waiting forever."""
        self.watch.observe(state, "bridge")
        if run.era == "extension":
            cannot = self.input.relay(run, state)
            if cannot is None:
                return
        else:
            capabilities = self._hosts.get(id(run.maker.link)) or {}
            if isinstance(capabilities.get("elicitation"), dict):
                self._resolve(run)
                return
            cannot = "the host did not declare elicitation"
        why = (
            f"task {run.task_id} needs input from the user (its question is the last progress), "
            f"and {cannot}; mcpwatch cancelled the task"
        )
        self._abandon(run, why)

    def _abandon(self, run: BridgedRun, why: str) -> None:
        if not run.resolving and not run.given_up:
            run.resolving = run.given_up = True
            self._spawn(self._give_up(run, why))

    def _expire(self, run: BridgedRun, why: str) -> None:
        """Nobody can use the task's result any more (`bridge_polls`): it is cancelled upstream, even while a
        tasks/result waits for it, and no longer polled."""
        if run.finished_at is None and not run.given_up:
            run.resolving = run.given_up = True
            self.polls.stop(run)
            if run.fetch is not None:  # a tasks/result that never came waits no longer
                run.fetch.cancel()
            self._spawn(self._give_up(run, why))

    def _stop_waiting(self, pending: Pending) -> None:
        """A host call answered with the task's input requests no longer waits for it."""
        run = self._by_up_id.pop(pending.up_id, None)
        if run is not None:
            self.polls.waiters_changed(run)

    async def _give_up(self, run: BridgedRun, why: str) -> None:
        try:
            await self._request("tasks/cancel", _poll_params(run), POLL_TIMEOUT_S)
        except (ConnectionError, TimeoutError):
            pass  # the host is answered all the same; the task's TTL ends it upstream
        self.watch.end(run.task_id, Outcome.ERROR, why)

    def _resolve(self, run: BridgedRun) -> None:
        if not run.resolving:
            run.resolving = True
            run.fetch = self._spawn(self._fetch_result(run))

    async def _fetch_result(self, run: BridgedRun) -> None:
        try:
            # never longer than the TTL mcpwatch asked for, whatever the server answered
            answer = await self._request("tasks/result", {"taskId": run.task_id}, min(run.ttl_s, self.settings.ttl_s))
        except (ConnectionError, TimeoutError) as exc:
            self.watch.end(run.task_id, Outcome.ERROR, f"tasks/result for task {run.task_id} failed: {exc}")
            return
        task = self.watch.tasks.get(run.task_id)
        if task is not None and isinstance(answer, dict):
            self.watch.finished(task, strip_related(answer.get("result")), answer.get("error"), "bridge")

    def made(self, task_id: str) -> bool:
        return task_id in self._by_task

    def changed(self, state: TaskState) -> None:
        """The watch saw a bridged task change (by mcpwatch's poll or the server's notification)."""
        run = self._by_task.get(state.task_id)
        if run is not None and run.finished_at is None:
            self._relay(run, state)
            if state.terminal and state.status != "cancelled" and run.era == "2025-11-25":
                self._resolve(run)  # its result (or error) at once, not at the next poll

    def _relay(self, run: BridgedRun, state: TaskState) -> None:
        """A status change as the host's progress (and the last progress a cut call's partial answer shows)."""
        if run.last == (state.status, state.status_message):
            return
        run.last = (state.status, state.status_message)
        run.changes += 1
        status_message = peer_text(state.status_message) if state.status_message else None
        message = f"{state.status}: {status_message}" if status_message else state.status
        for pending in run.waiters:
            if not pending.open:
                continue
            params: dict[str, Any] = {"progress": run.changes, "message": message}
            note_progress(self._recorder, pending, params)
            self._on_progress(pending)
            if pending.host_token is not None:
                notification = {**params, "progressToken": pending.host_token}
                pending.link.send({"jsonrpc": "2.0", "method": "notifications/progress", "params": notification})

    # ------------------------------------------------------------------ the host stops waiting; the task ends

    def cut(self, pending: Pending, reason: str) -> bool:
        """The host's budget (or its cancel) ends its wait, not the task: the host gets the partial answer."""
        run = self._by_up_id.pop(pending.up_id, None)
        if run is None:
            return False
        elapsed = self._table.elapsed(pending)
        if pending in run.waiters:
            run.waiters.remove(pending)
        if pending is run.maker:
            run.cut_after_s, run.cut_mono, run.cut_reason = elapsed, self._scheduler.time(), reason
        self.polls.waiters_changed(run)  # none left: its result waits reuse_s for an identical call, no longer
        self._note_idle(run)
        detail: RequestEndDetail = {
            "partial": pending.last_progress is not None,
            "error": reason,
            "task_id": run.task_id,
        }
        reply = None
        if reason != "host_cancel":
            note = (
                f"it goes on upstream as task {peer_text(run.task_id, NAME_CHARS)}: the same call within "
                f"{self.settings.reuse_s:g} s takes its result (or waits for it)"
            )
            reply = abandoned_reply(pending, reason, elapsed, note, self._modern())
            detail["result_preview"] = frames.text_of(reply, PREVIEW_CHARS)
        outcome = Outcome.DEADLINE if reason == "deadline" else Outcome.CANCELLED
        self._table.finish(pending, outcome, reply, detail, elapsed=elapsed)
        return True

    def _note_idle(self, run: BridgedRun) -> None:
        """A task nobody waits for is polled for `[tasks] reuse_s`, for a retry: at most IDLE_RUNS_MAX of them at
        once, the oldest beyond cancelled upstream now (a host cutting many distinct calls would else leave that many
        tasks polled for ten minutes)."""
        if run.finished_at is not None or run.given_up or any(p.open for p in run.waiters):
            return
        self._idle.pop(run, None)
        self._idle[run] = None
        while len(self._idle) > IDLE_RUNS_MAX:
            oldest = next(iter(self._idle))
            del self._idle[oldest]
            if oldest.finished_at is not None or oldest.given_up or any(p.open for p in oldest.waiters):
                continue  # ended, or a retry joined it: not idle any more
            why = (
                f"nobody waited for bridged task {oldest.task_id} and {IDLE_RUNS_MAX} such tasks, newer, wait for a "
                "retry already; mcpwatch cancelled it upstream"
            )
            self._expire(oldest, why)

    def cancel(self, request_key: str) -> bool:
        """The operator's cancel of a bridged call: the task itself is cancelled (tasks/cancel)."""
        for run in self._by_task.values():
            if run.finished_at is None and any(p.request_key == request_key for p in run.waiters):
                return self.watch.cancel_task(run.task_id)
        return False

    def ended(self, task_id: str, outcome: Outcome, detail: RequestEndDetail, result: Any, error: Any) -> None:
        """The task is over: every host call still waiting gets its answer; a cut one's result is kept."""
        run = self._by_task.get(task_id)
        if run is None:
            return
        run.finished_at = now = self._scheduler.time()
        run.outcome = outcome
        self.polls.stop(run)
        self.input.forget(run)  # nothing waits for its host's input any more
        if error is not None:
            run.result = {"error": error}
        elif result is not None:
            run.result = {"result": result}
        answered = False
        for pending in run.waiters:
            self._by_up_id.pop(pending.up_id, None)
            if not pending.open:
                continue
            answered = True
            if run.result is not None:
                reply = {"jsonrpc": "2.0", "id": pending.host_id, **run.result}
            else:
                text = detail.get("error") or f"task {task_id} ended {detail.get('task_status')}"
                if run.last is not None and text == run.last[1]:  # its status message: the last progress shows it
                    text = f"task {peer_text(task_id, NAME_CHARS)} ended {detail.get('task_status')}"
                reply = failed_reply(pending, str(text), self._modern())
            self._table.finish(pending, outcome, reply, {**detail, "polls": 0})
        run.waiters.clear()
        if run.cut_after_s is not None and run.result is not None:
            log_late_result(self._recorder, self._counters, run, now)
        elif not answered and run.result is None:  # no host call heard why: the log does
            message = f"bridged task {task_id} ended: {detail.get('error') or detail.get('task_status')}"
            self._recorder.emit(Kind.WARNING, request_id=run.maker.request_key, tool=run.maker.tool, message=message)
        if answered or run.result is None or outcome not in REUSABLE:
            self._drop(run)
        else:  # nobody has it yet: an identical call from the same host takes it, for a while
            run.expiry = self._scheduler.call_later(self.settings.reuse_s, self._drop, run)
            self._keep(run)

    def _keep(self, run: BridgedRun) -> None:
        """Count a kept result's bytes: over KEPT_BYTES_MAX in all, the oldest are dropped (an identical call then
        runs again), each said in the log. Memory bounded by bytes, not by a count of results of any size."""
        size = len(frames.encode(run.result or {}))
        self._kept[run] = size
        self.kept_bytes += size
        while self.kept_bytes > KEPT_BYTES_MAX and self._kept:
            oldest = next(iter(self._kept))
            self._drop(oldest)
            message = (
                f"the result of bridged task {oldest.task_id} was no longer kept for an identical call: finished "
                f"results kept by mcpwatch reached {KEPT_BYTES_MAX:,} bytes, and it was the oldest"
            )
            self._recorder.emit(
                Kind.WARNING, request_id=oldest.maker.request_key, tool=oldest.maker.tool, message=message
            )

    def _drop(self, run: BridgedRun) -> None:
        self.kept_bytes -= self._kept.pop(run, 0)
        self._idle.pop(run, None)
        if run.expiry is not None:
            run.expiry.cancel()
            run.expiry = None
        if run.key is not None and self.runs.get(run.key) is run:
            del self.runs[run.key]
        if self._by_task.get(run.task_id) is run:
            del self._by_task[run.task_id]

    def _spawn(self, job: Coroutine[Any, Any, None]) -> asyncio.Future[None]:
        future = asyncio.ensure_future(job)
        self._jobs.add(future)
        future.add_done_callback(self._jobs.discard)
        return future


def _poll_params(run: BridgedRun) -> dict[str, Any]:
    return {"taskId": run.task_id, **({"_meta": run.poll_meta} if run.poll_meta else {})}


def _name(tool: Any) -> str | None:
    return tool.get("name") if isinstance(tool, dict) and isinstance(tool.get("name"), str) else None


def _nothing() -> None:
    """`TaskBridge.on_learnt` until a core listens."""
