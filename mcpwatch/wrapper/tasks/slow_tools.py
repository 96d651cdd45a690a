"""Tools the log shows running past the host's budget, offered as tasks (`[tasks] offer_slow`).

A tool whose calls to this upstream were cut at the deadline, finished late after a cut, ran to their end longer
than the budget they would get now, or were cancelled by their host after running half that budget (a host that
gives up on a call at its own timeout says as much as a cut; without a budget, after `CANCEL_MIN_S`) is offered
to hosts with tasks exactly as an `[tasks] offer` match is: such a host may then call it as a task and wait for it
as long as it takes, instead of being cut again. Decided from the
log at start (bounded: `store.slow_calls`) and learnt live as this session's calls end (a later `tools/list` shows
it). Each offered tool carries its basis in words and figures, in `status` and in the log: the advice is known.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from mcpwatch.events import Event, Kind
from mcpwatch.operator import OfferedSlowStatus
from mcpwatch.store.slow_calls import NAME_MAX, CallEnd, CallEnds
from mcpwatch.terminal import safe

READ_WAIT_S = 2.0  # the host is served after the log's read, or after this long if it is not done by then
MAX_TOOLS = 1000  # tool names tracked at most: a log (or an upstream) naming millions costs no more
CANCEL_MIN_S = 10.0  # a host's cancel of a call that had run this long counts, where no budget says otherwise
SAID_TOOLS = 5  # tools named in the one line said when the log offers several (`status` lists them all)
_WHERE = {(True, False): "in the log", (False, True): "in this session", (True, True): "in the log and this session"}


@dataclass(slots=True)
class Seen:
    """What the log showed of one tool's calls that outran the budget."""

    cut: int = 0  # cut at the deadline
    late: int = 0  # a result that came after a cut at the deadline
    long: int = 0  # ran to its end longer than the budget it would get now
    cancelled: int = 0  # cancelled by its host after running half the budget (or CANCEL_MIN_S without one)
    longest_s: float | None = None  # the longest true duration among them
    longest_budget_s: float | None = None  # the budget it outran
    in_log: bool = False
    live: bool = False

    def basis(self) -> str:
        parts = []
        if self.cut:
            parts.append(f"cut at the deadline {self.cut}×")
        if self.late:
            parts.append(f"finished late after a cut {self.late}×")
        if self.long:
            parts.append(f"ran past the budget {self.long}×")
        if self.cancelled:
            parts.append(f"cancelled by the host after a long run {self.cancelled}×")
        text = "seen " + ", ".join(parts) + " " + _WHERE[(self.in_log, self.live)]
        if self.longest_s is not None:
            text += f" (longest {self.longest_s:.1f} s"
            text += "" if self.longest_budget_s is None else f", budget {self.longest_budget_s:g} s"
            text += ")"
        return text


