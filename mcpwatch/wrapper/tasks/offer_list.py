"""Which offered tasks `tasks/list` shows a host connection (`wrapper.tasks.offer`), a page at a time.

A host's list is its own tasks, found without walking everyone's: up to 10,000 finished tasks are kept, and a
batch of 300,000 `tasks/list` fits one 16 MiB body, so a walk per request stalled every host. Each connection has
its tasks in the order they became its own; a page is found by bisection from its cursor (the position after the
last task shown) and holds `LIST_PAGE` tasks at most. Tasks that ended their TTL or went to another connection
(a host that resumed them) are dropped from a list when they are over half of it, so a page walks few of them.
"""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Callable

LIST_PAGE = 100  # tasks in one tasks/list answer; the rest by its nextCursor

Host = tuple[str, str]  # `Owner.host`: a connection under its principal


class TaskLists:
    def __init__(self) -> None:
        self._seq = 0
        self._by_host: dict[Host, list[tuple[int, str]]] = {}  # (position, task id), in order
        self._gone: dict[Host, int] = {}  # entries of tasks no longer the host's (not yet dropped)

    def add(self, host: Host, task_id: str) -> None:
        """The task is now the host's (made by it, or resumed from another connection)."""
        self._seq += 1
        self._by_host.setdefault(host, []).append((self._seq, task_id))

    def gone(self, host: Host, still_its: Callable[[str], bool]) -> None:
        """One of the host's tasks is no longer its own (`still_its(task_id)` tells those that are)."""
        entries = self._by_host.get(host)
        if entries is None:
            return
        gone = self._gone[host] = self._gone.get(host, 0) + 1
        if gone * 2 > len(entries):
            kept = [entry for entry in entries if still_its(entry[1])]
            if kept:
                self._by_host[host] = kept
            else:
                del self._by_host[host]
            self._gone.pop(host, None)

    def page(self, host: Host, cursor: str | None, still_its: Callable[[str], bool]) -> tuple[list[str], str | None]:
        """The host's task ids after `cursor` (None: from the first), at most `LIST_PAGE`, and the cursor of the next
        page (None when this one is the last). A cursor that is not one of ours starts from the first."""
        entries = self._by_host.get(host, [])
        ours = cursor is not None and len(cursor) <= 20 and cursor.isascii() and cursor.isdigit()
        last = int(cursor) if ours and cursor is not None else 0
        shown: list[str] = []
        for index in range(bisect_right(entries, (last, "\uffff")), len(entries)):
            position, task_id = entries[index]
            if len(shown) == LIST_PAGE:
                return shown, str(last)
            if still_its(task_id):
                shown.append(task_id)
                last = position
        return shown, None
