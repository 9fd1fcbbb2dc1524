"""Block work on a dask.distributed cluster: an out-of-core dask X scored where its blocks are read.

When X is a dask array and a ``dask.distributed`` client is active (``distributed.Client(...)``,
``with client.as_current():``, or ``client=`` given to a score), the streaming scores
(:mod:`glfs.scores._genewise`, :func:`glfs.scores._moran.graph_autocorrelation`) and the graph's
PCA, index and neighbour search (:mod:`glfs.graph._sharded`) run as dask tasks: X is rechunked
into gene blocks of all cells (``dask.array.rechunk``; an X chunked by genes is cut at its chunks'
edges, so a block is one column of tiles and no worker needs more than it), the shared per-cell inputs are
scattered to every worker once (``client.scatter(..., broadcast=True)``) and the graph in row shards, each to
one worker (a graph score's pair term is summed shard by shard), each task applies the score's own block
function (the numba kernels of the single-process route) to its block, and the client combines the small
per-gene results.  The client never holds a block of X; a task holds its
block and that block's temporaries.  Without a client, or for any other X, nothing here runs and the
blocks stream through the calling process as before (:class:`glfs.core._out_of_core.OutOfCore`).

dask and distributed are imported only when a dask X meets an active client (``pip install glfs[scale]``).
A task that fails (or a worker lost more often than ``distributed.scheduler.allowed-failures``)
makes the whole call fail with a RuntimeError naming the block: no partial result is returned.
docs/guides/atlases.md, "On a dask cluster", has the design and the measured costs.
"""

from __future__ import annotations

import contextlib
import logging
import time

import numpy as np
import scipy.sparse as sp

from glfs.core._cluster_memory import _row_chunked, n_workers, wave_bytes
from glfs.core._graph_shards import block_tasks, scatter_graph
from glfs.core._heap import release_free_heap
from glfs.core._structure import canonical, check_sparse_structure

log = logging.getLogger(__name__)

__all__ = [
    "active_client",
    "as_current",
    "chunk_grid",
    "chunk_tasks",
    "gather_blocks",
    "map_chunks",
    "map_gene_blocks",
    "map_pieces",
    "stall_seconds",
    "task_key",
    "wait_for",
    "BLOCKS_PER_WORKER",
    "STALL_SECONDS",
]

#: Gene blocks per worker at least (smaller blocks than ``STREAM_VALUES`` when X is small), so that
#: every worker has work and a slow block does not leave the others idle.
BLOCKS_PER_WORKER = 2


def active_client(client=None):
    """``client`` if given, else the dask.distributed client in use (``Client.current()``), else None.

    None also when distributed is not installed.  A closed (or failed) client is a RuntimeError that says so.
    """
    if client is None:
        try:
            from distributed import Client
        except ImportError:
            return None
        try:
            client = Client.current(allow_global=True)
        except ValueError:
            return None
    status = str(getattr(client, "status", ""))
    if status in ("closing", "closed", "failed"):  # its calls fail with "IOLoop is closed" or a bare AttributeError
        msg = (
            f"the dask client in use ({client!r}) is {status}; the blocks of a dask X run on the current client. "
            "Pass a running one (client = distributed.Client(...); with client.as_current(): ...), or leave no "
            "closed client current to compute in this process"
        )
        raise RuntimeError(msg)
    return client


@contextlib.contextmanager
def as_current(client=None):
    """Make ``client`` the current dask client inside the block (nothing when it is None)."""
    if client is None:
        yield
        return
    with client.as_current():
        yield


#: Seconds a step of tasks may go with none of its blocks finished while no worker runs or fetches a task
#: before the call raises a RuntimeError naming the step and the blocks not done (a stalled cluster: tasks
#: left waiting by the scheduler, every worker paused or idle), instead of waiting forever.  A slow task
#: that is running never counts.  dask's config key ``glfs.stall-timeout`` overrides it (seconds, or a
#: string such as ``"10 minutes"``; None waits forever): ``dask.config.set({"glfs.stall-timeout": 600})``.
STALL_SECONDS = 300


def stall_seconds() -> float | None:
    """The stall limit in seconds (:data:`STALL_SECONDS`, or dask's config ``glfs.stall-timeout``); None: none."""
    import dask
    from dask.utils import parse_timedelta

    value = dask.config.get("glfs.stall-timeout", STALL_SECONDS)
    if value is None or value is False:
        return None
    msg = f"dask config 'glfs.stall-timeout' must be a positive duration (seconds, or e.g. '10 minutes') or None; got {value!r}"
    try:
        seconds = parse_timedelta(value, default="seconds")
    except (TypeError, ValueError, KeyError) as e:
        raise ValueError(msg) from e
    if seconds is None or not seconds > 0:
        raise ValueError(msg)
    return float(seconds)


