"""A bridged extension task's input requests, relayed to its 2026-era host (`wrapper.tasks.bridge`).

The tasks extension parks a task in `input_required`, its `tasks/get` listing the requests outstanding
(`inputRequests`: elicitation, sampling, roots), and takes the answers by `tasks/update`. A 2026-era host receives no
server requests at all: a server asks it through a multi round-trip answer (SEP-2322), `resultType: "input_required"`
with the requests and a `requestState` the host's retried call carries back with its `inputResponses`. So the host's
waiting call is answered with the task's requests as such a question, and the call that brings the answers is not
sent upstream: its answers go to the task by `tasks/update`, and it waits for the task's result in its turn.

Only a host whose request declared the capability each request needs is asked; the answering call must come from the
same host (connection and client name) with the run's unguessable `requestState`. New requests are relayed at most
`INPUT_ROUNDS_MAX` times per task, and a host that does not call back within `[tasks] reuse_s` is not waited for.
"""

from __future__ import annotations

import json
import secrets
from collections.abc import Awaitable, Callable
from typing import Any

from mcpwatch.events import Outcome, RequestEndDetail
from mcpwatch.scheduler import Scheduler
from mcpwatch.wire import MODERN_CLIENT_META
from mcpwatch.wrapper.calls.pending import HostLink, Pending, PendingTable
from mcpwatch.wrapper.framing import frames
from mcpwatch.wrapper.tasks.bridge_log import PREVIEW_CHARS, BridgedInput, BridgedRun
from mcpwatch.wrapper.tasks.shapes import CLIENT_CAPABILITIES_META, INPUT_ROUNDS_MAX, TaskState

TOKEN_PREFIX = "mcpwatch-input-"
UPDATE_TIMEOUT_S = 30.0
CAPABILITY_OF = {"elicitation/create": "elicitation", "sampling/createMessage": "sampling", "roots/list": "roots"}


class InputRelay:
    def __init__(
        self,
        *,
        table: PendingTable,
        scheduler: Scheduler,
        request: Callable[..., Awaitable[Any]],
        spawn: Callable[[Any], object],
        give_up: Callable[[BridgedRun, str], None],
        stop_waiting: Callable[[Pending], object],
        poll_soon: Callable[[BridgedRun], None],
        wait_s: float,
    ) -> None:
        self.by_token: dict[str, BridgedRun] = {}
        self._table = table
        self._scheduler = scheduler
        self._request = request
        self._spawn = spawn
        self._give_up = give_up  # cancel the task upstream and end it, every waiting host call told why
        self._stop_waiting = stop_waiting  # a host call answered here no longer waits for the task
        self._poll_soon = poll_soon  # the task took its host's answers: its next status is news the host waits for
        self._wait_s = wait_s

    def relay(self, run: BridgedRun, state: TaskState) -> str | None:
        """The task waits for input: its host's waiting calls are answered with the requests it has not answered
        yet. Returns why the host cannot be asked (None: asked, or nothing new to ask)."""
        requests = state.input_requests if isinstance(state.input_requests, dict) else {}
        if not requests:  # none outstanding: answered already (the answers not taken in yet), else a bad snapshot
            return None if run.input is not None else "its tasks/get named no input requests"
        pending_input = run.input
        if pending_input is None:
            token = TOKEN_PREFIX + secrets.token_urlsafe(18)
            pending_input = run.input = BridgedInput(token, _host(run.maker), _call(_params(run.maker)))
            self.by_token[pending_input.token] = run
        fresh = {k: v for k, v in requests.items() if k not in pending_input.asked}
        if fresh:
            cannot = _cannot_answer(_capabilities(run.maker), fresh)
            if cannot is not None:
                return cannot
            pending_input.rounds += 1
            if pending_input.rounds > INPUT_ROUNDS_MAX:
                why = (
                    f"task {run.task_id} asked its host for input more than {INPUT_ROUNDS_MAX} times; mcpwatch "
                    "relays that many rounds at most, and cancelled the task"
                )
                self._give_up(run, why)
                return None
            pending_input.asked.update(fresh)
        outstanding = {k: v for k, v in requests.items() if k not in pending_input.answered}
        waiting = [p for p in run.waiters if p.open]
        if outstanding and (fresh or waiting):  # else the host has the question already, and no call to answer
            self._ask(run, pending_input, outstanding, waiting)
        return None

    def _ask(
        self, run: BridgedRun, pending_input: BridgedInput, outstanding: dict[str, Any], waiting: list[Pending]
    ) -> None:
        question = {"resultType": "input_required", "inputRequests": outstanding, "requestState": pending_input.token}
        detail: RequestEndDetail = {
            "task_id": run.task_id,
            "task_status": "input_required",
            "result_preview": frames.text_of(question, PREVIEW_CHARS),
        }
        for call in waiting:
            run.waiters.remove(call)
            self._stop_waiting(call)
            self._table.finish(call, Outcome.OK, {"jsonrpc": "2.0", "id": call.host_id, "result": question}, detail)
        if pending_input.timer is not None:
            pending_input.timer.cancel()
        pending_input.timer = self._scheduler.call_later(self._wait_s, self._unanswered, run)

    def _unanswered(self, run: BridgedRun) -> None:
        pending_input = run.input
        if run.finished_at is not None or pending_input is None or not pending_input.outstanding():
            return
        if any(p.open for p in run.waiters):  # the host called back and waits: it is asked at the next poll
            pending_input.timer = self._scheduler.call_later(self._wait_s, self._unanswered, run)
            return
        keys = _keys(pending_input.outstanding())
        why = (
            f"the host did not answer task {run.task_id}'s input requests ({keys}) within {self._wait_s:g} s "
            "([tasks] reuse_s); mcpwatch cancelled the task"
        )
        self._give_up(run, why)

    # ------------------------------------------------------------------ the host's call that brings the answers

    def run_for(self, params: dict[str, Any]) -> BridgedRun | None:
        token = params.get("requestState")
        return self.by_token.get(token) if isinstance(token, str) and token.startswith(TOKEN_PREFIX) else None

    def refusal(self, link: HostLink, params: dict[str, Any]) -> str | None:
        """Why a call carrying mcpwatch's `requestState` cannot be taken (None: it can, or it is no such call)."""
        token = params.get("requestState")
        if not isinstance(token, str) or not token.startswith(TOKEN_PREFIX):
            return None
        run = self.by_token.get(token)
        if run is None or run.input is None or run.input.host != _host_of(link, params):
            return "no task is waiting for this answer: its requestState is unknown, expired, or another host's"
        if _call(params) != run.input.call:
            return (
                f"this requestState answers task {run.task_id}'s call of {run.maker.tool}: repeat that call as it was"
            )
        outstanding = run.input.outstanding()
        if outstanding and not _answers(params.get("inputResponses"), outstanding):
            keys = _keys(outstanding)
            return f"inputResponses must answer task {run.task_id}'s input requests, an object for each of: {keys}"
        return None

    def answered(self, run: BridgedRun, params: dict[str, Any], poll_params: dict[str, Any]) -> None:
        """The host's answers (those to requests still outstanding) go to the task by `tasks/update`."""
        pending_input = run.input
        assert pending_input is not None
        answers = _answers(params.get("inputResponses"), pending_input.outstanding())
        if not answers:
            return  # a repeated call: its answers went upstream already
        pending_input.answered.update(answers)
        if pending_input.timer is not None:
            pending_input.timer.cancel()
            pending_input.timer = None
        self._spawn(self._update(run, {**poll_params, "inputResponses": answers}))

    async def _update(self, run: BridgedRun, params: dict[str, Any]) -> None:
        try:
            answer = await self._request("tasks/update", params, UPDATE_TIMEOUT_S)
        except (ConnectionError, TimeoutError) as exc:
            answer = {"error": str(exc) or "no answer in time"}
        if run.finished_at is not None:
            return
        if isinstance(answer, dict) and "error" not in answer:
            self._poll_soon(run)
        else:
            error = answer.get("error") if isinstance(answer, dict) else answer
            why = (
                f"the upstream refused the host's answer to task {run.task_id}'s input requests: "
                f"{frames.text_of(error, 300)}; mcpwatch cancelled the task"
            )
            self._give_up(run, why)

    def forget(self, run: BridgedRun) -> None:
        if run.input is not None:
            self.by_token.pop(run.input.token, None)
            if run.input.timer is not None:
                run.input.timer.cancel()
                run.input.timer = None


