"""The wrapper core is built from explicit parts: no part holds the core, neither in an attribute nor in a callable
it was handed (a bound method of the core, a lambda closing over it), and no part is patched into another after
that one was built: each is handed what it needs by its constructor."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from taskrig import TaskRig

from mcpwatch.wrapper.core.pump import WrapperCore


def _refers(value: Any, obj: Any) -> bool:
    """Whether `value` is `obj`, a bound method of it, or a closure over it."""
    if value is obj or getattr(value, "__self__", None) is obj:
        return True
    return any(cell.cell_contents is obj for cell in getattr(value, "__closure__", None) or ())


_UNSET = object()


def _is_part(obj: Any) -> bool:
    return type(obj).__module__.startswith("mcpwatch.wrapper.")


def _fields(obj: Any) -> dict[str, Any]:
    names = getattr(obj, "__dict__", None)
    if names is not None:
        return dict(names)
    return {name: getattr(obj, name, _UNSET) for name in getattr(obj, "__slots__", ())}


def holders(core: WrapperCore) -> set[tuple[str, str]]:
    """(part, attribute) for every attribute of one of the core's parts that reaches the core."""
    found = set()
    for part_name, part in vars(core).items():
        if not _is_part(part):
            continue
        found |= {(part_name, name) for name, value in _fields(part).items() if _refers(value, core)}
    return found


def test_no_part_holds_the_core(loop: asyncio.AbstractEventLoop) -> None:
    core = TaskRig(loop).core
    parts = [name for name, part in vars(core).items() if _is_part(part)]
    assert len(parts) >= 10  # the walk sees the parts (session, endings, inbound, the task layer…)
    assert holders(core) == set()


def test_a_part_holding_the_core_is_caught(loop: asyncio.AbstractEventLoop) -> None:
    core = TaskRig(loop).core
    core.hosts.latest_name = lambda: core.name  # type: ignore[attr-defined]  # the shape this test must catch
    core.endings.owner = core  # type: ignore[attr-defined]  # likewise
    core.offer.warn = core.warn  # type: ignore[attr-defined]  # likewise: a bound method of the core
    assert holders(core) == {("hosts", "latest_name"), ("endings", "owner"), ("offer", "warn")}


def _part_types(core: WrapperCore) -> set[type]:
    """The classes of the core's parts and of the parts they hold, at any depth."""
    found: set[type] = set()
    seen: set[int] = set()
    todo = list(vars(core).values())
    while todo:
        obj = todo.pop()
        if id(obj) in seen or not _is_part(obj):
            continue
        seen.add(id(obj))
        found.add(type(obj))
        todo.extend(_fields(obj).values())
    return found


def patched_in(
    loop: asyncio.AbstractEventLoop, monkeypatch: pytest.MonkeyPatch, after: Any = None
) -> set[tuple[str, str]]:
    """(class, attribute) for every attribute of a part that, once the rig is built (and `after(core)` ran), refers
    to another part but did not when that part's own constructor returned: a part patched into another late."""
    built: list[tuple[Any, dict[str, Any]]] = []

    def record(cls: type[Any]) -> None:
        original = cls.__init__

        def init(self: Any, *args: Any, **kwargs: Any) -> None:
            original(self, *args, **kwargs)
            if type(self) is cls:  # a subclass records once its own constructor is done
                built.append((self, _fields(self)))

        monkeypatch.setattr(cls, "__init__", init)

    for cls in _part_types(TaskRig(loop).core):
        record(cls)
    core = TaskRig(loop).core
    if after is not None:
        after(core)
    assert len(built) >= 15  # the walk sees the parts and the parts they hold (the watch, the tombstones…)
    found = set()
    for obj, at_birth in built:
        for name, value in _fields(obj).items():
            before = at_birth.get(name, _UNSET)
            if before is value or (hasattr(value, "__self__") and before == value):
                continue
            if any(other is not obj and _refers(value, other) for other, _ in built):
                found.add((type(obj).__name__, name))
    return found


def test_no_part_is_patched_into_another_after_it_is_built(
    loop: asyncio.AbstractEventLoop, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert patched_in(loop, monkeypatch) == set()


def test_a_part_patched_in_late_is_caught(loop: asyncio.AbstractEventLoop, monkeypatch: pytest.MonkeyPatch) -> None:
    def patch(core: WrapperCore) -> None:
        core.hosts.session = core.session  # type: ignore[attr-defined]  # the shape this test must catch
        core.pressure.note = core.heartbeats.touch  # type: ignore[attr-defined]  # likewise: a bound method
        core.endings.table = core.table  # the same part again is no patch

    assert patched_in(loop, monkeypatch, patch) == {("HostDirectory", "session"), ("Backpressure", "note")}
