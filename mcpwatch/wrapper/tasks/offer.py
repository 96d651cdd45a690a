"""Tasks offered to hosts that have them, for tools that lack them: here mcpwatch is the task's receiver.

For the tools `[tasks] offer` names (State Sync globs), a host whose `initialize` declared `tasks` is told the server
takes task-augmented `tools/call` (`capabilities.tasks`) and that those tools may run as tasks (`taskSupport:
"optional"`). When it calls one as a task, mcpwatch answers at once with a `CreateTaskResult` of its own (an
unguessable id) and runs the ordinary call upstream without the tools/call budget, bounded by `[tasks] max_s`. It
answers the host's `tasks/get`, `tasks/result` (which blocks until the task ends, as the spec says), `tasks/list`
and `tasks/cancel` (a cancel reaches the upstream as `notifications/cancelled`) itself; progress and server requests
of the call reach the host as they would have. A task belongs to the host connection that made it (`owners`: never
to a client name), for its TTL; an unknown or foreign id is one clear error, as are a TTL beyond `[tasks]
max_ttl_ms`, a poll sooner than half the suggested `pollInterval`, and a task beyond `[tasks] max_running` (in all,
or `max_running_per_host` for one connection). Finished results are held in memory up to `[tasks]
results_memory_mb` in all (`offer_held`), then read back from the log, which keeps them keyed to this upstream
(`kept_log`): an id the log's index does not hold is answered unknown without a query.

The tasks extension (`io.modelcontextprotocol/tasks`, SEP-2663) is offered the same way to a 2026-era request that
declares it in its own `_meta` client capabilities: the answer is the task itself (`resultType: "task"`), `tasks/get`
carries the result once terminal, `tasks/cancel` and `tasks/update` are acknowledged with an empty result. An
upstream answering the call with a question (multi round-trip `input_required`) puts the task in `input_required`
until the host's `tasks/update` answers it, then the call is made again with the answers (`offer_input`). Such a
request proves no session, so its task is reached by its unguessable id from sessionless requests alone (and the
`clientInfo` name it gives must match); the call upstream is told nothing of the extension, so it cannot answer
with a task of its own.
"""

from __future__ import annotations

import asyncio
import json
import secrets
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Any, ClassVar

from mcpwatch.config import TasksSettings
from mcpwatch.events import KeptTask, Kind, TaskCreatedData, TaskStatusData
from mcpwatch.reliability.statesync.glob import match_glob
from mcpwatch.scheduler import Scheduler, Timer
from mcpwatch.wire import MODERN_CLIENT_META, modern_version
from mcpwatch.wrapper.calls.pending import HostLink, Pending, PendingTable
from mcpwatch.wrapper.calls.recorder import Recorder
from mcpwatch.wrapper.framing import frames
from mcpwatch.wrapper.tasks import offer_input
from mcpwatch.wrapper.tasks.kept_log import KeptLog
from mcpwatch.wrapper.tasks.offer_held import HeldResults
from mcpwatch.wrapper.tasks.offer_input import OfferedInput, asks_input
from mcpwatch.wrapper.tasks.offer_kept import DONE, NO_RESULT_METHOD, answer_kept
from mcpwatch.wrapper.tasks.offer_kept import task_error as _error
from mcpwatch.wrapper.tasks.offer_list import Host, TaskLists
from mcpwatch.wrapper.tasks.owners import SESSIONLESS, Owner, may_reach, owner_of, parse_owner
from mcpwatch.wrapper.tasks.shapes import (
    EXTENSION,
    INVALID_PARAMS,
    METHOD_NOT_FOUND,
    declares_extension,
    iso_time,
    poll_task_id,
    related,
    tool_task_support,
    without_extension,
)

ID_PREFIX = "mcpwatch-"
TASKS_CAPABILITY: dict[str, Any] = {"list": {}, "cancel": {}, "requests": {"tools": {"call": {}}}}
NO_HOST_TOKEN = object()  # an offered call's progress token when its host gave none
TASKS_KEPT_MAX = 10_000  # finished tasks kept for their TTL at once; the oldest go first beyond it
ACTIVE = ("working", "input_required")  # a task not ended yet
STATUS_MESSAGE_MAX = 1024  # characters of an upstream's progress message a task keeps as its status message
RUNNING_ERROR = -32000  # a server error: too many tasks running (the host may try again once one has ended)


