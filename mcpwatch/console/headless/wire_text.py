"""Text from outside, made safe once where it enters the console: events, a status, registry entries, answers.

Textual writes a cell's text to the terminal as it is (it strips only BEL), so an escape sequence in a host, tool,
model or wrapper name, a progress message or an error text would retitle or clear the operator's terminal. Every
string that comes in goes through `mcpwatch.terminal` here, before the model or a screen sees it: control characters
are then shown (`\\x1b`), never obeyed. Texts that are read as several lines (a result preview, the arguments, an
error) keep their line ends and tabs. The common case, a string with no control character, costs one regex search
and no copy.
"""

from __future__ import annotations

import dataclasses
import itertools
from collections.abc import Mapping
from typing import Any, TypeVar, cast

from mcpwatch.events import Event
from mcpwatch.registry import WrapperEntry
from mcpwatch.terminal import CONTROL, CONTROL_BUT_LINES, safe, safe_lines

# Keys whose texts are shown over several lines (the detail screen): their line ends stay.
_MULTILINE_KEYS = frozenset({"result_preview", "arguments", "error", "reply", "text", "detail"})

_SCALARS = frozenset({int, float, bool})
T = TypeVar("T")


def clean(value: T, lines: bool = False) -> T:
    """`value` with every string in it made safe (dicts and lists walked); the same object when nothing changed."""
    if value.__class__ is str:
        return _clean_text(value, lines)  # type: ignore[arg-type,return-value]  # a str in, a str out
    if isinstance(value, Mapping):
        return _clean_mapping(value, lines)  # type: ignore[return-value]  # a mapping in, a dict out
    if isinstance(value, list | tuple):
        items = [clean(item, lines) for item in value]
        if all(new is old for new, old in zip(items, value, strict=True)):
            return value
        return type(value)(items)
    return value


def _clean_text(text: str, lines: bool) -> str:
    if (CONTROL_BUT_LINES if lines else CONTROL).search(text) is None:
        return text
    return safe_lines(text) if lines else safe(text)


def _clean_mapping(value: Mapping[Any, Any], lines: bool) -> Mapping[Any, Any]:
    """The walk's hot path (every event's data): a plain string value costs one regex search, nothing else."""
    out: dict[Any, Any] | None = None
    new_item: Any
    for index, (key, item) in enumerate(value.items()):
        multiline = lines or key in _MULTILINE_KEYS
        if item.__class__ is str:
            new_item = (
                item
                if (CONTROL_BUT_LINES if multiline else CONTROL).search(item) is None
                else (safe_lines(item) if multiline else safe(item))
            )
        elif item is None or item.__class__ in _SCALARS:
            new_item = item
        else:
            new_item = clean(item, multiline)
        new_key = key if key.__class__ is not str or CONTROL.search(key) is None else safe(key)
        if out is None and (new_key is not key or new_item is not item):
            out = dict(itertools.islice(value.items(), index))  # the unchanged items before this one
        if out is not None:
            out[new_key] = new_item
    return value if out is None else out


def clean_event(event: Event) -> Event:
    """An event whose names and data are safe to show; the same event when they already were."""
    data = _clean_mapping(event.data, False) if isinstance(event.data, Mapping) else event.data
    search = CONTROL.search
    if data is event.data and not any(
        name.__class__ is str and search(name) for name in (event.tool, event.model, event.request_id, event.session_id)
    ):
        return event
    return dataclasses.replace(
        event,
        tool=clean(event.tool),
        model=clean(event.model),
        request_id=clean(event.request_id),
        session_id=clean(event.session_id),
        data=cast(dict[str, Any], data),  # a dict in, a dict out
    )


def shown_entry(entry: WrapperEntry) -> WrapperEntry:
    """A registry entry as a list shows it: its name and upstream made safe (the file is anyone's to write). Only
    shown fields change: the operator URL, token and log path stay what the wrapper wrote."""
    name, upstream = clean(entry.name), clean(entry.upstream)
    if name is entry.name and upstream is entry.upstream:
        return entry
    return dataclasses.replace(entry, name=name, upstream=upstream)
