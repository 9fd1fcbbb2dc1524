"""Clustering metrics and the spectral-clustering protocol of the bulk data.

X is always (n_samples, n_features) = (patients or cells, genes).  Everything
here is a pure function of arrays (numpy, scipy, scikit-learn); no file I/O.

Protocols (see docs/methods/evaluation.md and the README):

- spectral clustering on the top-k genes, NMI against the known labels
  (Wang & Goldenberg, ICML 2013, Sec. 3.3: 10 runs, mean NMI), reported with
  scikit-learn's arithmetic normalisation ``MI / mean(H(C), H(C'))`` and with
  the max-entropy normalisation ``MI / max(H(C), H(C'))`` of He, Ji, Zhang and
  Bao (TPAMI 2011, Sec. 7.2);
- k-means clustering accuracy (ACC, best label mapping by the Kuhn-Munkres /
  Hungarian algorithm) and NMI, best of 10 restarts by inertia (He et al.
  2011, Sec. 7.2);
- leave-one-out 1-nearest-neighbour accuracy (Wang & Goldenberg 2013, Eq. 10;
  He et al. 2011, Sec. 7.2).

:func:`evaluate_ranking` runs them on one gene ranking.  The public names are
re-exported by :mod:`glfs.evaluate`.
"""

from __future__ import annotations

import logging
import time

import numpy as np
import scipy.sparse as sp
from scipy.optimize import linear_sum_assignment
from scipy.sparse.csgraph import connected_components
from scipy.stats import entropy
from sklearn.cluster import KMeans, k_means
from sklearn.metrics import mutual_info_score, normalized_mutual_info_score, pairwise_distances_chunked
from sklearn.metrics.cluster import contingency_matrix

from glfs.core._validation import check_int, check_labels, check_X
from glfs.evaluate._spectral import (
    ARPACK_MAX_SAMPLES,
    EIGEN_SOLVERS,
    EIGEN_TOL,
    _spectral_labels,
    resolve_eigen_solver,
    shared_embedding,
)
from glfs.graph._similarity import choose_neighbor_method, nearest_neighbors

log = logging.getLogger(__name__)

__all__ = [
    "nmi",
    "nmi_max",
    "clustering_accuracy",
    "spectral_cluster",
    "spectral_cluster_runs",
    "resolve_eigen_solver",
    "knn_affinity",
    "stratified_subsample",
    "kmeans_best_of",
    "loo_1nn_accuracy",
    "run_seeds",
    "resolve_feature_grid",
    "evaluate_ranking",
    "ARPACK_MAX_SAMPLES",
    "EIGEN_TOL",
    "EIGEN_SOLVERS",
]


def _check_pair(labels_true, labels_pred):
    a = np.asarray(labels_true)
    b = np.asarray(labels_pred)
    if a.ndim != 1 or b.ndim != 1 or a.shape != b.shape or a.size == 0:
        msg = (
            "labels_true and labels_pred must be non-empty 1-d arrays of the same length; "
            f"got shapes {a.shape} and {b.shape}"
        )
        raise ValueError(msg)
    return a, b


def nmi(labels_true, labels_pred) -> float:
    """Normalised mutual information, arithmetic normalisation (scikit-learn's default).

    NMI = MI(C, C') / ((H(C) + H(C')) / 2).  1 = identical partitions, 0 = independent.
    Cost O(n).
    """
    a, b = _check_pair(labels_true, labels_pred)
    return float(normalized_mutual_info_score(a, b, average_method="arithmetic"))


def nmi_max(labels_true, labels_pred) -> float:
    """Normalised mutual information, max-entropy normalisation (He et al., TPAMI 2011, Sec. 7.2.1).

    NMI = MI(C, C') / max(H(C), H(C')); in [0, 1], 1 = identical partitions.
    Never larger than :func:`nmi`.  Cost O(n).
    """
    a, b = _check_pair(labels_true, labels_pred)
    return float(normalized_mutual_info_score(a, b, average_method="max"))


