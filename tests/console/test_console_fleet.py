"""Fleet: the rows and what counts as trouble; three real wrappers chosen and switched by number, the badge for
another wrapper's errors, the others offered when the watched wrapper dies; a deterministic snapshot."""

from __future__ import annotations

import asyncio
import importlib.util
import os
import signal
from pathlib import Path
from typing import Any

import pytest
from console_helpers import SIZE
from trends_helpers import ORIGIN, standard_script

from mcpwatch.console.app import ConsoleApp
from mcpwatch.console.headless.fleet import fleet_row, log_part
from mcpwatch.console.headless.source import LiveFeed, Target
from mcpwatch.console.screens.fleet import FleetScreen
from mcpwatch.console.screens.main import MainScreen
from mcpwatch.console.widgets import Line
from mcpwatch.registry import WrapperEntry, find_wrapper

from pilot_tools import current, screen_text, until

pytestmark = pytest.mark.usefixtures("utc")  # wall-clock times on screen are local


def _entry(pid: int, name: str, log: Path | None = None, sid: str = "") -> WrapperEntry:
    return WrapperEntry(pid, name, "http://127.0.0.1:1/mcp", "t", str(log or ""), sid, "python server.py", ORIGIN)


def _status(state: str = "ready", generation: int = 1, in_flight: int = 0) -> dict[str, Any]:
    return {
        "wrapper": {
            "upstream": {"state": state, "generation": generation},
            "host": {"name": "claude-code", "version": "2.1.3"},
        },
        "in_flight": [{"request_id": str(i)} for i in range(in_flight)],
    }


def test_rows_and_trouble() -> None:
    ok = fleet_row(_entry(1, "a"), _status(in_flight=2), {"ok": 9}, None)
    assert (ok.host, ok.upstream, ok.generation, ok.in_flight, ok.deadlines_5m, ok.errors_5m) == (
        "claude-code 2.1.3",
        "ready",
        1,
        2,
        0,
        0,
    )
    assert ok.trouble == ""
    bad = fleet_row(_entry(2, "b"), _status(), {"ok": 3, "deadline": 2, "tool_error": 1, "error": 1}, "slow")
    assert bad.deadlines_5m == 2 and bad.errors_5m == 2 and bad.last_warning == "slow"
    assert bad.trouble == "2 deadlines and 2 errors in 5 min"
    assert fleet_row(_entry(3, "c"), _status("backoff", 4), {}, None).trouble == "upstream backoff"
    front = _status()
    front["wrapper"]["host_sessions"] = {"open": 3, "max": 16, "opened": 40, "reclaimed": 21, "refused": 2}
    row = fleet_row(_entry(5, "e"), front, {}, None)
    assert (row.host, row.sessions) == ("claude-code 2.1.3", "3/16 open, 21 reclaimed, 2 refused")
    gone = fleet_row(_entry(4, "d"), None, None, None, "connection refused")
    assert gone.upstream == "unreachable" and gone.trouble == "unreachable" and gone.in_flight is None


def test_the_log_part_counts_the_last_five_minutes(tmp_path: Path) -> None:
    path = tmp_path / "events.db"
    sid = standard_script().write(path)
    outcomes, warning, problem = log_part(_entry(1, "a", path, sid), ORIGIN + 600.0)
    # search calls ending 5:03 … 9:49 (15), one of them the error at 6:43; fetch ends 5:00:30 … 9:30:30 (10)
    assert problem == "" and warning is None
    assert outcomes == {"ok": 24, "error": 1}
    assert log_part(_entry(1, "a"), ORIGIN)[2] == "no log here"


class _Op:
    """An operator client stand-in answering `status` from a table (for the deterministic snapshot)."""

    def __init__(self, answer: dict[str, Any] | None) -> None:
        self.answer = answer

    async def __aenter__(self) -> _Op:
        if self.answer is None:
            raise ConnectionRefusedError("connection refused")
        return self

    async def __aexit__(self, *exc: object) -> None:
        return None

    async def status(self) -> dict[str, Any]:
        assert self.answer is not None
        return self.answer


