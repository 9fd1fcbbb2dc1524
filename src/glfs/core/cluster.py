"""Block work on a dask.distributed cluster: an out-of-core dask X scored where its blocks are read.

When X is a dask array and a ``dask.distributed`` client is active (``distributed.Client(...)``,
``with client.as_current():``, or ``client=`` given to a score), the streaming scores
(:mod:`glfs.scores.genewise`, :func:`glfs.scores.moran.graph_autocorrelation`) and the graph's
PCA, index and neighbour search (:mod:`glfs.graph.sharded`) run as dask tasks: X is rechunked
into gene blocks of all cells (``dask.array.rechunk``; an X chunked by genes is cut at its chunks'
edges, so a block is one column of tiles and no worker needs more than it), the graph and the other shared inputs are
scattered to every worker once (``client.scatter(..., broadcast=True)``), each task applies the
score's own block function (the numba kernels of the single-process route) to its block, and the
client combines the small per-gene results.  The client never holds a block of X; a task holds its
block and that block's temporaries.  Without a client, or for any other X, nothing here runs and the
blocks stream through the calling process as before (:class:`glfs.core.out_of_core.OutOfCore`).

dask and distributed are imported only when a dask X meets an active client (``pip install glfs[scale]``).
A task that fails (or a worker lost more often than ``distributed.scheduler.allowed-failures``)
makes the whole call fail with a RuntimeError naming the block: no partial result is returned.
docs/methods.md, "On a dask cluster", has the design and the measured costs.
"""

from __future__ import annotations

import contextlib
import logging
import time

import numpy as np
import scipy.sparse as sp

from glfs.core.structure import canonical, check_sparse_structure

log = logging.getLogger(__name__)

__all__ = ["active_client", "as_current", "chunk_tasks", "gather_blocks", "map_chunks", "map_gene_blocks", "map_pieces", "n_workers",
           "task_key", "wait_for", "BLOCKS_PER_WORKER"]

#: Gene blocks per worker at least (smaller blocks than ``STREAM_VALUES`` when X is small), so that
#: every worker has work and a slow block does not leave the others idle.
BLOCKS_PER_WORKER = 2


def active_client(client=None):
    """``client`` if given, else the dask.distributed client in use (``Client.current()``), else None.

    None also when distributed is not installed.
    """
    if client is not None:
        return client
    try:
        from distributed import Client
    except ImportError:
        return None
    try:
        return Client.current(allow_global=True)
    except ValueError:
        return None


@contextlib.contextmanager
def as_current(client=None):
    """Make ``client`` the current dask client inside the block (nothing when it is None)."""
    if client is None:
        yield
        return
    with client.as_current():
        yield


def n_workers(client) -> int:
    """The number of workers of the dask ``client`` (at least 1)."""
    return max(1, len(client.scheduler_info().get("workers", {})))


def gather_blocks(client, futures, what: str, labels, fetch: bool = True):
    """The results of ``futures`` in their order, logging each finished block; on any failure the
    others are cancelled and a RuntimeError names the first failed block (no partial results).
    ``fetch=False``: only wait (the results stay on the workers; None each)."""
    from distributed import as_completed

    index = {f.key: i for i, f in enumerate(futures)}
    out = [None] * len(futures)
    t0, done = time.perf_counter(), 0
    try:
        for fut in as_completed(futures):
            i = index[fut.key]
            try:
                if fetch or fut.status != "finished":
                    res = fut.result()  # raises the task's error
                    out[i] = res if fetch else None
            except Exception as e:
                lost = type(e).__name__ in ("KilledWorker", "FutureCancelledError", "CancelledError")
                hint = ("; a worker was lost (above its memory limit, or killed): raise the workers' memory_limit "
                        "or make X's chunks smaller" if lost else "")
                msg = (f"{what} failed on the dask cluster at {labels[i]} ({type(e).__name__}: {e}){hint}; "
                       f"no partial result is returned")
                raise RuntimeError(msg) from e
            done += 1
            log.info("%s: %s done (%d of %d blocks), %.1f s", what, labels[i], done, len(futures),
                     time.perf_counter() - t0)
    finally:
        if done < len(futures):
            client.cancel(futures)
    return out


def wait_for(client, futures, what: str, labels=None) -> None:
    """Wait until every future is done, logging each; a failure raises as in :func:`map_chunks` (the
    others cancelled).  The results stay on the workers, for tasks that depend on them."""
    labels = labels or [f"block {i}" for i in range(len(futures))]
    gather_blocks(client, futures, what, labels, fetch=False)