def _params(pending: Pending) -> dict[str, Any]:
    params = pending.message.get("params")
    return params if isinstance(params, dict) else {}


def _capabilities(pending: Pending) -> dict[str, Any]:
    meta = _params(pending).get("_meta")
    capabilities = meta.get(CLIENT_CAPABILITIES_META) if isinstance(meta, dict) else None
    return capabilities if isinstance(capabilities, dict) else {}


def _host_of(link: HostLink, params: dict[str, Any]) -> tuple[str | None, str]:
    """Who a 2026-era call comes from: its connection (None when sessionless) and the client name it gives."""
    meta = params.get("_meta")
    info = meta.get(MODERN_CLIENT_META) if isinstance(meta, dict) else None
    name = info.get("name") if isinstance(info, dict) else None
    return getattr(link, "connection", None), name if isinstance(name, str) else ""


def _keys(requests: dict[str, Any]) -> str:
    """The requests' keys for a one-line message, bounded: the upstream chose how many, and how long."""
    return frames.text_of(", ".join(requests), 200)


def _call(params: dict[str, Any]) -> str:
    """What a retried call repeats: its tool and arguments."""
    return json.dumps([params.get("name"), params.get("arguments") or {}], sort_keys=True, default=str)


def _host(pending: Pending) -> tuple[str | None, str]:
    return _host_of(pending.link, _params(pending))


def _cannot_answer(capabilities: dict[str, Any], requests: dict[str, Any]) -> str | None:
    """Why the host cannot answer these requests: one needs a capability its request did not declare."""
    for key, request in requests.items():
        method = request.get("method") if isinstance(request, dict) else None
        needed = CAPABILITY_OF.get(method) if isinstance(method, str) else None
        if needed is None:
            return (
                f"its input request {frames.text_of(key, 64)} ({frames.text_of(method, 64)}) is not one a host answers"
            )
        if not isinstance(capabilities.get(needed), dict):
            return f"the host did not declare {needed}"
    return None


def _answers(responses: Any, outstanding: dict[str, Any]) -> dict[str, Any]:
    """The host's answers to requests still outstanding (each an object); any other key is ignored (the spec)."""
    if not isinstance(responses, dict):
        return {}
    return {k: v for k, v in responses.items() if k in outstanding and isinstance(v, dict)}