def test_fleet_snapshot(snap_compare: Any, tmp_path: Path) -> None:
    path = tmp_path / "events.db"
    sid = standard_script().write(path)
    entries = [_entry(101, "council", path, sid), _entry(202, "search"), _entry(303, "tasks")]
    answers = {101: _status(in_flight=3), 202: _status("backoff", 3), 303: None}
    screen = FleetScreen(
        lambda: entries,
        lambda entry: None,
        watching=101,
        client_factory=lambda e: _Op(answers[e.pid]),
        clock=lambda: ORIGIN + 600.0,
    )

    async def probed(pilot: Any) -> None:
        await pilot.pause(0.2)
        await pilot.app.push_screen(screen)  # over the "no wrapper called none" screen
        await until(pilot, lambda: len(screen.summaries) == 3, what="three rows")
        await pilot.pause(0.5)

    assert snap_compare(ConsoleApp(target=Target(selector="none")), terminal_size=(150, 16), run_before=probed)


@pytest.mark.anyio
async def test_a_fleet_round_slower_than_its_period_still_badges(monkeypatch: pytest.MonkeyPatch) -> None:
    """Each fleet round cancelled the one before: when probing took longer than the period (a loaded machine, a slow
    wrapper), no round ever finished and the badge never showed."""
    import asyncio

    from console_helpers import RecordingControls, ready

    import mcpwatch.console.headless.fleet as fleet
    import mcpwatch.registry as registry
    from mcpwatch.console.headless.session import WatchSession
    from mcpwatch.testing.feed import StaticFeed
    from mcpwatch.testing.sample import SAMPLE_NOW, sample_session

    prod = _entry(4242, "prod")
    probes = 0

    async def slow_probe(entries: list[WrapperEntry], now: float) -> list[Any]:
        nonlocal probes
        probes += 1
        await asyncio.sleep(0.3)  # six periods
        return [fleet_row(e, _status(), {"deadline": 2}, None) for e in entries]

    monkeypatch.setattr(registry, "running_wrappers", lambda directory=None: [prod])
    monkeypatch.setattr(registry, "pid_alive", lambda pid: True)
    monkeypatch.setattr(fleet, "probe_fleet", slow_probe)
    app = ConsoleApp(session=WatchSession(StaticFeed(sample_session(), SAMPLE_NOW), RecordingControls()))
    monkeypatch.setattr(app, "_watched_entry", lambda: _entry(4141, "here"))  # a badge needs to know who is watched
    app.fleet_every_s = 0.05
    async with app.run_test(size=SIZE) as pilot:
        await ready(pilot)
        await until(pilot, lambda: app.fleet_badge == "prod: 2 deadlines in 5 min (F)", what="the badge")
        assert probes >= 1


# -- three real wrappers -----------------------------------------------------------------------------------------


