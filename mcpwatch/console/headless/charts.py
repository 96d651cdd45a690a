"""Block charts in plain text: one cell column per bucket (or several, to fill the width), eight heights.

Textual-free and deterministic, so a chart is the same string live, in replay and in a snapshot, and drawing one is
a few microseconds (the Trends screen draws dozens per frame).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

BLOCKS = "▁▂▃▄▅▆▇█"
MARKS = {"config": "▲", "restart": "◆"}


def cells_per_bucket(buckets: int, width: int) -> int:
    """How many columns each bucket gets so the chart fills (at most) `width`."""
    return max(1, width // max(1, buckets))


def blocks(values: Sequence[float | None], width: int, *, top: float | None = None) -> str:
    """One block per bucket, repeated to fill the width; a missing value or a zero is a blank, any value above
    zero at least the lowest block, `top` (default: the largest value) the highest."""
    each = cells_per_bucket(len(values), width)
    finite = [v for v in values if v is not None and math.isfinite(v) and v > 0]
    peak = top if top is not None else (max(finite) if finite else 0.0)
    out: list[str] = []
    for value in values:
        if value is None or not math.isfinite(value) or value <= 0 or peak <= 0:
            cell = " "
        else:
            level = min(len(BLOCKS), max(1, math.ceil(value / peak * len(BLOCKS))))
            cell = BLOCKS[level - 1]
        out.append(cell * each)
    return "".join(out)


def marker_line(buckets: int, width: int, marks: Sequence[tuple[int, str]]) -> str:
    """A line with a mark at the start of each marked bucket (a restart wins over a config change)."""
    each = cells_per_bucket(buckets, width)
    line = [" "] * (each * max(1, buckets))
    for bucket, kind in sorted(marks, key=lambda m: m[1] == "restart"):
        if 0 <= bucket < buckets:
            line[bucket * each] = MARKS.get(kind, "|")
    return "".join(line)


def axis_line(buckets: int, width: int, left: str, right: str) -> str:
    """`left` under the first column and `right` ending under the last."""
    total = cells_per_bucket(buckets, width) * max(1, buckets)
    gap = max(1, total - len(left) - len(right))
    return f"{left}{' ' * gap}{right}"
