"""Nearest-neighbour search over samples: the search behind :func:`glfs.graph._similarity.similarity_graph`.

X has shape (n_samples, n_features).  Exact search on all genes (scikit-learn),
exact float32 brute force on principal components (faiss or scikit-learn), or
an approximate index (faiss' IVF, or pynndescent's NN-descent); every search
returns (rows, cols, distances) with ``n_neighbors`` other samples per row and
holds O(n * n_neighbors) pairs, never an n x n dense array.
"""

from __future__ import annotations

import functools
import logging
import os
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import scipy.sparse as sp

from glfs.core import limits
from glfs.core._out_of_core import OutOfCore, cluster_client
from glfs.core._sparse_kernels import column_range
from glfs.core._structure import canonical
from glfs.core._validation import check_int, check_X
from glfs.graph._ivf_blocks import ivf_lists, nearest_of
from glfs.graph._sharded import (
    ClusterZ,
    fit_components,
    flat_index,
    ivf_search,
    project,
    project_block,
    search_ivf_shards,
    search_on_cluster,
)

log = logging.getLogger(__name__)

__all__ = [
    "nearest_neighbors",
    "choose_neighbor_method",
    "exact_backend",
    "approx_backend",
    "ivf_nprobe",
    "AUTO_APPROX_MIN_SAMPLES",
    "AUTO_INDEX_MIN_SAMPLES",
    "AUTO_NNDESCENT_MIN_SAMPLES",
    "APPROX_N_PCS",
    "NEIGHBOR_METHODS",
    "IVF_BLOCKED_MIN_SAMPLES",
    "IVF_NLIST_PER_SQRT_N",
    "IVF_NPROBE",
    "IVF_NPROBE_PER_SQRT_NLIST",
    "IVF_NPROBE_PCS",
    "PCA_FIT_SAMPLES",
]

#: ``method="auto"`` searches on principal components from this many samples on
#: (the threshold scanpy's ``pp.neighbors`` uses for its exact Euclidean search);
#: below it, exact search on all genes.
AUTO_APPROX_MIN_SAMPLES = 8192
#: Principal components searched when ``n_pcs`` is None, the search runs on components (``method="auto"`` at
#: scale, or ``"approx"``) and X has more genes.  20, not scanpy's 50 (chosen on the real panel,
#: and half the time at a million cells: studies/graph-20-pcs.md).
APPROX_N_PCS = 20
NEIGHBOR_METHODS = ("auto", "exact", "approx")


def _check_n_neighbors(n_neighbors, n):
    """n_neighbors must be a positive integer smaller than the number of samples n."""
    check_int(n_neighbors, "n_neighbors", min_val=1)
    if n_neighbors >= n:
        msg = f"n_neighbors must be smaller than the number of samples ({n}); got {n_neighbors}"
        raise ValueError(msg)


def choose_neighbor_method(n_samples: int, n_features: int, method: str = "auto", n_pcs: int | None = None):
    """Which neighbour search :func:`similarity_graph` runs, and on how many dimensions.

    The rule (``method="auto"``): below ``AUTO_APPROX_MIN_SAMPLES`` (8192)
    samples, exact search on all genes, so bulk cohorts (a few hundred to a
    few thousand patients) always get the exact graph on all genes.  From
    8192 samples on, the search runs on the first ``n_pcs`` principal
    components (``APPROX_N_PCS`` = 20 when ``n_pcs`` is None and the data
    have more genes than that, else all genes): exactly, by a brute-force
    search in float32 (faiss' ``IndexFlatL2`` when faiss-cpu is installed,
    else scikit-learn's chunked brute force; O(n^2 n_pcs), no index, the
    same neighbours whichever backend runs), and from
    ``AUTO_INDEX_MIN_SAMPLES`` (30,000) samples on, when faiss-cpu is
    installed, with faiss' inverted-file index (``"approx"``, IndexIVFFlat,
    O(n^1.5 n_pcs); recall 0.97-0.99 of the exact 5 neighbours on simulated
    data at 50,000 cells, ``studies/knn-search.md``).  Without
    faiss, auto stays exact up to ``AUTO_NNDESCENT_MIN_SAMPLES`` (200,000)
    samples and runs pynndescent's NN-descent (``"approx"``) from there on:
    pynndescent compiles its search with numba in every fresh Python process
    (about 30 s), so below that the exact brute force is about as fast
    (34 s against 42 s at 100,000 simulated cells, 151 s against 83 s at
    200,000), while the brute force grows like n^2 (about an hour at a
    million cells) and NN-descent about linearly (206-364 s at a million, recall@5
    0.92-0.96 of the exact search at 30,000-200,000;
    ``studies/knn-search.md``).
    ``method="exact"`` searches all genes unless ``n_pcs`` is given;
    ``method="approx"`` the approximate index of :func:`approx_backend`.

    Parameters
    ----------
    n_samples, n_features : int
        Shape of X (n_samples, n_features).
    method : {"auto", "exact", "approx"}
        "exact" and "approx" force the search; "auto" applies the rule.
    n_pcs : int, optional
        Principal components requested by the caller.

    Returns
    -------
    (method, n_pcs) : tuple of (str, int or None)
        ``"exact"`` or ``"approx"``, and the number of components to search
        (None = all genes, no PCA).
    """
    if method not in NEIGHBOR_METHODS:
        msg = f"method must be one of {NEIGHBOR_METHODS}; got {method!r}"
        raise ValueError(msg)
    on_pcs = method == "approx" or (method == "auto" and n_samples >= AUTO_APPROX_MIN_SAMPLES)
    if method == "auto":
        index_from = AUTO_INDEX_MIN_SAMPLES if approx_backend() == "faiss" else AUTO_NNDESCENT_MIN_SAMPLES
        method = "approx" if on_pcs and n_samples >= index_from else "exact"
    if on_pcs and n_pcs is None and n_features > APPROX_N_PCS:
        n_pcs = min(APPROX_N_PCS, n_samples)
    return method, n_pcs


