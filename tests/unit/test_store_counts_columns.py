"""A batch of plain calls' rows is counted a column at a time (`session_counts._folded_calls`): its counts equal
those counted row by row whatever the rows hold (times that are text, None, NaN, booleans or integers, a start's seq
that is text or a boolean, data that mentions a deadline or is not text, sessions in runs, empty batches), and a
batch the column count refuses is counted row by row. Rows come from events a host, an upstream or a hand-made
test can shape."""

from __future__ import annotations

import math
import random
from typing import Any

from mcpwatch.store import session_counts
from mcpwatch.store.session_counts import batch_counts

TIMES: list[Any] = [1.5, 2.0, 7, True, math.nan, "3.0", None, -1e308, 1e9]
KINDS = ["request_end", "request_end", "request_end", "request_start", "tombstone_hit"]
DATA: list[Any] = ['{"outcome":"ok"}', '{"outcome":"deadline"}', '{"note":"deadline"}', "{}", b"{}", "not json"]
STARTS: list[Any] = [math.nan, None, 4, 5, "6", True]


def _row(rng: random.Random, sessions: list[Any], odd: bool) -> tuple[Any, ...]:
    if not odd:  # the writer's own: numbers, text, no deadline, a start's seq or none
        return (
            "s",
            rng.randrange(99),
            rng.random(),
            0.0,
            "request_end",
            "r",
            "t",
            math.nan,
            "{}",
            rng.choice([1, 2, math.nan]),
        )
    return (
        rng.choice(sessions),
        rng.randrange(99),
        rng.choice(TIMES),
        0.0,
        rng.choice(KINDS),
        "r",
        "t",
        math.nan,
        rng.choice(DATA),
        rng.choice(STARTS),
    )


def _counted(rows: list[tuple[Any, ...]], columns: bool) -> list[tuple[Any, ...]]:
    """The counts (a NaN time as "nan"), or the error the rows meet."""
    original = session_counts._folded_calls
    try:
        if not columns:
            session_counts._folded_calls = lambda rows: None  # row by row only
        counts = batch_counts(rows)
    except TypeError as exc:
        return [("raised", type(exc).__name__)]
    finally:
        session_counts._folded_calls = original  # put back
    return [tuple("nan" if isinstance(v, float) and math.isnan(v) else v for v in c) for c in counts]


def test_counts_a_column_at_a_time_equal_counts_row_by_row() -> None:
    taken = 0
    for seed in range(500):
        rng = random.Random(seed)
        odd = [rng.random() < 0.2 * (seed % 4) for _ in range(rng.randrange(0, 10))]
        rows = [_row(rng, ["s"] if seed % 3 else ["s", "t", 9], o) for o in odd]
        taken += session_counts._folded_calls(rows) is not None
        assert _counted(rows, True) == _counted(rows, False), (seed, rows)
    assert taken > 100  # the column count did take many of them


def test_a_batch_of_plain_calls_is_counted_a_column_at_a_time() -> None:
    rows = [("s", 2 * n, float(n), 0.0, "request_end", "r", "t", math.nan, "{}", 2 * n - 1) for n in range(1, 51)]
    assert session_counts._folded_calls(rows) == ("s", 100, 50, 0, 0, 50.0)
    assert batch_counts(rows) == [("s", 100, 50, 0, 0, 50.0)]