def _nmi_pair(C) -> tuple[float, float]:
    """(:func:`nmi`, :func:`nmi_max`) from one contingency table C (classes x clusters).

    The same quantities as scikit-learn's ``normalized_mutual_info_score``
    (arithmetic / max normalisation, natural logarithm, its special cases:
    both partitions a single group -> 1, MI = 0 -> 0), computed once from
    the table instead of re-validating the labels for every score (the
    evaluation computes three scores per clustering run).  Cost O(c^2).
    """
    C = np.asarray(C)
    if C.shape[0] == C.shape[1] == 1:
        return 1.0, 1.0
    mi = mutual_info_score(None, None, contingency=C)
    if mi == 0:
        return 0.0, 0.0
    h_true, h_pred = float(entropy(C.sum(axis=1))), float(entropy(C.sum(axis=0)))
    # both are in [0, 1]; identical partitions can round to 1 + 1e-16 (MI and the entropies are summed
    # in different orders), which a reader checking the range would take for an error
    return min(float(mi / (0.5 * (h_true + h_pred))), 1.0), min(float(mi / max(h_true, h_pred)), 1.0)


def _accuracy_from_contingency(C) -> float:
    rows, cols = linear_sum_assignment(C, maximize=True)
    return float(C[rows, cols].sum() / C.sum())


def clustering_accuracy(labels_true, labels_pred) -> float:
    """Clustering accuracy under the best one-to-one mapping of clusters to classes.

    ACC = (1/n) sum_i delta(s_i, map(r_i)) with ``map`` the permutation that
    maximises the number of matches, found by the Kuhn-Munkres (Hungarian)
    algorithm on the contingency table (He et al. 2011, Sec. 7.2.1).  With more
    clusters than classes the surplus clusters map to nothing (count as errors).
    Higher is better, 1 = a relabelling of the truth.  Cost O(n + c^3).
    """
    a, b = _check_pair(labels_true, labels_pred)
    return _accuracy_from_contingency(contingency_matrix(a, b))  # classes x clusters


def run_seeds(random_state, n_runs: int) -> np.ndarray:
    """``n_runs`` independent integer seeds derived from one master seed (numpy SeedSequence)."""
    n_runs = check_int(n_runs, "n_runs", 1)
    entropy = 0 if random_state is None else int(random_state)
    return np.random.SeedSequence(entropy).generate_state(int(n_runs)).astype(np.int64)


def _as_dense(X):
    return X.toarray() if sp.issparse(X) else np.asarray(X, dtype=np.float64)


def knn_affinity(X, n_neighbors: int = 10, *, method: str = "auto", random_state=0):
    """Sparse kNN affinity of scikit-learn's ``SpectralClustering(affinity="nearest_neighbors")``.

    A = 0.5 (C + C') with C the connectivity of each sample to itself and its
    ``n_neighbors - 1`` nearest other samples (scikit-learn's
    ``kneighbors_graph(include_self=True)``), built with
    :func:`glfs.graph._similarity.nearest_neighbors`: exact search on all genes below 8192
    samples, exact search on 20 principal components above (``APPROX_N_PCS``), as
    :func:`glfs.similarity_graph` does.

    X : array-like of shape (n_samples, n_features).  Returns a CSR matrix
    (n_samples, n_samples) with O(n * n_neighbors) entries.
    """
    X = _as_dense(X)
    n = X.shape[0]
    k = min(check_int(n_neighbors, "n_neighbors", 1), n - 1)
    if k < 1:
        msg = f"X must have at least 2 samples for a kNN affinity; got {n}"
        raise ValueError(msg)
    if k > 1:
        rows, cols, _ = nearest_neighbors(X, k - 1, method=method, random_state=random_state)
    else:
        rows = cols = np.zeros(0, dtype=np.int64)
    rows = np.concatenate([np.arange(n), rows])
    cols = np.concatenate([np.arange(n), cols])
    C = sp.csr_matrix((np.ones(rows.size), (rows, cols)), shape=(n, n))
    return (0.5 * (C + C.T)).tocsr()


