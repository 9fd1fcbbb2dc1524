"""Wall-time and load helpers shared by the benchmark scripts (standard library only)."""

from __future__ import annotations

import logging
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


def log_stamps(*loggers):
    """(time.perf_counter(), message) of every INFO record of the named loggers from now on (a list that grows)."""
    stamps = []

    class _Stamp(logging.Handler):
        def emit(self, record):
            stamps.append((time.perf_counter(), record.getMessage()))

    for name in loggers:
        lg = logging.getLogger(name)
        lg.setLevel(logging.INFO)
        lg.addHandler(_Stamp())
    return stamps


def load1():
    """The 1-minute load average."""
    return os.getloadavg()[0]


def uptime():
    """``uptime``'s line (the load averages of 1, 5 and 15 minutes), or the load averages alone."""
    try:
        return subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip()
    except OSError:
        return "load average: " + ", ".join(f"{x:.2f}" for x in os.getloadavg())
