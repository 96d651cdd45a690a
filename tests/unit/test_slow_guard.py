"""The slow guard (`tests/slow_guard.py`, on in `.ci/run`): an unmarked test slow beyond doubt fails and says what
to do; a marked one, a fast one, and a fast one slowed by load do not."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path
from types import SimpleNamespace

import pytest
import slow_guard
from slow_guard import Cost, Sample

from checkout import REPO

SUITE = """
import time, pytest

def burn(seconds):
    end = time.process_time() + seconds
    while time.process_time() < end:
        pass

def test_burns_unmarked():
    burn(0.15)

@pytest.mark.slow
def test_burns_marked():
    burn(0.15)

def test_waits_unmarked():
    time.sleep(0.4)

def test_quick():
    pass
"""


def run_suite(tmp_path: Path, slow_s: float, *options: str) -> subprocess.CompletedProcess[str]:
    """A small suite under the guard, with the slow threshold scaled down to `slow_s` seconds."""
    (tmp_path / "conftest.py").write_text(
        f"import sys; sys.path.insert(0, {str(REPO / 'tests')!r})\n"
        "import pytest, slow_guard\n"
        f"slow_guard.SLOW_S = {slow_s}\n"
        "slow_guard.load_factor = lambda: 1.0\n"  # judged as on an idle machine, whatever this one's load
        "def pytest_addoption(parser): slow_guard.add_option(parser)\n"
        "@pytest.hookimpl(wrapper=True)\n"
        "def pytest_runtest_call(item):\n"
        "    with slow_guard.measuring(item):\n"
        "        return (yield)\n"
        "@pytest.hookimpl(wrapper=True)\n"
        "def pytest_runtest_makereport(item, call):\n"
        "    report = yield\n"
        "    slow_guard.judge(item, report)\n"
        "    return report\n"
    )
    (tmp_path / "pytest.ini").write_text("[pytest]\nmarkers =\n    slow: slow\n")
    (tmp_path / "test_suite.py").write_text(SUITE)
    command = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "no:xdist", *options]
    return subprocess.run(command, cwd=tmp_path, capture_output=True, text=True, timeout=120)


@pytest.mark.slow  # a pytest of its own
def test_an_unmarked_slow_test_fails_saying_what_to_do(tmp_path: Path) -> None:
    done = run_suite(tmp_path, 0.03, "--slow-guard")  # CPU threshold 0.06 s, wall 0.3 s
    assert "2 failed, 2 passed" in done.stdout, done.stdout + done.stderr
    assert "test_suite.py::test_burns_unmarked is not marked slow but used 0." in done.stdout
    assert "test_suite.py::test_waits_unmarked is not marked slow but took 0." in done.stdout
    assert "mark it @pytest.mark.slow (3 s or more alone) or make it faster" in done.stdout


class FakeItem:
    """What `measuring` reads of a test item."""

    def __init__(self, guard: bool, marked: bool) -> None:
        self.config = SimpleNamespace(getoption=lambda name: guard)
        self.marked = marked
        self.user_properties: list[tuple[str, object]] = []
        self.sections: list[tuple[str, str, str]] = []

    def get_closest_marker(self, name: str) -> object:
        return object() if self.marked and name == "slow" else None

    def add_report_section(self, when: str, key: str, content: str) -> None:
        self.sections.append((when, key, content))


def burn(seconds: float) -> None:
    end = time.process_time() + seconds
    while time.process_time() < end:
        pass


@pytest.mark.parametrize(
    ("guard", "marked", "judged"), [(True, False, True), (False, False, False), (True, True, False)]
)
def test_only_an_unmarked_test_is_judged_and_only_with_the_option(guard: bool, marked: bool, judged: bool) -> None:
    item = FakeItem(guard, marked)
    with slow_guard.measuring(item, slow_s=0.01):  # type: ignore[arg-type]  # only what measuring reads
        burn(0.05)
    assert bool(item.user_properties) is judged
    assert all(isinstance(value, str) and value.startswith("used 0.") for _, value in item.user_properties)


def test_load_alone_cannot_trip_it() -> None:
    """A test of 2 s alone, slowed tenfold by load: 2 s of CPU, 20 s of wall time, most of it waiting for a CPU."""
    assert Cost(wall_s=20.0, cpu_s=2.2, waited_s=15.0).verdict() is None
    assert Cost(wall_s=29.0, cpu_s=2.2, waited_s=0.0).verdict() is None  # even if none of it showed as waiting
    assert Cost(wall_s=31.0, cpu_s=0.1, waited_s=0.5).verdict() is not None  # 30 s waiting on timers or peers
    assert Cost(wall_s=7.0, cpu_s=6.5, waited_s=0.0).verdict() is not None  # 6 s of CPU is 3 s alone on 2 cores
    # peers slowed twentyfold by burners: a wait of 2 s alone took 40 s, little of it this process's own wait
    assert Cost(wall_s=40.0, cpu_s=0.1, waited_s=0.5, load=20.0).verdict() is None
    assert Cost(wall_s=40.0, cpu_s=6.5, waited_s=0.5, load=20.0).verdict() is not None  # CPU is judged at any load


def test_a_sample_counts_this_process_cpu_and_its_waits() -> None:
    start = Sample.now()
    burn(0.1)
    cost = Cost.between(start, Sample.now())
    assert 0.1 <= cost.cpu_s <= cost.wall_s + 0.05 and 0.0 <= cost.waited_s <= cost.wall_s
    assert slow_guard.run_queue_waits() or not Path("/proc/self/task").exists()
