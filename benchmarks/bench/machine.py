"""What the run was measured on: machine, library versions, BLAS, git commit; which methods import."""

from __future__ import annotations

import os
import platform
import subprocess
import time

from bench.settings import GB, ROOT

NOTE_CHARS_AVAIL = 200  # availability notes are cut to this length
UNKNOWN = "unknown"


def method_availability():
    """{method: True, or the import error} for every name in ``glfs.METHODS``.

    The registry holds the functions themselves, so ``import glfs`` succeeding
    means every method is importable; an error is recorded for all of them.
    """
    try:
        import glfs
    except Exception as exc:  # noqa: BLE001
        return {"glfs": f"{type(exc).__name__}: {exc}"[:NOTE_CHARS_AVAIL]}
    return {name: callable(info.fn) or "not callable" for name, info in glfs.METHODS.items()}


def _blas():
    from threadpoolctl import threadpool_info

    return [
        f"{p.get('internal_api')} {p.get('version')} ({p.get('prefix')}, {p.get('architecture', '')}, "
        f"{p.get('num_threads')} threads)"
        for p in threadpool_info()
    ]


def _cpu_model():
    try:
        with open("/proc/cpuinfo") as fh:
            for line in fh:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return UNKNOWN


def _ram():
    try:
        import psutil
    except ImportError:
        return UNKNOWN
    return f"{psutil.virtual_memory().total / GB:.1f} GiB"


def _skfeature_version():
    try:
        from importlib.metadata import version

        return version("skfeature-chappers")
    except Exception:  # noqa: BLE001
        return UNKNOWN


def _git_head():
    try:
        return subprocess.run(
            ["git", "-C", str(ROOT), "rev-parse", "--short", "HEAD"], capture_output=True, text=True
        ).stdout.strip()
    except OSError:
        return UNKNOWN


def machine_info():
    """Date, CPU, RAM, Python and library versions, BLAS (threadpoolctl), git commit, platform."""
    import numpy as np
    import scipy
    import sklearn

    return {
        "date": time.strftime("%Y-%m-%d %H:%M:%S %Z"),
        "cpu": _cpu_model(),
        "cpu_count": os.cpu_count(),
        "affinity": len(os.sched_getaffinity(0)),
        "ram": _ram(),
        "python": platform.python_version(),
        "numpy": np.__version__,
        "scipy": scipy.__version__,
        "scikit-learn": sklearn.__version__,
        "skfeature-chappers": _skfeature_version(),
        "blas": _blas(),
        "git": _git_head(),
        "platform": platform.platform(),
    }
