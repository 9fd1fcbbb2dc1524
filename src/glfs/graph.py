"""Patient-similarity graphs over samples, always sparse CSR.

X has shape (n_samples, n_features).  Every graph here is (n_samples, n_samples),
symmetric, non-negative, stored as CSR with O(n * n_neighbors) non-zeros; no
function here builds an n x n dense array.
"""

from __future__ import annotations

import inspect
import logging
from types import MappingProxyType

import numpy as np
import scipy.sparse as sp

from ._validation import check_graph, check_int, check_labels, check_real, check_X

log = logging.getLogger(__name__)

__all__ = [
    "similarity_graph",
    "nearest_neighbors",
    "choose_neighbor_method",
    "label_graph",
    "laplacian",
    "KERNELS",
    "AUTO_APPROX_MIN_SAMPLES",
    "APPROX_N_PCS",
    "AUTO_INDEX_MIN_SAMPLES",
    "approx_backend",
    "DEFAULT_GRAPH_PARAMS",
]

KERNELS = ("binary", "heat", "cosine", "snf")


#: ``method="auto"`` searches on principal components from this many samples on
#: (the threshold scanpy's ``pp.neighbors`` uses for its exact Euclidean search);
#: below it, exact search on all genes.
AUTO_APPROX_MIN_SAMPLES = 8192
#: Principal components searched when ``n_pcs`` is None and the search runs on
#: components (``method="auto"`` at scale, or ``"approx"``) and the data have
#: more genes than this (scanpy's default representation).
APPROX_N_PCS = 50
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
    components (``APPROX_N_PCS`` = 50 when ``n_pcs`` is None and the data
    have more genes than that, else all genes): exactly, by a brute-force
    search in float32 (faiss' ``IndexFlatL2`` when faiss-cpu is installed,
    else scikit-learn's chunked brute force; O(n^2 n_pcs), no index, the
    same neighbours whichever backend runs), and from
    ``AUTO_INDEX_MIN_SAMPLES`` (30,000) samples on, when faiss-cpu is
    installed, with faiss' inverted-file index (``"approx"``, IndexIVFFlat,
    O(n^1.5 n_pcs); recall 0.97-0.99 of the exact 5 neighbours on simulated
    data at 50,000 cells, ``benchmarks/results/graph_at_scale.tsv``).  Without
    faiss, auto stays exact: pynndescent, the other approximate index,
    compiles its search with numba in every fresh Python process, which
    costs more than the exact search saves (``benchmarks/results/scaling.md``).
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
        index = on_pcs and n_samples >= AUTO_INDEX_MIN_SAMPLES and approx_backend() == "faiss"
        method = "approx" if index else "exact"
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


def _knn_brute32(Z, n_neighbors: int, backend: str | None = None):
    """Exact Euclidean kNN on a few dense columns (principal components), brute force in float32.

    ``faiss.IndexFlatL2`` (BLAS distance blocks and a heap per query, OpenMP
    threads) or scikit-learn ``NearestNeighbors(algorithm="brute")`` (its
    chunked GEMM + heap ``ArgKmin``); neither holds more than a block of the
    n x n distances.  Searches ``n_neighbors + 4`` candidates in float32,
    recomputes their distances in float64 and keeps the nearest
    ``n_neighbors`` other samples, so float32 rounding cannot reorder them.
    Cost O(n^2 p) for p columns, memory O(n k) besides Z.
    """
    n = Z.shape[0]
    _check_n_neighbors(n_neighbors, n)
    k_search = int(min(n, n_neighbors + 5))  # self + n_neighbors + 4 spare
    Z32 = np.ascontiguousarray(Z, dtype=np.float32)
    backend = backend or exact_backend()
    log.info("exact search on %d x %d components with %s (brute force, float32)", n, Z.shape[1], backend)
    if backend == "faiss":
        import faiss

        index = faiss.IndexFlatL2(Z32.shape[1])
        index.add(Z32)
        _, ind = index.search(Z32, k_search)
    elif backend == "sklearn":
        from sklearn.neighbors import NearestNeighbors

        nn = NearestNeighbors(n_neighbors=k_search, algorithm="brute", metric="euclidean").fit(Z32)
        ind = nn.kneighbors(Z32, return_distance=False)
    else:
        msg = f"backend must be 'faiss' or 'sklearn'; got {backend!r}"
        raise ValueError(msg)
    return _from_candidates(Z, ind, n_neighbors)


