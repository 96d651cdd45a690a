"""The console's actions (margin, host timeout, deadline, cancel, health check) go through one operator session,
kept: each action opened its own before, an MCP handshake that at load 20 held an Enter for about a second
(30 ms with the session reused, measured against the demo's wrapper)."""

from __future__ import annotations

import asyncio
from typing import Any, ClassVar

import pytest

from mcpwatch.console.headless.controls import LiveControls
from mcpwatch.console.headless.source import Locator, Target
from mcpwatch.operator import OperatorUnavailable
from mcpwatch.registry import WrapperEntry


def entry(pid: int) -> WrapperEntry:
    return WrapperEntry(pid=pid, name="w", operator_url=f"http://127.0.0.1:{pid}/mcp", token="t", log_path="",
                        session_id="s")  # fmt: skip


class FakeOperator:
    """Counts sessions opened and closed; `connected` and a failing call are set by the test."""

    opened: ClassVar[list[FakeOperator]] = []

    def __init__(self, wrapper: WrapperEntry) -> None:
        self.wrapper = wrapper
        self.connected = False
        self.closed = False
        self.calls: list[float] = []
        self.fail_next = False
        self.task: asyncio.Task[Any] | None = None

    async def __aenter__(self) -> FakeOperator:
        FakeOperator.opened.append(self)
        self.connected = True
        self.task = asyncio.current_task()
        return self

    async def __aexit__(self, *exc: object) -> None:
        assert asyncio.current_task() is self.task  # a session ends in the task that began it
        self.connected = False
        self.closed = True

    async def set_margin(self, seconds: float) -> dict[str, Any]:
        if self.fail_next:
            self.fail_next = False
            raise OperatorUnavailable("the session ended")
        self.calls.append(seconds)
        return {"margin_s": seconds}


class OneWrapper(Locator):
    def __init__(self, wrapper: WrapperEntry) -> None:
        super().__init__(Target(selector="w"))
        self.wrapper = wrapper

    def resolve(self) -> WrapperEntry | None:
        return self.wrapper

    def candidates(self) -> list[WrapperEntry]:
        return [self.wrapper]


def test_actions_share_one_session_until_it_dies_or_the_wrapper_changes() -> None:
    FakeOperator.opened = []
    locator = OneWrapper(entry(1))
    controls = LiveControls(locator, client_factory=FakeOperator)  # type: ignore[arg-type]  # a fake client

    async def scenario() -> None:
        for seconds in (1.0, 2.0, 3.0):
            assert await controls.set_margin(seconds) == {"margin_s": seconds}
        assert len(FakeOperator.opened) == 1 and FakeOperator.opened[0].calls == [1.0, 2.0, 3.0]

        FakeOperator.opened[0].connected = False  # the wrapper ended the session between two actions
        await controls.set_margin(4.0)
        assert len(FakeOperator.opened) == 2 and FakeOperator.opened[1].calls == [4.0]

        FakeOperator.opened[1].fail_next = True  # it dies during one: that action fails, is not sent again
        with pytest.raises(OperatorUnavailable):
            await controls.set_margin(5.0)
        await controls.set_margin(6.0)
        assert [o.calls for o in FakeOperator.opened] == [[1.0, 2.0, 3.0], [4.0], [6.0]]

        locator.wrapper = entry(2)  # a restarted wrapper: a session to the new one, the old one closed
        await controls.set_margin(7.0)
        assert FakeOperator.opened[-1].wrapper.pid == 2 and FakeOperator.opened[-1].calls == [7.0]

        controls.close()
        for _ in range(5):
            await asyncio.sleep(0)
        assert all(o.closed for o in FakeOperator.opened)

    asyncio.run(scenario())


def test_a_wrapper_that_cannot_be_reached_fails_the_action_with_its_reason() -> None:
    class Unreachable(FakeOperator):
        async def __aenter__(self) -> FakeOperator:
            raise OperatorUnavailable("cannot connect to http://127.0.0.1:1/mcp")

    controls = LiveControls(OneWrapper(entry(1)), client_factory=Unreachable)  # type: ignore[arg-type]

    async def scenario() -> None:
        with pytest.raises(OperatorUnavailable, match="cannot connect"):
            await controls.set_margin(1.0)

    asyncio.run(scenario())


class SlowToOpen(FakeOperator):
    """A session whose handshake takes a few turns of the loop, and that refuses a call once it has closed."""

    async def __aenter__(self) -> FakeOperator:
        for _ in range(3):
            await asyncio.sleep(0)
        return await super().__aenter__()

    async def set_margin(self, seconds: float) -> dict[str, Any]:
        if self.closed:
            raise OperatorUnavailable("the session was closed")
        await asyncio.sleep(0)
        return await super().set_margin(seconds)


