"""The replay clock (session time that runs at a speed while playing) and the times an operator can type.

Pure: the wall clock is injected, so tests move time by hand.
"""

from __future__ import annotations

import math
import re
import time
from collections.abc import Callable

SPEEDS = (0.1, 0.25, 0.5, 1.0, 2.0, 4.0, 8.0, 16.0, 32.0, 64.0, 128.0, 256.0, 512.0, 1024.0)
MIN_SPEED = 0.01
MAX_SPEED = 10_000.0


class InvalidTime(ValueError):
    """A time the operator typed that does not work; the message says why and what would."""


def check_speed(value: float) -> float:
    """A usable speed, or InvalidTime saying what is allowed."""
    if not (isinstance(value, int | float) and math.isfinite(value) and MIN_SPEED <= value <= MAX_SPEED):
        raise InvalidTime(
            f"speed must be a number from {MIN_SPEED:g} to {MAX_SPEED:g} (times real time), not {value!r}"
        )
    return float(value)


def speed_text(speed: float) -> str:
    return f"{speed:g}×"


class ReplayClock:
    """Session time `now()`: `speed` × wall time while playing, held still while paused, kept within [0, end].

    Reaching the end pauses it, as a player does.
    """

    def __init__(
        self,
        end: float,
        *,
        wall: Callable[[], float] = time.monotonic,
        start: float = 0.0,
        speed: float = 1.0,
        playing: bool = False,
    ) -> None:
        self.end = max(0.0, end)
        self._wall = wall
        self._speed = check_speed(speed)
        self._anchor = self._clamp(start)
        self._anchor_wall = wall()
        self._playing = playing

    def _clamp(self, t: float) -> float:
        return min(self.end, max(0.0, t))

    def now(self) -> float:
        if not self._playing:
            return self._anchor
        t = self._anchor + (self._wall() - self._anchor_wall) * self._speed
        if t >= self.end:
            self.set(self.end)
            self._playing = False
            return self.end
        return t

    def set(self, t: float) -> None:
        """Move to session time `t` (clamped); playing carries on from there."""
        self._anchor = self._clamp(t)
        self._anchor_wall = self._wall()

    @property
    def playing(self) -> bool:
        return self._playing

    def play(self) -> None:
        if self._anchor >= self.end:
            self._anchor = 0.0  # at the end, play starts again from the beginning
        self.set(self.now())
        self._playing = True

    def pause(self) -> None:
        self.set(self.now())
        self._playing = False

    def toggle(self) -> bool:
        """Play or pause; returns whether it now plays."""
        if self._playing:
            self.pause()
        else:
            self.play()
        return self._playing

    @property
    def speed(self) -> float:
        return self._speed

    def set_speed(self, speed: float) -> float:
        self.set(self.now())
        self._speed = check_speed(speed)
        return self._speed

    def faster(self) -> float:
        """The next preset speed up (from any speed: 3× goes to 4×)."""
        return self.set_speed(next((s for s in SPEEDS if s > self._speed + 1e-9), SPEEDS[-1]))

    def slower(self) -> float:
        return self.set_speed(next((s for s in reversed(SPEEDS) if s < self._speed - 1e-9), SPEEDS[0]))


# --- times an operator types ----------------------------------------------------------------------------------

FORMS = (
    "seconds (90, 1m30s, 2h), h:m:s (1:30, 01:02:03), a share (50%), start, end, ±offset (+10s) "
    "or a time of day (@14:03)"
)

_UNITS = {"h": 3600.0, "m": 60.0, "s": 1.0}
_DURATION = re.compile(r"^(?:(\d+(?:\.\d*)?)h)?(?:(\d+(?:\.\d*)?)m(?!s))?(?:(\d+(?:\.\d*)?)s)?$")
_CLOCK = re.compile(r"^(?:(\d+):)?(\d+):(\d{1,2}(?:\.\d*)?)$")


