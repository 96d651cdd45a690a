"""The replay clock and the times an operator types (pure: a hand-moved wall clock)."""

from __future__ import annotations

import time

import pytest
from hypothesis import given
from hypothesis import strategies as st
from replay_helpers import HandClock

from mcpwatch.replay.clock import SPEEDS, InvalidTime, ReplayClock, check_speed, offset_text, parse_time

ORIGIN = 1_767_225_600.0  # 2026-01-01T00:00:00Z


pytestmark = pytest.mark.usefixtures("utc")  # wall-clock times on screen are local


def test_clock_runs_at_its_speed_only_while_playing() -> None:
    wall = HandClock()
    clock = ReplayClock(100.0, wall=wall, speed=4.0)
    assert clock.now() == 0.0 and not clock.playing
    wall.advance(5)
    assert clock.now() == 0.0  # paused: still
    clock.play()
    wall.advance(2.5)
    assert clock.now() == 10.0
    clock.set_speed(1.0)  # a new speed from where it is, not retroactively
    wall.advance(1)
    assert clock.now() == 11.0
    clock.pause()
    wall.advance(10)
    assert clock.now() == 11.0
    clock.set(150.0)
    assert clock.now() == 100.0  # clamped to the recording


def test_clock_stops_at_the_end_and_play_starts_again_from_the_start() -> None:
    wall = HandClock()
    clock = ReplayClock(10.0, wall=wall, playing=True)
    wall.advance(60)
    assert clock.now() == 10.0 and not clock.playing
    clock.play()
    assert clock.now() == 0.0 and clock.playing


def test_speed_steps_through_the_presets_and_refuses_nonsense() -> None:
    clock = ReplayClock(10.0, wall=HandClock(), speed=3.0)
    assert clock.faster() == 4.0 and clock.slower() == 2.0
    for _ in range(20):
        clock.faster()
    assert clock.speed == SPEEDS[-1]
    for _ in range(20):
        clock.slower()
    assert clock.speed == SPEEDS[0]
    for bad in (0.0, -1.0, float("nan"), float("inf"), 1e9):
        with pytest.raises(InvalidTime, match="speed must be"):
            check_speed(bad)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("90", 90.0),
        ("90.5s", 90.5),
        ("1m30s", 90.0),
        ("2h", 7200.0),
        ("1h2m3.5s", 3723.5),
        ("1:30", 90.0),
        ("0:07.25", 7.25),
        ("01:02:03", 3723.0),
        ("50%", 5000.0),
        ("start", 0.0),
        (" END ", 10_000.0),
        ("+10s", 110.0),
        ("-1m", 40.0),
        ("-5m", 0.0),  # relative moves stop at the ends
        ("@00:30", 1800.0),
        ("@01:00:30", 3630.0),
    ],
)
def test_times_an_operator_can_type(text: str, expected: float) -> None:
    assert parse_time(text, end=10_000.0, now=100.0, origin_ts=ORIGIN) == expected


@pytest.mark.parametrize(
    ("text", "says"),
    [
        ("", "type a time"),
        ("soon", "not a time: 'soon' — use seconds"),
        ("1:75", "not a time"),
        ("1:2:3:4", "not a time"),
        ("nan", "not a time"),
        ("150%", "use 0% to 100%"),
        ("3h", "past the end: the recording lasts 2:46:40"),
        ("@25:00", "not a time of day"),
        ("@05:00", "not in this recording: it runs from 00:00:00 to 02:46:40"),
    ],
)
def test_a_time_that_does_not_work_says_why(text: str, says: str) -> None:
    with pytest.raises(InvalidTime) as caught:
        parse_time(text, end=10_000.0, origin_ts=ORIGIN)
    assert says in str(caught.value)


def test_time_of_day_without_wall_times() -> None:
    with pytest.raises(InvalidTime, match="no wall-clock times"):
        parse_time("@10:00", end=100.0, origin_ts=None)


def test_a_session_over_midnight_places_times_of_day_after_its_start() -> None:
    late = ORIGIN + 23 * 3600  # starts 23:00
    assert parse_time("@23:30", end=7200.0, origin_ts=late) == 1800.0
    assert parse_time("@00:15", end=7200.0, origin_ts=late) == 4500.0  # the next day


@given(st.floats(min_value=0, max_value=200_000, allow_nan=False))
def test_offsets_read_back_to_the_hundredth(seconds: float) -> None:
    text = offset_text(seconds)
    assert abs(parse_time(text, end=1e9) - seconds) <= 0.005 + 1e-9


def test_offset_text_forms() -> None:
    assert [offset_text(t) for t in (0, 7.25, 59.999, 3723, 36000.5)] == [
        "0:00",
        "0:07.25",
        "1:00",
        "1:02:03",
        "10:00:00.50",
    ]
    assert time.strftime("%H", time.localtime(ORIGIN)) == "00"  # the fixture's zone holds
