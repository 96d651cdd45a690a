"""Resident memory of a process, from /proc: what the benchmarks report against their RSS targets."""

from __future__ import annotations

import os


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
