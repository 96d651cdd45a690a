"""A 2025-era host's call of a tool its server runs only as a task of the tasks extension, run in the 2026 era.

Such a server lists the tool to a connection opened with `initialize` but refuses every call of it there (`-32021`):
the extension exists only for 2026-era requests, and a stdio server's first request fixes its connection's era. The
HTTP front has a 2026-era upstream beside the host sessions' own: the one sessionless requests share. So the refused
call is made again there as a 2026-era request (the client the host named in `initialize`, and no capabilities: a
2026-era server asks its questions in a shape this host cannot answer), where the bridge runs it as an extension
task; its answer, and its status as progress, reach the host's waiting call. Its budget is the shared core's (the
same host profile): cut at it, the task goes on, and an identical call of the same host session (its owner there,
never a sessionless request's) attaches to it within `[tasks] reuse_s`. When that upstream does not take the
extension, the host reads the one line saying why the tool cannot run (`TaskBridge.era_refusal`).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from typing import Any, ClassVar

from mcpwatch.wire import MODERN_CLIENT_META, MODERN_VERSION_META
from mcpwatch.wrapper.calls.pending import Pending
from mcpwatch.wrapper.core.pump import WrapperCore
from mcpwatch.wrapper.tasks.shapes import CLIENT_CAPABILITIES_META

MODERN_VERSION = "2026-07-28"
DISCOVER_TIMEOUT_S = 120.0  # the 2026-era upstream's discover answer is waited for this long at most

Answered = Callable[[Pending, dict[str, Any]], None]


@dataclass(eq=False)
class TranslatedCall:
    """The shared core's host link for one translated call: its answer and progress go to the host's waiting call."""

    connection: str | None  # the host's session: an identical call of that session alone attaches to the task
    key_prefix: str
    send_raw: ClassVar[None] = None  # the answer is translated for the host's era, so a message (`HostLink`)
    pending: Pending  # the host's call, waiting in its own session's core
    answered: Answered

    @property
    def made_for(self) -> str:
        """The host's call this one is made for: the log's readers count that one, once."""
        return self.pending.request_key

    def send(self, message: dict[str, Any]) -> bool:
        if "method" not in message:
            self.answered(self.pending, message)
            return True
        host = self.pending
        if message.get("method") == "notifications/progress" and host.open and host.host_token is not None:
            params = {**(message.get("params") or {}), "progressToken": host.host_token}
            return host.link.send({"jsonrpc": "2.0", "method": "notifications/progress", "params": params}) is not False
        return False  # nothing else of a 2026-era call is this host's to read


class EraTranslator:
    def __init__(self, shared: WrapperCore, start_shared: Callable[[], object]) -> None:
        self.shared = shared  # the core (and 2026-era upstream) that sessionless requests share
        self._start_shared = start_shared
        self._calls = 0
        self._jobs: set[asyncio.Future[None]] = set()
        self._discovering: asyncio.Future[None] | None = None

    async def _discover(self, envelope: dict[str, Any]) -> None:
        """Whether the 2026-era upstream takes the extension: one request, whatever the calls waiting on it."""
        try:
            answer = await asyncio.wait_for(
                self.shared.session.request_when_ready("server/discover", {"_meta": envelope}), DISCOVER_TIMEOUT_S
            )
        except (ConnectionError, TimeoutError):
            return
        result = answer.get("result") if isinstance(answer, dict) else None
        if isinstance(result, dict):
            self.shared.bridge.discovered(result)
            if self.shared.discover_memo is not None:
                self.shared.discover_memo.note(result)

    def session_ended(self, link: Any) -> None:
        """A host session ended (its core's `on_detach`): the calls made for it here stop (a cancel, as its own),
        and its tasks, which no other session may take, are cancelled upstream now rather than after `[tasks]
        reuse_s`."""
        connection = getattr(link, "connection", None)
        if connection is None:
            return
        calls = self.shared.table.calls.values()
        made = [p for p in calls if isinstance(p.link, TranslatedCall) and p.link.pending.link is link]
        for pending in made:
            cancel = {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": pending.host_id}}
            self.shared.host_message(pending.link, cancel)
        self.shared.bridge.forget_connection(str(connection))

    def take(self, pending: Pending, client_info: Any, refusal: dict[str, Any], answered: Answered) -> bool:
        """Run the host's refused call on the 2026-era upstream; `answered` hears its answer (or `refusal`, the one
        line, when that upstream cannot run it either). False: not a call this can take."""
        params = pending.message.get("params")
        if pending.tool is None or not isinstance(params, dict) or not pending.open:
            return False
        self._start_shared()
        job = asyncio.ensure_future(self._run(pending, params, client_info, refusal, answered))
        self._jobs.add(job)
        job.add_done_callback(self._jobs.discard)
        return True

    async def _run(
        self, pending: Pending, params: dict[str, Any], client_info: Any, refusal: dict[str, Any], answered: Answered
    ) -> None:
        envelope = {
            MODERN_VERSION_META: MODERN_VERSION,
            MODERN_CLIENT_META: client_info if isinstance(client_info, dict) else {"name": "mcpwatch"},
            CLIENT_CAPABILITIES_META: {},
        }
        bridge = self.shared.bridge
        if not bridge.upstream_extension:  # not known yet: the upstream is asked once, as a 2026-era host would
            if self._discovering is None or self._discovering.done():
                self._discovering = asyncio.ensure_future(self._discover(envelope))
            await asyncio.shield(self._discovering)
        if not pending.open:
            return  # the host stopped waiting meanwhile
        if not bridge.upstream_extension:
            answered(pending, {"jsonrpc": "2.0", "id": None, "error": refusal})
            return
        self._calls += 1
        link = TranslatedCall(pending.link.connection, f"{pending.link.key_prefix}2026:", pending, answered)
        meta = dict(envelope)
        if pending.host_token is not None:
            meta["progressToken"] = pending.host_token
        call = {"name": pending.tool, "arguments": params.get("arguments", {}), "_meta": meta}
        pending.due = None  # from now on the 2026-era call is cut at that moment, saying the task goes on
        if pending.timer is not None:
            pending.timer.cancel()
            pending.timer = None
        call_id = self._calls
        self.shared.host_message(link, {"jsonrpc": "2.0", "id": call_id, "method": "tools/call", "params": call})
        cancelled = {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": call_id}}
        pending.relayed_cancel = partial(self.shared.host_message, link, cancelled)  # the host's cancel, as its own
        # the host's budget, counted from its call's start
        self.shared.continue_call(link, call_id, pending.started, pending.budget)
