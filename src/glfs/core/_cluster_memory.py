"""What a dask cluster's workers can hold, and the gene blocks and waves planned from it: the workers' memory
limits, threads and process memory, dask's memory fractions, and the bytes of a step's inputs
(:func:`worker_block_values`, :func:`wave_bytes`).  The block work itself is :mod:`glfs.core._cluster`;
docs/guides/atlases.md, "On a dask cluster", has the formulas and the measured peaks.
"""

from __future__ import annotations

import logging

import numpy as np
import scipy.sparse as sp

from glfs.core._heap import process_memory

log = logging.getLogger(__name__)

__all__ = [
    "BLOCK_COPIES",
    "CHUNK_COPIES",
    "LEAST_BLOCK_SHARE",
    "PER_CELL_BYTES",
    "WORKER_BASE_BYTES",
    "n_workers",
    "nbytes",
    "wave_bytes",
    "worker_block_values",
    "workers_info",
]


def workers_info(client) -> dict:
    """The scheduler's identity of each of ``client``'s workers, ``{address: info}``, asked of the scheduler.

    ``Client.scheduler_info()`` returns the client's cached identity, which its periodic refresh (every
    ``distributed.client.scheduler-info-interval``) replaces with one that lists no worker; the refresh can land
    between the fetch and the return, and the cluster then seems to have no workers and no memory limit.
    """
    return client.sync(client.scheduler.identity, n_workers=-1).get("workers", {})


def n_workers(client) -> int:
    """The number of workers of the dask ``client`` (at least 1)."""
    return max(1, len(workers_info(client)))


#: The least memory a worker process is counted to use before it holds any of a step's data (Python, numpy,
#: scipy, numba and glfs loaded); the process memory measured on the worker when a step starts is used when it is
#: more.
WORKER_BASE_BYTES = 2**28
#: Gene blocks of row-chunked X (:func:`glfs.core._cluster.map_gene_blocks`): a task holds its row chunk as read, the chunk by genes
#: and the reader's and the conversion's temporaries (2.4 chunks measured on a 50,000-cell chunk of 26.5 M values;
#: 3 counted), or its block's pieces, the stacked block and the score's temporaries (3 blocks).
CHUNK_COPIES = 3
BLOCK_COPIES = 3
#: Per cell and task, beside the block and its index pointers: the temporaries of the genes scored on their dense
#: columns, made in place from the block (8 bytes a cell and gene, at most 2**23 values a part, so one gene above
#: 8.4 million cells and two at 3 million) and, for Moran's I, their squares; the measurements behind it are in
#: studies/dask-row-chunks.md.
PER_CELL_BYTES = 32
#: The blocks planned above dask's target (:func:`worker_block_values`) are at least this fraction of the blocks
#: planned to the spill fraction: when a worker has less room above its target, a smaller block would multiply the
#: tasks (blocks x row chunks) and the worker may still pass its pause fraction (studies/dask-row-chunks.md).
LEAST_BLOCK_SHARE = 0.25


def nbytes(obj) -> int:
    """Bytes of the arrays in ``obj`` (numpy arrays, scipy sparse matrices, dicts, lists and tuples of them)."""
    if sp.issparse(obj):
        return int(sum(getattr(obj, a).nbytes for a in ("data", "indices", "indptr", "row", "col") if hasattr(obj, a)))
    if isinstance(obj, np.ndarray):
        return int(obj.nbytes)
    if isinstance(obj, dict):
        return sum(nbytes(v) for v in obj.values())
    if isinstance(obj, (list, tuple)):
        return sum(nbytes(v) for v in obj)
    return 0


def _workers_memory(client):
    """(memory limit in bytes or None, threads per worker, process bytes before the step) over the workers:
    the smallest limit, the most threads, the largest process memory (at least WORKER_BASE_BYTES) as measured now
    (:func:`_process_memory`)."""
    workers = workers_info(client)
    limits_ = [int(w.get("memory_limit") or 0) for w in workers.values()]
    limit = min(limits_) if limits_ and all(limits_) else None
    threads = max([int(w.get("nthreads") or 1) for w in workers.values()] or [1])
    base = max(list(_process_memory(client, workers).values()) + [WORKER_BASE_BYTES])
    return limit, threads, base


def _process_memory(client, workers) -> dict:
    """Each worker's process memory in bytes, ``{address: bytes}``: measured on the worker now, once the free pages
    of its C heap are given back (:func:`glfs.core._heap.process_memory`), so that memory a worker has freed
    but its allocator kept is not counted against the step; the scheduler's last measurement for a worker that
    does not answer."""
    fresh = client.run(process_memory, on_error="return")
    return {
        a: fresh[a] if isinstance(fresh.get(a), int) else int(w.get("metrics", {}).get("memory") or 0)
        for a, w in workers.items()
    }