@pytest.mark.anyio
@pytest.mark.slow
@pytest.mark.timeout(240)  # three wrappers and a console: 20 s alone, 97 s beside four CPU burners
@pytest.mark.skipif(importlib.util.find_spec("mcpwatch.commands.wrap") is None, reason="no `mcpwatch wrap`")
async def test_choose_switch_badge_and_offer_among_three_real_wrappers(monkeypatch: pytest.MonkeyPatch) -> None:
    import mcpwatch.console.headless.fleet as fleet

    from waiting import patience
    from wraptools import RAW_SERVER, wrapped_client

    # A wrapper that does not answer its status in 2 s shows as unreachable; beside CPU burners these ones may not.
    monkeypatch.setattr(fleet, "PROBE_TIMEOUT_S", patience(fleet.PROBE_TIMEOUT_S))

    # The raw fixture server starts in a blink where the SDK's took seconds each on a loaded machine; the fleet
    # reads only the wrappers' registry, status and log, whatever the server behind them.
    server = [__import__("sys").executable, RAW_SERVER]
    async with (
        wrapped_client(server, wrap_args=["--name", "alpha"]) as alpha,
        wrapped_client(server, wrap_args=["--name", "beta"]) as beta,
    ):
        assert not (await alpha.call_tool("noop", {})).is_error
        assert (await beta.call_tool("no-such-tool", {})).is_error  # beta has an error in the last 5 min
        async with wrapped_client(server, wrap_args=["--name", "gamma"]) as gamma:
            assert not (await gamma.call_tool("noop", {})).is_error
            names = [find_wrapper(n)[0] for n in ("alpha", "beta", "gamma")]
            app = ConsoleApp(target=Target())
            app.fleet_every_s = 0.5
            async with app.run_test(size=SIZE) as pilot:
                await until(pilot, lambda: isinstance(app.screen, FleetScreen), what="the chooser")
                chooser = current(app, FleetScreen)
                await until(pilot, lambda: len(chooser.summaries) == 3, what="three wrappers probed")
                assert chooser.summaries[names[1].pid].errors_5m == 1
                assert chooser.summaries[names[0].pid].upstream == "ready"
                assert "3 wrappers are running" in screen_text(app)
                await pilot.press("3")  # gamma
                await until(pilot, lambda: isinstance(app.screen, MainScreen), what="the main screen")
                await until(pilot, lambda: "gamma" in screen_text(app) and "● live" in screen_text(app))
                # beta's error shows as a badge in gamma's top bar
                await until(pilot, lambda: "beta: 1 error in 5 min" in screen_text(app), timeout=30, what="the badge")
                # F, then 1: now watching alpha
                await pilot.press("F")
                await until(pilot, lambda: isinstance(app.screen, FleetScreen) and app.screen is not chooser)
                fleet_screen = current(app, FleetScreen)
                assert fleet_screen.watching == names[2].pid
                await pilot.press("1")
                await until(pilot, lambda: isinstance(app.screen, MainScreen), what="back on a main screen")
                await until(pilot, lambda: "alpha" in screen_text(app) and "● live" in screen_text(app))
                feed = app.session.feed if app.session is not None else None
                assert isinstance(feed, LiveFeed)  # a wrapper chosen in Fleet is watched through its registry entry
                assert feed.locator.last is not None and feed.locator.last.pid == names[0].pid
                # back on gamma, whose wrapper then goes away: the others are offered
                await pilot.press("F")
                await until(pilot, lambda: isinstance(app.screen, FleetScreen) and app.screen is not fleet_screen)
                await pilot.press("3")
                await until(pilot, lambda: "gamma" in screen_text(app) and "● live" in screen_text(app))
                os.kill(names[2].pid, signal.SIGTERM)
                await until(
                    pilot,
                    lambda: isinstance(app.screen, FleetScreen) and "gamma" in (app.screen.headline or ""),
                    timeout=20,
                    what="the others offered",
                )
                offer = current(app, FleetScreen)
                assert "is gone — 2 other wrappers running" in (offer.headline or "")
                await pilot.press("2")
                await until(pilot, lambda: "beta" in screen_text(app) and "● live" in screen_text(app))


@pytest.mark.anyio
@pytest.mark.parametrize("chooser", [False, True])
async def test_fleet_and_the_chooser_at_80_columns(tmp_path: Path, chooser: bool) -> None:
    """Fleet and the start-up chooser cut their columns at 80 (no in flight, deadlines or errors), no way sideways."""
    from mcpwatch.console.screens.choose import ChooseWrapperScreen
    from mcpwatch.console.widgets import WindowTable

    entries = [_entry(101, "council"), _entry(202, "search")]
    answers = {101: _status(in_flight=3), 202: _status("backoff", 3)}

    def factory(entry: WrapperEntry) -> _Op:
        return _Op(answers[entry.pid])

    if chooser:
        screen: FleetScreen = ChooseWrapperScreen(lambda: entries, lambda entry: None, client_factory=factory)
    else:
        screen = FleetScreen(
            lambda: entries, lambda entry: None, watching=101, clock=lambda: ORIGIN, client_factory=factory
        )
    app = ConsoleApp(target=Target(selector="none"))
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.pause(0.2)
        await app.push_screen(screen)
        await until(pilot, lambda: len(screen.summaries) == 2, what="two rows")
        table = screen.query_one(WindowTable)
        right = 0
        for column in table.ordered_columns:  # what says a wrapper needs a look is on screen, unscrolled
            right += column.get_render_width(table)
            if str(column.label) == "errors 5m":
                break
        assert right <= table.scrollable_content_region.width
        await until(pilot, lambda: "← →: the other columns" in screen.query_one("#fleet-hint", Line).plain, what="hint")
        await pilot.press("right")
        await until(pilot, lambda: table.scroll_x > 0, what="a sideways scroll")
        await pilot.pause()
        shown = "".join(segment.text for segment in table.render_line(1))  # the first row, scrolled
        assert "council" in shown  # the name column stays; only the others scroll