def _keep_k(rows, cols, d, n_neighbors):
    """Drop self-pairs and keep exactly n_neighbors nearest per row (sorted by distance)."""
    keep = rows != cols
    rows, cols, d = rows[keep], cols[keep], d[keep]
    # a duplicate sample may push self out of the list: keep exactly n_neighbors per row
    order = np.lexsort((d, rows))  # stable: equal distances keep the search's order
    rows, cols, d = rows[order], cols[order], d[order]
    first = np.r_[0, np.flatnonzero(np.diff(rows)) + 1]
    pos = np.arange(rows.size) - np.repeat(first, np.diff(np.r_[first, rows.size]))
    keep = pos < n_neighbors
    return rows[keep], cols[keep], d[keep]


def _knn(X, n_neighbors: int, metric: str):
    """Exact kNN (scikit-learn NearestNeighbors); returns (rows, cols, distances) without self."""
    n = X.shape[0]
    _check_n_neighbors(n_neighbors, n)
    from sklearn.neighbors import NearestNeighbors

    nn = NearestNeighbors(n_neighbors=n_neighbors + 1, metric=metric)
    nn.fit(X)
    dist, ind = nn.kneighbors(X)
    rows = np.repeat(np.arange(n), n_neighbors + 1)
    return _keep_k(rows, ind.ravel(), dist.ravel(), n_neighbors)


def exact_backend() -> str:
    """The library behind the exact search on principal components: ``"faiss"`` or ``"sklearn"``.

    faiss (``pip install glfs[scale]``, faiss-cpu) when it can be imported,
    else scikit-learn.  Both are exact, so the graph does not depend on which
    one ran (up to float32 rounding of near-equal distances).
    """
    try:
        import faiss  # noqa: F401
    except ImportError:
        return "sklearn"
    return "faiss"


def approx_backend() -> str:
    """The approximate index behind ``method="approx"``: ``"faiss"`` or ``"pynndescent"``.

    faiss' inverted-file index (``IndexIVFFlat``) when faiss-cpu can be
    imported (``pip install glfs[scale]``), else pynndescent's NN-descent.
    """
    return "faiss" if exact_backend() == "faiss" else "pynndescent"


def _knn_brute32(Z, n_neighbors: int, backend: str | None = None, client=None):
    """Exact Euclidean kNN on a few dense columns (principal components), brute force in float32.

    ``faiss.IndexFlatL2`` (BLAS distance blocks and a heap per query, OpenMP
    threads) or scikit-learn ``NearestNeighbors(algorithm="brute")`` (its
    chunked GEMM + heap ``ArgKmin``); neither holds more than a block of the
    n x n distances.  Searches ``n_neighbors + 4`` candidates in float32,
    recomputes their distances in float64 and keeps the nearest
    ``n_neighbors`` other samples, so float32 rounding cannot reorder them.
    Cost O(n^2 p) for p columns, memory O(n k) besides Z.  With a dask ``client`` (faiss only), the
    index is built and the queries searched in shards as tasks (glfs.graph._sharded).
    """
    n = Z.shape[0]
    _check_n_neighbors(n_neighbors, n)
    k_search = int(min(n, n_neighbors + 5))  # self + n_neighbors + 4 spare
    backend = backend or exact_backend()
    log.info("exact search on %d x %d components with %s (brute force, float32)", n, Z.shape[1], backend)
    if backend == "faiss" and client is not None:
        return search_on_cluster(Z, n_neighbors, k_search, client, build=flat_index, refine=_from_candidates)
    Z32 = np.ascontiguousarray(Z, dtype=np.float32)
    if backend == "faiss":
        _, ind = flat_index(Z32).search(Z32, k_search)
    elif backend == "sklearn":
        from sklearn.neighbors import NearestNeighbors

        nn = NearestNeighbors(n_neighbors=k_search, algorithm="brute", metric="euclidean").fit(Z32)
        ind = nn.kneighbors(Z32, return_distance=False)
    else:
        msg = f"backend must be 'faiss' or 'sklearn'; got {backend!r}"
        raise ValueError(msg)
    return _from_candidates(Z, ind, n_neighbors)


