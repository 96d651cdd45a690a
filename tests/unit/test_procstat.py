"""The /proc readings `bench hosts` splits a call's cost with: counted by the kernel, so checked against it."""

from __future__ import annotations

import os
import subprocess
import sys
import time

from mcpwatch.bench.procstat import machine_cpu_s, preemptions


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
