"""The wrapper core is built from explicit parts: no part holds the core, neither in an attribute nor in a callable
it was handed (a bound method of the core, a lambda closing over it)."""

from __future__ import annotations

import asyncio
from typing import Any

from taskrig import TaskRig

from mcpwatch.wrapper.core.pump import WrapperCore


def _reaches(value: Any, core: WrapperCore) -> bool:
    if value is core or getattr(value, "__self__", None) is core:
        return True
    return any(cell.cell_contents is core for cell in getattr(value, "__closure__", None) or ())


def holders(core: WrapperCore) -> set[tuple[str, str]]:
    """(part, attribute) for every attribute of one of the core's parts that reaches the core."""
    found = set()
    for part_name, part in vars(core).items():
        if not type(part).__module__.startswith("mcpwatch.wrapper."):
            continue
        names = getattr(part, "__dict__", None) or {n: getattr(part, n) for n in getattr(part, "__slots__", ())}
        found |= {(part_name, name) for name, value in names.items() if _reaches(value, core)}
    return found


def test_no_part_holds_the_core(loop: asyncio.AbstractEventLoop) -> None:
    core = TaskRig(loop).core
    parts = [name for name, part in vars(core).items() if type(part).__module__.startswith("mcpwatch.wrapper.")]
    assert len(parts) >= 10  # the walk sees the parts (session, endings, inbound, the task layer…)
    assert holders(core) == set()


def test_a_part_holding_the_core_is_caught(loop: asyncio.AbstractEventLoop) -> None:
    core = TaskRig(loop).core
    core.hosts.latest_name = lambda: core.name  # type: ignore[attr-defined]  # the shape this test must catch
    core.endings.owner = core  # type: ignore[attr-defined]  # likewise
    core.offer.warn = core.warn  # type: ignore[attr-defined]  # likewise: a bound method of the core
    assert holders(core) == {("hosts", "latest_name"), ("endings", "owner"), ("offer", "warn")}