def spectral_cluster(
    X, n_clusters: int, *, n_neighbors: int = 10, random_state=0, affinity=None, eigen_solver: str = "auto"
) -> np.ndarray:
    """Spectral clustering of the samples with a sparse kNN affinity.

    scikit-learn ``SpectralClustering`` on the sparse affinity of
    :func:`knn_affinity` (the symmetrised connectivity of the
    ``n_neighbors``-NN graph, O(n * n_neighbors) entries, the same matrix as
    its ``affinity="nearest_neighbors"``), labels assigned by k-means on the
    spectral embedding (Ng, Jordan & Weiss; the paper cites Bach & Jordan 2004).

    Parameters
    ----------
    X : array-like of shape (n_samples, n_features)
        Samples in rows; usually the top-k genes.
    n_clusters : int
    n_neighbors : int, default 10
        Capped at n_samples - 1.
    random_state : int
        Seeds the eigensolver start and the k-means of the embedding.
    affinity : sparse (n_samples, n_samples), optional
        A precomputed :func:`knn_affinity` of X (it does not depend on the
        seed, so :func:`evaluate_ranking` builds it once per gene count).
    eigen_solver : {"auto", "arpack", "lobpcg"}, default "auto"
        The embedding's eigensolver (:func:`resolve_eigen_solver`): ARPACK
        below ``ARPACK_MAX_SAMPLES`` = 2000 samples, LOBPCG to ``EIGEN_TOL``
        from there.

    Returns
    -------
    labels : ndarray of int, shape (n_samples,)

    Notes
    -----
    Cost: the neighbour search (see :func:`knn_affinity`) plus a sparse
    eigenproblem on the n x n affinity; nothing n x n is dense.
    """
    X = _as_dense(X)
    n = X.shape[0]
    n_clusters = check_int(n_clusters, "n_clusters", 2, n - 1)
    solver = resolve_eigen_solver(eigen_solver, n)
    if affinity is None:
        affinity = knn_affinity(X, n_neighbors)
    return _spectral_labels(affinity, n_clusters, random_state, solver=solver)


def spectral_cluster_runs(
    affinity, n_clusters: int, seeds, *, n_init: int = 10, eigen_solver: str = "auto"
) -> np.ndarray:
    """Spectral clustering of one affinity, one run per seed, sharing the spectral embedding.

    Each run is what :func:`spectral_cluster` (scikit-learn
    ``SpectralClustering(affinity="precomputed", assign_labels="kmeans")``)
    computes: the spectral embedding U = D^-1/2 V, V the eigenvectors of the
    ``n_clusters`` smallest eigenvalues of the normalised Laplacian
    I - D^-1/2 A D^-1/2 (Ng, Jordan & Weiss 2002), then k-means with
    ``n_init`` k-means++ restarts on the rows of U.  The embedding does not
    depend on the seed: the seed only sets the eigensolver's start vector, and
    the eigenvectors are solved to machine precision with a deterministic sign.
    So it is computed once (start vector from ``seeds[0]``) and only the
    k-means, the part that differs between runs, is repeated with each seed
    (Wang & Goldenberg 2013, Sec. 3.3: NMI averaged over runs).  One exception
    keeps the old per-run form: when the affinity graph has more connected
    components than ``n_clusters``, the zero eigenvalue is repeated beyond the
    embedding and the eigensolver's start vector picks which basis of it is
    used, so every run then computes its own embedding with its own seed
    (exactly :func:`spectral_cluster` with that seed).  docs/methods/evaluation.md ("Evaluation protocols")
    shows the fast and the per-run form agree.

    Parameters
    ----------
    affinity : sparse (n_samples, n_samples)
        Symmetric non-negative affinity, e.g. :func:`knn_affinity` of the top-k genes.
    n_clusters : int
        In [2, n_samples - 1].
    seeds : sequence of int, length n_runs
        One k-means seed per run (:func:`run_seeds`).
    n_init : int, default 10
        k-means restarts per run (scikit-learn's default for SpectralClustering).
    eigen_solver : {"auto", "arpack", "lobpcg"}, default "auto"
        "auto": scikit-learn's default ARPACK (shift-invert, solved to machine
        precision) below ``ARPACK_MAX_SAMPLES`` = 2000 samples; LOBPCG to the
        residual tolerance ``EIGEN_TOL`` = 1e-8 from there, because the
        shift-invert factorisation fills in towards an n x n dense matrix on
        kNN graphs.  A LOBPCG solve that misses the tolerance is logged and
        raises a ``ConvergenceWarning``.

    Returns
    -------
    labels : ndarray of int, shape (n_runs, n_samples)

    Notes
    -----
    Cost: one sparse eigenproblem on the n x n affinity instead of
    ``n_runs``, plus ``n_runs * n_init`` k-means fits on an
    (n_samples, n_clusters) array.  ARPACK's shift-invert LU costs up to
    O(n^3) on kNN graphs (measured 27-288 s at 10,000 samples); LOBPCG costs
    O(nnz(affinity) n_clusters) per iteration (0.6-4.2 s there).
    """
    if not sp.issparse(affinity) or affinity.ndim != 2 or affinity.shape[0] != affinity.shape[1]:
        msg = f"affinity must be a square scipy.sparse matrix; got {type(affinity).__name__} of shape {getattr(affinity, 'shape', None)}"
        raise ValueError(msg)
    n = affinity.shape[0]
    n_clusters = check_int(n_clusters, "n_clusters", 2, n - 1)
    seeds = [int(s) for s in np.atleast_1d(np.asarray(seeds, dtype=np.int64))]
    if not seeds:
        msg = "seeds must hold at least one seed; got an empty sequence"
        raise ValueError(msg)
    solver = resolve_eigen_solver(eigen_solver, n)
    n_components = connected_components(affinity, directed=False)[0]
    if n_components > n_clusters:
        log.debug("spectral_cluster_runs: %d components > %d clusters: one embedding per run", n_components, n_clusters)
        return np.vstack([_spectral_labels(affinity, n_clusters, s, n_init, solver) for s in seeds])
    maps = shared_embedding(affinity, n_clusters, seeds[0], solver, n_components)
    out = np.empty((len(seeds), n), dtype=np.int64)
    for r, s in enumerate(seeds):
        out[r] = k_means(maps, int(n_clusters), random_state=s, n_init=int(n_init))[1]
    return out


