"""Free C heap given back by the cluster's tasks (glfs.core._heap): glibc keeps the holes freed between live small
allocations resident, and a dask worker that splits, spills and fetches thousands of pieces piles them up (0.5 GiB
of a 2 GiB worker at 10^7 cells, studies/dask-row-chunks.md)."""

import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

from glfs.core._heap import _malloc_trim

pytestmark = pytest.mark.skipif(_malloc_trim() is None, reason="the C library has no malloc_trim (not glibc)")

#: Arrays of 96 KiB: below glibc's mmap threshold (128 KiB, fixed once MALLOC_TRIM_THRESHOLD_ is set, as dask's
#: nanny sets it), so they live on the heap; every other one freed leaves holes the heap's top cannot give back.
FRAGMENT = textwrap.dedent(
    """
    import numpy as np, psutil
    p = psutil.Process()
    xs = [np.ones(12_288) for _ in range(4_000)]
    del xs[::2]
    before = p.memory_info().rss
    {call}
    print(before - p.memory_info().rss)
    """
)


def _released(call: str) -> int:
    env = dict(os.environ, MALLOC_TRIM_THRESHOLD_="65536")
    code = FRAGMENT.format(call=call)
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True)
    return int(out.stdout.split()[-1])


def test_release_gives_back_the_freed_holes_of_the_heap():
    pytest.importorskip("psutil")
    freed = 2_000 * 12_288 * 8  # 188 MiB freed between live arrays
    assert _released("pass") < freed / 10  # the allocator keeps them resident
    assert _released("from glfs.core._heap import release_free_heap; assert release_free_heap()") > freed / 2


def test_a_cluster_task_leaves_its_worker_without_the_heap_it_freed():
    """A task that frees 188 MiB between the 188 MiB it keeps leaves its worker holding what it keeps, not what it
    freed; on the code before glfs.core._heap the worker held both."""
    distributed = pytest.importorskip("distributed")
    from glfs.core._cluster import map_pieces

    def fragment(piece):
        xs = [np.ones(12_288) for _ in range(4_000)]
        del xs[::2]
        distributed.get_worker().glfs_test_held = xs  # the live half stays on the worker, between the holes
        return float(piece.sum())

    def rss(dask_worker):
        import psutil

        return psutil.Process().memory_info().rss

    with (
        distributed.LocalCluster(
            n_workers=1, threads_per_worker=1, processes=True, dashboard_address=":0", memory_limit="2GiB"
        ) as cl,
        distributed.Client(cl) as client,
    ):
        map_pieces(client, lambda piece: float(piece.sum()), [np.ones(3)], {}, "warm")  # the imports made
        before = next(iter(client.run(rss).values()))
        out = map_pieces(client, fragment, [np.ones(3)], {}, "fragment")
        after = next(iter(client.run(rss).values()))
        held = next(iter(client.run(lambda dask_worker: len(dask_worker.glfs_test_held)).values()))
    assert out == [3.0] and held == 2_000
    # the live half (188 MiB) stays; the freed half does not (less than half of it left)
    half = 2_000 * 12_288 * 8
    assert after - before < half + half / 2, (before, after)