def test_actions_typed_while_the_session_opens_share_it_and_all_arrive() -> None:
    # Two actions at once (the health-check and cancel workers run side by side): the second must not close the
    # session the first is still opening, or the first fails although it may have been applied.
    FakeOperator.opened = []
    controls = LiveControls(OneWrapper(entry(1)), client_factory=SlowToOpen)  # type: ignore[arg-type]

    async def scenario() -> list[Any]:
        return await asyncio.gather(*(controls.set_margin(s) for s in (1.0, 2.0, 3.0)), return_exceptions=True)

    answers = asyncio.run(scenario())
    assert answers == [{"margin_s": 1.0}, {"margin_s": 2.0}, {"margin_s": 3.0}]
    assert len(FakeOperator.opened) == 1 and FakeOperator.opened[0].calls == [1.0, 2.0, 3.0]


class Registry(Locator):
    """A locator whose registry holds `running`; `last` is what the feed followed."""

    def __init__(self, followed: WrapperEntry, running: list[WrapperEntry]) -> None:
        super().__init__(Target(selector="w"))
        self._last = followed
        self.running = running

    def candidates(self) -> list[WrapperEntry]:
        return self.running

    def resolve(self) -> WrapperEntry | None:
        raise AssertionError("an action goes to the wrapper the console shows, not one it has not switched to")


def test_an_action_is_not_sent_once_the_followed_wrapper_has_left_the_registry() -> None:
    # The wrapper exited (its port may now be anyone's) or restarted under its name with a new token: the held
    # session, and a new one, would hand the action and the token to whatever listens there now.
    FakeOperator.opened = []
    old = entry(1)
    locator = Registry(old, [old])
    controls = LiveControls(locator, client_factory=FakeOperator)  # type: ignore[arg-type]

    async def scenario() -> None:
        await controls.set_margin(1.0)
        locator.running = []  # exited
        with pytest.raises(OperatorUnavailable, match="not sent"):
            await controls.set_margin(2.0)
        locator.running = [WrapperEntry(**{**old.__dict__, "session_id": "s2", "token": "t2"})]  # restarted
        with pytest.raises(OperatorUnavailable, match="not sent"):
            await controls.set_margin(3.0)
        controls.close()

    asyncio.run(scenario())
    assert len(FakeOperator.opened) == 1 and FakeOperator.opened[0].calls == [1.0]


class StoppedFeed:
    stopped = False

    def stop(self) -> None:
        self.stopped = True


def test_leaving_a_wrapper_ends_its_operator_session_with_its_feed() -> None:
    # From the fleet, esc back to the list stopped the feed only: a session stayed open to every wrapper visited.
    from mcpwatch.console.headless.session import WatchSession

    FakeOperator.opened = []
    controls = LiveControls(OneWrapper(entry(1)), client_factory=FakeOperator)  # type: ignore[arg-type]
    feed = StoppedFeed()
    session = WatchSession(feed, controls)  # type: ignore[arg-type]  # only stop() is used

    async def scenario() -> None:
        await controls.set_margin(1.0)
        session.stop()
        for _ in range(5):
            await asyncio.sleep(0)
        assert feed.stopped and len(FakeOperator.opened) == 1 and FakeOperator.opened[0].closed  # before the loop ends

    asyncio.run(scenario())


class Blocking(FakeOperator):
    """set_margin waits for `release` and fails once its session has closed (as a call cut off by the close)."""

    release: ClassVar[asyncio.Event]

    async def set_margin(self, seconds: float) -> dict[str, Any]:
        if seconds < 0:
            await Blocking.release.wait()
            if self.closed:
                raise OperatorUnavailable("the session was closed under the call")
        return await super().set_margin(seconds)


def test_a_call_failing_on_an_old_session_leaves_the_new_wrappers_session_open() -> None:
    # An action in flight to a wrapper that restarted fails (it is not sent again); its failure must close its own
    # session, not the one a later action opened to the replacement (and maybe still uses).
    FakeOperator.opened = []
    locator = OneWrapper(entry(1))
    controls = LiveControls(locator, client_factory=Blocking)  # type: ignore[arg-type]

    async def scenario() -> None:
        Blocking.release = asyncio.Event()
        slow = asyncio.ensure_future(controls.set_margin(-1.0))
        for _ in range(5):
            await asyncio.sleep(0)
        locator.wrapper = entry(2)  # restarted
        assert await controls.set_margin(2.0) == {"margin_s": 2.0}  # to the new one
        Blocking.release.set()
        with pytest.raises(OperatorUnavailable):
            await slow  # told, and not sent again
        await controls.set_margin(3.0)
        new = [o for o in FakeOperator.opened if o.wrapper.pid == 2]
        assert len(new) == 1 and not new[0].closed and new[0].calls == [2.0, 3.0]
        controls.close()

    asyncio.run(scenario())
