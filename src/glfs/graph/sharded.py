"""The graph of a dask X on a dask.distributed cluster: PCA fit, projection, index and search as tasks.

:func:`glfs.graph.neighbors.nearest_neighbors` (through :func:`glfs.similarity_graph`) of an out-of-core
dask X with a client active (:func:`glfs.core.out_of_core.cluster_client`) runs every step on the
workers, and the client holds only what comes back: the components V, the neighbour pairs and then
the graph (docs/methods.md, "On a dask cluster"):

- the PCA: its seeded subsample (:data:`glfs.graph.neighbors.PCA_FIT_SAMPLES` cells) is taken from
  the chunks by tasks and fitted by one task (:func:`fit_components`: the same estimator as the single
  process, on the same rows, so the same V); every chunk is then projected on V by a task, the
  projections of a row of chunks summed in column order, and the (n_samples, n_pcs) float32 scores
  assembled on a worker (:func:`project`): a :class:`ClusterZ`, a handle to them;
- the search: the index (faiss' IVF or flat index, the same as the single-process search) is built
  by one task from the scores on the cluster, and the queries are searched in shards of
  :data:`QUERY_BLOCK` cells, one task each, against that index (moved to each worker once); each
  shard's candidates are refined there (float64 distances, the nearest others kept), so the client
  gets (rows, cols, distances) only.  A query's candidates and its refinement do not depend on the
  other queries of its shard, so the graph equals the single-process graph given the same index
  (tests/test_cluster_graph.py).

pynndescent (the search without faiss) builds its graph while it builds its index: it runs on the
client, on the scores gathered there.
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp

from glfs.core.cluster import chunk_tasks, gather_blocks, task_key, wait_for
from glfs.graph.ivf_blocks import IVFLists, search_lists

log = logging.getLogger(__name__)

__all__ = ["QUERY_BLOCK", "ClusterZ", "fit_components", "flat_index", "ivf_search", "project", "search_on_cluster"]

#: Cells per query shard of the sharded search: one task each (50,000 x 50 float32 = 10 MB of queries).
QUERY_BLOCK = 50_000


@dataclass(frozen=True)
class ClusterZ:
    """The (n_samples, n_pcs) float32 scores held on the dask cluster (``future``), not on the client.

    ``Z[idx]`` (sorted int rows) is the handle of those rows, taken by a task; :meth:`gather` brings
    them to the client (the pynndescent search needs them there).
    """

    future: object
    shape: tuple
    client: object
    dtype = np.dtype(np.float32)

    def __getitem__(self, idx):
        idx = np.asarray(idx, np.int64)
        f = self.client.submit(_take, self.future, idx, key=task_key("PCA scores of a group", 0))
        return ClusterZ(f, (int(idx.size), self.shape[1]), self.client)

    def gather(self) -> np.ndarray:
        return self.future.result()


def _take(Z, idx):
    return Z[idx]


def _take_rows(blk, rows, cols, *, want):
    """The rows of ``want`` (sorted, global) that fall in this chunk."""
    take = want[(want >= rows.start) & (want < rows.stop)] - rows.start
    part = blk[take]
    return sp.csr_matrix(part) if sp.issparse(part) else np.asarray(part)


def _fit_pieces(pieces, fit):
    """``fit(S)`` of the subsample S assembled from its per-chunk pieces [(row start, piece)] in grid order (a task)."""
    by_row = {}
    for r0, part in pieces:  # grid order: the column chunks of a row chunk in order
        by_row.setdefault(r0, []).append(part)
    blocks = []
    for r0 in sorted(by_row):
        parts = by_row.pop(r0)
        if len(parts) == 1:  # a row chunk of all genes: no copy here
            blocks.append(parts[0])
        elif all(sp.issparse(p) for p in parts):
            blocks.append(sp.hstack(parts, format="csr"))
        else:
            blocks.append(np.hstack([p.toarray() if sp.issparse(p) else np.asarray(p) for p in parts]))
    if all(sp.issparse(b) for b in blocks):
        S = sp.vstack(blocks, format="csr")
    else:
        S = np.vstack([b.toarray() if sp.issparse(b) else b for b in blocks])
    del blocks, pieces
    return fit(S)


def fit_components(X, rows, fit, client):
    """``fit(S)`` (e.g. (V, shift)) of the rows ``rows`` (sorted) of the out-of-core dask X, on the cluster.

    One task per chunk takes its rows of the subsample, and one task assembles them and fits: the
    subsample never reaches the client, only what ``fit`` returns.
    """
    import dask

    t0 = time.perf_counter()
    pieces = [(r.start, t) for r, _, t in chunk_tasks(X, _take_rows, {"want": np.asarray(rows, np.int64)}, client,
                                                     "PCA subsample")]
    fut = client.compute(dask.delayed(_fit_pieces)(pieces, fit, dask_key_name=task_key("PCA fit", 0)))
    wait_for(client, [fut], "PCA fit", [f"{len(rows)} cells"])
    out = fut.result()
    log.info("PCA fitted on %d cells by a task on the cluster in %.1f s", len(rows), time.perf_counter() - t0)
    return out


def _project_chunk(blk, rows, cols, *, V):
    return np.asarray(blk @ V[cols], dtype=np.float32)


def _add(a, b):
    return a + b


def _stack(parts, shift):
    Z = np.vstack(parts)
    Z -= shift
    return Z


def project(X, V, shift, client) -> ClusterZ:
    """X V - shift for the out-of-core dask X (n_samples, n_features), V (n_features, p), on the cluster.

    One task per chunk; the projections of a row of chunks are added in column order (as the
    single-process route adds them), and one task stacks the rows: the scores stay on a worker.
    """
    import dask

    by_row = {}
    for rows, _, t in chunk_tasks(X, _project_chunk, {"V": V}, client, "PCA projection"):
        by_row.setdefault(rows.start, []).append(t)
    sums = []
    for r0 in sorted(by_row):
        acc = by_row[r0][0]
        for t in by_row[r0][1:]:
            acc = dask.delayed(_add)(acc, t, dask_key_name=task_key("PCA projection sum", len(sums)))
        sums.append(acc)
    sums = client.compute(sums)
    wait_for(client, sums, "PCA projection", [f"cells from {r0}" for r0 in sorted(by_row)])
    Z = client.submit(_stack, sums, np.asarray(shift, np.float32), key=task_key("PCA scores", 0))
    wait_for(client, [Z], "PCA scores", ["all cells"])
    return ClusterZ(Z, (int(X.shape[0]), int(V.shape[1])), client)


def ivf_search(index, Q, k_search: int, nprobe: int):
    """The ``k_search`` candidates (-1: none) of every query row of Q in the IVF ``index``, probing ``nprobe`` cells.

    The queries are searched in the order of their k-means cell: consecutive queries probe the same
    lists, which stay in cache (each query's result does not depend on the order, nor on the other
    queries searched with it; at 300,000 cells the search took 24 s in this order against 62 s in the
    cells' own, benchmarks/results/knn_backends.md).
    """
    import faiss

    if isinstance(index, IVFLists):  # the same candidates, searched list by list in dense blocks
        return search_lists(index, Q, k_search, nprobe, n_threads=faiss.omp_get_max_threads())
    Q32 = np.ascontiguousarray(Q, dtype=np.float32)
    index.nprobe = int(nprobe)
    _, cell = index.quantizer.search(Q32, 1)
    order = np.argsort(cell.ravel(), kind="stable")
    ind = np.empty((Q32.shape[0], k_search), dtype=np.int64)
    _, ind[order] = index.search(Q32[order], k_search)
    return ind


def flat_index(Z32):
    """faiss' exact (flat) L2 index over the float32 rows Z32."""
    import faiss

    index = faiss.IndexFlatL2(Z32.shape[1])
    index.add(Z32)
    return index


def _build_index(Z, build):
    """The faiss index ``build(Z)`` (a task: the index stays on the cluster; faiss indexes pickle, so
    dask moves it to each worker that searches it, once)."""
    return build(np.ascontiguousarray(Z, dtype=np.float32))


def _search_shard(Z, index, a, b, *, k_search, nprobe, n_neighbors, refine):
    """(rows, cols, distances) of the queries a..b-1 of Z: candidates in the index, refined (a task).

    As the single process: ``nprobe`` None is a flat (exact) index; with an IVF index, a query whose
    probed cells hold too few candidates is searched exactly; ``refine(Z, ind, n_neighbors, row0)``
    keeps the nearest others by their float64 distances.
    """
    Q = np.ascontiguousarray(Z[a:b], np.float32)
    if nprobe is None:
        return refine(Z, index.search(Q, k_search)[1], n_neighbors, row0=a), 0
    ind = ivf_search(index, Q, k_search, nprobe)
    short = np.flatnonzero((ind >= 0).sum(axis=1) < min(Z.shape[0], n_neighbors + 1))
    if short.size:
        _, ind[short] = flat_index(np.ascontiguousarray(Z, np.float32)).search(Q[short], k_search)
    return refine(Z, ind, n_neighbors, row0=a), int(short.size)


def search_on_cluster(Z, n_neighbors: int, k_search: int, client, *, build, refine, nprobe: int | None = None,
                      what: str = "neighbour search"):
    """(rows, cols, distances) of every row's nearest others, the search sharded into query blocks as tasks.

    Z : :class:`ClusterZ` (or an in-memory (n, p) array, scattered first).  ``build(Z32)`` makes the
    faiss index (one task), ``nprobe`` probes an IVF index (None: a flat index), ``refine`` as in
    :func:`_search_shard`.  Rows sorted; the same pairs as the single-process search given the same index.
    """
    if not isinstance(Z, ClusterZ):
        Z32 = np.ascontiguousarray(Z, np.float32)
        Z = ClusterZ(client.scatter(Z32, hash=False), Z32.shape, client)
    n = Z.shape[0]
    t0 = time.perf_counter()
    index_f = client.submit(_build_index, Z.future, build, key=task_key(f"{what} index", 0))
    wait_for(client, [index_f], f"{what} index", [f"{n} cells"])
    log.info("%s: index built by a task on the cluster in %.1f s", what, time.perf_counter() - t0)
    bounds = [(a, min(n, a + QUERY_BLOCK)) for a in range(0, n, QUERY_BLOCK)]
    log.info("%s: %d query shards of at most %d cells as dask tasks", what, len(bounds), QUERY_BLOCK)
    kw = {"k_search": int(k_search), "nprobe": nprobe, "n_neighbors": int(n_neighbors),
          "refine": refine}
    futures = [client.submit(_search_shard, Z.future, index_f, a, b, **kw, key=task_key(what, i))
               for i, (a, b) in enumerate(bounds)]
    parts = gather_blocks(client, futures, what, [f"cells {a}-{b - 1}" for a, b in bounds])
    del index_f, futures
    short = sum(s for _, s in parts)
    if short:
        log.info("%s: %d samples searched exactly (too few candidates in their cells)", what, short)
    rows, cols, dist = (np.concatenate(a) for a in zip(*(p for p, _ in parts)))
    return rows, cols, dist
