"""Wall-time and load helpers shared by the benchmark scripts (standard library only)."""

from __future__ import annotations

import os
import statistics
import subprocess
import time


def best_of(fn, repeats):
    """The shortest wall time (s) of ``repeats`` calls of fn()."""
    best = float("inf")
    for _ in range(repeats):
        t = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t)
    return best


def median_of(fn, repeats):
    """The median wall time (s) of ``repeats`` calls of fn()."""
    times = []
    for _ in range(repeats):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return float(statistics.median(times))


def load1():
    """The 1-minute load average."""
    return os.getloadavg()[0]


def uptime():
    """``uptime``'s line (the load averages of 1, 5 and 15 minutes), or the load averages alone."""
    try:
        return subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip()
    except OSError:
        return "load average: " + ", ".join(f"{x:.2f}" for x in os.getloadavg())