def gather_blocks(client, futures, what: str, labels, fetch: bool = True):
    """The results of ``futures`` in their order, logging each finished block; on any failure the
    others are cancelled and a RuntimeError names the first failed block (no partial results).
    ``fetch=False``: only wait (the results stay on the workers; None each).  A step that stalls
    (:data:`STALL_SECONDS`) raises a RuntimeError too."""
    index = {f.key: i for i, f in enumerate(futures)}
    out = [None] * len(futures)
    pending = list(futures)
    t0, done = time.perf_counter(), 0
    try:
        while pending:
            finished, pending = _next_finished(client, pending, what, [labels[index[f.key]] for f in pending])
            for fut in finished:
                i = index[fut.key]
                try:
                    if fetch or fut.status != "finished":
                        res = fut.result()  # raises the task's error
                        out[i] = res if fetch else None
                except Exception as e:
                    lost = type(e).__name__ in ("KilledWorker", "FutureCancelledError", "CancelledError")
                    hint = (
                        "; a worker was lost (above its memory limit, or killed): raise the workers' memory_limit "
                        "or make X's chunks smaller"
                        if lost
                        else ""
                    )
                    msg = (
                        f"{what} failed on the dask cluster at {labels[i]} ({type(e).__name__}: {e}){hint}; "
                        f"no partial result is returned"
                    )
                    raise RuntimeError(msg) from e
                done += 1
                log.info(
                    "%s: %s done (%d of %d blocks), %.1f s",
                    what,
                    labels[i],
                    done,
                    len(futures),
                    time.perf_counter() - t0,
                )
    finally:
        if done < len(futures):
            client.cancel(futures)
    return out


def _next_finished(client, pending, what, labels):
    """(finished, still pending) futures of ``pending`` once one or more is done; RuntimeError when the
    step stalls: :func:`stall_seconds` with none done while no worker runs or fetches a task."""
    import asyncio
    from concurrent.futures import CancelledError

    from distributed import wait

    limit = stall_seconds()
    poll = None if limit is None else max(0.2, min(10.0, limit / 3))
    idle = 0.0
    while True:
        try:
            res = wait(pending, timeout=poll, return_when="FIRST_COMPLETED")
            return list(res.done), [f for f in pending if f not in res.done]
        except CancelledError:  # some cancelled (e.g. lost dependencies): their result() raises and is named
            return [f for f in pending if f.done()], [f for f in pending if not f.done()]
        except (TimeoutError, asyncio.TimeoutError):
            workers = client.run(_activity, on_error="return")
            busy = any(isinstance(a, dict) and a["running"] for a in workers.values())
            idle = 0.0 if busy else idle + poll
            if idle >= limit:
                _raise_stalled(client, what, labels, workers, limit)


def _activity(dask_worker) -> dict:
    """What a worker is doing (run on every worker): tasks running or fetching data, its status."""
    st = dask_worker.state
    return {
        "running": len(st.executing) + len(st.long_running) + len(st.in_flight_tasks),
        "ready": len(st.ready) + len(st.constrained),
        "status": getattr(dask_worker.status, "name", str(dask_worker.status)),
    }


def _raise_stalled(client, what, labels, workers, limit):
    """The RuntimeError of a stalled step: the blocks not done, the workers' states, how to see more."""
    said = ", ".join(
        f"{w}: {a['status']}, {a['ready']} ready" if isinstance(a, dict) else f"{w}: no answer ({a})"
        for w, a in workers.items()
    )
    shown = "; ".join(labels[:5]) + (f" and {len(labels) - 5} more" if len(labels) > 5 else "")
    msg = (
        f"{what} stalled on the dask cluster: none of its {len(labels)} blocks still to do ({shown}) finished in "
        f"{limit:.0f} s while no worker ran or fetched a task (workers: {said or 'none'}); the scheduler's and "
        f"workers' states can be saved with client.dump_cluster_state(); dask config 'glfs.stall-timeout' "
        f"sets this limit (None waits forever); no partial result is returned"
    )
    raise RuntimeError(msg)


def wait_for(client, futures, what: str, labels=None) -> None:
    """Wait until every future is done, logging each; a failure raises as in :func:`map_chunks` (the
    others cancelled).  The results stay on the workers, for tasks that depend on them."""
    labels = labels or [f"block {i}" for i in range(len(futures))]
    gather_blocks(client, futures, what, labels, fetch=False)


