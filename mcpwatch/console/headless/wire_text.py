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
from collections.abc import Mapping
from typing import Any, TypeVar

from mcpwatch.events import Event
from mcpwatch.registry import WrapperEntry
from mcpwatch.terminal import CONTROL, CONTROL_BUT_LINES, safe, safe_lines

# Keys whose texts are shown over several lines (the detail screen): their line ends stay.
_MULTILINE_KEYS = frozenset({"result_preview", "arguments", "error", "reply", "text", "detail"})

T = TypeVar("T")


def clean(value: T, lines: bool = False) -> T:
    """`value` with every string in it made safe (dicts and lists walked); the same object when nothing changed."""
    if isinstance(value, str):
        if (CONTROL_BUT_LINES if lines else CONTROL).search(value) is None:
            return value
        return safe_lines(value) if lines else safe(value)  # type: ignore[return-value]  # a str in, a str out
    if isinstance(value, Mapping):
        out: dict[Any, Any] | None = None
        for key, item in value.items():
            new_key = clean(key)
            new_item = clean(item, lines or key in _MULTILINE_KEYS)
            if out is None and (new_key is not key or new_item is not item):
                out = {}
                for k, v in value.items():  # the unchanged items before this one
                    if k == key:
                        break
                    out[k] = v
            if out is not None:
                out[new_key] = new_item
        return value if out is None else out  # type: ignore[return-value]  # a mapping in, a dict out
    if isinstance(value, list | tuple):
        items = [clean(item, lines) for item in value]
        if all(new is old for new, old in zip(items, value, strict=True)):
            return value
        return type(value)(items)
    return value


def clean_event(event: Event) -> Event:
    """An event whose names and data are safe to show; the same event when they already were."""
    tool, model, request_id, session_id = (
        clean(event.tool),
        clean(event.model),
        clean(event.request_id),
        clean(event.session_id),
    )
    data = clean(event.data)
    if (
        tool is event.tool
        and model is event.model
        and request_id is event.request_id
        and session_id is event.session_id
        and data is event.data
    ):
        return event
    return dataclasses.replace(event, tool=tool, model=model, request_id=request_id, session_id=session_id, data=data)


def shown_entry(entry: WrapperEntry) -> WrapperEntry:
    """A registry entry as a list shows it: its name and upstream made safe (the file is anyone's to write). Only
    shown fields change: the operator URL, token and log path stay what the wrapper wrote."""
    name, upstream = clean(entry.name), clean(entry.upstream)
    if name is entry.name and upstream is entry.upstream:
        return entry
    return dataclasses.replace(entry, name=name, upstream=upstream)
