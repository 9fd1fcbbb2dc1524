"""The IVF search of a whole kNN graph as dense blocks: the probed lists scanned list by list with BLAS.

faiss' IndexIVFFlat scans, for each query, the samples of its ``nprobe`` nearest k-means cells one
distance at a time.  Every sample of the graph is a query, so the same candidates can be searched the
other way round: for each inverted list, all the queries that probe it (a block of a few thousand)
against all its samples (about a thousand) as one matrix product.  Same queries, same probed cells,
same candidates as IndexIVFFlat with the same centres and ``nprobe``; what changes is how the
distances are computed (a float32 GEMM, ``||q||^2 + ||c||^2 - 2 q.c``) and how the nearest are kept:

1. each query's nearest ``k_search`` distance within its nearest cell is an upper bound tau of its
   ``k_search``-th nearest among all its candidates (that cell is probed);
2. in each list's block the pairs with a distance below tau (inflated by :data:`TAU_SLACK`) are kept
   (a comparison and a ``flatnonzero`` per block, about 150 of 31,000 candidates a query at a million
   cells), and from the kept pairs of all lists the ``k_search`` nearest per query (one sort of packed
   ``(query, float32 distance)`` keys; ties to the list order).

The caller refines the candidates by their float64 distances as after any search.  Queries go in
blocks of :data:`BLOCK_QUERIES`, one thread each with BLAS on one thread, so the result does not depend
on the thread count; a query's candidates do not depend on the other queries of its block (its
distances are rows of matrix products; tests/graph/test_neighbors_blocked.py).  docs/guides/atlases.md,
"Atlas scale", has the measurements (studies/knn-search.md).
"""

from __future__ import annotations

import logging
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

import numpy as np

log = logging.getLogger(__name__)

__all__ = ["BLOCK_QUERIES", "IVFLists", "ivf_lists", "search_lists"]

#: Queries per block of :func:`search_lists` (one thread each; the kept pairs of a block, 65 / 150 a query at
#: a million cells for k_search 10 / 20, 20 bytes each, and their sort keys are its memory: 100-250 MB).
BLOCK_QUERIES = 32_768
#: Rows x columns of one distance block (a list's probing queries are cut into chunks of this many pairs).
PAIR_CHUNK = 2**22
#: tau is inflated by this share so that the k_search-th pair of the nearest cell, recomputed in another
#: product, is not lost to float32 rounding (a few more pairs kept; the float64 refinement orders them).
TAU_SLACK = 1e-4
_ONE_SEARCH = threading.Lock()


@dataclass(frozen=True)
class IVFLists:
    """Inverted lists of the samples: k-means centres and the samples grouped by their nearest centre.

    ``centres`` (nlist, p) float32; ``ids`` (n,) the sample numbers in list order; ``bounds`` (nlist + 1,)
    list L holds ``ids[bounds[L]:bounds[L + 1]]``; ``data`` (n, p + 2) float32 the samples in list order
    with ``-||x||^2 / 2`` and 1 appended (the distance products need no pass of their own); ``max_sq_norm``
    the largest ``||x||^2``.
    """

    centres: np.ndarray
    ids: np.ndarray
    bounds: np.ndarray
    data: np.ndarray
    max_sq_norm: float

    @property
    def nlist(self) -> int:
        return int(self.centres.shape[0])

    def __sizeof__(self) -> int:
        # what sys.getsizeof, and so dask's memory accounting of a worker's data, counts: the arrays' bytes
        return object.__sizeof__(self) + sum(a.nbytes for a in (self.centres, self.ids, self.bounds, self.data))


def _sq_norms(A):
    return np.einsum("ij,ij->i", A, A)


def _augment(A, first, second):
    """[A, first, second] as float32 (n, p + 2)."""
    out = np.empty((A.shape[0], A.shape[1] + 2), np.float32)
    out[:, :-2], out[:, -2], out[:, -1] = A, first, second
    return out