def task_key(what: str, i: int) -> str:
    """A task's key: what it computes (its kind in the dashboard and task stream), its block, a unique token."""
    import uuid

    return f"glfs {what}-{i}-{uuid.uuid4().hex[:12]}"


def chunk_grid(source):
    """The chunks of the dask array ``source`` as an array of Delayed, unoptimised: each chunk keeps its
    key and its task as in ``source`` in every step that submits it.

    Optimised (dask's default), each step's graph fused X's chunks in its own way: a chunk's key (a
    ``concatenate`` alias of a shard's tile) became an alias of a fused task (``make_dask_chunk-concatenate-…``)
    in the PCA projection and stayed an alias of the tile in the score's rechunk.  While the client held
    a result of the projection (the PCA scores), the worker kept the projection's released tasks with
    their dependencies, took the score's task of the same key with the old, fused dependency beside the
    new one, found it nowhere and waited forever: the stall of the Laplacian score at 10^6 x 2,000
    (docs/guides/atlases.md, "On a dask cluster"; tests/core/test_cluster_stall.py reproduces it on 4 shards).
    """
    return source.to_delayed(optimize_graph=False)


def _scatter(client, shared):
    """The dict ``shared`` on every worker once: one future for all of it."""
    return client.scatter([shared], broadcast=True, hash=False)[0]


def _call(fn, block, shared):
    out = fn(block, **shared)
    release_free_heap()  # every task of this module ends so (glfs.core._heap)
    return out


def _call_at(fn, chunk, rows, cols, shared):
    out = fn(chunk.read(), rows, cols, **shared)
    release_free_heap()
    return out


def chunk_tasks(X, fn, shared, client, what: str):
    """(rows, cols, delayed ``fn(chunk, rows, cols, **shared)``) for every chunk of the dask X, in grid
    order (the column chunks of a row chunk in turn), ``shared`` scattered to every worker once.

    Nothing is computed: the tasks are for :func:`map_chunks` or for tasks that depend on them.
    """
    import dask

    src = X.source
    starts = [np.r_[0, np.cumsum(c)] for c in src.chunks]
    shared_f = _scatter(client, shared)
    out = []
    for i in range(src.numblocks[0]):
        for j in range(src.numblocks[1]):
            rows = slice(int(starts[0][i]), int(starts[0][i + 1]))
            cols = slice(int(starts[1][j]), int(starts[1][j + 1]))
            out.append(
                (
                    rows,
                    cols,
                    dask.delayed(_call_at)(
                        fn, _Chunk(src.blocks[i, j]), rows, cols, shared_f, dask_key_name=task_key(what, len(out))
                    ),
                )
            )
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


def map_gene_blocks(X, parts, fn, shared, client, what: str, graph=None):
    """``fn(block, **shared)`` on every gene block ``parts`` (consecutive slices) of the dask X, as tasks.

    ``graph``: ``(shards, local, graph_term, finish)`` for a score whose only per-cell pair term is the graph's:
    then the graph is not scattered to every worker but given as its row shards (:func:`glfs.core._graph_shards.graph_shards`: ``(r0,
    rows)`` each), each scattered to one worker; a block's task computes ``partial, plan = local(block, **shared)``, one task per shard adds
    ``graph_term(block, shard, plan, r0)``, and ``finish(partial, sum of the shards' terms)`` is the block's
    result.  A worker then holds its block and one shard, not the whole graph (studies/dask-row-chunks.md).

    X stored in row chunks (one column chunk, as ``read_elem_lazy``, zarr and SOMA exports give it): each
    row chunk is read and split by the genes of ``parts`` by one task (:func:`_split_rows`), and
    each block's task stacks its pieces of every row chunk (:func:`_stack`): a task holds one row chunk
    and its pieces, or one block and its pieces, never a row chunk read elsewhere; the pieces wait for their
    block where dask keeps data (spilled to disk above the workers' memory target).  All blocks' pieces are
    the whole matrix: when they exceed what the workers can keep (:func:`glfs.core._cluster_memory.wave_bytes`), the blocks run in waves
    of consecutive blocks whose pieces fit, each wave reading every row chunk again, so that no disk fills
    with the matrix.  X in 2-D tiles or
    chunked by genes: rechunked by dask into the blocks (each a column of tiles, read by one task).
    ``shared`` is scattered to every worker once, and each block's task returns the per-gene results of its
    block.  Returns the results in the order of ``parts``.
    """
    import dask

    src = X.source
    n = X.shape[0]
    graph_f = scatter_graph(client, graph)
    if _row_chunked(src):
        budget = wave_bytes(client, X, shared, graph_f)
        waves = _waves(parts, _piece_bytes(X, parts), budget)
        if len(waves) > 1:
            log.info(
                "%s: %d gene blocks in %d waves, each of at most %.2f GB of pieces held on the cluster (every row "
                "chunk read once a wave)",
                what,
                len(parts),
                len(waves),
                budget / 1e9,
            )
        out = []
        for w, (a, b) in enumerate(waves):
            out += _row_chunk_wave(X, parts[a:b], fn, shared, client, what, w, len(waves), graph_f)
        return out
    # dask's task-based rechunk: its P2P rechunk (chosen for large graphs on a distributed client) cannot
    # move scipy.sparse chunks ("'csr_matrix' object has no attribute 'base'", at 10^6 cells in row chunks)
    widths = tuple(sl.stop - sl.start for sl in parts)
    blocks = chunk_grid(src.rechunk(((n,), widths), method="tasks")).ravel()
    shared_f = _scatter(client, shared)
    tasks = [
        block_tasks(
            dask.delayed(_ready)(b, dask_key_name=task_key(f"{what} block", i)),
            fn,
            shared_f,
            graph_f,
            what,
            i,
            task_key,
        )
        for i, b in enumerate(blocks)
    ]
    log.info("%s: %d gene blocks of all %d cells as dask tasks on %d workers", what, len(tasks), n, n_workers(client))
    labels = [f"genes {sl.start}-{sl.stop - 1}" for sl in parts]
    return gather_blocks(client, client.compute(tasks), what, labels)


