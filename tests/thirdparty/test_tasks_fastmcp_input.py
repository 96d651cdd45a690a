"""Input requests inside tasks, through `mcpwatch wrap`, with peers nobody here wrote: FastMCP 4 with `fastmcp-tasks`
(`.venv-fastmcp-tasks`, made by `.ci/run`) serves `pick`, a task-only tool that asks for a topic once per round (its
task goes `input_required`, answered by `tasks/update`). The Python SDK's `Client` (2026 era, no tasks extension)
calls it: mcpwatch bridges the task and relays each round's elicitation to it as a multi round-trip question, which
the SDK answers through its elicitation callback. And `pick_now`, the same questions asked by an ordinary tool (a
multi round-trip `input_required` answer), offered as a task to FastMCP 4's own client with the extension: the
task goes `input_required`, the client answers by `tasks/update`, and mcpwatch makes the call again with them; and
`settle`, whose answers ask only to be called again (`requestState`), which mcpwatch does itself."""

from __future__ import annotations

import sys
from collections.abc import Awaitable, Callable, Iterator
from pathlib import Path
from typing import Any

import anyio
import mcp_types
import pytest
from mcp import Client
from shared_front import events_when, shared_front
from test_tasks_fastmcp import fastmcp_tasks_python, run_sessions
from test_tasks_fastmcp_bridge import SERVER, events, text, wrapped


@pytest.fixture(scope="module")
def front(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, Path]]:
    """One `mcpwatch wrap --listen` before the FastMCP 4 server (offering `pick_now` as a task) for the tests that
    only talk to it over HTTP: (the URL of its front, its state folder)."""
    state = tmp_path_factory.mktemp("front")
    config = state / "offer.toml"
    config.write_text('[tasks]\noffer = ["pick_now"]\n')
    with shared_front(state, [fastmcp_tasks_python(), str(SERVER)], "--config", str(config)) as url:
        yield url, state


def call_picks(
    calls: list[tuple[str, int, str | None]],
    url: str | None = None,
    before: Callable[[Client], Awaitable[None]] | None = None,
) -> list[tuple[Any, list[str]]]:
    """Each `(tool, rounds, action)` called in turn in one session through the wrapper (over stdio, or its HTTP
    front at `url`), after `before(client)`: its result and the questions the host was asked. `action` is what the
    host's user does; a session whose first action is None declares no elicitation (the host cannot be asked)."""
    asked: list[str] = []
    actions: list[str | None] = []  # the current call's action last

    async def on_elicit(context: Any, params: Any) -> mcp_types.ElicitResult:
        asked.append(params.message)
        action = actions[-1]
        if action != "accept":
            return mcp_types.ElicitResult(action=action)  # type: ignore[arg-type]
        return mcp_types.ElicitResult(action="accept", content={"topic": f"t{len(asked)}"})

    async def run() -> list[tuple[Any, list[str]]]:
        callback = on_elicit if calls[0][2] is not None else None  # None: the client cannot be asked
        answers = []
        async with Client(url or wrapped(), read_timeout_seconds=60, elicitation_callback=callback) as client:
            if before is not None:
                await before(client)
            for tool, rounds, action in calls:
                asked.clear()
                actions.append(action)
                answers.append((await client.call_tool(tool, {"rounds": rounds}), list(asked)))
        return answers

    return anyio.run(run)  # each request is bounded by the client's read timeout