@dataclass(eq=False, slots=True)
class OfferedTask:
    """One task mcpwatch runs for a host; it is also the link its call's answer and progress arrive on."""

    offer: TaskOffer | None  # the offer of the core its call runs in; None once ended (that core may end first)
    task_id: str
    owner: Owner  # the host connection that made it (`owners`): no other connection reaches it
    link: HostLink  # the host's connection: progress and server requests go there
    pending: Pending
    created_wall: float
    ttl_ms: int
    status: str = "working"
    status_message: str | None = None
    updated_wall: float = 0.0
    reply: dict[str, Any] | None = None  # terminal: {"result": …} or {"error": …}
    waiters: list[tuple[HostLink, Any]] = field(default_factory=list)  # blocked tasks/result requests
    last_poll: float | None = None
    expiry: Timer | None = None
    extension: bool = False  # offered by the tasks extension (2026 era) rather than by params.task (2025-11-25)
    input: OfferedInput | None = None  # the upstream's questions to its call, and the host's answers
    reply_size: int = 0  # the reply's JSON size in bytes
    in_log: bool = False  # the log keeps its reply (a result let go from memory is read back from there)
    dropped: bool = False  # its reply was let go from memory (`offer_held`)
    polls: int = 0  # the host's tasks/get and tasks/result for it: counted to the task, logged with its status

    @property
    def connection(self) -> str | None:
        """The host connection's name (`HostLink`): the call runs for that host."""
        return self.link.connection

    @property
    def key_prefix(self) -> str:
        """The host connection's (`HostLink`): the call is logged under its host's key."""
        return self.link.key_prefix

    send_raw: ClassVar[None] = None  # the answer is the task's, kept as a message (`HostLink`)

    def send(self, message: dict[str, Any]) -> bool:
        if self.offer is not None:
            self.offer.from_call(self, message)
        return True

    def view(self, poll_ms: int) -> dict[str, Any]:
        """The `Task` object the spec asks for in every task response (the extension names its figures `…Ms`)."""
        ttl, poll = ("ttlMs", "pollIntervalMs") if self.extension else ("ttl", "pollInterval")
        task: dict[str, Any] = {
            "taskId": self.task_id,
            "status": self.status,
            "createdAt": iso_time(self.created_wall),
            "lastUpdatedAt": iso_time(self.updated_wall or self.created_wall),
            ttl: self.ttl_ms,
            poll: poll_ms,
        }
        if self.status_message is not None:
            task["statusMessage"] = self.status_message
        return task


@dataclass(frozen=True, slots=True)
class SharedOffers:
    """What every core of one wrapper shares about the tasks it offers (the HTTP front has a core per host session)."""

    tasks: dict[str, OfferedTask] = field(default_factory=dict)  # a host's new session resumes those it ran
    # finished tasks this process does not hold (made before a restart), or whose result it let go: the log's
    kept: KeptLog | None = None
    also_offered: Callable[[str], bool] | None = None  # tools offered beside the globs: the log shows them slow
    upstream: str = ""  # the wrapped server's identity (`owners.upstream_key`): the log's kept tasks are keyed by it
    live: Counter[str] = field(default_factory=Counter)  # host connections open now (their tasks are theirs alone)
    running: Counter[tuple[str, str]] = field(default_factory=Counter)  # tasks running, by host (`Owner.host`)
    held: HeldResults = field(default_factory=lambda: HeldResults(32 * 1024 * 1024))
    lists: TaskLists = field(default_factory=TaskLists)  # each connection's tasks, for tasks/list
    finished: dict[str, None] = field(default_factory=dict)  # finished tasks' ids, oldest first (TASKS_KEPT_MAX)


