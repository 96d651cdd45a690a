"""An offered extension task whose call the upstream answers with a question (`wrapper.tasks.offer`).

A 2026-era server asks for input by answering the call itself `resultType: "input_required"` (multi round-trip,
SEP-2322): its `inputRequests`, and a `requestState` to be carried back when the call is made again with the
`inputResponses`. Inside a task mcpwatch runs for its host, that question becomes the task's: it goes
`input_required`, its `tasks/get` lists the requests, and the host answers them by `tasks/update` (SEP-2663). When
every request has its answer, the call is made again upstream, carrying the answers (by the upstream's keys) and its
`requestState`, and the task is `working` again until the next answer. A question without requests (only a
`requestState`: the server's "call again", as when it sheds load) is answered by calling again after a pause.

The extension asks each request key to be unique over the task's life, while an upstream may reuse its keys from one
round to the next: a reused key is shown to the host with the round after it (`topic.2`). Rounds are bounded
(`INPUT_ROUNDS_MAX`); past it the task fails, saying so.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

from mcpwatch.wrapper.tasks.shapes import INPUT_ROUNDS_MAX

AGAIN_AFTER_S = 0.25  # a question with only a requestState: the call is made again this much later (as SDK clients)


@dataclass(eq=False, slots=True)
class OfferedInput:
    """The questions an offered task's call asked, round after round, and the host's answers to the last one."""

    call_params: dict[str, Any]  # the call as first sent upstream: each retry is it, plus the answers
    rounds: int = 0
    used: set[str] = field(default_factory=set)  # every key shown to the host so far
    requests: dict[str, Any] = field(default_factory=dict)  # this round's, by the host's key
    upstream_key: dict[str, str] = field(default_factory=dict)  # the host's key -> the upstream's, this round
    answers: dict[str, Any] = field(default_factory=dict)  # the host's, by the upstream's key, this round
    request_state: str | None = None
    left: set[str] = field(default_factory=set)  # the host's keys of this round still without an answer

    def outstanding(self) -> dict[str, Any]:
        return {k: self.requests[k] for k in self.requests if k in self.left}


def asks_input(message: dict[str, Any]) -> bool:
    """A 2026-era answer that is a question (multi round-trip `input_required`), not the call's result."""
    result = message.get("result")
    return isinstance(result, dict) and result.get("resultType") == "input_required"


def ask(state: OfferedInput, question: dict[str, Any]) -> Literal["ask", "again"] | None:
    """A new round: its requests as the host is to see them ("ask"), or none but a state to call again with
    ("again"); None when neither is readable, or past the bound on rounds."""
    requests = question.get("inputRequests")
    got = question.get("requestState")
    state.rounds += 1
    state.requests, state.upstream_key, state.answers, state.left = {}, {}, {}, set()
    state.request_state = got if isinstance(got, str) else None
    if state.rounds > INPUT_ROUNDS_MAX:
        return None
    if not isinstance(requests, dict) or not requests:
        return "again" if state.request_state is not None and requests in (None, {}) else None
    for key, request in requests.items():
        shown = key if key not in state.used else f"{key}.{state.rounds}"
        while shown in state.used:
            shown += "_"
        state.used.add(shown)
        state.requests[shown] = request
        state.upstream_key[shown] = key
        state.left.add(shown)
    return "ask"


def answer(state: OfferedInput, responses: dict[str, Any]) -> bool:
    """The host's answers (each an object, to a request still outstanding; others are ignored, as the extension
    says). True when every request of the round has its answer. Linear in the answers: K of them in one
    `tasks/update` cost K set lookups, not K walks of the round's requests."""
    for key, response in responses.items():
        if key in state.left and isinstance(response, dict):
            state.answers[state.upstream_key[key]] = response
            state.left.discard(key)
    return not state.left


def retry_params(state: OfferedInput) -> dict[str, Any]:
    """The call made again: as first sent, with this round's answers and the upstream's state."""
    params = {**state.call_params, **({"inputResponses": dict(state.answers)} if state.answers else {})}
    if state.request_state is not None:
        params["requestState"] = state.request_state
    return params


def refusal(tool: str, task_id: str, rounds: int | None) -> str:
    """Why the task failed instead: a question inside a 2025-era task (`rounds` None: its host takes no
    `tasks/update`), an unreadable one, or one round too many."""
    if rounds is None:
        return (
            f"{tool} asked for input (resultType input_required) inside task {task_id}, which mcpwatch runs for "
            f"the host ([tasks] offer) and cannot relay input requests in; call {tool} without a task to answer them"
        )
    if rounds > INPUT_ROUNDS_MAX:
        return (
            f"{tool} asked for input more than {INPUT_ROUNDS_MAX} times inside task {task_id}; mcpwatch relays that "
            "many rounds at most"
        )
    return f"{tool} answered input_required inside task {task_id} without any input request mcpwatch can relay"