def _nearest_centres(Qa, centres, nprobe):
    """(query, cell) pairs of each query's ``nprobe`` nearest centres (ties at the last kept: all kept),
    sorted by query, and each query's nearest cell.  ``Qa`` = [Q, 1, ...]; float32 products, no faiss threads.
    The queries are taken :data:`PAIR_CHUNK` query-centre products at a time, so a block's temporaries stay
    near 16 MB whatever the number of cells (one product of 32,768 queries and 3,162 cells is 414 MB)."""
    C = np.empty((centres.shape[0], centres.shape[1] + 1), np.float32)
    C[:, :-1], C[:, -1] = centres, -_sq_norms(centres) / 2
    m, nlist = Qa.shape[0], C.shape[0]
    nearest = np.empty(m, np.intp)
    qs, cells = [], []
    for a in _chunks(np.arange(m), nlist):
        a0 = int(a[0])
        s = Qa[a0 : a0 + a.size, : C.shape[1]] @ C.T  # q.c - |c|^2 / 2 = (|q|^2 - d) / 2: the nearest have the largest
        nearest[a0 : a0 + a.size] = np.argmax(s, axis=1)
        if 1 < nprobe < nlist:
            kth = np.partition(s, nlist - nprobe, axis=1)[:, nlist - nprobe]
            q, cell = np.divmod(np.flatnonzero(s >= kth[:, None]), nlist)
            qs.append(q + a0)
            cells.append(cell)
    if nprobe >= nlist:
        q, cell = np.divmod(np.arange(m * nlist), nlist)
    elif nprobe == 1:
        q, cell = np.arange(m), nearest
    elif qs:
        q, cell = np.concatenate(qs), np.concatenate(cells)
    else:
        q, cell = np.empty(0, np.intp), np.empty(0, np.intp)
    return q, cell, nearest


def _by_cell(cell, nlist):
    """Order of the entries of ``cell`` grouped by cell (stable) and each cell's bounds in that order."""
    small = cell.astype(np.int16) if nlist <= np.iinfo(np.int16).max else cell  # numpy's radix sort for 16 bits
    order = np.argsort(small, kind="stable")
    return order, np.searchsorted(cell[order], np.arange(nlist + 1))