class TaskOffer:
    def __init__(
        self,
        *,
        settings: TasksSettings,
        table: PendingTable,
        recorder: Recorder,
        scheduler: Scheduler,
        host_has_tasks: Callable[[HostLink], bool],
        upstream_support: Callable[[str], str | None],
        upstream_takes_tasks: Callable[[], bool],
        cancel_call: Callable[[Pending, Any], None],
        send_upstream: Callable[[Pending, dict[str, Any]], None],
        keep_bytes: int = 65_536,
        wall: Callable[[], float] = time.time,
        shared: SharedOffers | None = None,
    ) -> None:
        self.settings = settings
        if shared is None:
            shared = SharedOffers(held=HeldResults(settings.results_memory_mb * 1024 * 1024))
        self.shared = shared
        self.tasks = shared.tasks
        self._names: dict[int, str] = {}  # id(link) -> the client name its initialize gave
        self._live: dict[int, str] = {}  # id(link) -> its connection, counted open in shared.live
        self._open: set[int] = set()  # id(link) of every link attached, sessionless ones too (a POST's)
        self._table = table  # the call's answer (its task) goes to its host there; its end comes there too
        self._recorder = recorder
        self._scheduler = scheduler
        self._host_has_tasks = host_has_tasks
        self._upstream_support = upstream_support  # a tool's own taskSupport upstream (None: not listed)
        self._upstream_takes_tasks = upstream_takes_tasks
        self._cancel_call = cancel_call  # stop the call upstream (notifications/cancelled), answering no one
        self._send_upstream = send_upstream  # send (or queue) a call; one the upstream cannot take is answered at once
        self._wall = wall
        self._keep_bytes = keep_bytes
        self.kept = shared.kept
        self._lookups: set[asyncio.Future[None]] = set()  # log lookups under way (held: the loop keeps weak refs)
        self.also_offered = shared.also_offered

    @property
    def enabled(self) -> bool:
        return bool(self.settings.offer) or self.also_offered is not None

    def host_initialized(self, link: HostLink, client_info: Any) -> None:
        name = client_info.get("name") if isinstance(client_info, dict) else None
        self._names[id(link)] = name if isinstance(name, str) else ""
        self._register(link)

    def _register(self, link: HostLink) -> None:
        """The link's connection is open (until `forget_link`): its tasks are its alone meanwhile. Also without an
        initialize: a 2026-era host on stdio sends none."""
        self._open.add(id(link))
        connection = owner_of(link).connection
        if connection != SESSIONLESS and id(link) not in self._live:
            self._live[id(link)] = connection
            self.shared.live[connection] += 1

    def forget_link(self, link: HostLink) -> None:
        self._names.pop(id(link), None)  # its tasks stay: the host may resume them by id from a new connection
        self._open.discard(id(link))
        connection = self._live.pop(id(link), None)
        if connection is not None:
            self.shared.live[connection] -= 1
            if self.shared.live[connection] <= 0:
                del self.shared.live[connection]

    def _is_live(self, connection: str) -> bool:
        return connection in self.shared.live

    def _owner(self, link: HostLink, params: dict[str, Any] | None = None) -> Owner:
        """The host's connection and principal, with the client name its initialize gave (else, 2026 era, the one
        its request gives): the name only narrows who resumes a task whose connection has ended."""
        name = self._names.get(id(link))
        if name is None:
            meta = (params or {}).get("_meta")
            info = meta.get(MODERN_CLIENT_META) if isinstance(meta, dict) else None
            got = info.get("name") if isinstance(info, dict) else None
            name = got if isinstance(got, str) else ""
        return owner_of(link, name)

    def _offered(self, tool: str | None) -> bool:
        return self._offered_by(tool) is not None

    def _offered_by(self, tool: str | None) -> str | None:
        """Why a tool is offered as a task: the `[tasks] offer` glob it matches, else `offer_slow` (the log shows
        its calls outrunning the budget, with the basis when known); None: it is not offered."""
        if tool is None:
            return None
        pattern = next((pattern for pattern in self.settings.offer if match_glob(pattern, tool)), None)
        if pattern is not None:
            return f"offer {pattern}"
        if self.also_offered is not None and self.also_offered(tool):
            basis = getattr(getattr(self.also_offered, "__self__", None), "basis", None)
            said = basis(tool) if callable(basis) else None
            return f"offer_slow: {said}" if said else "offer_slow"
        return None

    # ------------------------------------------------------------------ what the host is told

    def decorate_initialize(self, link: HostLink, result: dict[str, Any]) -> dict[str, Any]:
        """A host with tasks learns the server takes task-augmented tools/call (mcpwatch does, for offered tools)."""
        capabilities = result.get("capabilities")
        if not self.enabled or not self._host_has_tasks(link) or not isinstance(capabilities, dict):
            return result
        tasks = got if isinstance(got := capabilities.get("tasks"), dict) else {}
        merged = {**TASKS_CAPABILITY, **tasks}
        merged["requests"] = {**TASKS_CAPABILITY["requests"], **(tasks.get("requests") or {})}
        return {**result, "capabilities": {**capabilities, "tasks": merged}}

    def decorate_discover(self, result: dict[str, Any]) -> dict[str, Any]:
        """A 2026-era host learns the server takes the tasks extension (mcpwatch does, for offered tools): its
        client then declares it on each request, and the server decides per request."""
        capabilities = result.get("capabilities")
        if not self.enabled or not isinstance(capabilities, dict):
            return result
        extensions = capabilities.get("extensions")
        merged = {**capabilities, "extensions": {EXTENSION: {}, **(extensions if isinstance(extensions, dict) else {})}}
        return {**result, "capabilities": merged}

    def tools_listed(self, link: HostLink, result: dict[str, Any]) -> dict[str, Any]:
        tools = result.get("tools")
        if not self.enabled or not self._host_has_tasks(link) or not isinstance(tools, list):
            return result
        shown = []
        for tool in tools:
            if isinstance(tool, dict) and self._offered(tool.get("name")) and tool_task_support(tool) == "forbidden":
                execution = got if isinstance(got := tool.get("execution"), dict) else {}
                tool = {**tool, "execution": {**execution, "taskSupport": "optional"}}
            shown.append(tool)
        return {**result, "tools": shown}

    # ------------------------------------------------------------------ a call made as a task

    def wants(self, link: HostLink, tool: str | None, params: dict[str, Any]) -> bool:
        """A task-augmented call (or one declaring the tasks extension) of an offered tool the upstream cannot run
        as a task itself."""
        return (
            self.enabled
            and (isinstance(params.get("task"), dict) or _declares_extension(params))
            and self._offered(tool)
            and self._upstream_support(tool or "") in (None, "forbidden")
        )

    def refusal(self, link: HostLink, params: dict[str, Any]) -> tuple[int, str] | None:
        """Why the task cannot be made (a JSON-RPC error code and its message), else None."""
        ttl = params["task"].get("ttl") if isinstance(params.get("task"), dict) else None
        if ttl is not None and (not isinstance(ttl, int) or isinstance(ttl, bool) or ttl < 0):
            return INVALID_PARAMS, f"task.ttl must be a number of milliseconds, got {frames.text_of(ttl, 64)}"
        if isinstance(ttl, int) and ttl > self.settings.max_ttl_ms:
            text = (
                f"task.ttl {ttl} ms is beyond mcpwatch's maximum of {self.settings.max_ttl_ms} ms ([tasks] max_ttl_ms)"
            )
            return INVALID_PARAMS, text
        running, mine = self.shared.running.total(), self.shared.running[self._owner(link, params).host]
        if mine >= self.settings.max_running_per_host:
            return RUNNING_ERROR, (
                f"{mine} tasks of this host are running, the most mcpwatch runs for one host ([tasks] "
                "max_running_per_host); wait for one to end or cancel one"
            )
        if running >= self.settings.max_running:
            return RUNNING_ERROR, (
                f"{running} offered tasks are running, the most mcpwatch runs at once ([tasks] max_running); "
                "wait for one to end or cancel one"
            )
        return None

    def start(
        self,
        pending: Pending,
        link: HostLink,
        params: dict[str, Any],
        forwarded: dict[str, Any],
        meta: dict[str, Any] | None,
    ) -> dict[str, Any]:
        """Answer the host with the task at once; the call goes upstream as an ordinary one, its answer to the task.
        Returns the call's `_meta` upstream: it always asks for progress, whose messages are the task's status."""
        self._register(link)
        extension = not isinstance(params.get("task"), dict)
        ttl = None if extension else params["task"].get("ttl")
        now = self._wall()
        task = OfferedTask(
            self,
            ID_PREFIX + secrets.token_urlsafe(18),
            self._owner(link, params),
            link,
            pending,
            now,
            ttl if isinstance(ttl, int) else self.settings.max_ttl_ms,
            extension=extension,
        )
        self.tasks[task.task_id] = task
        self.shared.running[task.owner.host] += 1
        if not extension:  # an extension task is reached by its id alone: listed to no one
            self.shared.lists.add(task.owner.host, task.task_id)
        forwarded.pop("task", None)
        if extension:  # the upstream is not asked for a task of its own; progress is not the host's (the spec)
            meta = without_extension(meta)
            pending.host_token = None
        if pending.budget is not None:  # no tools/call budget: the task's own bound
            text = f"[tasks] max_s: an offered task's call runs {self.settings.max_s:g} s at most"
            pending.budget = replace(pending.budget, seconds=self.settings.max_s, source="task", explanation=text)
        view = task.view(self.settings.poll_ms)
        answer = {"resultType": "task", **view} if extension else {"task": view}
        self._table.answer_early(pending, {"jsonrpc": "2.0", "id": pending.host_id, "result": answer})
        pending.link = task  # from now on what the call is sent is the task's (`from_call`)
        created = TaskCreatedData(
            task_id=task.task_id,
            status="working",
            status_message=None,
            ttl_ms=task.ttl_ms,
            poll_interval_ms=self.settings.poll_ms,
            era="extension" if extension else "2025-11-25",
            offered=True,
        )
        reason = self._offered_by(pending.tool)
        if reason:
            created["offered_by"] = reason
        self._recorder.emit(Kind.TASK_CREATED, request_id=pending.request_key, tool=pending.tool, **created)
        if pending.host_token is not None:
            return meta or {}
        pending.host_token = NO_HOST_TOKEN  # progress is routed to the task, which keeps it to itself
        return {**(meta or {}), "progressToken": pending.up_id}

    def from_call(self, task: OfferedTask, message: dict[str, Any]) -> None:
        """What the call sends its link: its answer ends the task; progress becomes its status message."""
        if "method" not in message and message.get("id") == task.pending.host_id:
            self._finish(task, message)
            return
        if message.get("method") == "notifications/progress":
            params = got if isinstance(got := message.get("params"), dict) else {}
            if isinstance(params.get("message"), str):  # bounded: a task is held for its TTL
                task.status_message = params["message"][:STATUS_MESSAGE_MAX]
                task.updated_wall = self._wall()
            if params.get("progressToken") is NO_HOST_TOKEN:
                return  # the host asked for no progress: it reads the status message by tasks/get
        task.link.send(message)  # progress (the host's token stays valid for the task's life), requests, notices

    def asked_input(self, pending: Pending, message: dict[str, Any]) -> bool:
        """The upstream answered an offered extension task's call with a question: the task waits in
        `input_required` for its host's answers (False: not such a task, or a question it cannot relay)."""
        task = pending.link
        if not isinstance(task, OfferedTask) or task.offer is not self or not task.extension:
            return False
        if task.status not in ACTIVE or not asks_input(message):
            return False
        if task.input is None:
            params = pending.message.get("params")
            task.input = OfferedInput(dict(params) if isinstance(params, dict) else {})
        step = offer_input.ask(task.input, message["result"])
        if step is None:
            return False  # the task fails, saying why
        if step == "again":  # nothing to ask the host: the call again, with the upstream's state, in a moment
            task.pending.message = {**task.pending.message, "params": offer_input.retry_params(task.input)}
            self._scheduler.call_later(offer_input.AGAIN_AFTER_S, self._again, task)
            return True
        task.status, task.updated_wall = "input_required", self._wall()
        self._status(task)
        return True

    def _again(self, task: OfferedTask) -> None:
        if task.status in ACTIVE:  # not cancelled meanwhile
            self._send_upstream(task.pending, task.pending.message)

    def _finish(self, task: OfferedTask, message: dict[str, Any]) -> None:
        if task.status not in ACTIVE:
            return  # cancelled meanwhile: it stays cancelled
        if asks_input(message):  # not a result: completing the task with it would lose the question
            tool = task.pending.tool or "the tool"
            text = offer_input.refusal(tool, task.task_id, task.input.rounds if task.input else None)
            message = {"error": {"code": frames.INTERNAL_ERROR, "message": text}}
            task.status_message = "the upstream asked for input mcpwatch cannot relay inside a task"
        result = related(message.get("result"), task.task_id)
        task.reply = {"error": message["error"]} if "error" in message else {"result": result}
        task.status = "failed" if "error" in message else "completed"
        task.updated_wall = self._wall()
        self._status(task)
        for link, request_id in task.waiters:
            link.send({"jsonrpc": "2.0", "id": request_id, **task.reply})
        task.waiters.clear()
        self._keep(task)

    def _keep(self, task: OfferedTask) -> None:
        """A finished task is kept for its TTL from creation (the spec lets a receiver drop it after): what routes
        it in memory, its result while `[tasks] results_memory_mb` holds it, and in the log when there is one."""
        self._not_running(task.owner)
        task.input = None  # the questions and answers: done with
        task.pending.message = {}  # the call as sent: no one sends it again
        task.pending.progress_log.clear()  # its last progress messages (each up to a frame): said already
        task.pending.last_progress = None
        if not task.pending.open:  # the host's own request id (up to a frame): its answer is sent
            task.pending.host_id = task.pending.host_key = None
        if self.kept is not None and task.in_log:
            self.kept.ended(task.task_id, task.pending.request_key)
        self.shared.held.hold(task)
        # nothing of the core it ran in is held for its TTL (an HTTP session's core, upstream and all, may end now)
        task.link, task.offer = _Ended(task.connection, task.link.key_prefix), None
        left = max(0.0, task.created_wall + task.ttl_ms / 1000 - self._wall())
        task.expiry = self._scheduler.call_later(left, _drop, self.shared, task.task_id)
        finished = self.shared.finished  # no walk over every task per end: 10,000 are kept
        finished[task.task_id] = None
        while len(finished) > TASKS_KEPT_MAX:
            self._expire(next(iter(finished)))

    def _expire(self, task_id: str) -> None:
        _drop(self.shared, task_id)

    def _listed_for(self, host: Host) -> Callable[[str], bool]:
        return _listed_for(self.tasks, host)

    def _logged_owner(self, owner: Owner) -> Owner:
        """The owner as the log keeps it: its connection named with this wrapper's session, since "stdio" (or a
        session) of another wrapper is another connection, one that has ended for any wrapper reading it later."""
        if owner.connection == SESSIONLESS:
            return owner
        return replace(owner, connection=f"{owner.connection}@{self._recorder.session_id}")

    def _read_owner(self, key: Any) -> Owner | None:
        """An owner the log kept: this wrapper's own connections named as they are here."""
        owner = parse_owner(key)
        mine = f"@{self._recorder.session_id}"
        if owner is not None and owner.connection.endswith(mine):
            return replace(owner, connection=owner.connection.removesuffix(mine))
        return owner

    def _status(self, task: OfferedTask) -> None:
        pending = task.pending
        status = TaskStatusData(
            task_id=task.task_id,
            status=task.status,  # type: ignore[typeddict-item]  # an offered task's status is a Status
            status_message=task.status_message,
            elapsed_s=round(self._scheduler.time() - pending.started, 6),
            seen_by="mcpwatch",
            polls=task.polls,
        )
        if task.status not in ACTIVE:  # an ended task is kept (a live one's call ends with this process)
            size = task.reply_size = len(json.dumps(task.reply, default=str)) if task.reply is not None else 0
            reply = task.reply if size <= self._keep_bytes else None
            task.in_log = reply is not None and self.kept is not None  # a wrapper with no log keeps nothing
            expires = task.created_wall + task.ttl_ms / 1000
            view = task.view(self.settings.poll_ms)
            status["kept"] = KeptTask(
                owner=self._logged_owner(task.owner).key,
                upstream=self.shared.upstream,
                task=view,
                reply=reply,
                expires_ts=round(expires, 3),
            )
        self._recorder.emit(Kind.TASK_STATUS, request_id=pending.request_key, tool=pending.tool, **status)

    # ------------------------------------------------------------------ the host's polls

    def handles(self, link: HostLink, message: dict[str, Any]) -> bool:
        """Answer a tasks/* request about mcpwatch's own tasks (True), else leave it to the upstream (False)."""
        method, request_id = message["method"], message["id"]
        params = got if isinstance(got := message.get("params"), dict) else {}
        if method == "tasks/list":
            if not self.enabled or self._upstream_takes_tasks():
                return False  # the upstream's own tasks are listed by the upstream
            # a connection's own tasks, a page at a time; a sessionless request proves no connection, and an
            # extension task is reached by its id alone: neither is listed to anyone
            lister = owner_of(link).host
            cursor = got if isinstance(got := params.get("cursor"), str) else None
            ids: list[str] = []
            after = None
            if lister[1] != SESSIONLESS:
                ids, after = self.shared.lists.page(lister, cursor, self._listed_for(lister))
            listed: dict[str, Any] = {"tasks": [self.tasks[i].view(self.settings.poll_ms) for i in ids]}
            if after is not None:
                listed["nextCursor"] = after
            link.send({"jsonrpc": "2.0", "id": request_id, "result": listed})
            return True
        task_id = poll_task_id(params)
        if task_id is None or not task_id.startswith(ID_PREFIX):
            return False
        self._register(link)
        task = self.tasks.get(task_id)
        asker = self._owner(link, params)
        if task is not None and not may_reach(task.owner, asker, self._is_live):
            link.send(_unknown(request_id, task_id))  # a foreign task is as unknown as a missing one
            return True
        if task is not None and task.owner != asker:
            self._adopt(task, asker)  # its connection ended: the host resumes it from this one
        if task is None or (task.dropped and task.in_log):  # held here, its owner was checked here
            if self.kept is None or self.kept.known(task_id) is False:
                self._count_unknown()
                link.send(_unknown(request_id, task_id))  # no query: the log's index does not hold it
                return True
            checked = task is not None
            job = asyncio.ensure_future(self._answer_from_log(task_id, asker, method, link, request_id, checked))
            self._lookups.add(job)
            job.add_done_callback(self._lookups.discard)
            return True
        if method in ("tasks/get", "tasks/result"):
            task.polls += 1
        # the task's own offer answers: it may run in another HTTP session's core (the same host, a new session)
        offer = self if task.offer is None else task.offer  # an ended task's answers need no core of its own
        answer = getattr(offer, "_" + method.removeprefix("tasks/"), None)
        if method == "tasks/update":  # the one that reads its params: the host's answers
            offer._update(task, link, request_id, params)
        elif answer is None:
            link.send(_error(request_id, f"{method} is not supported for mcpwatch's tasks", METHOD_NOT_FOUND))
        else:
            answer(task, link, request_id)
        return True

    def _count_unknown(self) -> None:
        if self.kept is not None:
            self.kept.unknown += 1

    def _adopt(self, task: OfferedTask, asker: Owner) -> None:
        if task.status in ACTIVE:
            self._not_running(task.owner)
            self.shared.running[asker.host] += 1
        before, task.owner = task.owner.host, asker
        if not task.extension and before != asker.host:
            self.shared.lists.add(asker.host, task.task_id)
            self.shared.lists.gone(before, self._listed_for(before))

    def _not_running(self, owner: Owner) -> None:
        running = self.shared.running
        running[owner.host] -= 1
        if running[owner.host] <= 0:
            del running[owner.host]

    async def _answer_from_log(
        self, task_id: str, asker: Owner, method: str, link: HostLink, request_id: Any, checked: bool = False
    ) -> None:
        """A task whose end only the log holds: one indexed read in a thread (none for an id the index lacks, none
        when the requester has gone meanwhile: its session ended, or its sessionless POST closed)."""
        if self.kept is None:
            return
        kept = await self.kept.lookup(task_id, lambda: id(link) in self._open)  # the link is held: its id is its
        owner = self._read_owner(kept.get("owner")) if kept is not None else None
        if (
            kept is None
            or owner is None
            or kept.get("upstream") != self.shared.upstream
            or not isinstance(kept.get("expires_ts"), int | float)
            or kept["expires_ts"] < self._wall()
            or not (checked or may_reach(owner, asker, self._is_live))
        ):
            link.send(_unknown(request_id, task_id))
            return
        answer_kept(kept, method, link, request_id)  # type: ignore[arg-type]  # the log's row, checked above

    def _get(self, task: OfferedTask, link: HostLink, request_id: Any) -> None:
        now = self._scheduler.time()
        least = self.settings.poll_ms / 2000
        since = None if task.last_poll is None else (now - task.last_poll) * 1000
        # the extension's clients ramp up to pollIntervalMs (FastMCP's from 20 ms): only 2025-era polls are refused
        if since is not None and since < least * 1000 and not task.extension and task.status == "working":
            text = f"polled {since:.0f} ms after the last poll; poll every {self.settings.poll_ms} ms (pollInterval)"
            link.send(_error(request_id, text))
            return
        task.last_poll = now
        if task.extension and task.dropped:  # its tasks/get would carry the result, which is gone
            link.send(_error(request_id, _let_go(task), frames.INTERNAL_ERROR))
            return
        view = task.view(self.settings.poll_ms)
        if task.extension:  # the extension's tasks/get carries the result (or error) once the task has ended
            view = {**view, **(task.reply or {}), **DONE}
            if task.status == "input_required" and task.input is not None:  # … and the questions it waits on
                view["inputRequests"] = task.input.outstanding()
        link.send({"jsonrpc": "2.0", "id": request_id, "result": view})

    def _update(self, task: OfferedTask, link: HostLink, request_id: Any, params: dict[str, Any]) -> None:
        """The host's answers to the task's input requests (answers to none outstanding are ignored, as the spec
        says); once every request has its answer, the call is made again upstream, carrying them."""
        if not task.extension:
            link.send(_error(request_id, "tasks/update is not part of 2025-11-25 tasks", METHOD_NOT_FOUND))
            return
        responses = params.get("inputResponses")
        if not isinstance(responses, dict):
            link.send(_error(request_id, "tasks/update needs inputResponses: an object of answers by request key"))
            return
        if task.status == "input_required" and task.input is not None and offer_input.answer(task.input, responses):
            task.pending.message = {**task.pending.message, "params": offer_input.retry_params(task.input)}
            task.status, task.updated_wall = "working", self._wall()
            self._status(task)
            self._send_upstream(task.pending, task.pending.message)
        link.send({"jsonrpc": "2.0", "id": request_id, "result": DONE})

    def _result(self, task: OfferedTask, link: HostLink, request_id: Any) -> None:
        if task.extension:
            link.send(_error(request_id, NO_RESULT_METHOD, METHOD_NOT_FOUND))
        elif task.reply is not None:
            link.send({"jsonrpc": "2.0", "id": request_id, **task.reply})
        elif task.status == "cancelled":
            link.send(_error(request_id, f"task {task.task_id} was cancelled: it has no result"))
        elif task.status not in ACTIVE:  # let go from memory, and not in the log
            link.send(_error(request_id, _let_go(task), frames.INTERNAL_ERROR))
        else:
            task.waiters.append((link, request_id))  # the spec: block until the task ends

    def _cancel(self, task: OfferedTask, link: HostLink, request_id: Any) -> None:
        if task.extension:  # an empty acknowledgement, whether or not the task had already ended (the spec)
            if task.status in ACTIVE:
                self._cancelled(task, None)
            link.send({"jsonrpc": "2.0", "id": request_id, "result": DONE})
            return
        if task.status != "working":
            link.send(_error(request_id, f"task {task.task_id} is already {task.status}"))
            return
        self._cancelled(task, None)
        link.send({"jsonrpc": "2.0", "id": request_id, "result": task.view(self.settings.poll_ms)})

    def host_cancelled(self, pending: Pending, reason: Any) -> bool:
        """The host's `notifications/cancelled` of the request that made a task: the spec has hosts cancel tasks
        with `tasks/cancel`, but a host (or its SDK) that sends the notification means the same, so it gets the
        same: the call is cancelled upstream and the task ends `cancelled` (nothing is answered)."""
        task = pending.link
        if not isinstance(task, OfferedTask) or task.offer is not self:
            return False
        if task.status in ACTIVE:
            self._cancelled(task, reason)
        return True

    def _cancelled(self, task: OfferedTask, reason: Any) -> None:
        task.status, task.status_message = "cancelled", "cancelled by the host"
        task.updated_wall = self._wall()
        self._cancel_call(task.pending, reason)  # notifications/cancelled upstream, and the call's own end
        self._status(task)
        for waiter, waiting_id in task.waiters:
            waiter.send(_error(waiting_id, f"task {task.task_id} was cancelled: it has no result"))
        task.waiters.clear()
        self._keep(task)