def _ready(block):
    """The gene block checked: a sparse block's structure checked and made canonical (glfs.core._structure)."""
    if sp.issparse(block):
        check_sparse_structure(block)
        block = canonical(block, warn=False)
    return block


def _row_chunk_wave(X, parts, fn, shared, client, what, wave, n_waves, graph_f=None):
    """The results of ``parts`` (consecutive gene slices) of the row-chunked dask X: each row chunk read and
    split by a task into its pieces of these blocks, each block stacked from its pieces by a task."""
    import dask

    src = X.source
    n = X.shape[0]
    g0 = parts[0].start
    edges = np.r_[0, np.cumsum([sl.stop - sl.start for sl in parts])].astype(np.int64) + g0
    tag = f" (wave {wave + 1} of {n_waves})" if n_waves > 1 else ""
    split = [
        dask.delayed(_split_rows, nout=len(parts))(
            _Chunk(src.blocks[i, 0]), edges, dask_key_name=task_key(f"{what} split", i)
        )
        for i in range(src.numblocks[0])
    ]
    shared_f = _scatter(client, shared)
    tasks = [
        block_tasks(
            dask.delayed(_stack)(*[pieces[k] for pieces in split], dask_key_name=task_key(f"{what} block", k)),
            fn,
            shared_f,
            graph_f,
            what,
            k,
            task_key,
        )
        for k in range(len(parts))
    ]
    log.info(
        "%s: %d row chunks split into %d gene blocks of all %d cells as dask tasks on %d workers%s",
        what,
        len(split),
        len(tasks),
        n,
        n_workers(client),
        tag,
    )
    labels = [f"genes {sl.start}-{sl.stop - 1}{tag}" for sl in parts]
    # unoptimised: dask's cull of each block's graph in turn grows as blocks x pieces (studies/dask-row-chunks.md)
    return gather_blocks(client, client.compute(tasks, optimize_graph=False), what, labels)


def _piece_bytes(X, parts) -> np.ndarray:
    """The bytes of each block's pieces over all row chunks: its stored values and their row indices (sparse,
    as the by-genes pieces of :func:`_split_rows` keep them), or all its values (dense)."""
    n = X.shape[0]
    if X.format == "dense":
        return np.array([(sl.stop - sl.start) * n * X.dtype.itemsize for sl in parts], dtype=np.float64)
    per_gene = X.gene_nnz if X.gene_nnz is not None else np.full(X.shape[1], n, np.int64)
    csum = np.r_[0, np.cumsum(per_gene, dtype=np.int64)]
    rows = X.source.numblocks[0]
    return np.array(
        [
            (csum[sl.stop] - csum[sl.start]) * (X.dtype.itemsize + 8) + rows * 8 * (sl.stop - sl.start + 1)
            for sl in parts
        ],
        dtype=np.float64,
    )


