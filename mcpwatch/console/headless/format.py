"""Short human text for numbers the console shows (pure; shared by screens, replay and reports)."""

from __future__ import annotations

import math

DASH = "—"


def seconds(value: float | None) -> str:
    """A configured duration as the operator typed it: `110s`, `12.5s`, `0.25s`."""
    if value is None or not math.isfinite(value):
        return DASH
    return f"{value:g}s" if abs(value) < 1e6 else f"{value:.3g}s"


def duration(value: float | None) -> str:
    """An elapsed time at a glance: `0.42s`, `8.3s`, `42s`, `4m05s`, `2h03m`."""
    if value is None or not math.isfinite(value):
        return DASH
    sign = "-" if value < 0 else ""
    v = abs(value)
    if v < 1:
        return f"{sign}{v:.2f}s"
    if v < 10:
        return f"{sign}{v:.1f}s"
    if v < 60:
        return f"{sign}{v:.0f}s"
    if v < 3600:
        m, s = divmod(int(v), 60)
        return f"{sign}{m}m{s:02d}s"
    h, rem = divmod(int(v), 3600)
    return f"{sign}{h}h{rem // 60:02d}m"


def millis(value: float | None) -> str:
    """A latency: `12.5 ms`, `850 ms`; from a second on, as `duration` says it (`2.9s`, `25s`, `1m05s`)."""
    if value is None or not math.isfinite(value):
        return DASH
    if round(value) >= 1000:
        return duration(max(value, 1000) / 1000)
    return f"{value:.1f} ms" if value < 100 else f"{value:.0f} ms"


def count(n: int, thing: str) -> str:
    """`1 call`, `2 calls`, `1,204 deadlines`: a count with its noun, singular for one."""
    return f"{n:,} {thing}" if n == 1 else f"{n:,} {thing}s"


def bar(fraction: float | None, width: int) -> str:
    """A text gauge, `███████░░░`, clamped to 0..1; blank without a fraction."""
    if fraction is None or not math.isfinite(fraction) or width <= 0:
        return " " * max(0, width)
    filled = round(max(0.0, min(1.0, fraction)) * width)
    return "█" * filled + "░" * (width - filled)


def short_model(name: str) -> str:
    """`openai/gpt-5.1` → `gpt-5.1`: the vendor prefix costs columns and rarely helps."""
    return name.rsplit("/", 1)[-1]


def clip(text: str | None, width: int) -> str:
    """One line of at most `width` characters, ending in `…` when cut."""
    if not text:
        return ""
    line = " ".join(text.split())
    return line if len(line) <= width else line[: max(0, width - 1)] + "…"


def amount(value: float | None) -> str:
    """A progress count: whole numbers as such (`3` for 3.002), else one decimal."""
    if value is None or not math.isfinite(value):
        return ""
    if abs(value - round(value)) < 0.05 and abs(value) < 1e15:
        return str(round(value))
    return f"{value:.1f}"


def progress(value: float | None, total: float | None) -> str:
    """`3/7`, or just the count without a total."""
    if value is None:
        return ""
    if total is None:
        return amount(value)
    return f"{amount(value)}/{amount(total)}"
