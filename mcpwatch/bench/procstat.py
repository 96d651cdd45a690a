"""What the benchmarks read from /proc: a process's resident memory, its threads' CPU time, preemptions and waits for
a CPU (summed, or per thread), and the machine's busy cores."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator


def rss_mb(pid: int | None = None) -> tuple[float, float]:
    """(current, peak) resident set size of a process (this one by default) in MB; zeros once it has gone."""
    values = {"VmRSS": 0.0, "VmHWM": 0.0}
    try:
        with open(f"/proc/{pid or os.getpid()}/status", encoding="ascii") as status:
            for line in status:
                key = line.split(":", 1)[0]
                if key in values:
                    values[key] = int(line.split()[1]) / 1024
    except OSError:
        pass
    return values["VmRSS"], values["VmHWM"]


def _thread_files(pid: int, *names: str) -> Iterator[tuple[int, list[str]]]:
    """Each thread of the process with the text of its /proc files `names`; nothing once the process has gone, and
    nothing of a thread that ends while read."""
    try:
        tasks = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return
    for task in tasks:
        texts = []
        try:
            for name in names:
                with open(f"/proc/{pid}/task/{task}/{name}", encoding="ascii") as stat:
                    texts.append(stat.read())
        except OSError:
            continue  # a thread that ended meanwhile
        yield int(task), texts


def _per_thread(pid: int, name: str, value: Callable[[str], float]) -> float:
    """The sum over the process's threads of `value` read from each thread's /proc file `name`; 0 once the process
    has gone."""
    total = 0.0
    for _, (text,) in _thread_files(pid, name):
        try:
            total += value(text)
        except (ValueError, IndexError):
            continue
    return total


def thread_cpu(pid: int) -> dict[int, tuple[int, int]]:
    """Each thread of `pid`: (nanoseconds on a CPU, context switches), from /proc; empty once it has gone."""
    found: dict[int, tuple[int, int]] = {}
    for tid, (schedstat, status) in _thread_files(pid, "schedstat", "status"):
        try:
            ns = int(schedstat.split()[0])
            switches = sum(
                int(line.split()[1])
                for line in status.splitlines()
                if line.startswith(("voluntary_ctxt_switches", "nonvoluntary_ctxt_switches"))
            )
        except (ValueError, IndexError):
            continue
        found[tid] = (ns, switches)
    return found


def _involuntary_switches(status: str) -> float:
    lines = status.splitlines()
    return next((int(line.split()[1]) for line in lines if line.startswith("nonvoluntary_ctxt_switches:")), 0)


def preemptions(pid: int) -> int:
    """How often the scheduler took the CPU from the process's threads while they could still run (involuntary
    context switches, all threads): each one costs the process its warm caches; 0 once it has gone."""
    return int(_per_thread(pid, "status", _involuntary_switches))


def cpu_s(pid: int | None) -> float:
    """CPU time a process has run, all its threads (the log's writer too), in seconds (the scheduler's nanosecond
    counts); 0 when unknown."""
    return 0.0 if pid is None else _per_thread(pid, "schedstat", lambda stat: int(stat.split()[0]) / 1e9)


def queued_s(pid: int) -> float:
    """Seconds the process's threads spent ready to run but waiting for a CPU (the scheduler's run-queue delay, all
    threads): what a machine busy with other work costs a process in time, not in CPU; 0 once it has gone."""
    return _per_thread(pid, "schedstat", lambda stat: int(stat.split()[1]) / 1e9)


def machine_cpu_s() -> tuple[float, float]:
    """(all, idle) CPU seconds the machine's cores have counted since boot (/proc/stat); zeros where unknown. Two
    readings give the cores busy between them, everyone's work included."""
    try:
        with open("/proc/stat", encoding="ascii") as stat:
            ticks = [int(value) for value in stat.readline().split()[1:]]
    except (OSError, ValueError):
        return 0.0, 0.0
    per_s = os.sysconf("SC_CLK_TCK")
    # user .. steal; the guest columns after them are already counted in user and nice
    return sum(ticks[:8]) / per_s, sum(ticks[3:5]) / per_s  # idle and iowait


def _children_by_parent() -> dict[int, list[int]]:
    """Every process's children, from each one's parent in /proc/PID/stat (no kernel option needed)."""
    found: dict[int, list[int]] = {}
    for name in os.listdir("/proc") if os.path.isdir("/proc") else []:
        if name.isdigit():
            try:
                with open(f"/proc/{name}/stat", "rb") as stat:
                    parent = int(stat.read().rsplit(b")", 1)[1].split()[1])
            except (OSError, IndexError, ValueError):
                continue  # gone meanwhile
            found.setdefault(parent, []).append(int(name))
    return found


def children(pid: int) -> list[int]:
    """The processes whose parent is `pid`; empty once it has gone."""
    return _children_by_parent().get(pid, [])


def descendants(pid: int) -> list[int]:
    """Every process started under `pid`, their children and theirs."""
    by_parent = _children_by_parent()
    found: list[int] = []
    todo = [pid]
    while todo:
        below = by_parent.get(todo.pop(), [])
        found += below
        todo += below
    return found


def keep_on_one_cpu(pid: int, cpu: int) -> bool:
    """Keep every thread of the process on CPU `cpu` (threads it starts later inherit it); False where the process or
    the call is not there. For the benchmarks that ask what a server's threads cost when the scheduler cannot
    spread them over cores."""
    if not hasattr(os, "sched_setaffinity"):
        return False
    kept = 0
    for tid, _ in _thread_files(pid):
        try:
            os.sched_setaffinity(tid, {cpu})
            kept += 1
        except ProcessLookupError:
            continue  # a thread that ended meanwhile
        except OSError:
            return False
    return kept > 0
