"""The /proc readings `bench hosts` splits a call's cost with: counted by the kernel, so checked against it."""

from __future__ import annotations

import os
import subprocess
import sys
import time

import pytest

from mcpwatch.bench.procstat import children, keep_on_one_cpu, machine_cpu_s, preemptions, queued_s


def test_machine_busy_time_counts_this_process_burning_cpu() -> None:
    every_before, idle_before = machine_cpu_s()
    spent = time.process_time()
    while time.process_time() - spent < 0.05:  # 50 ms of this process's CPU, however loaded the machine
        pass
    every_after, idle_after = machine_cpu_s()
    assert every_after - idle_after - (every_before - idle_before) >= 0.02  # ticks of 10 ms at most
    assert every_after > every_before and idle_after >= idle_before


def test_preemptions_sum_every_thread_and_are_zero_once_the_process_is_gone() -> None:
    with open(f"/proc/{os.getpid()}/status", encoding="ascii") as status:
        main_thread = next(int(line.split()[1]) for line in status if line.startswith("nonvoluntary_ctxt_switches:"))
    assert preemptions(os.getpid()) >= main_thread
    gone = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    assert preemptions(int(gone.stdout)) == 0


def test_run_queue_delay_of_threads_that_outnumber_the_cores_is_counted() -> None:
    cores = os.cpu_count() or 1
    burners = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(cores + 1)]
    try:
        before = queued_s(os.getpid())
        spent = time.process_time()
        while time.process_time() - spent < 0.05:  # more runnable threads than cores: this one waits its turn
            pass
        assert queued_s(os.getpid()) > before
    finally:
        for burner in burners:
            burner.kill()
            burner.wait()
    assert queued_s(burners[0].pid) == 0.0  # gone


@pytest.mark.skipif(
    not hasattr(os, "sched_setaffinity") or len(os.sched_getaffinity(0)) < 2, reason="one CPU: nothing to keep to"
)
def test_a_child_is_found_and_every_thread_of_it_kept_on_one_cpu() -> None:
    """`bench wrap` finds each path's server among the children and keeps all its threads on one CPU."""
    threads = "import threading, time; [threading.Thread(target=time.sleep, args=(30,)).start() for _ in range(2)]"
    child = subprocess.Popen([sys.executable, "-c", threads + "; time.sleep(30)"])
    try:
        assert child.pid in children(os.getpid())
        deadline = time.monotonic() + 20
        while len(os.listdir(f"/proc/{child.pid}/task")) < 3:  # its two threads started
            assert time.monotonic() < deadline, "the child's threads never started"
            time.sleep(0.01)
        cpu = max(os.sched_getaffinity(0))
        assert os.sched_getaffinity(child.pid) != {cpu}  # not so already
        assert keep_on_one_cpu(child.pid, cpu)
        for tid in os.listdir(f"/proc/{child.pid}/task"):
            assert os.sched_getaffinity(int(tid)) == {cpu}  # every thread, not the process's first alone
    finally:
        child.kill()
        child.wait()
    assert child.pid not in children(os.getpid())
    assert not keep_on_one_cpu(child.pid, cpu)  # gone: nothing kept, no error
