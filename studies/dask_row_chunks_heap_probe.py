"""Issue 42 (studies/dask-row-chunks.md, "The freed heap"): RSS, dask's state, glibc's heap (mallinfo2), gc.collect and
malloc_trim(0) on the workers of a running cluster, from a second client: probe.py SCHEDULER rss state arena gc trim."""

import sys

from dask.distributed import Client

c = Client(sys.argv[1], timeout=20)


def rss():
    import psutil

    return psutil.Process().memory_info().rss / 2**30


def gcc():
    import gc

    import psutil

    a = psutil.Process().memory_info().rss
    n = gc.collect()
    return n, a / 2**30, psutil.Process().memory_info().rss / 2**30


def trim():
    import ctypes

    import psutil

    a = psutil.Process().memory_info().rss
    ctypes.CDLL("libc.so.6").malloc_trim(0)
    return a / 2**30, psutil.Process().memory_info().rss / 2**30


def arena():
    import ctypes

    class MI(ctypes.Structure):
        _fields_ = [
            (n, ctypes.c_size_t)
            for n in (
                "arena",
                "ordblks",
                "smblks",
                "hblks",
                "hblkhd",
                "usmblks",
                "fsmblks",
                "uordblks",
                "fordblks",
                "keepcost",
            )
        ]

    f = ctypes.CDLL("libc.so.6").mallinfo2
    f.restype = MI
    m = f()
    return {
        k: round(getattr(m, k) / 2**30, 3) if k not in ("ordblks", "smblks", "hblks") else getattr(m, k)
        for k, _ in MI._fields_
    }


def state(dask_worker):
    st = dask_worker.state
    return len(st.tasks), st.nbytes / 2**30, dask_worker.data.spilled_total.memory / 2**30


for what in sys.argv[2:]:
    if what == "state":
        print(what, c.run(state))
    else:
        print(what, c.run({"rss": rss, "gc": gcc, "trim": trim, "arena": arena}[what]))