class _Busy(_Op):
    """A live wrapper on a loaded machine: its status comes after the probe's time is up."""

    async def status(self) -> dict[str, Any]:
        await asyncio.sleep(30)
        return await super().status()


@pytest.mark.anyio
async def test_a_live_wrapper_slow_to_answer_is_never_called_unreachable() -> None:
    """Under load a live wrapper's status came after the probe's 2 s: it was badged "unreachable". A wrapper whose
    process is alive is "slow to answer" (no badge); one whose process is gone stays unreachable."""
    from mcpwatch.console.headless.fleet import SLOW, probe_fleet

    gone_pid = 2**22 + 12345  # beyond any pid the system gives out
    entries = [_entry(os.getpid(), "busy"), _entry(gone_pid, "gone")]
    answers: dict[int, Any] = {os.getpid(): _Busy(_status()), gone_pid: _Busy(_status())}
    rows = await probe_fleet(entries, ORIGIN, client_factory=lambda e: answers[e.pid], timeout=0.05)
    busy, gone = rows
    assert (busy.upstream, busy.trouble) == (SLOW, "")
    assert (gone.upstream, gone.trouble) == ("unreachable", "unreachable")


@pytest.mark.anyio
@pytest.mark.parametrize("watched_known", [True, False])
async def test_the_badge_never_names_the_watched_wrapper_or_one_gone(
    monkeypatch: pytest.MonkeyPatch, watched_known: bool
) -> None:
    """The badge once named the watched wrapper itself (before the console knew which it watched) or one gone
    between the registry's list and the probe."""
    from types import SimpleNamespace

    from mcpwatch import registry
    from mcpwatch.console.headless import fleet
    from mcpwatch.console.insight_actions import InsightActions

    watched, other, gone = _entry(101, "council"), _entry(202, "search"), _entry(303, "tasks")
    alive = {101, 202}
    monkeypatch.setattr(registry, "running_wrappers", lambda _dir=None: [watched, other, gone])
    monkeypatch.setattr(registry, "pid_alive", lambda pid: pid in alive)

    async def probe(entries: list[WrapperEntry], now: float, **_: Any) -> list[fleet.FleetRow]:
        alive.discard(303)  # it dies while probed
        return [fleet_row(e, None, None, None, "refused") for e in entries]  # all "unreachable"

    monkeypatch.setattr(fleet, "probe_fleet", probe)

    class Console(InsightActions):
        session = SimpleNamespace(
            feed=SimpleNamespace(locator=SimpleNamespace(last=watched if watched_known else None))
        )

    console = Console()
    await console._fleet_round()
    if watched_known:
        assert console.fleet_badge == "search: unreachable (F)"
    else:
        assert console.fleet_badge == ""  # which one is watched is not known yet: no badge that could name it