def task_key(what: str, i: int) -> str:
    """A task's key: what it computes (its kind in the dashboard and task stream), its block, a unique token."""
    import uuid

    return f"glfs {what}-{i}-{uuid.uuid4().hex[:12]}"


def _scatter(client, shared):
    """The dict ``shared`` on every worker once: one future for all of it."""
    return client.scatter([shared], broadcast=True, hash=False)[0]


def _call(fn, block, shared):
    return fn(block, **shared)


def _call_block(fn, block, shared):
    """``fn`` on a gene block; a sparse block checked and made canonical first (glfs.core.structure)."""
    if sp.issparse(block):
        check_sparse_structure(block)
        block = canonical(block, warn=False)
    return fn(block, **shared)


def _call_at(fn, block, rows, cols, shared):
    return fn(block, rows, cols, **shared)


def chunk_tasks(X, fn, shared, client, what: str):
    """(rows, cols, delayed ``fn(chunk, rows, cols, **shared)``) for every chunk of the dask X, in grid
    order (the column chunks of a row chunk in turn), ``shared`` scattered to every worker once.

    Nothing is computed: the tasks are for :func:`map_chunks` or for tasks that depend on them.
    """
    import dask

    src = X.source
    starts = [np.r_[0, np.cumsum(c)] for c in src.chunks]
    grid = src.to_delayed()
    shared_f = _scatter(client, shared)
    out = []
    for i in range(grid.shape[0]):
        for j in range(grid.shape[1]):
            rows = slice(int(starts[0][i]), int(starts[0][i + 1]))
            cols = slice(int(starts[1][j]), int(starts[1][j + 1]))
            out.append((rows, cols, dask.delayed(_call_at)(fn, grid[i, j], rows, cols, shared_f,
                                                           dask_key_name=task_key(what, len(out)))))
    return out


def map_chunks(X, fn, shared, client, what: str):
    """``fn(chunk, rows, cols, **shared)`` on every chunk of the dask X as a task; (rows, cols, result) each.

    For reductions over cells (validation scan, row sums): each task holds one chunk of X as dask
    stores it and returns what ``fn`` makes of it, which should be small.
    """
    found = chunk_tasks(X, fn, shared, client, what)
    where = [(r, c) for r, c, _ in found]
    tasks = [t for _, _, t in found]
    labels = [f"cells {r.start}-{r.stop - 1}, genes {c.start}-{c.stop - 1}" for r, c in where]
    results = gather_blocks(client, client.compute(tasks), what, labels)
    return [(r, c, res) for (r, c), res in zip(where, results)]


def map_gene_blocks(X, parts, fn, shared, client, what: str):
    """``fn(block, **shared)`` on every gene block ``parts`` (consecutive slices) of the dask X, as tasks.

    X is rechunked into blocks of all cells by the genes of ``parts`` (dask's rechunk; each task of
    it holds one chunk or one block), ``shared`` is scattered to every worker once, and each block's
    task returns the per-gene results of its block.  Returns the results in the order of ``parts``.
    """
    import dask

    n = X.shape[0]
    widths = tuple(sl.stop - sl.start for sl in parts)
    # dask's task-based rechunk: its P2P rechunk (chosen for large graphs on a distributed client) cannot
    # move scipy.sparse chunks ("'csr_matrix' object has no attribute 'base'", at 10^6 cells in row chunks)
    blocks = X.source.rechunk(((n,), widths), method="tasks").to_delayed().ravel()
    shared_f = _scatter(client, shared)
    tasks = [dask.delayed(_call_block)(fn, b, shared_f, dask_key_name=task_key(what, i)) for i, b in enumerate(blocks)]
    log.info("%s: %d gene blocks of all %d cells as dask tasks on %d workers", what, len(tasks), n, n_workers(client))
    labels = [f"genes {sl.start}-{sl.stop - 1}" for sl in parts]
    return gather_blocks(client, client.compute(tasks), what, labels)


def map_pieces(client, fn, pieces, shared, what: str, labels=None):
    """``fn(piece, **shared)`` for in-memory ``pieces`` (e.g. query blocks of the neighbour search) as tasks.

    The pieces are scattered (each to one worker), ``shared`` to every worker once; the results come
    back in the order of ``pieces``.
    """
    shared_f = _scatter(client, shared)
    piece_f = client.scatter(list(pieces), hash=False)
    futures = client.map(_call, [fn] * len(piece_f), piece_f, [shared_f] * len(piece_f),
                         key=[task_key(what, i) for i in range(len(piece_f))])
    labels = labels or [f"block {i}" for i in range(len(futures))]
    return gather_blocks(client, futures, what, labels)