@dataclass(frozen=True, slots=True)
class _Ended:
    """An ended task's link: its connection's name and request prefix, and nothing more is sent through it."""

    connection: str | None
    key_prefix: str
    send_raw: ClassVar[None] = None  # nothing is sent through it (`HostLink`)

    def send(self, message: dict[str, Any]) -> bool:
        return False


def _drop(shared: SharedOffers, task_id: str) -> None:
    """A finished task is let go (its TTL, or beyond TASKS_KEPT_MAX): nothing of it stays."""
    task = shared.tasks.pop(task_id, None)
    shared.held.release(task_id)
    shared.finished.pop(task_id, None)
    if task is not None and not task.extension:
        shared.lists.gone(task.owner.host, _listed_for(shared.tasks, task.owner.host))


def _listed_for(tasks: dict[str, OfferedTask], host: Host) -> Callable[[str], bool]:
    """Whether a task id is still one `tasks/list` shows `host`."""

    def listed(task_id: str) -> bool:
        task = tasks.get(task_id)
        return task is not None and task.owner.host == host and not task.extension

    return listed


def _declares_extension(params: dict[str, Any]) -> bool:
    """A 2026-era request whose own client capabilities name the tasks extension."""
    return modern_version({"params": params}) is not None and declares_extension(params.get("_meta"))


def _let_go(task: OfferedTask) -> str:
    return (
        f"task {task.task_id} ended {task.status}, but its result ({task.reply_size} bytes) was let go: [tasks] "
        "results_memory_mb holds the newest results in memory, [late_results] keep_bytes those the log keeps"
    )


def _unknown(request_id: Any, task_id: str) -> dict[str, Any]:
    return _error(request_id, f"no task {task_id!r} (unknown, expired, or another host's)")