@pytest.mark.anyio
@pytest.mark.parametrize("width", [80, 120])
async def test_an_http_fronts_sessions_show_whole_in_fleet_at_80_and_120_columns(width: int) -> None:
    """They were cut to `· ses…` at every width (inside the host column): now a column of their own, whole on
    screen at 120 columns and after → → at 80."""
    from mcpwatch.console.widgets import WindowTable

    front = _status()
    front["wrapper"]["host_sessions"] = {"open": 16, "max": 16, "opened": 400, "reclaimed": 120, "refused": 1043}
    entries = [_entry(101, "council")]
    screen = FleetScreen(lambda: entries, lambda entry: None, client_factory=lambda e: _Op(front))
    app = ConsoleApp(target=Target(selector="none"))
    async with app.run_test(size=(width, 24)) as pilot:
        await pilot.pause(0.2)
        await app.push_screen(screen)
        await until(pilot, lambda: len(screen.summaries) == 1, what="the row")
        table = screen.query_one(WindowTable)
        if width == 80:
            await until(pilot, lambda: table.cut, what="the table wider than the screen")
            await pilot.press("right", "right")
            await until(pilot, lambda: table.scroll_x > 26, what="two sideways scrolls")
        await pilot.pause(0.1)
        shown = "".join(segment.text for segment in table.render_line(1))
        assert "16/16 open, 120 reclaimed, 1043 refused" in shown, shown


class _Slowed(_Op):
    """A live wrapper whose status is slowed by an injected delay (an event the test sets), not by load."""

    def __init__(self, status: dict[str, Any], gate: asyncio.Event) -> None:
        super().__init__(status)
        self.gate = gate

    async def status(self) -> dict[str, Any]:
        await self.gate.wait()
        return await super().status()


@pytest.mark.anyio
async def test_fleet_rows_come_from_the_live_feed_and_say_their_age_when_probes_are_slow() -> None:
    """Rows stayed `…` for minutes under load while the main screen had the data. The watched wrapper's row comes
    from the live feed's status at once (never probed); another, whose probe is slowed past its timeout, keeps
    what it last said with its age, never `…` nor "unreachable" while its process lives."""
    from mcpwatch.console.headless.fleet import probe_fleet

    now = [ORIGIN]
    gate = asyncio.Event()
    watched, other = _entry(os.getpid(), "council"), _entry(os.getppid(), "search")
    live = (_status(in_flight=2), ORIGIN + 40)  # the feed asks every 2 s: fresh
    asked: list[int] = []

    def factory(entry: WrapperEntry) -> Any:
        asked.append(entry.pid)
        return _Slowed(_status("backoff", 3), gate)

    # the probe itself: the watched wrapper is never asked; the other's first status is known, then slow
    gate.set()
    first = await probe_fleet([watched, other], now[0], client_factory=factory, known={watched.pid: live})
    assert asked == [other.pid] and first[0].in_flight == 2 and first[1].upstream == "backoff"
    gate.clear()
    now[0] += 40
    second = await probe_fleet(
        [watched, other], now[0], client_factory=factory, timeout=0.05, previous={r.pid: r for r in first}
    )
    assert second[1].upstream == "backoff" and second[1].age_text(now[0]) == "40 s old"

    # on screen: the watched row at once from the feed, before any probe answers
    screen = FleetScreen(
        lambda: [watched, other],
        lambda entry: None,
        watching=watched.pid,
        client_factory=factory,
        clock=lambda: now[0],
        live_status=lambda: live,
    )
    screen.summaries = {r.pid: r for r in first}  # the last probe's rows; the next probe is slowed past its time
    app = ConsoleApp(target=Target(selector="none"))
    async with app.run_test(size=(120, 24)) as pilot:
        await pilot.pause(0.2)
        await app.push_screen(screen)
        await until(pilot, lambda: "40 s old" in screen_text(app), what="the other's age")
        text = screen_text(app)
        assert "unreachable" not in text and "search …" not in text and "council …" not in text
        assert "▶ council" in text and "● ready" in text and "● backoff 40 s old" in text
        await pilot.pause(2.5)  # past the slowed probe's timeout: the row keeps what it knew, with its age
        text = screen_text(app)
        assert "● backoff 40 s old" in text and "unreachable" not in text and "slow to answer" not in text
        gate.set()