def _waves(parts, piece_bytes, budget) -> list[tuple[int, int]]:
    """Consecutive runs ``(a, b)`` of ``parts`` whose pieces add up to at most ``budget`` bytes each (a block
    above it alone); one run when all fit."""
    out, a, held = [], 0, 0.0
    for k, b in enumerate(piece_bytes):
        if k > a and held + b > budget:
            out.append((a, k))
            a, held = k, 0.0
        held += b
    out.append((a, len(parts)))
    return out


class _Chunk:
    """One chunk of a dask array, read by the task that is given it (:meth:`read`: the chunk's own tasks, culled
    from the array's graph, run by dask's synchronous scheduler in the task's thread), not by a task of its own:
    a chunk never exists on the cluster apart from the task that uses it, so it is never moved between workers,
    and no chunk key is shared between the steps of a call."""

    def __init__(self, block):
        (key,) = (k for row in block.__dask_keys__() for k in row)
        self.key = key
        self.graph = dict(block.__dask_graph__().cull({key}))

    def read(self):
        import dask

        return dask.get(self.graph, self.key)


def _split_rows(chunk, edges):
    """The pieces of one row chunk (a :class:`_Chunk`, read here) by the gene blocks whose edges are ``edges``
    (a task): a sparse chunk's structure checked and made canonical first, then turned by columns once, so that
    each piece (a CSR copy of its columns) costs its own stored values, not the chunk's (a CSR column slice
    reads every row; studies/dask-row-chunks.md); dense: a contiguous copy.  The chunk is released once its
    pieces exist."""
    chunk = chunk.read()
    if sp.issparse(chunk):
        check_sparse_structure(chunk)
        by_genes = canonical(sp.csr_matrix(chunk), warn=False).tocsc()
        del chunk
        pieces = tuple(by_genes[:, int(a) : int(b)] for a, b in zip(edges[:-1], edges[1:]))
        del by_genes
    else:
        chunk = np.asarray(chunk)
        pieces = tuple(np.ascontiguousarray(chunk[:, int(a) : int(b)]) for a, b in zip(edges[:-1], edges[1:]))
        del chunk
    release_free_heap()
    return pieces


def _stack(*pieces):
    """The gene block stacked from its ``pieces`` of every row chunk, in row order, checked (a task); a sparse
    block as CSR, the form whose kernels the single process runs on a CSR X (the same sums, bitwise)."""
    block = _ready(_stack_rows(pieces) if sp.issparse(pieces[0]) else np.vstack(pieces))
    release_free_heap()
    return block


def _stack_rows(pieces):
    """The CSR matrix of the CSC ``pieces`` (the same genes, consecutive rows) stacked in their order, as scipy's
    ``vstack`` of the pieces made CSR: each piece made CSR in turn and copied into the block's arrays, so that a
    task holds the pieces, the block and one piece's CSR copy (a CSC block made CSR held the block twice)."""
    d = pieces[0].shape[1]
    rows = np.r_[0, np.cumsum([p.shape[0] for p in pieces])]
    nnz = int(sum(p.nnz for p in pieces))
    idx_dtype = np.int32 if max(int(rows[-1]), d, nnz) < 2**31 else np.int64
    data = np.empty(nnz, dtype=np.result_type(*[p.dtype for p in pieces]))
    indices = np.empty(nnz, dtype=idx_dtype)
    indptr = np.zeros(int(rows[-1]) + 1, dtype=idx_dtype)
    at = 0
    for p, r0, r1 in zip(pieces, rows[:-1], rows[1:]):
        c = p.tocsr()  # rows sorted by gene, as the CSC block made CSR
        data[at : at + c.nnz] = c.data
        indices[at : at + c.nnz] = c.indices
        indptr[r0 + 1 : r1 + 1] = at + c.indptr[1:]
        at += c.nnz
    return sp.csr_matrix((data, indices, indptr), shape=(int(rows[-1]), d))


def map_pieces(client, fn, pieces, shared, what: str, labels=None):
    """``fn(piece, **shared)`` for in-memory ``pieces`` (e.g. query blocks of the neighbour search) as tasks.

    The pieces are scattered (each to one worker), ``shared`` to every worker once; the results come
    back in the order of ``pieces``.
    """
    shared_f = _scatter(client, shared)
    piece_f = client.scatter(list(pieces), hash=False)
    futures = client.map(
        _call,
        [fn] * len(piece_f),
        piece_f,
        [shared_f] * len(piece_f),
        key=[task_key(what, i) for i in range(len(piece_f))],
    )
    labels = labels or [f"block {i}" for i in range(len(futures))]
    return gather_blocks(client, futures, what, labels)
