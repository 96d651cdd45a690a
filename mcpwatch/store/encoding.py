"""Events as SQLite rows: JSON that SQLite's json functions can always read, and fields that can always be bound.

Kept apart from the writer so the hot encoding path is easy to read and to benchmark on its own.
"""

from __future__ import annotations

import json
import math
from typing import Any

import orjson

# What the writer binds for a missing value: SQLite stores a NaN as NULL. None would take sqlite3's adaptation path,
# as does a str subclass (a `Kind`): on Python 3.11 each such value bound costs a formatted AttributeError, about
# 2,000 instructions, several times a row.
NULL = math.nan

_encoder = json.JSONEncoder(separators=(",", ":"), ensure_ascii=False, allow_nan=False, default=str)
_encode = _encoder.encode


def _clean(value: Any) -> Any:
    """JSON-safe copy: non-finite floats become null (SQLite's JSON functions reject NaN), keys become text."""
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {str(k): _clean(v) for k, v in value.items()}
    if isinstance(value, list | tuple | set | frozenset):
        return [_clean(v) for v in value]
    return value


def encode_json(value: Any) -> str:
    """Compact JSON that SQLite's json functions can always read (orjson first: it writes NaN as null, as _clean
    does, ~10x faster, so the writer thread holds the GIL that much less; the standard library for the rest)."""
    try:
        return orjson.dumps(value, default=str).decode()
    except (TypeError, orjson.JSONEncodeError):
        pass
    try:
        return _encode(value)  # what orjson refuses: integers beyond 64 bits, a circular structure (ValueError)
    except (ValueError, TypeError, RecursionError):
        try:
            return _encode(_clean(value))
        except (ValueError, TypeError, RecursionError) as exc:
            return _encode({"unencodable": f"{type(exc).__name__}: {exc}"})


def _text(value: Any, errors: str = "replace") -> str:
    """Text SQLite can store: valid UTF-8 (a lone surrogate is replaced, or escaped when inside JSON)."""
    text = value if isinstance(value, str) else str(value)
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        text = text.encode("utf-8", errors).decode("utf-8")
    return text


def column_text(value: Any) -> str:
    """A text column's value as the log keeps it (a lone surrogate replaced): a folded start's tool or model, kept in
    its row's data, reads back as it would have from its own row's columns."""
    return _text(value)


def _int64(value: Any) -> int:
    return value if isinstance(value, int) and -(2**63) <= value < 2**63 else 0


def _real(value: Any) -> float:
    if value.__class__ is float and not math.isnan(value):
        return value  # bound as it is (an infinite time too): as a batch with nothing odd stores it
    try:
        number = float(value)
    except (TypeError, ValueError, OverflowError):
        return 0.0
    return number if math.isfinite(number) else 0.0


def coerce_row(row: tuple[Any, ...]) -> tuple[Any, ...]:
    """Make every field of a row bindable; used only when a batch holds something odd."""
    session_id, seq, ts, mono, kind, request_id, tool, model, data, start_seq = row
    return (
        _text(session_id),
        _int64(seq),
        _real(ts),
        _real(mono),
        _text(kind),
        None if _missing(request_id) else _column(request_id),
        None if _missing(tool) else _column(tool),
        None if _missing(model) else _column(model),
        _text(data, "backslashreplace"),  # inside JSON strings, `\udc80` is a valid escape: nothing is lost
        None if _missing(start_seq) else _int64(start_seq),
    )


def _column(value: Any) -> Any:
    """A text column's value made bindable as SQLite would have stored it bound as it was: a number SQLite takes is
    kept (the column renders it as text itself, `1.0e+308` where Python says `1e+308`; True as 1), so a value reads
    back the same whether or not something odd shared its batch."""
    kind = value.__class__
    if kind is float or kind is bool or (kind is int and -(2**63) <= value < 2**63):
        return value
    return _text(value)


def _missing(value: Any) -> bool:
    """None, or the NaN the writer binds for it (`NULL`)."""
    return value is None or (isinstance(value, float) and math.isnan(value))