def _from_candidates(Z, ind, n_neighbors):
    """(rows, cols, distances) of the nearest ``n_neighbors`` other samples among candidate indices.

    ``ind`` (n, k_search) holds each sample's candidates (-1 = none); their
    distances are recomputed in float64 on Z, so float32 rounding cannot
    reorder the kept pairs.
    """
    n, k_search = ind.shape
    rows = np.repeat(np.arange(n), k_search)
    cols = ind.ravel().astype(np.int64)
    ok = cols >= 0
    rows, cols = rows[ok], cols[ok]
    Zd = np.asarray(Z, dtype=np.float64)
    d = np.empty(rows.size)
    # in blocks of pairs: two (pairs x p) float64 temporaries of 32 MB each instead of 2 x 8 GB at a
    # million cells x 20 candidates x 50 components; every pair's distance is computed as before
    step = max(1, 2**22 // max(1, Zd.shape[1]))
    for a in range(0, rows.size, step):
        diff = Zd[rows[a : a + step]] - Zd[cols[a : a + step]]
        d[a : a + step] = np.sqrt(np.maximum(np.einsum("ij,ij->i", diff, diff), 0.0))
    return _keep_k(rows, cols, d, n_neighbors)


#: ``method="auto"`` searches the principal components with faiss' IVF index (``method="approx"``)
#: instead of exactly from this many samples on, when faiss-cpu is installed.
AUTO_INDEX_MIN_SAMPLES = 30000
#: faiss IVF index (``_knn_ivf``): cells per sqrt(n_samples); cells probed per sample
#: (:func:`ivf_nprobe`): ``IVF_NPROBE_PER_SQRT_NLIST`` sqrt(nlist), at least ``IVF_NPROBE``.
IVF_NLIST_PER_SQRT_N = 1.0
IVF_NPROBE = 32
IVF_NPROBE_PER_SQRT_NLIST = 2.0


def ivf_nprobe(nlist: int) -> int:
    """Cells an IVF query probes: ``max(IVF_NPROBE, ceil(IVF_NPROBE_PER_SQRT_NLIST sqrt(nlist)))``, at most nlist.

    On the simulated counts of benchmarks/atlas_scale.py (50 principal
    components, k = 15) the recall of the IVF search was a function of
    nprobe / sqrt(nlist) at 50,000 to 1,000,000 cells, not of the probed share
    nprobe / nlist: 0.912 at 1.0, 0.954 at 1.4, 0.969 at 1.8, 0.976 at 2.1,
    0.985 at 2.7 (benchmarks/results/knn_backends.md).  A fixed nprobe of 32 let
    the recall fall from 0.972 at 50,000 cells to 0.912 at a million; 2 sqrt(nlist)
    holds it near 0.97.  The floor of 32 keeps the search of every size up to
    65,536 cells (nlist 256) as it was.  The search then costs
    O(n^1.75 p) instead of O(n^1.5 p).
    """
    return int(min(nlist, max(IVF_NPROBE, np.ceil(IVF_NPROBE_PER_SQRT_NLIST * np.sqrt(nlist)))))


def _knn_ivf(Z, n_neighbors: int, random_state=0, nlist: int | None = None, nprobe: int | None = None):
    """Approximate Euclidean kNN with faiss' inverted-file index (``IndexIVFFlat``) in float32.

    faiss' k-means (seeded by ``random_state``) splits the samples into
    ``nlist`` cells (default ``IVF_NLIST_PER_SQRT_N`` sqrt(n)); each sample's
    candidates are the samples of the ``nprobe`` cells (default :func:`ivf_nprobe`,
    2 sqrt(nlist) and at least 32) nearest to it, searched exhaustively.  Cost
    O(n nlist p) per k-means iteration and O(n (nlist + nprobe n / nlist) p) for
    the search, i.e. O(n^1.75 p) with nlist ~ sqrt(n) and nprobe ~ n^0.25,
    against O(n^2 p) for the flat search.
    The queries are searched grouped by their cell (same results, fewer cache
    misses).  Deterministic given ``random_state`` (faiss' k-means sums each centroid
    over the samples in a fixed order, so the thread count does not matter).
    Searches ``n_neighbors + 5`` candidates; samples whose probed cells hold
    too few others are searched exactly.  Distances recomputed in float64.
    """
    import faiss

    n, p = Z.shape
    _check_n_neighbors(n_neighbors, n)
    k_search = int(min(n, n_neighbors + 5))
    nlist = int(nlist or max(1, round(IVF_NLIST_PER_SQRT_N * np.sqrt(n))))
    nprobe = int(min(nlist, nprobe or ivf_nprobe(nlist)))
    Z32 = np.ascontiguousarray(Z, dtype=np.float32)
    log.info("approximate search on %d x %d components with faiss IVFFlat (nlist %d, nprobe %d)", n, p, nlist, nprobe)
    index = faiss.IndexIVFFlat(faiss.IndexFlatL2(p), p, nlist)
    index.cp.seed = int(np.random.RandomState(random_state).randint(2**31 - 1))
    index.cp.min_points_per_centroid = 1  # no warning for small n: k-means on fewer than 39 samples per cell is fine here
    index.train(Z32)
    index.add(Z32)
    index.nprobe = nprobe
    # queries in the order of their k-means cell: consecutive queries probe the same lists, which stay in
    # cache (each query's result does not depend on the order; at 300,000 cells the search took 24 s in
    # this order against 62 s in the cells' own, benchmarks/results/knn_backends.md)
    _, cell = index.quantizer.search(Z32, 1)
    order = np.argsort(cell.ravel(), kind="stable")
    ind = np.empty((n, k_search), dtype=np.int64)
    _, ind[order] = index.search(Z32[order], k_search)
    short = np.flatnonzero((ind >= 0).sum(axis=1) < min(n, n_neighbors + 1))
    if short.size:  # probed cells with too few samples: exact search for those samples
        log.info("approximate search: %d samples searched exactly (too few candidates in their cells)", short.size)
        flat = faiss.IndexFlatL2(p)
        flat.add(Z32)
        _, ind[short] = flat.search(Z32[short], k_search)
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
        n_trees=min(64, 5 + int(round(n**0.5 / 20.0))),
        n_iters=max(5, int(round(np.log2(n)))),
        n_jobs=1,
        low_memory=True,
        compressed=True,
    )
    ind, _ = index.neighbor_graph
    rows = np.repeat(np.arange(n), k_search)
    cols = ind.ravel().astype(np.int64)
    ok = cols >= 0  # pynndescent pads rows it could not fill with -1
    rows, cols = rows[ok], cols[ok]
    Zd = np.asarray(Z, dtype=np.float64)
    d = np.sqrt(np.maximum(np.einsum("ij,ij->i", Zd[rows] - Zd[cols], Zd[rows] - Zd[cols]), 0.0))
    rows, cols, d = _keep_k(rows, cols, d, n_neighbors)
    short = np.bincount(rows, minlength=n) < n_neighbors
    if short.any():  # cannot happen with k_search > n_neighbors unless the index failed; be explicit
        msg = (
            f"approximate neighbour search returned fewer than {n_neighbors} neighbours "
            f"for {int(short.sum())} samples"
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


def _neighbors(X, n_neighbors, method, n_pcs, metric, random_state):
    """:func:`nearest_neighbors` on an already validated X (no copy; never written to).

    X may be the caller's float32 array (``check_X(read_only=True)``): it goes
    to the PCA as it is, and is converted to float64 for a search on all
    genes or the cosine normalisation, so the graph is that of float64 X.
    """
    n, d = X.shape
    method, n_pcs = choose_neighbor_method(n, d, method, n_pcs)
    _check_n_neighbors(n_neighbors, n)
    if method == "approx" and metric not in ("euclidean", "cosine"):
        msg = f"metric must be 'euclidean' or 'cosine' for the approximate search (method='approx'); got {metric!r}"
        raise ValueError(msg)
    cosine = metric == "cosine" and method == "approx"
    if (n_pcs is None or cosine) and X.dtype != np.float64:
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
        X = _pca(X, n_pcs, random_state, float32=True)
        log.info("nearest_neighbors: PCA to %d components done", X.shape[1])
    if method == "exact":
        if n_pcs is not None and metric == "euclidean":
            return _knn_brute32(X.toarray() if sp.issparse(X) else X, n_neighbors)
        return _knn(X, n_neighbors, metric)
    Z = X.toarray() if sp.issparse(X) else X
    if approx_backend() == "faiss":
        rows, cols, dist = _knn_ivf(Z, n_neighbors, random_state)
    else:
        rows, cols, dist = _knn_approx(Z, n_neighbors, random_state)
    if cosine:
        dist = np.clip(dist**2 / 2.0, 0.0, 2.0)
    return rows, cols, dist


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
        return PCA(n_components=int(n_pcs), svd_solver="arpack", random_state=random_state).fit_transform(X)
    if float32:
        X = X.astype(np.float32, copy=False)  # sklearn's PCA centres a copy: X is not written to
    # scikit-learn's own rule ("auto"): covariance eigendecomposition for tall data with <= 1,000 genes
    # (one d x d Gram product, O(n d^2): 10,000 x 500 in a fraction of the randomized SVD's time), exact
    # SVD for tiny data, else randomized SVD, O(n d n_pcs) per power iteration
    return PCA(n_components=int(n_pcs), svd_solver="auto", random_state=random_state).fit_transform(X)


def _symmetrise_max(rows, cols, vals, n):
    """Edge if either is a neighbour of the other; weight = max of the two directions."""
    A = sp.csr_matrix((vals, (rows, cols)), shape=(n, n))
    A.sum_duplicates()
    W = A.maximum(A.T).tocsr()
    W.setdiag(0)
    W.eliminate_zeros()
    W.sort_indices()
    return W


def similarity_graph(
    X,
    n_neighbors: int = 5,
    kernel: str = "heat",
    *,
    t: float | None = None,
    mu: float = 0.5,
    metric: str | None = None,
    n_pcs: int | None = None,
    method: str = "auto",
    random_state: int | None = 0,
):
    """Symmetrised k-nearest-neighbour patient-similarity graph.

    Parameters
    ----------
    X : array-like or sparse of shape (n_samples, n_features)
        Samples in rows (patients or cells), genes in columns.
    n_neighbors : int, default 5
        Neighbours per sample (He et al. 2005 use 5; He et al. 2011 use 4).
        An edge i-j exists when j is among i's neighbours or i among j's.
    kernel : {"heat", "binary", "cosine", "snf"}, default "heat"
        Edge weights:

        - ``"binary"``: W_ij = 1 (He et al. 2005, Sec. 3, "simple-minded").
        - ``"heat"``: W_ij = exp(-||x_i - x_j||^2 / t) (He et al. 2005, Eq. in
          Sec. 3).  Default ``t`` is the mean squared distance over the kNN
          edges, which makes the weights scale-free (a fixed t would depend on
          the units of X).
        - ``"cosine"``: neighbours by cosine distance, W_ij = max(cos(x_i, x_j), 0).
        - ``"snf"``: the scaled exponential kernel of similarity network
          fusion (Wang et al., Nature Methods 2014, Eq. 1):
          W_ij = exp(-rho_ij^2 / (mu * eps_ij)), eps_ij = (mean_{k in N_i} rho_ik
          + mean_{k in N_j} rho_jk + rho_ij) / 3, with rho the Euclidean distance
          and N_i the ``n_neighbors`` nearest neighbours.  Evaluated on the kNN
          edges only (SNF itself fills a dense matrix and then sparsifies).
    t : float, optional
        Heat-kernel width (``kernel="heat"`` only).
    mu : float, default 0.5
        SNF hyper-parameter (the SNF paper recommends 0.3-0.8).
    metric : str, optional
        Neighbour metric; default Euclidean (cosine for ``kernel="cosine"``).
    n_pcs : int, optional
        Search neighbours and compute distances on the first ``n_pcs``
        principal components of X (centred; randomized SVD in float32, seeded
        by ``random_state``) instead of all genes, as scanpy's ``pp.neighbors``
        does.  Default None: all genes below 8192 samples and for
        ``method="exact"``, 50 components otherwise (when X has more than 50
        genes).
    method : {"auto", "exact", "approx"}, default "auto"
        Neighbour search.  ``"exact"``: exact search on all genes
        (scikit-learn ``NearestNeighbors``), or on ``n_pcs`` components when
        given.  ``"approx"``: an approximate index on ``n_pcs`` principal
        components in float32: faiss' inverted-file index (``IndexIVFFlat``,
        sqrt(n) k-means cells, 32 probed) when faiss-cpu is installed
        (``pip install glfs[scale]``), else the NN-descent index of
        pynndescent (Dong et al., WWW 2011).  ``"auto"`` (default): exact on
        all genes below 8192 samples (``AUTO_APPROX_MIN_SAMPLES``; the
        threshold of scanpy's ``pp.neighbors``), exact on 50 principal
        components from there on (float32 brute force with faiss-cpu if
        installed, else scikit-learn), and faiss' IVF index on them from
        30,000 samples on (``AUTO_INDEX_MIN_SAMPLES``; only with faiss-cpu),
        see :func:`choose_neighbor_method`.  Bulk cohorts (hundreds to a few
        thousand patients) always get the exact graph on all genes.  The
        approximate search supports ``metric`` "euclidean" and "cosine" only.
    random_state : int, optional
        Seed of the randomized SVD and of the approximate index (faiss'
        k-means, or NN-descent): the graph is deterministic given
        ``random_state`` (the exact search is exact, faiss' k-means and
        search do not depend on the thread count, and NN-descent runs
        single-threaded).  None: not reproducible.

    Returns
    -------
    W : scipy.sparse.csr_matrix of shape (n_samples, n_samples)
        Symmetric, non-negative, zero diagonal.

    Notes
    -----
    Cost of the exact search: O(n^2 d) time on d genes or components
    (computed in blocks, so O(n k) memory besides X).  On components: PCA
    O(n d n_pcs) plus O(n^2 n_pcs); at 50,000 x 2,000 on 2 cores about 6 s
    for the PCA and 9 s (faiss) or 25 s (scikit-learn) for the exact search
    on a quiet machine.  Approximate search (``method="approx"``): faiss'
    IVF index, O(n^1.5 n_pcs), recall 0.97-0.99 of the exact 5 nearest
    neighbours on the same components at 50,000 cells (simulated data,
    ``benchmarks/results/graph_at_scale.tsv``), about twice as fast as the
    exact search there; NN-descent (without faiss), empirically close to
    linear in n, recall about 0.91-0.94, but pynndescent compiles its search
    with numba in every new Python process, a one-off cost of 20 s to
    minutes that its numba cache does not remove
    (see ``benchmarks/results/scaling.md``).
    The edge weights always use the distances on the searched representation
    (all genes, or the principal components).
    """
    if kernel not in KERNELS:
        msg = f"kernel must be one of {KERNELS}; got {kernel!r}"
        raise ValueError(msg)
    if metric is None:
        metric = "cosine" if kernel == "cosine" else "euclidean"
    X = check_X(X, read_only=True)  # read only; float32 stays float32 for the PCA (no 2 x n x d copies)
    n = X.shape[0]
    rows, cols, dist = _neighbors(X, n_neighbors, method, n_pcs, metric, random_state)
    if kernel == "binary":
        vals = np.ones_like(dist)
    elif kernel == "heat":
        if t is None:
            t = float(np.mean(dist**2))
            if t <= 0:
                t = 1.0
        else:
            t = check_real(t, "t (heat-kernel width)", min_val=0, include_boundaries="neither")
        vals = np.exp(-(dist**2) / t)
    elif kernel == "cosine":
        vals = np.clip(1.0 - dist, 0.0, None)
    else:  # snf
        mu = check_real(mu, "mu (SNF kernel)", min_val=0, include_boundaries="neither")
        mean_nn = np.bincount(rows, weights=dist, minlength=n) / np.bincount(rows, minlength=n)
        eps = (mean_nn[rows] + mean_nn[cols] + dist) / 3.0
        eps = np.where(eps > 0, eps, np.finfo(float).eps)
        vals = np.exp(-(dist**2) / (mu * eps))
    # Zero weights (e.g. orthogonal samples under cosine) would silently drop edges;
    # keep the neighbourhood structure with a tiny positive weight instead.
    vals = np.where(vals > 0, vals, np.finfo(float).tiny)
    W = _symmetrise_max(rows, cols, vals, n)
    log.info("similarity_graph: %d samples, %d neighbours, kernel=%s, %d edges", n, n_neighbors, kernel, W.nnz // 2)
    return W


#: The graph that :func:`glfs.select`, :func:`glfs.tl.select` and
#: :func:`glfs.simulate.recovery_experiment` build when given none (``graph_params``
#: override it): :func:`similarity_graph`'s own defaults of ``n_neighbors`` and
#: ``kernel``, read from its signature so that the default is written once.
DEFAULT_GRAPH_PARAMS = MappingProxyType(
    {k: inspect.signature(similarity_graph).parameters[k].default for k in ("n_neighbors", "kernel")}
)


def label_graph(labels):
    """Supervised graph from class labels: W_ij = 1/n_l when i and j are both in class l.

    This is the graph of He et al. (2005), Sec. 4 ("Laplacian score and Fisher
    score"); with it the Laplacian score equals 1 / (1 + Fisher score).  The
    diagonal (i = j) is kept as in the paper: it cancels in L = D - W but makes
    D = I, which the identity needs.

    Returns a CSR matrix (n_samples, n_samples) with sum_l n_l^2 non-zeros
    (block-diagonal; dense within each class by definition).
    """
    labels = np.asarray(labels)
    _, codes = check_labels(labels, labels.shape[0] if labels.ndim == 1 else -1, min_classes=1)
    n = codes.shape[0]
    blocks_rows, blocks_cols, blocks_vals = [], [], []
    for c in np.unique(codes):
        idx = np.flatnonzero(codes == c)
        r = np.repeat(idx, idx.size)
        k = np.tile(idx, idx.size)
        blocks_rows.append(r)
        blocks_cols.append(k)
        blocks_vals.append(np.full(r.size, 1.0 / idx.size))
    W = sp.csr_matrix(
        (np.concatenate(blocks_vals), (np.concatenate(blocks_rows), np.concatenate(blocks_cols))), shape=(n, n)
    )
    return W


def laplacian(W, n_samples: int | None = None):
    """Graph Laplacian L = D - W and degree vector D 1 (sparse CSR, float64)."""
    if n_samples is None:
        n_samples = W.shape[0]
    W = check_graph(W, n_samples)
    deg = np.asarray(W.sum(axis=1)).ravel()
    L = sp.diags(deg) - W
    return sp.csr_matrix(L), deg
