"""The log's kept task ends, for the tasks mcpwatch offers (`wrapper.tasks.offer`): which ids it knows, and one
task's end read back by its place, never a scan per request.

The ids of this upstream's kept tasks are read once (in a thread, while the upstream starts); tasks this wrapper
ends are added as they end. An id the index does not hold is answered unknown at once, with no query: a batch of
thousands of made-up ids costs a dictionary lookup each. A known id costs one indexed query, in a thread, shared by
concurrent requests for it, and skipped when the requester has gone meanwhile.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

from mcpwatch.store.kept_tasks import REFS_MAX, KeptRef, KeptRefs


class KeptLog:
    def __init__(
        self,
        read_refs: Callable[[], KeptRefs],
        fetch: Callable[[KeptRef, str], dict[str, Any] | None],
        *,
        session_id: str,
        refs_max: int = REFS_MAX,
    ) -> None:
        self._read_refs = read_refs
        self._fetch = fetch
        self.session_id = session_id  # this wrapper's session in the log: where its own tasks' ends are
        self._refs_max = refs_max
        self.refs: dict[str, KeptRef] = {}
        self.problem: str | None = None
        self._loading: asyncio.Future[KeptRefs] | None = None
        self._fetching: dict[str, asyncio.Future[dict[str, Any] | None]] = {}
        self.queries = 0  # reads of one task from the log (the index read at start is not one)
        self.unknown = 0  # ids answered unknown from the index alone

    def start(self, loop: asyncio.AbstractEventLoop) -> None:
        """Read the index in a thread; lookups meanwhile wait for it."""
        self._loading = loop.run_in_executor(None, self._read_refs)

    @property
    def ready(self) -> bool:
        return self._loading is None or (self._loading.done() and not self._loading.cancelled())

    async def _loaded(self) -> None:
        loading = self._loading
        if loading is not None:
            await asyncio.wait({loading})
            self._settle()

    def ended(self, task_id: str, request_id: str) -> None:
        """A task of this wrapper ended, its end logged under this session and its request."""
        self.refs[task_id] = KeptRef(self.session_id, request_id)
        self._trim()

    def _trim(self) -> None:
        while len(self.refs) > self._refs_max:
            self.refs.pop(next(iter(self.refs)))

    def known(self, task_id: str) -> bool | None:
        """Whether the log holds the task's end; None until the index is read."""
        if self._loading is not None:
            if not self._loading.done():
                return None
            self._settle()
        return task_id in self.refs

    def _settle(self) -> None:
        loading, self._loading = self._loading, None
        if loading is None or loading.cancelled():
            return
        failed = loading.exception()
        if failed is not None:
            self.problem = f"the log's kept tasks could not be read: {failed}"
            return
        read = loading.result()
        self.problem = read.problem
        for task_id, ref in read.refs.items():
            self.refs.setdefault(task_id, ref)
        self._trim()

    async def lookup(self, task_id: str, still_wanted: Callable[[], bool]) -> dict[str, Any] | None:
        """The task's kept end, else None: unknown ids from the index alone; a known one read once in a thread
        (requests for it meanwhile share the read), not at all when `still_wanted()` says the requester left."""
        await self._loaded()
        ref = self.refs.get(task_id)
        if ref is None:
            self.unknown += 1
            return None
        running = self._fetching.get(task_id)
        if running is None:
            if not still_wanted():
                return None
            self.queries += 1
            running = asyncio.get_running_loop().run_in_executor(None, self._fetch, ref, task_id)
            self._fetching[task_id] = running
            running.add_done_callback(lambda _: self._fetching.pop(task_id, None))
        return await asyncio.shield(running)