class SlowTools:
    """The tools to offer because of how their calls ended; `offers(tool)` is the offer's hook.

    It is an event sink (`emit`) beside the log, so it learns from this session's own ends as they are recorded."""

    def __init__(
        self,
        budget_of: Callable[[str], float | None],
        *,
        on_offered: Callable[[list[tuple[str, str]]], object] | None = None,
        on_problem: Callable[[str], object] | None = None,
        max_tools: int = MAX_TOOLS,
    ) -> None:
        self._budget_of = budget_of  # the budget a call of the tool would get now (None: no budget)
        self._on_offered = on_offered  # [(tool, basis)]: the tools newly offered, said in the log
        self._on_problem = on_problem  # why the log could not be read, said once
        self._max_tools = max_tools
        self._seen: dict[str, Seen] = {}
        self.untracked = 0  # ends of tools beyond max_tools (or with overlong names): not counted
        self.read: CallEnds | None = None  # what the start read of the log found
        self._read_job: asyncio.Future[CallEnds] | None = None

    def offers(self, tool: str) -> bool:
        return tool in self._seen

    def basis(self, tool: str) -> str | None:
        seen = self._seen.get(tool)
        return None if seen is None else seen.basis()

    def reading(self, read: asyncio.Future[CallEnds]) -> None:
        """The log is being read (in a thread, so the host is served meanwhile): its tools are offered once read."""
        self._read_job = read
        read.add_done_callback(self._read_done)

    async def read_or_wait(self, most_s: float = READ_WAIT_S) -> None:
        """Wait for the log's read, at most `most_s`: the host's first `tools/list` then shows what the log offers,
        and a cold disk delays serving it by no more (the rest is offered when read, as a live cut is)."""
        if self._read_job is not None and not self._read_job.done():
            await asyncio.wait({self._read_job}, timeout=most_s)

    def _read_done(self, done: asyncio.Future[CallEnds]) -> None:
        if done.cancelled():  # the wrapper stopped first
            return
        failed = done.exception()
        self.load(done.result() if failed is None else CallEnds([], 0, 0, f"the log could not be read: {failed}"))

    def load(self, read: CallEnds) -> None:
        """Fold what the log showed at start; the tools it offers are said once (`on_offered`)."""
        self.read = read
        if read.problem is not None and self._on_problem is not None:
            self._on_problem(problem_text(read.problem))
        before = set(self._seen)
        for end in read.ends:
            self._note(end, in_log=True)
        self._said(sorted(self._seen.keys() - before))

    def emit(self, event: Event) -> None:
        """This session's ends, as they are recorded: a tool cut now is offered from the next `tools/list`."""
        kind, tool = event.kind, event.tool
        if tool is None or kind not in (Kind.REQUEST_END, Kind.LATE_RESULT):
            return
        data = event.data
        if kind == Kind.REQUEST_END and data.get("method") != "tools/call":
            return
        if kind == Kind.LATE_RESULT and data.get("reason") != "deadline":
            return  # a late result of a call the host or an operator cancelled: stopped, not seen outrunning a budget
        duration = data.get("duration_s")
        seconds = float(duration) if isinstance(duration, int | float) else None
        cancel = data.get("outcome") == "cancelled" and data.get("error") == "host_cancel"
        end = CallEnd(tool, data.get("outcome"), seconds, late=kind == Kind.LATE_RESULT, host_cancel=cancel)
        if self._note(end, in_log=False):
            self._said([tool])

    def _note(self, end: CallEnd, *, in_log: bool) -> bool:
        """Count one end if it outran the budget; True when it makes the tool newly offered."""
        budget = None
        if end.host_cancel:  # the host gave up on it: after long enough, that says it is slow
            budget = self._budget_of(end.tool)
            least = CANCEL_MIN_S if budget is None else budget / 2
            if end.duration_s is None or end.duration_s < least:
                return False
        elif not end.late and end.outcome != "deadline":  # a call that ended: did it outrun the budget it gets now?
            budget = self._budget_of(end.tool) if end.duration_s is not None else None
            if budget is None or end.duration_s is None or end.duration_s <= budget:
                return False
        seen = self._seen.get(end.tool)
        new = seen is None
        if seen is None:
            if len(self._seen) >= self._max_tools or len(end.tool) > NAME_MAX:
                self.untracked += 1
                return False
            seen = self._seen[end.tool] = Seen()
        if end.host_cancel:
            seen.cancelled += 1
        elif end.late:
            seen.late += 1
        elif end.outcome == "deadline":
            seen.cut += 1
        else:
            seen.long += 1
        # a cut's duration is only the budget; a cancelled call's, only how long its host waited
        true_s = end.duration_s if end.late or (budget is not None and not end.host_cancel) else None
        if true_s is not None and (seen.longest_s is None or true_s > seen.longest_s):
            seen.longest_s, seen.longest_budget_s = true_s, budget
        seen.in_log = seen.in_log or in_log
        seen.live = seen.live or not in_log
        return new

    def _said(self, tools: list[str]) -> None:
        if tools and self._on_offered is not None:
            self._on_offered([(tool, self._seen[tool].basis()) for tool in tools])

    def describe(self) -> OfferedSlowStatus:
        """For `status`: each offered tool with its basis, and what the start read covered."""
        read = self.read
        return {
            "log_read": "read" if read is not None else "reading" if self._read_job is not None else "none",
            "tools": [{"tool": tool, "basis": seen.basis()} for tool, seen in sorted(self._seen.items())],
            "log_sessions_read": 0 if read is None else read.sessions,
            "log_events_read": 0 if read is None else read.events,
            "log_problem": None if read is None else read.problem,
            "untracked": self.untracked,
        }


def offered_text(tool: str, basis: str) -> str:
    """The line said in the log (and on stderr) when a tool is offered for how its calls ended."""
    return f"[tasks] offer_slow: {safe(tool)} is offered as a task to hosts with tasks: {basis}"


def problem_text(problem: str) -> str:
    return f"[tasks] offer_slow: the log was not read ({problem}); tools are offered as this session's calls show"


def offered_line(offered: list[tuple[str, str]]) -> str:
    """One line for the tools one read of the log offers (a log naming a thousand slow tools says one line, not a
    thousand): the first few with their basis, then how many more; `mcpwatch status` lists each."""
    if len(offered) == 1:
        return offered_text(*offered[0])
    named = "; ".join(f"{safe(tool)} ({basis})" for tool, basis in offered[:SAID_TOOLS])
    more = len(offered) - SAID_TOOLS
    tail = f"; and {more} more (`mcpwatch status` lists each)" if more > 0 else ""
    return f"[tasks] offer_slow: {len(offered)} tools are offered as tasks to hosts with tasks: {named}{tail}"


def tell_hosts(links: Iterable[Any], host_has_tasks: Callable[[Any], bool], upstream_capabilities: Any) -> int:
    """`notifications/tools/list_changed` to each host with tasks, so a tool offered now shows at once; only where
    the upstream declared `tools.listChanged` (a host told nothing of it need not expect one). How many were told."""
    tools = upstream_capabilities.get("tools") if isinstance(upstream_capabilities, dict) else None
    if not isinstance(tools, dict) or tools.get("listChanged") is not True:
        return 0
    told = [link for link in list(links) if host_has_tasks(link)]
    for link in told:
        link.send({"jsonrpc": "2.0", "method": "notifications/tools/list_changed"})
    return len(told)