def kmeans_best_of(X, n_clusters: int, *, n_init: int = 10, random_state=0) -> np.ndarray:
    """k-means, best of ``n_init`` restarts by inertia (He et al. 2011, Sec. 7.2).

    X : array-like of shape (n_samples, n_features).  Returns labels (n_samples,).
    Cost O(n_init * iterations * n * n_features * n_clusters).
    """
    X = _as_dense(X)
    model = KMeans(n_clusters=int(n_clusters), n_init=int(n_init), random_state=int(random_state))
    return model.fit_predict(X).astype(np.int64)


def loo_1nn_accuracy(X, labels, *, method: str = "auto") -> float:
    """Leave-one-out 1-nearest-neighbour accuracy (Wang & Goldenberg 2013, Eq. 10).

    Accuracy = (1/n) sum_i delta(c(x_i), c(x_{l_i})) with x_{l_i} the nearest
    other sample (Euclidean).  Higher is better.

    X : array-like of shape (n_samples, n_features).  Below 8192 samples
    (``method="auto"``) or with ``method="exact"``: exact distances in row
    chunks (scikit-learn ``pairwise_distances_chunked``, memory bounded, time
    O(n^2 n_features)); ties in distance go to the lowest sample index, so the
    result is deterministic.  From 8192 samples on: the nearest neighbour from
    the search of :func:`glfs.graph._similarity.nearest_neighbors` on 20 principal
    components (``APPROX_N_PCS``; exact brute force in float32, O(n^2 20); ``method="approx"``:
    pynndescent's index).
    """
    X = _as_dense(X)
    n = X.shape[0]
    _, y = check_labels(labels, n, min_classes=1)
    search, n_pcs = choose_neighbor_method(n, X.shape[1], method)
    if search == "approx" or n_pcs is not None:  # at scale: on principal components (exact, or approximate if forced)
        rows, cols, _ = nearest_neighbors(X, 1, method=method)
        nearest = np.empty(n, dtype=np.int64)
        nearest[rows] = cols
        return float(np.mean(y == y[nearest]))
    nearest = np.empty(n, dtype=np.int64)
    start = 0

    def _reduce(chunk, offset):
        chunk = np.array(chunk, copy=True)
        r = np.arange(chunk.shape[0])
        chunk[r, offset + r] = np.inf  # leave the sample itself out
        return np.argmin(chunk, axis=1)

    for block in pairwise_distances_chunked(X, reduce_func=_reduce):
        nearest[start : start + block.size] = block
        start += block.size
    return float(np.mean(y == y[nearest]))


def stratified_subsample(labels, max_samples: int, random_state=0) -> np.ndarray:
    """Sorted indices of a seeded subsample of ``max_samples`` samples, stratified by label.

    Each class keeps its share (largest remainders round up, every class at
    least one sample).  The same labels and seed give the same subsample, so
    every method of a run is evaluated on the same cells.
    """
    y = np.asarray(labels)
    n = y.size
    max_samples = check_int(max_samples, "max_samples", 2)
    if max_samples >= n:
        return np.arange(n)
    classes, codes = np.unique(y, return_inverse=True)
    counts = np.bincount(codes)
    share = counts * max_samples / n
    take = np.maximum(np.floor(share).astype(int), 1)
    rest = max_samples - take.sum()
    if rest > 0:
        take[np.argsort(-(share - np.floor(share)), kind="stable")[:rest]] += 1
    take = np.minimum(take, counts)
    rng = np.random.default_rng(0 if random_state is None else int(random_state))
    idx = [rng.choice(np.flatnonzero(codes == c), size=int(t), replace=False) for c, t in enumerate(take)]
    return np.sort(np.concatenate(idx))


