"""The graph of a dask X on a dask.distributed cluster: PCA projection and neighbour search as tasks.

:func:`glfs.graph.neighbors.nearest_neighbors` (through :func:`glfs.similarity_graph`) of an out-of-core
dask X with a client active (:func:`glfs.core.out_of_core.cluster_client`) runs its two heavy steps here:

- the PCA: its seeded subsample (:data:`glfs.graph.neighbors.PCA_FIT_SAMPLES` cells) is taken from
  the chunks by tasks and fitted on the client as before; every chunk is then projected on the
  components by a task (``chunk @ V``), and the client holds the (n_samples, n_pcs) float32 scores;
- the search: the index is built once on the client (faiss' IVF or flat index, the same as the
  single-process search), serialised and scattered to every worker (broadcast), and the queries are
  searched in shards of :data:`QUERY_BLOCK` cells, one task each.  A query's candidates do not depend
  on the other queries of its shard, so the graph equals the single-process graph given the same
  index (tests/test_cluster_graph.py); the candidates are then refined on the client as before.

pynndescent (the search without faiss) builds its graph while it builds its index: it runs on the
client, after the projection on the cluster.
"""

from __future__ import annotations

import logging

import numpy as np
import scipy.sparse as sp

from glfs.core.cluster import map_chunks, map_pieces

log = logging.getLogger(__name__)

__all__ = ["QUERY_BLOCK", "fit_rows", "ivf_search", "project", "search_shards"]

#: Cells per query shard of the sharded search: one task each (50,000 x 50 float32 = 10 MB of queries).
QUERY_BLOCK = 50_000


def _take_rows(blk, rows, cols, *, want):
    """The rows of ``want`` (sorted, global) that fall in this chunk."""
    take = want[(want >= rows.start) & (want < rows.stop)] - rows.start
    part = blk[take]
    return sp.csr_matrix(part) if sp.issparse(part) else np.asarray(part)


def fit_rows(X, rows, client):
    """The rows ``rows`` (sorted) of the out-of-core dask X in memory on the client, taken by one task per chunk."""
    pieces = map_chunks(X, _take_rows, {"want": np.asarray(rows, np.int64)}, client, "PCA subsample")
    by_row = {}
    for r, c, part in pieces:  # grid order: the column chunks of a row chunk in order
        by_row.setdefault(r.start, []).append(part)
    blocks = []
    for r0 in sorted(by_row):
        parts = by_row[r0]
        sparse = all(sp.issparse(p) for p in parts)
        blocks.append(sp.hstack(parts, format="csr") if sparse else np.hstack([np.asarray(p) for p in parts]))
    if all(sp.issparse(b) for b in blocks):
        return sp.vstack(blocks, format="csr")
    return np.vstack([b.toarray() if sp.issparse(b) else b for b in blocks])


def _project_chunk(blk, rows, cols, *, V):
    return np.asarray(blk @ V[cols], dtype=np.float32)


def project(X, V, client):
    """X V for the out-of-core dask X (n_samples, n_features) and V (n_features, p): one task per chunk, the
    chunks of a row of chunks summed on the workers (the client receives the (n, p) result once)."""
    Z = np.zeros((X.shape[0], V.shape[1]), np.float32)
    for rows, _, part in map_chunks(X, _project_chunk, {"V": V}, client, "PCA projection", sum_rows=True):
        Z[rows] += part
    return Z


_INDEX = {}  # the deserialised index of the current search on this worker: token -> faiss index


def _faiss_index(index_bytes, token):
    """The scattered index, deserialised once per worker and search (the last one kept)."""
    if token not in _INDEX:
        import faiss

        _INDEX.clear()
        _INDEX[token] = faiss.deserialize_index(index_bytes)
    return _INDEX[token]


def ivf_search(index, Q, k_search: int, nprobe: int):
    """The ``k_search`` candidates (-1: none) of every query row of Q in the IVF ``index``, probing ``nprobe`` cells.

    The queries are searched in the order of their k-means cell: consecutive queries probe the same
    lists, which stay in cache (each query's result does not depend on the order, nor on the other
    queries searched with it; at 300,000 cells the search took 24 s in this order against 62 s in the
    cells' own, benchmarks/results/knn_backends.md).
    """
    Q32 = np.ascontiguousarray(Q, dtype=np.float32)
    index.nprobe = int(nprobe)
    _, cell = index.quantizer.search(Q32, 1)
    order = np.argsort(cell.ravel(), kind="stable")
    ind = np.empty((Q32.shape[0], k_search), dtype=np.int64)
    _, ind[order] = index.search(Q32[order], k_search)
    return ind


def _search_shard(Q, *, index_bytes, token, k_search, nprobe):
    """The ``k_search`` candidates of the queries Q in the scattered faiss index (a task)."""
    index = _faiss_index(index_bytes, token)
    if nprobe is None:
        return index.search(np.ascontiguousarray(Q, np.float32), k_search)[1]
    return ivf_search(index, Q, k_search, nprobe)


def search_shards(index, Z32, k_search: int, client, nprobe: int | None = None, what: str = "neighbour search"):
    """(n, k_search) candidates of every row of Z32 in the faiss ``index``, searched in query shards as tasks.

    The index is serialised and scattered to every worker once; ``nprobe`` (an IVF index) as in
    :func:`ivf_search`, None for a flat index.
    """
    import faiss

    n = Z32.shape[0]
    index_bytes = faiss.serialize_index(index)
    token = f"{id(index)}-{n}-{index_bytes.size}"
    bounds = [(a, min(n, a + QUERY_BLOCK)) for a in range(0, n, QUERY_BLOCK)]
    log.info("%s: %d query shards of at most %d cells as dask tasks; the index (%.0f MB) on every worker",
             what, len(bounds), QUERY_BLOCK, index_bytes.nbytes / 2**20)
    shared = {"index_bytes": index_bytes, "token": token, "k_search": int(k_search), "nprobe": nprobe}
    parts = map_pieces(client, _search_shard, [Z32[a:b] for a, b in bounds], shared, what,
                       labels=[f"cells {a}-{b - 1}" for a, b in bounds])
    return np.vstack(parts).astype(np.int64, copy=False)