def _from_candidates(Z, ind, n_neighbors, row0=0):
    """(rows, cols, distances) of the nearest ``n_neighbors`` other samples among candidate indices.

    ``ind`` (m, k_search) holds the candidates (-1 = none) of the samples row0 .. row0 + m - 1 of Z;
    their distances are recomputed in float64 on Z, so float32 rounding cannot
    reorder the kept pairs.  What :func:`_keep_k` keeps, by a stable sort of each row (the rows come
    in order: the same pairs as its sort of all pairs, ties in the search's order).
    """
    m, k_search = ind.shape
    rows = np.repeat(np.arange(row0, row0 + m), k_search)
    cols = ind.ravel().astype(np.int64)
    pairs = np.flatnonzero((cols >= 0) & (cols != rows))
    d = np.full(rows.size, np.inf)  # none and self: last in their row, then dropped
    # blocks of pairs on a few threads, rows converted to float64 there: (pairs x p) float64 temporaries of 32 MB
    # over all threads instead of 2 x 8 GB at 10^6 cells x 20 candidates x 50 components; each pair computed alone
    threads = min(4, os.cpu_count() or 1)
    step = max(1, 2**22 // max(1, Z.shape[1]) // threads)

    def fill(a):
        at = pairs[a : a + step]
        diff = Z[rows[at]].astype(np.float64) - Z[cols[at]]
        d[at] = np.sqrt(np.maximum(np.einsum("ij,ij->i", diff, diff), 0.0))

    with ThreadPoolExecutor(max_workers=threads) as pool:
        list(pool.map(fill, range(0, pairs.size, step)))
    return nearest_of(ind, d.reshape(m, k_search), n_neighbors, row0)


#: ``method="auto"`` searches the principal components with faiss' IVF index (``method="approx"``)
#: instead of exactly from this many samples on, when faiss-cpu is installed.
AUTO_INDEX_MIN_SAMPLES = 30000
#: Without faiss-cpu, ``method="auto"`` searches the components with pynndescent from this many samples
#: on (its numba compilation, about 30 s a process, outweighs the exact brute force below it:
#: :func:`choose_neighbor_method`).
AUTO_NNDESCENT_MIN_SAMPLES = 200_000
#: faiss IVF index (``_knn_ivf``): cells per sqrt(n_samples); cells probed per sample
#: (:func:`ivf_nprobe`): ``IVF_NPROBE_PER_SQRT_NLIST`` sqrt(nlist), at least ``IVF_NPROBE``, on
#: ``IVF_NPROBE_PCS`` components, and in proportion to the components searched.
IVF_NLIST_PER_SQRT_N = 1.0
IVF_NPROBE = 32
IVF_NPROBE_PER_SQRT_NLIST = 1.0
IVF_NPROBE_PCS = 50
#: From this many samples on (where ``method="auto"`` starts the IVF search) it runs as dense blocks
#: (glfs.graph._ivf_blocks: each inverted list against the queries that probe it, one matrix product): the
#: candidates of IndexIVFFlat with the same centres and probes, by exact float32 distances, in about a
#: third of its CPU; below it, IndexIVFFlat (studies/knn-search.md; docs/guides/atlases.md, "Atlas scale").
IVF_BLOCKED_MIN_SAMPLES = 30_000


def ivf_nprobe(nlist: int, n_dims: int = IVF_NPROBE_PCS) -> int:
    """Cells an IVF query in ``n_dims`` dimensions probes, at most nlist:
    ``ceil(max(IVF_NPROBE, IVF_NPROBE_PER_SQRT_NLIST sqrt(nlist)) n_dims / IVF_NPROBE_PCS)``.

    On 50 components (``IVF_NPROBE_PCS``), max(32, sqrt(nlist)): the recall@15 of the IVF search on simulated
    cells is a function of nprobe / sqrt(nlist) (0.912 at 1.0, 0.985 at 2.7, studies/knn-search.md),
    and 2 sqrt(nlist) made a million cells take 3 x the time (docs/guides/atlases.md, "Atlas scale").  The probes
    scale with the dimension, since the recall at a given number of probes falls with it: on 10, 20, 30 and 50
    components of 50,000-10^6 cells, with these probes (7, 13, 20 and 32 up to a million cells) the recall@15
    was 0.962-0.994, 0.981-0.988, 0.951-0.983 and 0.922-0.978, at or above the 50-component figure at every
    size (studies/graph-20-pcs.md, "The own graph on 20 principal components").
    """
    on_50 = max(IVF_NPROBE, np.ceil(IVF_NPROBE_PER_SQRT_NLIST * np.sqrt(nlist)))
    return int(min(nlist, max(1, np.ceil(on_50 * int(n_dims) / IVF_NPROBE_PCS))))


def _ivf_index(Z32, nlist: int, random_state, blocked: bool = False):
    """faiss' IVF index over the float32 rows Z32: k-means into ``nlist`` cells seeded by ``random_state``.

    IndexIVFFlat (the float32 rows in their cells), or with ``blocked`` the same k-means' inverted lists
    for the block search (:class:`glfs.graph._ivf_blocks.IVFLists`, :data:`IVF_BLOCKED_MIN_SAMPLES`).
    """
    import faiss

    if blocked:
        return ivf_lists(Z32, nlist, random_state)
    p = Z32.shape[1]
    index = faiss.IndexIVFFlat(faiss.IndexFlatL2(p), p, nlist)
    index.cp.seed = int(np.random.RandomState(random_state).randint(2**31 - 1))
    index.cp.min_points_per_centroid = (
        1  # no warning for small n: k-means on fewer than 39 samples per cell is fine here
    )
    index.train(Z32)
    index.add(Z32)
    return index


def _knn_ivf(Z, n_neighbors: int, random_state=0, nlist: int | None = None, nprobe: int | None = None, client=None):
    """Approximate Euclidean kNN with faiss' inverted-file index (``IndexIVFFlat``) in float32.

    faiss' k-means (seeded by ``random_state``) splits the samples into
    ``nlist`` cells (default ``IVF_NLIST_PER_SQRT_N`` sqrt(n)); each sample's
    candidates are the samples of the ``nprobe`` cells (default :func:`ivf_nprobe`:
    sqrt(nlist) and at least 32 on 50 components, in proportion to p) nearest to it, searched exhaustively.  Cost
    O(n nlist p) per k-means iteration and O(n (nlist + nprobe n / nlist) p) for
    the search, i.e. O(n^1.75 p) with nlist ~ sqrt(n) and nprobe ~ n^0.25,
    against O(n^2 p) for the flat search.
    The queries are searched grouped by their cell (same results, fewer cache misses).  Deterministic given
    ``random_state`` (faiss' k-means sums each centroid over the samples in a fixed order, whatever the threads).
    Searches ``n_neighbors + 5`` candidates; samples whose probed cells hold
    too few others are searched exactly.  Distances recomputed in float64.
    From :data:`IVF_BLOCKED_MIN_SAMPLES` (30,000) samples on, the same candidates are searched list by
    list as dense matrix products (:mod:`glfs.graph._ivf_blocks`): at a million cells the same recall@15
    (0.92) as IndexIVFFlat in a fraction of its CPU time (studies/knn-search.md).  With a dask ``client``
    (Z in memory, or a :class:`glfs.graph._sharded.ClusterZ` on the cluster), the same pairs from tasks: the
    index built by one and the queries searched in shards (:func:`glfs.graph._sharded.search_on_cluster`), or
    the dense-block search's lists in shards (:func:`glfs.graph._sharded.search_ivf_shards`).
    """
    n, p = Z.shape
    _check_n_neighbors(n_neighbors, n)
    k_search = int(min(n, n_neighbors + 5))
    nlist = int(nlist or max(1, round(IVF_NLIST_PER_SQRT_N * np.sqrt(n))))
    nprobe = int(min(nlist, nprobe or ivf_nprobe(nlist, p)))
    blocked = n >= IVF_BLOCKED_MIN_SAMPLES
    log.info(
        "approximate search on %d x %d components with faiss' k-means, %s (nlist %d, nprobe %d)",
        n,
        p,
        "searched in dense blocks" if blocked else "IndexIVFFlat",
        nlist,
        nprobe,
    )
    if client is not None and blocked:  # the index in shards on the workers: the same pairs
        return search_ivf_shards(
            Z, n_neighbors, k_search, client, nlist=nlist, nprobe=nprobe, random_state=random_state
        )
    if client is not None:
        build = functools.partial(_ivf_index, nlist=nlist, random_state=random_state, blocked=blocked)
        return search_on_cluster(Z, n_neighbors, k_search, client, build=build, refine=_from_candidates, nprobe=nprobe)
    Z32 = np.ascontiguousarray(Z, dtype=np.float32)
    index = _ivf_index(Z32, nlist, random_state, blocked)
    ind = ivf_search(index, Z32, k_search, nprobe)
    short = np.flatnonzero((ind >= 0).sum(axis=1) < min(n, n_neighbors + 1))
    if short.size:  # probed cells with too few samples: exact search for those samples
        log.info("approximate search: %d samples searched exactly (too few candidates in their cells)", short.size)
        _, ind[short] = flat_index(Z32).search(Z32[short], k_search)
    return _from_candidates(Z, ind, n_neighbors)


def _knn_approx(Z, n_neighbors: int, random_state):
    """Approximate Euclidean kNN with pynndescent's NN-descent index (float32).

    Searches ``max(20, 2 (n_neighbors + 1))`` neighbours and keeps the nearest
    ``n_neighbors`` (a wider search raises recall: on 10,000 x 50 principal
    components, recall of the 5 nearest was 0.97 with 15 and 0.99 with 20).
    Forest and iteration counts as in UMAP / scanpy.  One thread, so the graph
    depends only on ``random_state``, not on the machine's core count.
    Distances are recomputed in float64 for the kept pairs.
    """
    from pynndescent import NNDescent

    n = Z.shape[0]
    _check_n_neighbors(n_neighbors, n)
    k_search = int(min(n, max(20, 2 * (n_neighbors + 1))))
    Z32 = np.ascontiguousarray(Z, dtype=np.float32)
    index = NNDescent(
        Z32,
        n_neighbors=k_search,
        metric="euclidean",
        random_state=random_state,
        n_jobs=1,
        n_trees=min(64, 5 + int(round(n**0.5 / 20.0))),
        n_iters=max(5, int(round(np.log2(n)))),
        low_memory=True,
        compressed=True,
    )
    ind, _ = index.neighbor_graph
    rows, cols, d = _from_candidates(Z, ind, n_neighbors)  # pynndescent pads rows it could not fill with -1
    short = np.bincount(rows, minlength=n) < n_neighbors
    if short.any():  # cannot happen with k_search > n_neighbors unless the index failed; be explicit
        msg = (
            f"approximate neighbour search returned fewer than {n_neighbors} neighbours for {int(short.sum())} samples"
        )
        raise RuntimeError(msg)
    return rows, cols, d


def nearest_neighbors(
    X, n_neighbors: int, *, method: str = "auto", n_pcs: int | None = None, metric: str = "euclidean", random_state=0
):
    """The ``n_neighbors`` nearest other samples of every sample (the search behind :func:`similarity_graph`).

    X : array-like or sparse of shape (n_samples, n_features).  ``method`` and
    ``n_pcs`` follow :func:`choose_neighbor_method`.  Returns (rows, cols,
    distances), each of length n_samples * n_neighbors, sorted by row then
    distance; self-pairs excluded.  Distances are measured on what was
    searched (all genes, or the principal components).
    """
    return _neighbors(check_X(X, read_only=True), n_neighbors, method, n_pcs, metric, random_state)


def _neighbors(X, n_neighbors, method, n_pcs, metric, random_state, groups=None):
    """:func:`nearest_neighbors` on an already validated X (no copy; never written to).

    X may be the caller's float32 array (``check_X(read_only=True)``): it goes
    to the PCA as it is, and is converted to float64 for a search on all
    genes or the cosine normalisation, so the graph is that of float64 X.
    ``groups`` (int codes, one per sample; e.g. batches): the representation (the
    principal components, fitted on all samples) is shared and each sample's
    neighbours are searched within its group only (:func:`_search_within`).
    """
    n, d = X.shape
    requested, (method, n_pcs) = method, choose_neighbor_method(n, d, method, n_pcs)
    _check_n_neighbors(n_neighbors, n)
    if method == "approx" and metric not in ("euclidean", "cosine"):
        msg = f"metric must be 'euclidean' or 'cosine' for the approximate search (method='approx'); got {metric!r}"
        raise ValueError(msg)
    cosine = metric == "cosine" and method == "approx"
    streamed = isinstance(X, OutOfCore)
    client = cluster_client(X)  # a dask X and a dask.distributed client: projection and search as tasks
    if streamed and n < AUTO_APPROX_MIN_SAMPLES and (n_pcs is None or cosine or metric != "euclidean"):
        # the representation depends on the size and settings only, never on the storage: below 8,192 samples
        # a search on all genes (or another metric) reads every sample into memory (fewer rows than the
        # PCA_FIT_SAMPLES subsample the streamed PCA holds), so the graph is the in-memory X's graph; on
        # components both storages take the same two-pass route
        X = _read_whole(X)
        streamed, client = False, None
    if streamed and (n_pcs is None or cosine or metric != "euclidean"):
        msg = (
            f"an out-of-core X ({X.describe()}) of {AUTO_APPROX_MIN_SAMPLES} samples or more gets its graph from "
            f"principal components with the Euclidean metric (the heat or binary kernel), streamed in two passes; "
            f"got n_pcs={n_pcs!r}, metric={metric!r} "
            f"({'pass n_pcs, e.g. 20, or method=' + repr('auto') if n_pcs is None else 'use kernel=' + repr('heat')}), "
            f"or load X first (adata.to_memory(); {X.memory_hint()})"
        )
        raise ValueError(msg)
    if not streamed and (n_pcs is None or cosine) and X.dtype != np.float64:
        X = X.astype(np.float64)  # a sparse X: a sparse copy (never dense); the PCA reads float32 as it is
    if cosine:
        # unit rows: Euclidean distance is then a monotone function of the cosine, 1 - cos = ||a - b||^2 / 2
        if sp.issparse(X):
            norms = np.sqrt(np.asarray(X.multiply(X).sum(axis=1)).ravel())
        else:
            norms = np.linalg.norm(X, axis=1)
        norms[norms == 0] = 1.0
        X = sp.diags(1.0 / norms) @ X if sp.issparse(X) else X / norms[:, None]
    on = f"{n_pcs} principal components" if n_pcs is not None else "all genes"
    log.info("nearest_neighbors: %d samples x %d genes, %s search on %s", n, d, method, on)
    if n_pcs is not None:
        X = _pca_out_of_core(X, n_pcs, random_state) if streamed else _pca_in_memory(X, n_pcs, random_state)
        log.info("nearest_neighbors: PCA to %d components done", X.shape[1])
    how = {
        "method": method,
        "on_pcs": n_pcs is not None,
        "metric": metric,
        "cosine": cosine,
        "random_state": random_state,
        "client": client,
    }
    if groups is None:
        return _search(X, n_neighbors, **how)
    return _search_within(X, np.asarray(groups), n_neighbors, how, requested)


def _search(Z, n_neighbors, *, method, on_pcs, metric, cosine, random_state, client):
    """The search of :func:`_neighbors` on its representation Z (the principal components, or the genes)."""
    if isinstance(Z, ClusterZ) and approx_backend() != "faiss":  # scores on the cluster; no faiss there
        Z = Z.gather()
    if method == "exact":
        if on_pcs and metric == "euclidean":
            backend = exact_backend()
            return _knn_brute32(
                Z.toarray() if sp.issparse(Z) else Z,
                n_neighbors,
                backend,
                client=client if backend == "faiss" else None,
            )
        return _knn(Z, n_neighbors, metric)
    Z = Z.toarray() if sp.issparse(Z) else Z
    if approx_backend() == "faiss":
        rows, cols, dist = _knn_ivf(Z, n_neighbors, random_state, client=client)
    else:
        rows, cols, dist = _knn_approx(Z, n_neighbors, random_state)
    if cosine:
        dist = np.clip(dist**2 / 2.0, 0.0, 2.0)
    return rows, cols, dist


def _search_within(Z, groups, n_neighbors, how, requested):
    """(rows, cols, distances) of each sample's nearest others in its own group, on the shared Z.

    Each group is searched as :func:`_search` searches all samples, on its rows of Z, with the
    search ``requested`` gives a set of its size (:func:`choose_neighbor_method`: with "auto", an index
    from ``AUTO_INDEX_MIN_SAMPLES`` on); one group gives the ungrouped answer exactly.  A group of at
    most ``n_neighbors`` samples gets its other samples (one sample: none), logged.  Sorted by row.
    """
    parts = []
    for g in np.unique(groups):
        idx = np.flatnonzero(groups == g)
        k = min(n_neighbors, idx.size - 1)
        if k < n_neighbors:
            log.warning("nearest_neighbors: group %r has %d samples: %d neighbours each", g, idx.size, k)
        sub = dict(how, method=choose_neighbor_method(idx.size, Z.shape[1], requested)[0])
        if sub["method"] == "exact" and how["cosine"]:  # unit rows: 1 - cos, as the index's distances are turned into
            sub.update(cosine=False, metric="cosine")
        if k >= 1:
            r, c, dist = _search(Z[idx], k, **sub)
            parts.append((idx[r], idx[c], dist))
    if not parts:
        return np.empty(0, np.int64), np.empty(0, np.int64), np.empty(0)
    rows, cols, dist = (np.concatenate(a) for a in zip(*parts))
    order = np.argsort(rows, kind="stable")
    return rows[order], cols[order], dist[order]


def _pca(X, n_pcs, random_state, float32=False):
    """Scores on the first n_pcs principal components.

    Dense X: scikit-learn PCA with its ``svd_solver="auto"`` rule (covariance
    eigendecomposition when X has at most 1,000 genes and 10 times as many
    samples, randomized SVD seeded by random_state for large X), in float32
    when ``float32`` (half the memory traffic; the components only steer the
    neighbour search).  Sparse X: ARPACK on the
    implicitly centred operator (scikit-learn PCA), float64.
    """
    from sklearn.decomposition import PCA

    n, d = X.shape
    if isinstance(n_pcs, bool) or not isinstance(n_pcs, (int, np.integer)) or not 1 <= n_pcs <= min(n, d):
        msg = f"n_pcs must be an integer in [1, {min(n, d)}] (at most min(n_samples, n_features)); got {n_pcs!r}"
        raise ValueError(msg)
    if n_pcs == min(n, d):
        return X.toarray() if sp.issparse(X) else X
    if sp.issparse(X):
        if n_pcs >= min(n, d) - 1:  # ARPACK needs k < min(n, d)
            return X.toarray()
        if _all_constant(X):  # the centred X is zero: ARPACK fails ("starting vector is zero"); its PCs are 0
            return np.zeros((n, int(n_pcs)))
        if not getattr(
            X, "has_sorted_indices", True
        ):  # ARPACK's products sum each row in stored order: a sorted copy (O(nnz)),
            X = X.sorted_indices()  # so that a matrix gives the same components whatever its rows' order
        return PCA(n_components=int(n_pcs), svd_solver="arpack", random_state=random_state).fit_transform(X)
    if float32:
        X = X.astype(np.float32, copy=False)  # sklearn's PCA centres a copy: X is not written to
    # scikit-learn's own rule ("auto"): covariance eigendecomposition for tall data with <= 1,000 genes
    # (one d x d Gram product, O(n d^2): 10,000 x 500 in a fraction of the randomized SVD's time), exact
    # SVD for tiny data, else randomized SVD, O(n d n_pcs) per power iteration
    return PCA(n_components=int(n_pcs), svd_solver="auto", random_state=random_state).fit_transform(X)


#: Every X (in memory, AnnData backed, dask) gets its principal components from at most this many
#: of its samples, a seeded uniform subsample; every sample is then projected on them
#: (:func:`_pca_in_memory`, :func:`_pca_out_of_core`: the same components either way).  Chosen on
#: simulated counts, not on the evaluated data (docs/methods/size-limits.md, "Size limits").
PCA_FIT_SAMPLES = 100_000


def _fit_sample(n: int, n_pcs, random_state, max_fit_samples: int | None = None) -> np.ndarray:
    """The sorted rows the components are fitted on: all n, or a seeded uniform draw of PCA_FIT_SAMPLES."""
    m = min(n, PCA_FIT_SAMPLES if max_fit_samples is None else int(max_fit_samples))
    return np.arange(n) if m == n else np.sort(np.random.default_rng(random_state).choice(n, m, replace=False))


def _all_constant(X) -> bool:
    """Whether every column of X is constant (a sparse X's implicit zeros counted), O(nnz)."""
    return bool(np.array_equal(*(column_range(X) if sp.issparse(X) else (X.min(0), X.max(0)))))


def _fit_components(S, n_pcs, random_state):
    """(V, shift): components (d, n_pcs) float32 fitted on the rows S (ARPACK, implicitly centred
    if sparse) and the projected mean, so that the scores of any x are x V - shift."""
    from sklearn.decomposition import PCA

    if _all_constant(S):  # as _pca: every score is 0
        return np.zeros((S.shape[1], int(n_pcs)), dtype=np.float32), np.zeros(int(n_pcs), dtype=np.float32)
    pca = PCA(n_components=int(n_pcs), svd_solver="arpack", random_state=random_state).fit(S)
    return pca.components_.T.astype(np.float32), (pca.mean_ @ pca.components_.T).astype(np.float32)


def _pca_in_memory(X, n_pcs, random_state):
    """Scores on the first n_pcs principal components of an in-memory X, by the route of
    :func:`_pca_out_of_core`: components fitted (:func:`_fit_components`, ARPACK) on every sample up to
    ``PCA_FIT_SAMPLES`` samples, on a seeded subsample of that many above, and every sample projected
    in float32, so an in-memory, a backed and a dask X get the same components and the same graph.

    A full ARPACK PCA of 10^6 x 20,000 sparse cells took 386 s on 2 cores, the fit on
    10^5 of them 35 s and the projection 10 s.  What the subsample changes: studies/pca-at-scale.md.
    :func:`_pca` (no fit, or scikit-learn's own solver) serves only an ``n_pcs`` of at least
    min(n_samples, n_features) - 1, which ARPACK cannot fit (and which the out-of-core route refuses).
    """
    n, d = X.shape
    valid = isinstance(n_pcs, (int, np.integer)) and not isinstance(n_pcs, bool) and 1 <= n_pcs < min(n, d) - 1
    if not valid:  # _pca validates n_pcs
        return _pca(X, n_pcs, random_state, float32=True)
    rows = _fit_sample(n, n_pcs, random_state)
    if rows.size < n:
        log.info(
            "nearest_neighbors: PCA fitted on %d of %d samples (PCA_FIT_SAMPLES), then every sample projected",
            rows.size,
            n,
        )
    if sp.issparse(X):  # the rows as the out-of-core route reads them: canonical CSR (sorted, duplicates summed)
        X = canonical(sp.csr_matrix(X), "X", warn=False)
    V, shift = _fit_components(X if rows.size == n else X[rows], n_pcs, random_state)
    Z = project_block(X, V)  # row by row, as the out-of-core row blocks
    Z -= shift
    return Z


def _read_whole(X: OutOfCore):
    """Every sample of the out-of-core X in memory, in one pass (below ``AUTO_APPROX_MIN_SAMPLES`` samples).

    What the graph of such an X needs: the rule of :func:`choose_neighbor_method` may search all genes
    there, as for the in-memory X, and fewer rows are read than the streamed PCA's fit subsample holds
    (``PCA_FIT_SAMPLES``).  Its size is checked against :data:`glfs.core.limits.DENSE_LIMIT_GB` first.
    """
    n, d = X.shape
    nnz = X.nnz if X.nnz is not None and X.format != "dense" else n * d
    need = nnz * (X.dtype.itemsize + (4 if X.format != "dense" else 0)) + 8 * (n + 1)
    limits.check_bytes(
        "similarity_graph",
        f"the {n} samples of {X.describe()} read into memory for their graph (below {AUTO_APPROX_MIN_SAMPLES} "
        "samples the graph is that of the in-memory X)",
        need,
        "select fewer genes first (e.g. 2,000 highly variable genes), or raise glfs.core.limits.DENSE_LIMIT_GB",
        kind="the matrix in memory",
    )
    log.info(
        "nearest_neighbors: %s has fewer than %d samples: read into memory for its graph (%.2f GB)",
        X.describe(),
        AUTO_APPROX_MIN_SAMPLES,
        need / 2**30,
    )
    return _fit_rows(X, np.arange(n))


def _fit_rows(X: OutOfCore, rows: np.ndarray):
    """The rows ``rows`` (sorted) of an out-of-core X, in memory, read in one pass over its blocks
    (row blocks, or column blocks for a CSC source)."""
    parts, by_rows = [], True
    for axis, sl, blk in X._natural_blocks():
        by_rows = axis == 0
        if by_rows:
            take = rows[(rows >= sl.start) & (rows < sl.stop)] - sl.start
            if take.size:
                parts.append(blk[take])
        else:
            parts.append(blk[rows])
    if all(sp.issparse(b) for b in parts):
        return (sp.vstack if by_rows else sp.hstack)(parts, format="csr")
    return (np.vstack if by_rows else np.hstack)([np.asarray(b) for b in parts])


def _pca_out_of_core(X: OutOfCore, n_pcs, random_state, max_fit_samples: int | None = None):
    """Scores on the first n_pcs principal components of an out-of-core X, in two passes.

    Pass 1 reads a seeded uniform subsample of at most ``max_fit_samples``
    (default :data:`PCA_FIT_SAMPLES`) samples into memory, and :func:`_pca`'s
    estimator (scikit-learn PCA, ARPACK on the implicitly centred sparse
    matrix) fits the components on it; pass 2 projects every sample block,
    (x - mean) V, so the memory is that of the subsample plus the
    (n_samples, n_pcs) float32 scores, not of X.  With at most
    ``max_fit_samples`` samples the components are those of the whole X, as
    in memory.  The components of a subsample of 10^5 cells estimate the
    leading subspace of 10^6 (the estimation error falls like 1/sqrt(m)); the
    same idea is Seurat v5's "sketch" (Hao et al., Nat. Biotechnol. 2024).
    """
    n, d = X.shape
    if isinstance(n_pcs, bool) or not isinstance(n_pcs, (int, np.integer)) or not 1 <= n_pcs < min(n, d) - 1:
        msg = f"n_pcs must be an integer in [1, {min(n, d) - 2}] for an out-of-core X (ARPACK); got {n_pcs!r}"
        raise ValueError(msg)
    rows = _fit_sample(n, n_pcs, random_state, max_fit_samples)
    log.info(
        "nearest_neighbors: PCA fitted on %d of %d samples of %s (one pass), then every sample projected",
        rows.size,
        n,
        X.describe(),
    )
    client = cluster_client(X)
    if client is not None:  # a dask X on a cluster: subsample, fit and projection as tasks; Z stays there
        fit = functools.partial(_fit_components, n_pcs=n_pcs, random_state=random_state)
        return project(X, *fit_components(X, rows, fit, client), client)
    V, shift = _fit_components(_fit_rows(X, rows), n_pcs, random_state)  # V: (d, n_pcs)
    Z = np.zeros((n, V.shape[1]), np.float32)
    for axis, sl, blk in X._natural_blocks():
        if axis == 0:
            Z[sl] = project_block(blk, V)
        else:
            Z += project_block(blk, V[sl])
    Z -= shift
    return Z