def _clock(text: str) -> float | None:
    """`m:ss`, `h:mm:ss` (seconds may have a fraction) as seconds; None if it is not one or a field overflows."""
    match = _CLOCK.match(text)
    if match is None:
        return None
    hours, minutes, secs = match.groups()
    if float(secs) >= 60 or (hours is not None and int(minutes) >= 60):
        return None
    return int(hours or 0) * 3600.0 + int(minutes) * 60.0 + float(secs)


def _seconds(text: str) -> float | None:
    """`90`, `90.5`, `90s`, `1m30s`, `2h`, `1:30`, `01:02:03.5`: seconds, or None if it is none of these."""
    try:
        value = float(text)
    except ValueError:
        pass
    else:
        return value if math.isfinite(value) else None
    clock_value = _clock(text)
    if clock_value is not None:
        return clock_value
    match = _DURATION.match(text)
    if match and any(match.groups()):
        return sum(float(v) * unit for v, unit in zip(match.groups(), _UNITS.values(), strict=True) if v)
    return None


def _time_of_day(text: str, origin_ts: float | None, end: float) -> float:
    if origin_ts is None:
        raise InvalidTime("this recording has no wall-clock times, so a time of day cannot be placed in it")
    match = _CLOCK.match(text if text.count(":") == 2 else f"{text}:00")
    parts = None if match is None else match.groups()
    if parts is None or int(parts[0]) > 23 or int(parts[1]) > 59 or float(parts[2]) >= 60:
        raise InvalidTime(f"not a time of day: @{text} — use @HH:MM or @HH:MM:SS (local time, 24-hour)")
    wanted = int(parts[0]) * 3600 + int(parts[1]) * 60 + float(parts[2])
    start = time.localtime(origin_ts)
    into_day = start.tm_hour * 3600 + start.tm_min * 60 + start.tm_sec + (origin_ts % 1)
    offset = wanted - into_day
    while offset < 0:
        offset += 86400.0  # later that day, or the next: the first time the clock shows it after the start
    if offset > end:
        first = time.strftime("%H:%M:%S", start)
        last = time.strftime("%H:%M:%S", time.localtime(origin_ts + end))
        raise InvalidTime(f"@{text} is not in this recording: it runs from {first} to {last}")
    return offset


def parse_time(text: str, *, end: float, now: float = 0.0, origin_ts: float | None = None) -> float:
    """Session time for what the operator typed; InvalidTime saying what is wrong and what would work."""
    raw = text.strip().lower()
    if not raw:
        raise InvalidTime(f"type a time: {FORMS}")
    if raw in ("start", "begin", "beginning"):
        return 0.0
    if raw == "end":
        return end
    if raw.startswith("@"):
        return _time_of_day(raw[1:].strip(), origin_ts, end)
    if raw.endswith("%"):
        try:
            share = float(raw[:-1])
        except ValueError:
            share = math.nan
        if not (math.isfinite(share) and 0 <= share <= 100):
            raise InvalidTime(f"not a share of the session: {text.strip()!r} — use 0% to 100%")
        return end * share / 100.0
    sign = 0
    if raw[0] in "+-":
        sign = 1 if raw[0] == "+" else -1
        raw = raw[1:].strip()
    value = _seconds(raw)
    if value is None or value < 0:
        raise InvalidTime(f"not a time: {text.strip()!r} — use {FORMS}")
    target = now + sign * value if sign else value
    if target < 0 and not sign:  # pragma: no cover - parsing never gives a negative here
        raise InvalidTime(f"{text.strip()!r} is before the start")
    if target > end + 1e-9 and not sign:
        raise InvalidTime(f"{text.strip()!r} is past the end: the recording lasts {offset_text(end)}")
    return min(end, max(0.0, target))


def offset_text(seconds: float) -> str:
    """A session offset the way `parse_time` reads it back, to the hundredth: `0:07.25`, `1:02:03`."""
    centis = round(max(0.0, seconds) * 100)
    hours, rest = divmod(centis, 360_000)
    minutes, rest = divmod(rest, 6000)
    secs, frac = divmod(rest, 100)
    tail = f"{secs:02d}" + (f".{frac:02d}" if frac else "")
    return f"{hours}:{minutes:02d}:{tail}" if hours else f"{minutes}:{tail}"