def _chunks(rows, width):
    step = max(1, PAIR_CHUNK // max(1, width))
    return (rows[a : a + step] for a in range(0, rows.size, step))


def query_side(Q, centres, nprobe):
    """(|q|^2, [Q, 1, -|q|^2 / 2], probed (query, cell) pairs, nearest cell) of the float32 query rows Q."""
    qn = _sq_norms(Q)
    Qa = _augment(Q, 1.0, -qn / 2)
    return (qn, Qa, *_nearest_centres(Qa, centres, nprobe))


def tau_part(Qa, lists, nearest, k_search):
    """(m, k_search) float32: each query's ``k_search`` largest q.c - |c|^2/2 - |q|^2/2 (= -d/2) among the
    samples of ``lists`` in its nearest cell, -inf padded (the lists of all samples, or of one shard of them)."""
    top = np.full((Qa.shape[0], k_search), -np.inf, np.float32)
    order, bounds = _by_cell(nearest, lists.nlist)
    for L in np.flatnonzero(np.diff(bounds)):
        a, b = lists.bounds[L], lists.bounds[L + 1]
        if a == b:
            continue
        kk = min(k_search, b - a)
        for qi in _chunks(order[bounds[L] : bounds[L + 1]], b - a):
            s = Qa[qi] @ lists.data[a:b].T  # q.c - |c|^2/2 - |q|^2/2 = -d/2
            top[qi, :kk] = np.partition(s, b - a - kk, axis=1)[:, b - a - kk :]
    return top


def tau_of(parts, k_search):
    """Each query's ``k_search``-th smallest squared distance within its nearest cell (inf: fewer there), from
    the :func:`tau_part` of every shard of the samples (the same value whatever the shards: one is picked)."""
    top = np.concatenate(parts, axis=1) if len(parts) > 1 else parts[0]
    kth = -np.partition(-top, k_search - 1, axis=1)[:, k_search - 1]  # the k-th largest
    return np.where(np.isfinite(top).sum(axis=1) >= k_search, -2.0 * kth, np.inf).astype(np.float32)


def kept_pairs(qside, tau, lists, max_sq_norm):
    """(query, sample, float32 distance, list) of the pairs of the probed cells below each query's bound tau.

    ``qside`` from :func:`query_side`, ``tau`` from :func:`tau_of`, ``max_sq_norm`` the largest |x|^2 of all
    samples (of every shard): with these the same distances whatever the shards of ``lists``.
    """
    qn, Qa, pq, pcell, _ = qside
    # an upper bound of every distance where the nearest cell holds too few: all candidates kept
    cap = 2.0 * (qn + max_sq_norm) + 1.0
    tau = np.where(np.isfinite(tau), tau * (1 + TAU_SLACK) + 1e-30, cap).astype(np.float32)
    Qa = Qa.copy()
    Qa[:, -1] = (tau - qn) / 2  # s = (tau - d) / 2: kept when s > 0
    order, bounds = _by_cell(pcell, lists.nlist)
    kq, kc, kd, kl = [], [], [], []
    for L in np.flatnonzero(np.diff(bounds)):
        a, b = lists.bounds[L], lists.bounds[L + 1]
        if a == b:
            continue
        for qi in _chunks(pq[order[bounds[L] : bounds[L + 1]]], b - a):
            s = Qa[qi] @ lists.data[a:b].T
            hit = np.flatnonzero(s > 0)
            if hit.size:
                i, j = np.divmod(hit, b - a)
                kq.append(qi[i])
                kc.append(a + j)  # list positions; lists.ids[...] are the sample numbers
                kd.append(tau[qi[i]] - 2.0 * s.ravel()[hit])
                kl.append(np.full(hit.size, L, np.int32))
    if not kq:
        return np.empty(0, np.int64), np.empty(0, np.int64), np.empty(0, np.float32), np.empty(0, np.int32)
    return np.concatenate(kq), np.concatenate(kc), np.concatenate(kd), np.concatenate(kl)


def _search_block(Q, lists, k_search, nprobe):
    """(m, k_search) candidate sample numbers (-1: none) of the query rows Q (float32)."""
    qside = query_side(Q, lists.centres, nprobe)
    tau = tau_of([tau_part(qside[1], lists, qside[4], k_search)], k_search)
    q, pos, d, _ = kept_pairs(qside, tau, lists, lists.max_sq_norm)
    return _keep_nearest(Q.shape[0], q, lists.ids[pos], d, k_search)


def kept_order(m, q, d, k_search):
    """Positions of the ``k_search`` nearest of the pairs (q, d) per query, sorted by query and in the given order
    within a query, and each one's slot (0 .. k_search - 1) in its query's row: every pair nearer than the
    k-th, then of the pairs tied with the k-th the earlier in the given order."""
    d = np.where(d > 0, d, np.float32(0)).astype(np.float32)  # no -0.0: its bits sort last
    key = (q.astype(np.uint64) << np.uint64(32)) | d.view(np.uint32).astype(np.uint64)  # sorts by (q, d)
    srt = np.sort(key)
    first = np.searchsorted(srt, np.arange(m + 1, dtype=np.uint64) << np.uint64(32))
    count = np.diff(first)
    kth = np.full(m, np.iinfo(np.uint64).max, np.uint64)
    full = count >= k_search
    kth[full] = srt[first[:-1][full] + k_search - 1]
    keep = np.flatnonzero(key <= kth[q])
    keep = keep[np.argsort(q[keep], kind="stable")]
    qk = q[keep]
    # all pairs below the k-th, and of those tied with it the earlier (never a nearer one left out for a tie)
    tied = key[keep] == kth[qk]
    run = np.searchsorted(qk, qk)
    tie_rank = np.cumsum(tied) - (np.cumsum(tied) - tied)[run] - 1
    keep = keep[~tied | (tie_rank < k_search - np.bincount(qk[~tied], minlength=m)[qk])]
    qk = q[keep]
    return keep, np.arange(qk.size) - np.searchsorted(qk, qk)


def _keep_nearest(m, q, c, d, k_search):
    """The ``k_search`` nearest pairs (q, c, d) per query (ties: the earlier in list order), as an (m, k_search) array."""
    ind = np.full((m, k_search), -1, np.int64)
    if q.size:
        keep, slot = kept_order(m, q, d, k_search)
        ind[q[keep], slot] = c[keep]
    return ind


def search_lists(lists: IVFLists, Q, k_search: int, nprobe: int, n_threads: int = 1):
    """The ``k_search`` candidates (-1: none) of every query row of Q among the samples of its ``nprobe``
    nearest cells, by exact float32 distances; blocks of :data:`BLOCK_QUERIES` queries on ``n_threads``
    threads (BLAS on one thread each: the result does not depend on ``n_threads``)."""
    from threadpoolctl import threadpool_limits

    Q = np.ascontiguousarray(Q, dtype=np.float32)
    n = Q.shape[0]
    ind = np.empty((n, int(k_search)), np.int64)
    starts = list(range(0, n, BLOCK_QUERIES))
    t0, done = time.perf_counter(), [0]

    def run(a):
        ind[a : a + BLOCK_QUERIES] = _search_block(Q[a : a + BLOCK_QUERIES], lists, int(k_search), int(nprobe))
        done[0] += 1
        if len(starts) > 1 and (done[0] % max(1, len(starts) // 10) == 0 or done[0] == len(starts)):
            log.info(
                "IVF block search: %d of %d query blocks in %.1f s", done[0], len(starts), time.perf_counter() - t0
            )

    log.info(
        "IVF block search: %d queries in %d blocks on %d threads, %d of %d lists probed",
        n,
        len(starts),
        max(1, int(n_threads)),
        int(nprobe),
        lists.nlist,
    )
    # BLAS' thread count is a process setting: one search at a time per process (e.g. a dask worker's threads)
    with _ONE_SEARCH, threadpool_limits(limits=1, user_api="blas"):
        if n_threads <= 1 or len(starts) == 1:
            for a in starts:
                run(a)
        else:
            with ThreadPoolExecutor(max_workers=int(n_threads)) as pool:
                list(pool.map(run, starts))
    return ind


def training_rows(n: int, nlist: int, random_state) -> np.ndarray:
    """The rows faiss' k-means of :func:`ivf_lists` trains on, in its order: all ``n`` when at most
    ``max_points_per_centroid`` (256) a cell, else its seeded subsample (faiss' own ``rand_perm``), so that
    :func:`train_centres` of those rows alone gives the same centres (the index of a cluster's shards)."""
    import faiss

    cap = nlist * faiss.ClusteringParameters().max_points_per_centroid
    if n <= cap:
        return np.arange(n)
    perm = np.empty(n, np.int32)
    faiss.rand_perm(faiss.swig_ptr(perm), n, _kmeans_seed(random_state))
    return perm[:cap].astype(np.int64)


def _kmeans_seed(random_state) -> int:
    return int(np.random.RandomState(random_state).randint(2**31 - 1))


def train_centres(Z32, nlist: int, random_state) -> np.ndarray:
    """(nlist, p) float32 centres of faiss' k-means of the float32 rows Z32 seeded by ``random_state`` (as the
    IVF index of :func:`glfs.graph._neighbors._ivf_index`)."""
    import faiss

    p = Z32.shape[1]
    km = faiss.IndexIVFFlat(faiss.IndexFlatL2(p), p, nlist)
    km.cp.seed = _kmeans_seed(random_state)
    km.cp.min_points_per_centroid = 1
    km.train(np.ascontiguousarray(Z32, dtype=np.float32))
    return km.quantizer.reconstruct_n(0, nlist)


def shard_lists(Z32, centres, row0: int = 0) -> IVFLists:
    """:class:`IVFLists` of the float32 rows Z32 (samples ``row0`` on: all of them, or one shard), each in the
    list of its nearest of ``centres``."""
    cell = np.empty(Z32.shape[0], np.int64)
    for a in range(0, Z32.shape[0], BLOCK_QUERIES):
        cell[a : a + BLOCK_QUERIES] = _nearest_centres(_augment(Z32[a : a + BLOCK_QUERIES], 1.0, 0.0), centres, 1)[2]
    ids, bounds = _by_cell(cell, centres.shape[0])
    data = Z32[ids]
    norms = _sq_norms(data)
    return IVFLists(centres, ids + row0, bounds, _augment(data, -norms / 2, 1.0), float(np.max(norms, initial=0.0)))


def ivf_lists(Z32, nlist: int, random_state) -> IVFLists:
    """:class:`IVFLists` of the float32 rows Z32: faiss' k-means into ``nlist`` cells seeded by ``random_state``
    (as the IVF index of :func:`glfs.graph._neighbors._ivf_index`), each sample in the list of its nearest centre."""
    return shard_lists(Z32, train_centres(Z32, nlist, random_state))


def nearest_of(ind, dist, n_neighbors: int, row0: int = 0):
    """(rows, cols, distances) of each query's ``n_neighbors`` nearest candidates: ``ind`` (m, k_search) their
    sample numbers (-1: none) and ``dist`` their float64 distances (inf: none and the query itself), queries
    ``row0`` .. ``row0 + m - 1``; a stable sort of each row (ties in the search's order)."""
    m, k_search = ind.shape
    rows = np.repeat(np.arange(row0, row0 + m), k_search)
    cols = ind.ravel().astype(np.int64)
    d = dist.ravel()
    order = np.argsort(d.reshape(m, k_search), axis=1, kind="stable")[:, :n_neighbors]
    order += (np.arange(m) * k_search)[:, None]
    keep = order[np.isfinite(d[order])]
    return rows[keep], cols[keep], d[keep]


def _distances64(Q, X, q, pos):
    """The float64 Euclidean distances of the pairs (Q[q], X[pos]) of float32 rows, in blocks of 2^22 values."""
    out = np.empty(q.size)
    step = max(1, 2**22 // max(1, Q.shape[1]))
    for a in range(0, q.size, step):
        diff = Q[q[a : a + step]].astype(np.float64) - X[pos[a : a + step]]
        out[a : a + step] = np.sqrt(np.maximum(np.einsum("ij,ij->i", diff, diff), 0.0))
    return out


def shard_candidates(lists: IVFLists, qside, tau, k_search: int, max_sq_norm: float, row0: int):
    """One shard's candidates of a block of queries (samples ``row0`` on; ``qside`` their :func:`query_side`,
    computed once for all shards): its ``k_search`` nearest per query among the pairs below ``tau``
    (:func:`tau_of` of every shard's :func:`tau_part`) and ties, as arrays (query, sample, float32 distance,
    list, float64 distance) for :func:`merge_candidates`."""
    q, pos, d, L = kept_pairs(qside, tau, lists, max_sq_norm)
    keep = kept_order(qside[1].shape[0], q, d, k_search)[0]
    q, pos = q[keep], pos[keep]
    c = lists.ids[pos]
    d64 = np.where(c == q + row0, np.inf, _distances64(qside[1][:, :-2], lists.data[:, :-2], q, pos))
    return q, c, d[keep], L[keep], d64


def merge_candidates(parts, m: int, k_search: int, n_neighbors: int, row0: int):
    """(rows, cols, distances) of the queries row0 .. row0 + m - 1 from every shard's :func:`shard_candidates`,
    and the queries with fewer than ``n_neighbors + 1`` candidates: the ``k_search`` nearest in the order the
    lists of all samples give them (list, then sample), refined by their float64 distances as
    :func:`glfs.graph._neighbors._from_candidates` refines one search's."""
    q, c, d, L, d64 = (np.concatenate(a) for a in zip(*parts))
    order = np.lexsort((c, L, q))
    q, c, d, d64 = q[order], c[order], d[order], d64[order]
    keep, slot = kept_order(m, q, d, k_search)
    ind = np.full((m, k_search), -1, np.int64)
    dist = np.full((m, k_search), np.inf)
    ind[q[keep], slot], dist[q[keep], slot] = c[keep], d64[keep]
    found = (ind >= 0).sum(axis=1)
    return nearest_of(ind, dist, n_neighbors, row0), found


def shard_exact(Z32, ids, Q, q_ids, k: int):
    """(query, sample, float64 distance) of the ``k`` nearest of the rows Z32 (sample numbers ``ids``) of each
    query row of Q (sample numbers ``q_ids``; itself left out): one shard's exact search, in blocks of Z32."""
    Q = np.ascontiguousarray(Q, dtype=np.float32)
    m, k = Q.shape[0], min(int(k), Z32.shape[0])
    best_c, best_d = np.empty((m, 0), np.int64), np.empty((m, 0))
    step = max(k, PAIR_CHUNK // max(1, m))
    for a in range(0, Z32.shape[0], step):
        B = np.asarray(Z32[a : a + step], np.float64)
        d2 = _sq_norms(B)[None, :] - 2.0 * (Q @ B.T)  # + |q|^2: the same for a query's row
        d2[np.asarray(q_ids)[:, None] == np.asarray(ids[a : a + step])[None, :]] = np.inf
        cand_c = np.hstack([best_c, np.broadcast_to(np.arange(a, a + B.shape[0]), d2.shape)])
        cand_d = np.hstack([best_d, d2])
        top = np.argsort(cand_d, axis=1, kind="stable")[:, :k]
        best_c, best_d = np.take_along_axis(cand_c, top, 1), np.take_along_axis(cand_d, top, 1)
    q = np.repeat(np.arange(m), k)
    pos = best_c.ravel()
    d = np.where(np.isfinite(best_d.ravel()), _distances64(Q, Z32, q, pos), np.inf)
    return q, np.asarray(ids)[pos], d
