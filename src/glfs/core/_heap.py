"""Memory a dask worker has freed but still holds: the C heap's free pages given back to the system.

glibc's ``malloc`` serves requests below its mmap threshold (128 KiB once ``MALLOC_TRIM_THRESHOLD_`` is set, as
dask's nanny sets it) from heaps that it shrinks only from the top.  A worker that splits row chunks, spills and
fetches thousands of pieces keeps the holes freed between live objects in its resident memory, which dask counts
as unmanaged memory and makes room for by spilling its data (studies/dask-row-chunks.md has the measurements).
``malloc_trim(0)`` gives every free page of every heap back, the remedy dask's documentation gives ("Memory not
released back to the OS"); the tasks of :mod:`glfs.core._cluster` and :mod:`glfs.core._graph_shards` call it when
they end.  Where the C library has no ``malloc_trim`` (macOS, musl) nothing is done.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import functools

__all__ = ["process_memory", "release_free_heap"]


@functools.cache
def _malloc_trim():
    """glibc's ``malloc_trim``, or None where the C library has none."""
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
        trim = libc.malloc_trim
    except (OSError, AttributeError):
        return None
    trim.argtypes = [ctypes.c_size_t]
    trim.restype = ctypes.c_int
    return trim


def release_free_heap() -> bool:
    """Give the free pages of the process's C heaps back to the system (glibc's ``malloc_trim(0)``); False where
    the C library cannot.  Live memory is untouched; the cost is a pass over the free chunks."""
    trim = _malloc_trim()
    if trim is None:
        return False
    trim(0)
    return True


def process_memory(dask_worker=None) -> int:
    """The resident memory of this process in bytes once its free heap pages are given back (run on every worker
    by :func:`glfs.core._cluster_memory.worker_block_values`: what a worker holds before a step, not what it last freed)."""
    import psutil

    release_free_heap()
    return int(psutil.Process().memory_info().rss)
