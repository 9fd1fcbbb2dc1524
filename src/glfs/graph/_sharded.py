"""The graph of a dask X on a dask.distributed cluster: PCA fit, projection, index and search as tasks.

:func:`glfs.graph._neighbors.nearest_neighbors` (through :func:`glfs.similarity_graph`) of an out-of-core
dask X with a client active (:func:`glfs.core._out_of_core.cluster_client`) runs every step on the
workers, and the client holds only what comes back: the components V, the neighbour pairs and then
the graph (docs/guides/atlases.md, "On a dask cluster"):

- the PCA: its seeded subsample (:data:`glfs.graph._neighbors.PCA_FIT_SAMPLES` cells) is taken from
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
  (tests/graph/test_cluster_graph.py).

pynndescent (the search without faiss) builds its graph while it builds its index: it runs on the
client, on the scores gathered there.
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp

from glfs.core._cluster import chunk_tasks, gather_blocks, task_key, wait_for
from glfs.core._cluster_memory import _memory_fraction, _workers_memory
from glfs.core._cluster_memory import n_workers as _n_workers
from glfs.core._sparse_kernels import times_dense
from glfs.graph._ivf_blocks import (
    BLOCK_QUERIES,
    IVFLists,
    merge_candidates,
    query_side,
    search_lists,
    shard_candidates,
    shard_exact,
    shard_lists,
    tau_of,
    tau_part,
    train_centres,
    training_rows,
)

log = logging.getLogger(__name__)

__all__ = [
    "INDEX_SHARD",
    "QUERY_BLOCK",
    "ClusterZ",
    "fit_components",
    "flat_index",
    "ivf_search",
    "project",
    "search_ivf_shards",
    "search_on_cluster",
]

#: Cells per query shard of the sharded search: one task each (50,000 x 50 float32 = 10 MB of queries).
QUERY_BLOCK = 50_000


@dataclass(frozen=True)
class ClusterZ:
    """The (n_samples, n_pcs) float32 scores held on the dask cluster in row blocks, not on the client.

    ``blocks`` the futures of the row blocks in order, ``bounds`` their first rows and n.  ``Z[idx]``
    (sorted int rows) is the handle of those rows, taken by a task from the blocks that hold them;
    :meth:`whole` one task's stack of all of them (the searches below :data:`INDEX_SHARD` cells);
    :meth:`gather` brings them to the client (the pynndescent search needs them there).
    """

    blocks: tuple
    bounds: tuple
    shape: tuple
    client: object
    dtype = np.dtype(np.float32)

    @classmethod
    def scatter(cls, Z, client, rows: int):
        """The in-memory Z scattered in blocks of ``rows``."""
        Z32 = np.ascontiguousarray(Z, np.float32)
        bounds = tuple(range(0, Z32.shape[0], rows)) + (Z32.shape[0],)
        blocks = client.scatter([Z32[a:b] for a, b in zip(bounds[:-1], bounds[1:])], hash=False)
        return cls(tuple(blocks), bounds, Z32.shape, client)

    def __getitem__(self, idx):
        idx = np.asarray(idx, np.int64)
        at = np.unique(np.searchsorted(self.bounds, idx, side="right") - 1)
        f = self.client.submit(
            _take,
            idx,
            [self.bounds[i] for i in at],
            *[self.blocks[i] for i in at],
            key=task_key("PCA scores of a group", 0),
        )
        return ClusterZ((f,), (0, int(idx.size)), (int(idx.size), self.shape[1]), self.client)

    def whole(self):
        """A future of all the scores stacked by one task."""
        if len(self.blocks) == 1:
            return self.blocks[0]
        return self.client.submit(_concat, *self.blocks, key=task_key("PCA scores", 0))

    def gather(self) -> np.ndarray:
        return np.concatenate(self.client.gather(list(self.blocks)))


def _take(idx, starts, *blocks):
    parts = [blk[idx[(idx >= r0) & (idx < r0 + blk.shape[0])] - r0] for r0, blk in zip(starts, blocks)]
    return np.concatenate(parts) if len(parts) > 1 else parts[0]


def _concat(*blocks):
    return np.concatenate(blocks)


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
    pieces = [
        (r.start, t)
        for r, _, t in chunk_tasks(X, _take_rows, {"want": np.asarray(rows, np.int64)}, client, "PCA subsample")
    ]
    fut = client.compute(dask.delayed(_fit_pieces)(pieces, fit, dask_key_name=task_key("PCA fit", 0)))
    wait_for(client, [fut], "PCA fit", [f"{len(rows)} cells"])
    out = fut.result()
    log.info("PCA fitted on %d cells by a task on the cluster in %.1f s", len(rows), time.perf_counter() - t0)
    return out


def project_block(blk, V):
    """The float32 scores ``blk V`` of a block of samples; a CSR block on every core, summed as scipy sums
    it (:func:`glfs.core._sparse_kernels.times_dense`), so every route gets the same scores."""
    return np.asarray(times_dense(blk, V) if sp.issparse(blk) and blk.format == "csr" else blk @ V, dtype=np.float32)


def _project_chunk(blk, rows, cols, *, V):
    return project_block(blk, V[cols])


def _add(a, b):
    return a + b


def _shifted(z, shift):
    return z - shift


def project(X, V, shift, client) -> ClusterZ:
    """X V - shift for the out-of-core dask X (n_samples, n_features), V (n_features, p), on the cluster.

    One task per chunk; the projections of a row of chunks are added in column order (as the
    single-process route adds them) and shifted: the scores stay on the workers, one block per row of chunks.
    """
    import dask

    by_row = {}
    for rows, _, t in chunk_tasks(X, _project_chunk, {"V": V}, client, "PCA projection"):
        by_row.setdefault(rows.start, []).append(t)
    shift = np.asarray(shift, np.float32)
    sums = []
    for r0 in sorted(by_row):
        acc = by_row[r0][0]
        for t in by_row[r0][1:]:
            acc = dask.delayed(_add)(acc, t, dask_key_name=task_key("PCA projection sum", len(sums)))
        sums.append(dask.delayed(_shifted)(acc, shift, dask_key_name=task_key("PCA scores", len(sums))))
    sums = client.compute(sums)
    wait_for(client, sums, "PCA projection", [f"cells from {r0}" for r0 in sorted(by_row)])
    return ClusterZ(tuple(sums), tuple(sorted(by_row)) + (int(X.shape[0]),), (int(X.shape[0]), int(V.shape[1])), client)


def ivf_search(index, Q, k_search: int, nprobe: int):
    """The ``k_search`` candidates (-1: none) of every query row of Q in the IVF ``index``, probing ``nprobe`` cells.

    The queries are searched in the order of their k-means cell: consecutive queries probe the same
    lists, which stay in cache (each query's result does not depend on the order, nor on the other
    queries searched with it; at 300,000 cells the search took 24 s in this order against 62 s in the
    cells' own, studies/knn-search.md).
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


def search_on_cluster(
    Z,
    n_neighbors: int,
    k_search: int,
    client,
    *,
    build,
    refine,
    nprobe: int | None = None,
    what: str = "neighbour search",
):
    """(rows, cols, distances) of every row's nearest others, the search sharded into query blocks as tasks.

    Z : :class:`ClusterZ` (or an in-memory (n, p) array, scattered first).  ``build(Z32)`` makes the
    faiss index (one task), ``nprobe`` probes an IVF index (None: a flat index), ``refine`` as in
    :func:`_search_shard`.  Rows sorted; the same pairs as the single-process search given the same index.
    """
    if not isinstance(Z, ClusterZ):
        Z = ClusterZ.scatter(Z, client, Z.shape[0])
    n = Z.shape[0]
    t0 = time.perf_counter()
    Z_f = Z.whole()
    index_f = client.submit(_build_index, Z_f, build, key=task_key(f"{what} index", 0))
    wait_for(client, [index_f], f"{what} index", [f"{n} cells"])
    log.info("%s: index built by a task on the cluster in %.1f s", what, time.perf_counter() - t0)
    bounds = [(a, min(n, a + QUERY_BLOCK)) for a in range(0, n, QUERY_BLOCK)]
    log.info("%s: %d query shards of at most %d cells as dask tasks", what, len(bounds), QUERY_BLOCK)
    kw = {"k_search": int(k_search), "nprobe": nprobe, "n_neighbors": int(n_neighbors), "refine": refine}
    futures = [
        client.submit(_search_shard, Z_f, index_f, a, b, **kw, key=task_key(what, i)) for i, (a, b) in enumerate(bounds)
    ]
    parts = gather_blocks(client, futures, what, [f"cells {a}-{b - 1}" for a, b in bounds])
    del index_f, futures, Z_f
    short = sum(s for _, s in parts)
    if short:
        log.info("%s: %d samples searched exactly (too few candidates in their cells)", what, short)
    rows, cols, dist = (np.concatenate(a) for a in zip(*(p for p, _ in parts)))
    return rows, cols, dist


#: Query blocks fetched together by :func:`search_ivf_shards` (two such waves in flight).
WAVE_BLOCKS = 4
#: Cells per index shard of the blocked IVF search on a cluster (:func:`search_ivf_shards`; the lists of
#: 2,000,000 x 52 float32 are 416 MB): the shards are whole blocks of the scores, as many per worker.
INDEX_SHARD = 2_000_000


def _rows_of(blk, want):
    return blk[want]


def _train(order, nlist, random_state, *pieces):
    taken = np.concatenate(pieces)
    sample = np.empty_like(taken)
    sample[order] = taken  # back in faiss' order
    return train_centres(sample, nlist, random_state)


def _shard(centres, row0, *blocks):
    return shard_lists(np.concatenate(blocks) if len(blocks) > 1 else blocks[0], centres, row0)


def _probes(a, b, starts, centres, nprobe, *blocks):
    """:func:`glfs.graph._ivf_blocks.query_side` of the rows a .. b - 1 of Z, from the blocks (first rows
    ``starts``) that hold them: the queries and their probed cells, once for every shard."""
    parts = [blk[max(a - r0, 0) : max(min(b - r0, blk.shape[0]), 0)] for r0, blk in zip(starts, blocks)]
    Q = np.ascontiguousarray(np.concatenate(parts) if len(parts) > 1 else parts[0], np.float32)
    return query_side(Q, centres, nprobe)


def _tau_task(lists, qside, k_search):
    return tau_part(qside[1], lists, qside[4], k_search)


def _tau_merge(k_search, *parts):
    return tau_of(list(parts), k_search)


def _candidates_task(lists, qside, tau, k_search, max_sq_norm, row0):
    return shard_candidates(lists, qside, tau, k_search, max_sq_norm, row0)


def _merge_task(m, k_search, n_neighbors, row0, *parts):
    return merge_candidates(list(parts), m, k_search, n_neighbors, row0)


def _exact_task(lists, Q, q_ids, k):
    return shard_exact(lists.data[:, :-2], lists.ids, Q, q_ids, k)


def _shards_of(Z: ClusterZ, client) -> list[list[int]]:
    """The blocks of Z grouped into index shards: at most :data:`INDEX_SHARD` cells each (as far as whole
    blocks allow), their number a multiple of the workers' (each worker holds as many)."""
    n_workers = _n_workers(client)
    k = n_workers * max(1, -(-Z.shape[0] // (n_workers * INDEX_SHARD)))
    k = min(k, len(Z.blocks))
    ends = np.searchsorted(Z.bounds[1:], np.arange(1, k + 1) * Z.shape[0] / k, side="left")
    groups, start = [], 0
    for e in ends:
        if e + 1 > start:
            groups.append(list(range(start, int(e) + 1)))
            start = int(e) + 1
    return groups


def search_worker_bytes(p: int, shard_cells: int, n_shards: int, n_workers: int) -> tuple[int, int]:
    """(held, build): the bytes of inverted lists a worker holds for a search on p components, ``n_shards``
    index shards of at most ``shard_cells`` spread evenly over ``n_workers`` (p + 2 float32 a cell), and the
    bytes a task building one shard holds (its scores stacked, their list order and the augmented lists:
    about 3 p + 2 float32 and three int64 a cell)."""
    held = int(-(-n_shards // max(1, n_workers)) * shard_cells * (p + 2) * 4)
    build = int(shard_cells * ((3 * p + 2) * 4 + 24))
    return held, build


def check_search_memory(client, n: int, p: int, shard_cells: int, n_shards: int, what: str) -> None:
    """Refuse at once, with the numbers, a search whose index shards (``n_shards`` of at most ``shard_cells``)
    would take a worker past dask's terminate fraction of its memory limit: its process as last measured
    (with its share of the scores), the lists of its shards and one shard being built.  Nothing to check
    without a limit."""
    limit, _, base = _workers_memory(client)
    if limit is None:
        return
    n_workers = _n_workers(client)
    held, build = search_worker_bytes(p, shard_cells, n_shards, n_workers)
    terminate = _memory_fraction("terminate")
    need = base + held + build
    if need > terminate * limit:
        gib = 2**30
        msg = (
            f"{what}: the index of {n} cells on {p} components in {n_shards} shards needs about "
            f"{need / gib:.2f} GiB on each of the {n_workers} workers (its process {base / gib:.2f} GiB, the "
            f"lists of its shards {held / gib:.2f} GiB, one shard being built {build / gib:.2f} GiB), above "
            f"{terminate:.0%} of their memory limit of {limit / gib:.2f} GiB: give the cluster more workers "
            f"(the lists are spread over them) or a memory_limit of at least {need / terminate / gib:.2f} GiB"
        )
        raise MemoryError(msg)


def _index_shards(Z: ClusterZ, client, nlist, random_state, what):
    """The k-means centres (trained by a task on faiss' own subsample, taken from the blocks by tasks) and
    each shard's inverted lists (a task each, kept on the workers)."""
    groups = _shards_of(Z, client)
    cells = max(Z.bounds[g[-1] + 1] - Z.bounds[g[0]] for g in groups)
    check_search_memory(client, Z.shape[0], Z.shape[1], cells, len(groups), what)
    t0 = time.perf_counter()
    rows = training_rows(Z.shape[0], nlist, random_state)
    order = np.argsort(rows, kind="stable")
    srt = rows[order]
    pieces = []
    for i, (r0, r1) in enumerate(zip(Z.bounds[:-1], Z.bounds[1:])):
        want = srt[(srt >= r0) & (srt < r1)] - r0
        if want.size:
            pieces.append(client.submit(_rows_of, Z.blocks[i], want, key=task_key(f"{what} k-means sample", i)))
    centres_f = client.submit(_train, order, nlist, random_state, *pieces, key=task_key(f"{what} k-means", 0))
    wait_for(client, [centres_f], f"{what} k-means", [f"{rows.size} cells"])
    del pieces
    shards = [
        client.submit(
            _shard, centres_f, Z.bounds[g[0]], *[Z.blocks[i] for i in g], key=task_key(f"{what} index shard", j)
        )
        for j, g in enumerate(groups)
    ]
    wait_for(
        client, shards, f"{what} index shards", [f"cells {Z.bounds[g[0]]}-{Z.bounds[g[-1] + 1] - 1}" for g in groups]
    )
    max_sq = max(
        client.gather(
            [client.submit(getattr, f, "max_sq_norm", key=task_key(f"{what} norms", j)) for j, f in enumerate(shards)]
        )
    )
    log.info(
        "%s: k-means on %d cells and %d index shards built by tasks on the cluster in %.1f s",
        what,
        rows.size,
        len(shards),
        time.perf_counter() - t0,
    )
    return shards, float(max_sq), centres_f


def search_ivf_shards(
    Z, n_neighbors: int, k_search: int, client, *, nlist: int, nprobe: int, random_state, what: str = "neighbour search"
):
    """The blocked IVF search (:mod:`glfs.graph._ivf_blocks`) of the scores Z on the cluster, its index in shards.

    Z : :class:`ClusterZ` (or an in-memory array, scattered in blocks).  The k-means is trained by a task on
    the rows faiss' own training would take (:func:`glfs.graph._ivf_blocks.training_rows`: the same centres);
    each shard of whole blocks of Z gets its inverted lists by a task; each block of
    :data:`glfs.graph._ivf_blocks.BLOCK_QUERIES` queries (the one-machine search's blocks, so the same float32
    products choose the same probed cells, found once by a task for all the shards) is searched against every
    shard in two rounds (the bound tau from every
    shard's part of the query's nearest cell, then each shard's candidates below it, with the float64
    distances of the kept ones) and merged by a task in the order the lists of all samples give: the same
    (rows, cols, distances) as :func:`glfs.graph._ivf_blocks.search_lists` and its refinement on one machine.
    Queries whose probed cells hold too few candidates are searched exactly, on every shard.  The results
    are fetched :data:`WAVE_BLOCKS` query blocks at a time (two such waves in flight).
    """
    if not isinstance(Z, ClusterZ):
        Z = ClusterZ.scatter(Z, client, QUERY_BLOCK)
    n = Z.shape[0]
    t0 = time.perf_counter()
    shards, max_sq, centres = _index_shards(Z, client, nlist, random_state, what)
    k = int(k_search)
    # the queries in the blocks of the one-machine search (the same products, so the same probed cells)
    ranges = [(a, min(n, a + BLOCK_QUERIES)) for a in range(0, n, BLOCK_QUERIES)]
    log.info(
        "%s: %d query blocks of at most %d cells against %d index shards, as dask tasks",
        what,
        len(ranges),
        BLOCK_QUERIES,
        len(shards),
    )

    def submit(a, b):
        i0, i1 = (int(np.searchsorted(Z.bounds, r, side="right")) - 1 for r in (a, b - 1))
        Q = client.submit(
            _probes,
            a,
            b,
            Z.bounds[i0 : i1 + 1],
            centres,
            int(nprobe),
            *Z.blocks[i0 : i1 + 1],
            key=task_key(f"{what} queries", a),
        )
        taus = [client.submit(_tau_task, s_, Q, k, key=task_key(f"{what} bound", a)) for s_ in shards]
        tau = client.submit(_tau_merge, k, *taus, key=task_key(f"{what} bound merge", a))
        parts = [client.submit(_candidates_task, s_, Q, tau, k, max_sq, a, key=task_key(what, a)) for s_ in shards]
        return client.submit(_merge_task, b - a, k, int(n_neighbors), a, *parts, key=task_key(f"{what} merge", a))

    waves = [ranges[i : i + WAVE_BLOCKS] for i in range(0, len(ranges), WAVE_BLOCKS)]
    results, pending = [], [submit(a, b) for a, b in waves[0]]
    for i, wave in enumerate(waves):
        ahead = [submit(a, b) for a, b in waves[i + 1]] if i + 1 < len(waves) else []
        results.extend(gather_blocks(client, pending, what, [f"cells {a}-{b - 1}" for a, b in wave]))
        pending = ahead  # two waves in flight: the workers hold Z, the lists and two waves' pairs
    found = np.concatenate([f for _, f in results])
    rows, cols, dist = (np.concatenate(a) for a in zip(*(p for p, _ in results)))
    short = np.flatnonzero(found < min(n, n_neighbors + 1))
    if short.size:
        rows, cols, dist = _exact_for(Z, shards, short, (rows, cols, dist), n_neighbors, k_search, client, what)
    log.info(
        "%s: %d cells searched against %d index shards on the cluster in %.1f s",
        what,
        n,
        len(shards),
        time.perf_counter() - t0,
    )
    return rows, cols, dist


def _exact_for(Z, shards, short, pairs, n_neighbors, k_search, client, what):
    """``pairs`` with the rows of the queries ``short`` replaced by their exact nearest (every shard searched)."""
    log.info("%s: %d samples searched exactly (too few candidates in their cells)", what, short.size)
    Q = Z[short].whole()
    parts = gather_blocks(
        client,
        [
            client.submit(_exact_task, s, Q, short, int(k_search), key=task_key(f"{what} exact", j))
            for j, s in enumerate(shards)
        ],
        f"{what} exact",
        [f"shard {j}" for j in range(len(shards))],
    )
    q, c, d = (np.concatenate(a) for a in zip(*parts))
    order = np.lexsort((c, d, q))
    q, c, d = q[order], c[order], d[order]
    first = np.searchsorted(q, q)
    keep = (np.arange(q.size) - first < n_neighbors) & np.isfinite(d)
    rows, cols, dist = pairs
    other = ~np.isin(rows, short)
    rows = np.concatenate([rows[other], short[q[keep]]])
    cols, dist = np.concatenate([cols[other], c[keep]]), np.concatenate([dist[other], d[keep]])
    order = np.argsort(rows, kind="stable")
    return rows[order], cols[order], dist[order]