def _memory_fraction(key: str) -> float:
    """The share of a worker's memory limit at which dask spills its data to disk (``key`` "spill", default 0.7),
    pauses it ("pause", 0.8) or restarts it ("terminate", 0.95): ``distributed.worker.memory.<key>``; 1 when it
    is switched off."""
    import dask

    value = dask.config.get(f"distributed.worker.memory.{key}", None)
    return 1.0 if value in (None, False) else float(value)


def _target_fraction() -> float:
    """The share of a worker's memory limit up to which dask keeps its data in memory before it spills it to disk
    (``distributed.worker.memory.target``, default 0.6); the spill fraction when the target is switched off (dask
    then spills at the spill fraction only)."""
    import dask

    value = dask.config.get("distributed.worker.memory.target", None)
    return _memory_fraction("spill") if value in (None, False) else float(value)


def worker_block_values(client, X, shared, what: str, graph=None) -> int | None:
    """Stored values per gene block so that each worker stays within its memory limit; None without a limit.

    A worker holds ``M = base + S + G / w + t * max(CHUNK_COPIES * C, BLOCK_COPIES * B + P + PER_CELL_BYTES * n + g)``:
    its process before the step (``base``), the shared inputs scattered to it (``S``: the per-cell arrays, and
    the graph when it is not given in shards), its share of the graph's row shards (``graph``, a list of them: ``G``
    bytes over ``w`` workers; ``g`` the largest, which a task takes beside its block), and for each of its ``t``
    threads either a row chunk of X with its pieces (``C``, the largest row chunk's bytes) or a gene block
    (``B`` its values and indices) with its pieces, the stacked copy, the CSR block's index pointers (``P``, 8
    bytes a cell) and the score's per-cell temporaries; X in tiles or by genes has no row chunk term.  Blocks are sized so that ``M`` is at most the
    workers' spill fraction of their memory limit (above it dask moves the waiting pieces to disk), and so that
    a block being made fits above dask's data: dask keeps its data in memory up to its target fraction (the
    block's pieces among them), and the stacked block is not counted until its task ends, so ``base + target L
    + t (B + P)`` is at most the pause fraction of ``L``; not below :data:`LEAST_BLOCK_SHARE` of the first plan
    (logged as a warning when that floor is taken).  A gene with more stored values than the plan is a block of its
    own (:func:`glfs.core._out_of_core.gene_parts`).  Raises a
    MemoryError, with the numbers, when a row chunk, or a block of one gene, would take a worker past its
    pause fraction: a task runs on above it while dask fetches the next task's inputs and spills, and at the
    terminate fraction the nanny restarts the worker (studies/dask-row-chunks.md).
    """
    limit, threads, base = _workers_memory(client)
    if limit is None:
        return None
    n = X.shape[0]
    shard_b = max((nbytes(g) for g in graph), default=0) if graph else 0
    shared_b = nbytes(shared) + (-(-sum(nbytes(g) for g in graph) // n_workers(client)) if graph else 0)
    spill, pause = _memory_fraction("spill"), _memory_fraction("pause")
    room = spill * limit - base - shared_b
    hard = pause * limit - base - shared_b
    sparse = X.format != "dense"
    value_b = X.dtype.itemsize + (8 if sparse else 0)  # a sparse value and its index (int64 at worst)
    row_chunked = _row_chunked(X.source)
    chunk_b = 0
    if row_chunked:
        rows = max(X.source.chunks[0])
        chunk_vals = getattr(X, "chunk_values", None)  # counted by the validation on the cluster
        if not chunk_vals:  # validated elsewhere: the mean row's stored values (all of them when dense)
            nnz = X.nnz if sparse and X.nnz is not None else n * X.shape[1]
            chunk_vals = -(-rows * nnz // n)
        chunk_b = chunk_vals * value_b + (8 * (rows + 1) if sparse else 0)
    gene_vals = int(np.max(X.gene_nnz)) if sparse and X.gene_nnz is not None and X.gene_nnz.size else n
    block_fixed = 8 * (n + 1) if sparse else 0
    task_fixed = block_fixed + PER_CELL_BYTES * n + shard_b  # one CSR block's pointers (the pieces have a gene's)
    need = f"worker process {base / 2**30:.2f} GiB + shared inputs {shared_b / 2**30:.2f} GiB"
    if graph:
        need += f" (the graph's share in {len(graph)} row shards; one of {shard_b / 2**30:.2f} GiB a task)"
    if row_chunked and CHUNK_COPIES * chunk_b * threads > hard:
        least = (base + shared_b + threads * CHUNK_COPIES * chunk_b) / pause
        msg = (
            f"{what}: the dask workers' memory limit ({limit / 2**30:.2f} GiB, {threads} thread(s) each) is too small "
            f"for X's row chunks of {rows} cells ({chunk_b / 2**30:.2f} GiB the largest; a task holds it as read and "
            f"by genes, {CHUNK_COPIES} x): {need} + {threads} x {CHUNK_COPIES} x chunk needs "
            f"{least / 2**30:.2f} GiB at the pause fraction {pause:g}; give the workers at least that "
            f"memory_limit, or read X in smaller row chunks (e.g. chunks=({max(1, rows // 4)}, -1))"
        )
        raise MemoryError(msg)
    values = int((room / threads - task_fixed) / BLOCK_COPIES // value_b)
    one_gene = base + shared_b + threads * (task_fixed + BLOCK_COPIES * gene_vals * value_b)
    if one_gene > pause * limit:
        least = one_gene / pause
        msg = (
            f"{what}: the dask workers' memory limit ({limit / 2**30:.2f} GiB, {threads} thread(s) each) is too small "
            f"for a block of one gene of all {n} cells ({gene_vals} stored values): {need} + {threads} x "
            f"{BLOCK_COPIES} x block needs {least / 2**30:.2f} GiB at the pause fraction {pause:g}; "
            f"give the workers at least that memory_limit"
        )
        raise MemoryError(msg)
    values = max(values, gene_vals)  # one gene a block at least (above the spill fraction, below pause)
    # a block being made sits on dask's data at its target: it fits below pause, not below a share of the plan; a
    # gene with more values is a block alone (gene_parts), the others are not made as large
    above = (pause - _target_fraction()) * limit - base
    above_values = int((above / threads - block_fixed) // value_b)
    least = max(1, int(LEAST_BLOCK_SHARE * values))
    if above_values < least:
        log.warning(
            "%s: the workers' memory between dask's target and pause fractions, less their process (%.2f GiB for "
            "%d thread(s)), holds less than %.0f %% of the gene blocks planned to the spill fraction: blocks of %d "
            "stored values, and a worker may pass its pause fraction while it makes one (dask pauses it while it "
            "spills); raise the workers' memory_limit or lower distributed.worker.memory.target to avoid it",
            what,
            above / 2**30,
            threads,
            100 * LEAST_BLOCK_SHARE,
            least,
        )
    values = min(values, max(above_values, least))
    log.info(
        "%s: workers of %.2f GiB, %d thread(s): %s, row chunks of %.2f GiB; gene blocks of at most %d stored values "
        "(%.2f GiB; a gene with more is a block alone)",
        what,
        limit / 2**30,
        threads,
        need,
        chunk_b / 2**30,
        values,
        (values * value_b + block_fixed) / 2**30,
    )
    return values


def wave_bytes(client, X, shared, graph_f=None) -> float:
    """The bytes of gene pieces that one wave of :func:`glfs.core._cluster.map_gene_blocks` may leave waiting on the cluster:
    dask config ``glfs.wave-bytes`` when set, else half of what the workers can keep (the memory each has
    below its spill fraction beside its process and the shared inputs, summed) plus half of the smallest free
    local disk of a worker (where dask spills; workers of one machine share it; none counted when no worker
    answers).  Infinite without a memory limit."""
    import dask
    from dask.utils import parse_bytes

    value = dask.config.get("glfs.wave-bytes", None)
    if value is not None:
        msg = f"dask config 'glfs.wave-bytes' must be a positive size (bytes, or e.g. '20 GB'); got {value!r}"
        try:
            got = parse_bytes(value) if isinstance(value, str) else value
        except ValueError as e:
            raise ValueError(msg) from e
        if not (isinstance(got, (int, float)) and not isinstance(got, bool) and got > 0):
            raise ValueError(msg)
        return float(got)
    workers = workers_info(client)
    limits_ = [int(w.get("memory_limit") or 0) for w in workers.values()]
    if not limits_ or not all(limits_):
        return float("inf")
    spill = _memory_fraction("spill")
    shared_b = nbytes(shared)
    if graph_f is not None:  # a worker's share of the graph's shards
        shared_b += -(-graph_f[4] // len(workers))
    held = _process_memory(client, workers)
    room = sum(max(0.0, spill * lim - held[a] - shared_b) for lim, a in zip(limits_, workers))
    free = [f for f in client.run(_free_disk, on_error="return").values() if isinstance(f, int)]
    return room / 2 + (min(free) / 2 if free else 0.0)


def _free_disk(dask_worker) -> int:
    """Free bytes of the disk where the worker spills (run on every worker)."""
    import shutil

    return int(shutil.disk_usage(dask_worker.local_directory).free)


def _row_chunked(source) -> bool:
    """Whether the dask array ``source`` is stored in row chunks of all genes (split by :func:`glfs.core._cluster.map_gene_blocks`)."""
    return source.numblocks[1] == 1 and source.numblocks[0] > 1
