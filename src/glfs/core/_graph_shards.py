"""A graph score's pair term on a dask cluster, in row shards of the graph (:func:`glfs.core._cluster.map_gene_blocks`).

The Laplacian score and Moran's I need the graph only through ``sum_{(i, j)} U_ij z_i z_j`` over the edges of its
upper triangle U, a sum over U's rows.  So the graph is not given to every worker: it is cut into row shards of
consecutive cells (:func:`graph_shards`, at most :data:`GRAPH_SHARD_BYTES` each, dask config
``glfs.graph-shard-bytes`` overrides), each scattered to one worker, and a gene block's tasks are its score's local
step, one graph term per shard and a finish on the per-gene sums (:func:`block_tasks`); a task holds its block and one
shard.  docs/guides/atlases.md, "On a dask cluster", has the memory formula; studies/dask-row-chunks.md the
measurements.
"""

from __future__ import annotations

import logging

import numpy as np
import scipy.sparse as sp

from glfs.core._heap import release_free_heap

log = logging.getLogger("glfs.core._cluster")

__all__ = ["block_tasks", "graph_shards", "scatter_graph", "shard_bytes", "GRAPH_SHARD_BYTES"]

#: Bytes of a row shard of the graph at most (a task holds one beside its gene block); dask config
#: ``glfs.graph-shard-bytes`` overrides it (bytes, or a size such as ``"128 MB"``).
GRAPH_SHARD_BYTES = 2**26


def shard_bytes() -> int:
    """The bound of a row shard: dask config ``glfs.graph-shard-bytes`` when set, else :data:`GRAPH_SHARD_BYTES`."""
    import dask
    from dask.utils import parse_bytes

    value = dask.config.get("glfs.graph-shard-bytes", None)
    if value is None:
        return GRAPH_SHARD_BYTES
    msg = f"dask config 'glfs.graph-shard-bytes' must be a positive size (bytes, or e.g. '128 MB'); got {value!r}"
    try:
        got = parse_bytes(value) if isinstance(value, str) else value
    except ValueError as e:
        raise ValueError(msg) from e
    if isinstance(got, bool) or not isinstance(got, (int, float)) or not got > 0:
        raise ValueError(msg)
    return int(got)


def _nbytes(U) -> int:
    return int(U.data.nbytes + U.indices.nbytes + U.indptr.nbytes)


def graph_shards(U, max_bytes: int | None = None) -> list[tuple[int, sp.csr_matrix]]:
    """``(r0, rows)``: the CSR graph ``U`` cut into row shards of consecutive samples (``rows`` the samples ``r0,
    r0 + 1, ...``, all columns), each of at most ``max_bytes`` (default :func:`shard_bytes`; a row above it alone)."""
    U = sp.csr_matrix(U)
    limit = shard_bytes() if max_bytes is None else max_bytes
    per_value = U.data.itemsize + U.indices.itemsize
    cost = U.indptr.astype(np.int64) * per_value + np.arange(U.shape[0] + 1) * U.indptr.itemsize
    out, r0 = [], 0
    while r0 < U.shape[0]:
        # rows r0..r1 cost cost[r1] - cost[r0] and one index pointer more
        r1 = max(r0 + 1, int(np.searchsorted(cost, cost[r0] + limit - U.indptr.itemsize, side="right")) - 1)
        r1 = min(r1, U.shape[0])
        out.append((r0, U[r0:r1]))
        r0 = r1
    return out


def scatter_graph(client, graph):
    """None without ``graph``; else ``(shards, local, graph_term, finish, bytes)`` for ``graph = (cut, local,
    graph_term, finish)``: ``shards`` the ``(r0, future)`` of each row shard of ``cut`` (:func:`graph_shards`), each
    scattered to one worker (not broadcast), and the shards' bytes."""
    if graph is None:
        return None
    cut, local, term, finish = graph
    futures = client.scatter([rows for _, rows in cut], hash=False)
    total = sum(_nbytes(rows) for _, rows in cut)
    log.info(
        "the graph (%.2f GB) in %d row shards of at most %.2f GB, spread over the workers",
        total / 1e9,
        len(cut),
        max(_nbytes(rows) for _, rows in cut) / 1e9,
    )
    return [(r0, f) for (r0, _), f in zip(cut, futures)], local, term, finish, total


def block_tasks(block, fn, shared_f, graph_f, what, i, key):
    """The delayed result of gene block ``i`` (``block``: a delayed block, checked; ``key(kind, i)`` names a task):
    ``fn(block, **shared)``, or with a graph in row shards (:func:`scatter_graph`) the score's local step, one graph
    task per shard and its finish."""
    import dask

    if graph_f is None:
        return dask.delayed(_call)(fn, block, shared_f, dask_key_name=key(what, i))
    shards, local, term, finish, _ = graph_f
    loc = dask.delayed(_call)(local, block, shared_f, dask_key_name=key(f"{what} local", i))
    terms = [
        dask.delayed(_term)(term, block, rows, loc[1], r0, dask_key_name=key(f"{what} graph", i * len(shards) + s))
        for s, (r0, rows) in enumerate(shards)
    ]
    return dask.delayed(_finish_block)(finish, loc, *terms, dask_key_name=key(what, i))


def _call(fn, block, shared):
    out = fn(block, **shared)
    release_free_heap()  # each task ends so (glfs.core._heap)
    return out


def _term(term, block, rows, plan, r0):
    out = term(block, rows, plan, r0)
    release_free_heap()
    return out


def _finish_block(finish, loc, *terms):
    """``finish(partial, t)`` with ``t`` the graph terms of the row shards added in the shards' order."""
    t = terms[0].copy()
    for more in terms[1:]:
        t += more
    return finish(loc[0], t)
