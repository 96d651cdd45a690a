"""The slow guard: with `--slow-guard` (in pyproject's addopts, so every run has it), a test not marked `slow`
whose call is slow by a measure that load cannot inflate fails, saying to mark it or make it faster.

`slow` means 3 s or more alone. Wall time under load says little about that (a 1 s test takes 10 s beside four CPU
burners), so a call fails only when one of two measures shows it slow beyond doubt:

- **CPU time** (this process and the children it reaped during the call) of at least 2 × 3 s. Load delays a process
  but does not make it use more CPU (beyond a few per cent of colder caches), and 6 s of CPU on two cores is at least
  3 s of wall time alone, however the work was spread over processes.
- **Wall time less the time this process's threads waited for a CPU** (Linux's `/proc/.../schedstat`: what the
  load added to the test's own threads) of at least 10 × 3 s, times the load per core (`waiting.load_factor`).
  What it cannot remove is the load's delay of the peers the test waits on (their own waits for a CPU), so the
  factor is 10 and grows with the load: a test that waits 30 s on timers or peers on an idle machine is slow,
  but the same wait beside burners that slow every process twentyfold is only load.

Only the call is measured: fixtures shared by many tests (an npm install, a module's server) are not one test's
cost."""

from __future__ import annotations

import resource
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import pytest

from waiting import load_factor

SLOW_S = 3.0  # the `slow` marker's meaning (pyproject.toml)
CPU_FACTOR = 2.0
WALL_FACTOR = 10.0


def cpu_seconds() -> float:
    """CPU time of this process and of the children it has reaped."""
    own, children = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


def run_queue_waits() -> dict[str, float]:
    """Per thread of this process, the seconds it has waited for a CPU (empty where the kernel does not say)."""
    waits: dict[str, float] = {}
    for task in Path("/proc/self/task").glob("*"):
        try:
            waits[task.name] = int((task / "schedstat").read_text().split()[1]) / 1e9
        except (OSError, IndexError, ValueError):
            continue  # a thread that ended meanwhile, or no schedstat here
    return waits


@dataclass(frozen=True)
class Sample:
    wall: float
    cpu: float
    waits: dict[str, float]
    load: float  # runnable tasks per core, at least 1

    @classmethod
    def now(cls) -> Sample:
        return cls(time.monotonic(), cpu_seconds(), run_queue_waits(), load_factor())


@dataclass(frozen=True)
class Cost:
    wall_s: float
    cpu_s: float
    waited_s: float  # for a CPU, by this process's threads
    load: float = 1.0  # the machine's load per core over the call (the higher of its two ends)

    @classmethod
    def between(cls, start: Sample, end: Sample) -> Cost:
        waited = sum(wait - start.waits.get(tid, 0.0) for tid, wait in end.waits.items())
        return cls(end.wall - start.wall, end.cpu - start.cpu, max(0.0, waited), max(start.load, end.load))

    def verdict(self, slow_s: float | None = None) -> str | None:
        """Why this call is slow beyond doubt, or None (`slow_s`: the marker's threshold, SLOW_S unless given)."""
        slow_s = SLOW_S if slow_s is None else slow_s
        if self.cpu_s >= CPU_FACTOR * slow_s:
            return f"used {self.cpu_s:.1f} s of CPU (at least {CPU_FACTOR * slow_s:g} s is slow under any load)"
        unloaded, bound = self.wall_s - self.waited_s, WALL_FACTOR * slow_s * self.load
        if unloaded >= bound:
            return (
                f"took {self.wall_s:.1f} s, {unloaded:.1f} s of it not waiting for a CPU "
                f"(at least {bound:g} s is slow at a load of {self.load:.1f} per core)"
            )
        return None


def add_option(parser: pytest.Parser) -> None:
    parser.addoption(
        "--slow-guard",
        action="store_true",
        default=False,
        help="fail a test not marked slow whose call is slow beyond doubt (see tests/slow_guard.py)",
    )


@contextmanager
def measuring(item: pytest.Item, slow_s: float | None = None) -> Iterator[None]:
    """Around a test's call: note a verdict when it is unmarked and slow beyond doubt (`judge` then fails it)."""
    if not item.config.getoption("--slow-guard") or item.get_closest_marker("slow") is not None:
        yield
        return
    start = Sample.now()
    yield
    verdict = Cost.between(start, Sample.now()).verdict(slow_s)
    if verdict is not None:
        item.add_report_section("call", "slow guard", verdict)
        item.user_properties.append(("slow_guard", verdict))


def judge(item: pytest.Item, report: pytest.TestReport) -> None:
    """Turn a passed call the guard found slow into a failure that says what to do."""
    verdicts = [value for name, value in item.user_properties if name == "slow_guard"]
    if report.when == "call" and report.passed and verdicts:
        report.outcome = "failed"
        report.longrepr = (
            f"{item.nodeid} is not marked slow but {verdicts[0]}: mark it @pytest.mark.slow (3 s or more alone) "
            "or make it faster"
        )