def resolve_feature_grid(grid, n_total: int) -> list[int]:
    """Turn a config grid such as ``[5, 10, 100, "all"]`` into distinct gene counts.

    ``"all"`` means every gene (``n_total``).  Counts above ``n_total`` are
    capped at it; duplicates after capping are dropped; order is ascending.
    """
    out = set()
    for k in grid:
        if isinstance(k, str):
            if k != "all":
                msg = f"feature_grid entries must be positive integers or 'all'; got {k!r}"
                raise ValueError(msg)
            out.add(int(n_total))
        elif isinstance(k, (int, np.integer)) and not isinstance(k, bool) and k >= 1:
            out.add(int(min(k, n_total)))
        else:
            msg = f"feature_grid entries must be positive integers or 'all'; got {k!r}"
            raise ValueError(msg)
    return sorted(out)


def _affinity_neighbors(k, n: int) -> int:
    """``affinity_neighbors`` as used on n samples: at most n - 1 (:func:`knn_affinity`), with a warning when lowered."""
    k = check_int(k, "affinity_neighbors", 1)
    if k > n - 1:
        log.warning(
            "affinity_neighbors = %d is more than the %d samples allow; using %d (the kNN affinity of the "
            "spectral clustering needs fewer neighbours than samples)",
            k,
            n,
            n - 1,
        )
        return n - 1
    return k