@pytest.mark.slow
def test_input_requests_reach_the_host_round_after_round_and_an_upstreams_own_pass_untouched(
    isolated_state: Path,
) -> None:
    """One host session over stdio (2026 era, without the tasks extension): `crunch`, which the server refuses
    without the extension (`-32021`: `TaskConfig(mode="required")`), answered because mcpwatch made the task for the
    host, its status changes reaching the host as progress; a bridged task's questions relayed round after round;
    `pick_now`, which asks by its own `requestState` (sealed by FastMCP), neither taken nor refused; a declined
    question reaching the task."""
    crunched: list[Any] = []
    messages: list[str | None] = []

    async def crunch(client: Client) -> None:
        async def on_progress(progress: float, total: float | None, message: str | None) -> None:
            messages.append(message)

        assert client.protocol_version == "2026-07-28"
        crunched.append(await client.call_tool("crunch", {"seconds": 1}, progress_callback=on_progress))

    (picked, asked), (picked_now, asked_now), (declined, asked_declined) = call_picks(
        [("pick", 2, "accept"), ("pick_now", 2, "accept"), ("pick", 1, "decline")], before=crunch
    )
    assert (text(crunched[0]), crunched[0].is_error) == ("crunched 1", False)
    assert messages and messages[-1] == "completed"  # the task's status changes reached the host as progress
    assert (text(picked), picked.is_error) == ("picked t1 t2", False)
    assert asked == ["Which topic (topic1)?", "Which topic (topic2)?"]
    assert (text(picked_now), picked_now.is_error, len(asked_now)) == ("picked t1 t2", False, 2)
    assert (text(declined), asked_declined) == ("decline", ["Which topic (topic1)?"])
    log = events(isolated_state)
    # One task a call, whatever its rounds: the two rounds of the first `pick` and the declined one.
    assert len({e.data["task_id"] for e in log if e.kind == "task_created" and e.tool == "pick"}) == 2
    ends = [e.data for e in log if e.kind == "request_end" and e.tool == "pick"]
    assert [e["task_status"] for e in ends][:3] == ["input_required", "input_required", "completed"]
    ends_now = [e.data for e in log if e.kind == "request_end" and e.tool == "pick_now"]
    assert [e["outcome"] for e in ends_now] == ["ok", "ok", "ok"]  # three calls: two questions, then the answer
    (created,) = [e.data for e in log if e.kind == "task_created" and e.tool == "crunch"]
    assert (created["era"], created["bridged"]) == ("extension", True)
    assert [e.data["outcome"] for e in log if e.kind == "request_end" and e.tool == "crunch"] == ["ok"]


@pytest.mark.slow
def test_over_the_http_front_too(front: tuple[str, Path]) -> None:
    ((result, asked),) = call_picks([("pick", 2, "accept")], front[0])
    assert (text(result), result.is_error, len(asked)) == ("picked t1 t2", False, 2)


@pytest.mark.slow
def test_a_host_that_cannot_be_asked_gets_the_clear_ending(front: tuple[str, Path]) -> None:
    ((result, asked),) = call_picks([("pick", 1, None)], front[0])
    assert result.is_error is True and asked == []
    assert "needs input from the user" in text(result) and "the host did not declare elicitation" in text(result)


OFFERED_PICK_STATUSES = ["input_required", "working", "input_required", "working", "completed"]


def offered_pick_now(log: list[Any]) -> tuple[list[Any], list[str]]:
    """The offered `pick_now` tasks' task_created payloads and their statuses in the log."""
    created = [e.data for e in log if e.kind == "task_created" and e.tool == "pick_now"]
    return created, [e.data["status"] for e in log if e.kind == "task_status" and e.tool == "pick_now"]


@pytest.mark.slow
def test_an_offered_tasks_upstream_questions_are_answered_by_its_host_and_calls_again_made(
    front: tuple[str, Path], isolated_state: Path
) -> None:
    """Over the HTTP front and over stdio (one client, two sessions at once): an offered task's questions answered by
    its host; over stdio, an offered task whose upstream asks only to be called again (`requestState`) is called
    again by mcpwatch, one call to the host."""
    url, state = front
    config = isolated_state / "offer.toml"
    config.write_text('[tasks]\noffer = ["pick_now", "settle"]\n')
    upstream = [fastmcp_tasks_python(), str(SERVER)]
    wrap = [sys.executable, "-m", "mcpwatch", "wrap", "--config", str(config), "--", *upstream]
    over_http, picked, settled = run_sessions(
        [
            {"server": url, "env": {}, "calls": [["pick_now", {"rounds": 2}]]},
            {"server": wrap, "env": {}, "calls": [["pick_now", {"rounds": 2}], ["settle", {"times": 3}]]},
        ]
    )
    for answer in (over_http, picked):
        assert (answer["text"], answer["is_error"]) == ("picked t1 t2", False)
        assert answer["asked"] == ["Which topic (topic1)?", "Which topic (topic2)?"]
    assert (settled["text"], settled["is_error"], settled["asked"]) == ("settled after 3", False, [])
    front_log = events_when(state, lambda seen: offered_pick_now(seen)[1][-1:] == ["completed"], "the task's end")
    for log in (front_log, events(isolated_state)):
        (created,), statuses = offered_pick_now(log)
        assert (created["era"], created["offered"]) == ("extension", True)  # a task, not the client's own round-trips
        assert statuses == OFFERED_PICK_STATUSES
    ends = [e.data for e in events(isolated_state) if e.kind == "request_end" and e.tool == "settle"]
    assert [e["outcome"] for e in ends] == ["ok"]  # one call to the host, called again three times upstream