def evaluate_ranking(
    X,
    labels,
    ranking,
    *,
    feature_grid=(5, 10, 15, 20, 25, 50, 75, 100, 150, 200, "all"),
    n_clusters: int | None = None,
    n_runs: int = 10,
    affinity_neighbors: int = 10,
    kmeans_restarts: int = 10,
    random_state=0,
    max_samples: int | None = None,
    eigen_solver: str = "auto",
    cache: dict | None = None,
) -> list[dict]:
    """Clustering and 1-NN evaluation of one gene ranking over a grid of top-k.

    For each k in the grid and each run r: spectral clustering of the samples
    on the top-k genes (k-means seed = run r's seed; the embedding is shared by
    the runs, :func:`spectral_cluster_runs`) scored by :func:`nmi` and
    :func:`nmi_max`.  Once per k, repeated in each run's row: k-means best of
    ``kmeans_restarts`` by inertia (seeded with the first run's seed; He et
    al. 2011, Sec. 7.2, one best-of-10 k-means per test) scored by
    :func:`clustering_accuracy` and :func:`nmi`, and :func:`loo_1nn_accuracy`.

    Parameters
    ----------
    X : array-like of shape (n_samples, n_features)
    labels : array-like of shape (n_samples,)
        Known classes (e.g. the Verhaak GBM subtypes).
    ranking : array-like of int, shape (n_features,)
        Feature indices, best first (``Selection.ranking``).
    feature_grid : sequence of int or "all", default (5, 10, 15, 20, 25, 50, 75, 100, 150, 200, "all")
        Gene counts k (:func:`resolve_feature_grid`); the workflow's default (its config schema repeats it).
    n_clusters : int, optional
        Default: the number of distinct labels.
    n_runs : int, default 10
    affinity_neighbors : int, default 10
        Neighbours of the spectral clustering's kNN affinity (:func:`knn_affinity`);
        more than n_samples - 1 is lowered to n_samples - 1 with a logged warning.
    random_state : int
        Master seed; run r uses ``run_seeds(random_state, n_runs)[r]``.
    max_samples : int, optional
        Documented fallback for very large data: evaluate on a seeded
        subsample of this many samples, stratified by label
        (:func:`stratified_subsample`, seeded by ``random_state``, so every
        method is evaluated on the same samples).  Default None: all samples.
    eigen_solver : {"auto", "arpack", "lobpcg"}, default "auto"
        The spectral embedding's eigensolver, see :func:`spectral_cluster_runs`
        (ARPACK below 2000 samples, LOBPCG from there).
    cache : dict, optional
        Records of the gene sets already evaluated, for the rankings of one X and labels
        (the workflow passes one dict to all methods of a dataset).  A top-k gene set
        met again (by another ranking, or the all-genes point every ranking shares) is
        not evaluated again: its records are copied.  The genes are taken in index order,
        so the records are a function of the gene set, and the key holds the settings.

    Notes
    -----
    The spectral-clustering affinity and embedding of each k are built once
    (they do not depend on the seed) and reused by the ``n_runs`` runs.
    Every k is evaluated on the top-k genes in index order (the protocol's
    distances, kNN affinity and k-means do not depend on the order of the genes).  Cost
    per k: one neighbour search (exact below 8192 samples, approximate above),
    one sparse eigenproblem (``n_runs`` when the affinity has more components
    than clusters, see :func:`spectral_cluster_runs`) and ``n_runs + 1`` k-means
    fits; nothing n x n is dense.

    Returns
    -------
    list of dict
        One record per (k, run): ``n_features, run, seed, nmi, nmi_max,
        kmeans_acc, kmeans_nmi, loo_1nn_acc``.  All scores: higher is better.
    """
    X = check_X(X, read_only=sp.issparse(X))  # a sparse X stays sparse until its rows are subsampled
    n, d = X.shape
    _, y = check_labels(labels, n)
    ranking = np.asarray(ranking, dtype=np.int64)
    if ranking.shape != (d,) or not np.array_equal(np.sort(ranking), np.arange(d)):
        msg = f"ranking must be a permutation of the {d} feature indices; got shape {ranking.shape}"
        raise ValueError(msg)
    if n_clusters is None:
        n_clusters = int(np.unique(y).size)
    if max_samples is not None and max_samples < n:
        keep = stratified_subsample(y, max_samples, random_state)
        log.info("evaluate_ranking: %d samples; evaluating a stratified subsample of %d (max_samples)", n, keep.size)
        X, y, n = X[keep], y[keep], keep.size
    X = _as_dense(X).astype(np.float64, copy=False)
    seeds = run_seeds(random_state, n_runs)
    solver = resolve_eigen_solver(eigen_solver, n)
    affinity_neighbors = _affinity_neighbors(affinity_neighbors, n)
    records = []
    grid = resolve_feature_grid(feature_grid, d)
    log.info(
        "evaluate_ranking: %d samples, %d gene counts x %d runs; spectral embedding by %s", n, len(grid), n_runs, solver
    )
    t_start = time.perf_counter()
    settings = (n, d, n_clusters, seeds.tobytes(), affinity_neighbors, solver, kmeans_restarts, max_samples)
    cache = {} if cache is None else cache
    for i_k, k in enumerate(grid):
        genes = np.sort(ranking[:k])
        key = (settings, genes.tobytes())
        if key not in cache:
            cache[key] = _records_at_k(
                X[:, genes], y, k, seeds, n_clusters, affinity_neighbors, solver, kmeans_restarts
            )
        records += [dict(r) for r in cache[key]]
        log.info(
            "evaluate_ranking: k=%d (%d/%d), mean NMI %.3f, %.0f s elapsed",
            k,
            i_k + 1,
            len(grid),
            np.mean([x["nmi"] for x in records[-len(seeds) :]]),
            time.perf_counter() - t_start,
        )
    return records


def _records_at_k(Xk, y, k: int, seeds, n_clusters: int, affinity_neighbors: int, solver: str, kmeans_restarts: int):
    """The records of :func:`evaluate_ranking` at k genes (``Xk``: the top-k columns), one per run."""
    loo = loo_1nn_accuracy(Xk, y)
    affinity = knn_affinity(Xk, affinity_neighbors)
    spectral = spectral_cluster_runs(affinity, n_clusters, seeds, eigen_solver=solver)
    # He et al. 2011, Sec. 7.2: one k-means, best of `kmeans_restarts` by inertia, per test
    C_km = contingency_matrix(y, kmeans_best_of(Xk, n_clusters, n_init=kmeans_restarts, random_state=seeds[0]))
    km_acc, km_nmi = _accuracy_from_contingency(C_km), _nmi_pair(C_km)[0]
    records = []
    for r, s in enumerate(seeds):
        sc_nmi, sc_nmi_max = _nmi_pair(contingency_matrix(y, spectral[r]))
        records.append(
            {
                "n_features": k,
                "run": r,
                "seed": int(s),
                "nmi": sc_nmi,
                "nmi_max": sc_nmi_max,
                "kmeans_acc": km_acc,
                "kmeans_nmi": km_nmi,
                "loo_1nn_acc": loo,
            }
        )
    return records
