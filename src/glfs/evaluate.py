"""Evaluation of gene selections: clustering agreement and nearest-neighbour accuracy.

X is always (n_samples, n_features) = (patients or cells, genes).  Everything
here is a pure function of arrays (numpy, scipy, scikit-learn); no file I/O.

Protocols (see docs/methods.md and the README):

- spectral clustering on the top-k genes, NMI against the known labels
  (Wang & Goldenberg, ICML 2013, Sec. 3.3: 10 runs, mean NMI), reported with
  scikit-learn's arithmetic normalisation ``MI / mean(H(C), H(C'))`` and with
  the max-entropy normalisation ``MI / max(H(C), H(C'))`` of He, Ji, Zhang and
  Bao (TPAMI 2011, Sec. 7.2);
- k-means clustering accuracy (ACC, best label mapping by the Kuhn-Munkres /
  Hungarian algorithm) and NMI, best of 10 restarts by inertia (He et al.
  2011, Sec. 7.2);
- leave-one-out 1-nearest-neighbour accuracy (Wang & Goldenberg 2013, Eq. 10;
  He et al. 2011, Sec. 7.2);
- for cells, the single-cell protocol of scanpy users (:func:`evaluate_ranking_leiden`):
  PCA, 15-NN graph and Leiden over a resolution grid, ARI and NMI against the
  cell types (Zappia et al., Nat Methods 2025).  It imports scanpy lazily.
"""

from __future__ import annotations

import logging
import time
import warnings

import numpy as np
import scipy.sparse as sp
from scipy.optimize import linear_sum_assignment
from sklearn.base import BaseEstimator, ClassifierMixin
from scipy.sparse.csgraph import connected_components
from scipy.stats import entropy
from sklearn.cluster import KMeans, SpectralClustering, k_means
from sklearn.exceptions import ConvergenceWarning
from sklearn.linear_model import ElasticNet
from sklearn.manifold import spectral_embedding
from sklearn.metrics import adjusted_rand_score, mutual_info_score, normalized_mutual_info_score, pairwise_distances_chunked
from sklearn.metrics.cluster import contingency_matrix
from threadpoolctl import threadpool_limits

from ._validation import check_int, check_labels, check_positive, check_X

log = logging.getLogger(__name__)

# Spectral embedding solver of eigen_solver="auto": ARPACK (scikit-learn's default,
# shift-invert) below this many samples, LOBPCG from it.  Shift-invert factorises the
# n x n Laplacian, and on kNN graphs the sparse LU fills in towards dense: measured
# 0.3 s at 1,000 samples, 3-10 s at 3,000 and 27-288 s at 10,000 (2 cores), where
# LOBPCG to EIGEN_TOL takes 0.6-4.2 s and gives the same subspace to 1e-5 degrees
# (benchmarks/spectral_solvers.py; docs/methods.md, "Evaluation protocols").  The same bound as GLFS's dense forms.
ARPACK_MAX_SAMPLES = 2000
EIGEN_TOL = 1e-8
EIGEN_SOLVERS = ("auto", "arpack", "lobpcg")

# Leiden resolutions of the single-cell protocol (evaluate_ranking_leiden): 0.2 to 2.0 in steps
# of 0.2, a grid around scanpy's default resolution of 1 (issue 17).  The protocol reports the
# ARI-best resolution of this grid and the one whose cluster count is closest to the labels'.
LEIDEN_RESOLUTIONS = (0.2, 0.4, 0.6, 0.8, 1.0, 1.2, 1.4, 1.6, 1.8, 2.0)
# Below this many genes the single-cell protocol clusters on the genes themselves (no PCA).
LEIDEN_MIN_PCA_FEATURES = 3
_SINGLECELL_HINT = "the Leiden evaluation needs scanpy, leidenalg and igraph: pip install glfs[singlecell]"

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
    "LEIDEN_RESOLUTIONS",
    "evaluate_random_floor",
    "leiden_kwargs",
    "clustering_kwargs",
    "evaluate_ranking_leiden",
    "random_gene_orders",
    "cv_splitter",
    "baseline_classifiers",
    "n_genes_used",
    "evaluate_classifier",
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
    :func:`glfs.graph.nearest_neighbors`: exact search on all genes below 8192
    samples, exact search on 50 principal components above, as
    :func:`glfs.similarity_graph` does.

    X : array-like of shape (n_samples, n_features).  Returns a CSR matrix
    (n_samples, n_samples) with O(n * n_neighbors) entries.
    """
    from .graph import nearest_neighbors

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


def resolve_eigen_solver(eigen_solver: str, n_samples: int) -> str:
    """The spectral embedding's eigensolver: "arpack" or "lobpcg" ("auto": ARPACK below
    ``ARPACK_MAX_SAMPLES`` samples, LOBPCG from there; see the constant's comment)."""
    if eigen_solver not in EIGEN_SOLVERS:
        msg = f"eigen_solver must be one of {EIGEN_SOLVERS}; got {eigen_solver!r}"
        raise ValueError(msg)
    if eigen_solver == "auto":
        return "arpack" if n_samples < ARPACK_MAX_SAMPLES else "lobpcg"
    return eigen_solver


def _solver_kwargs(solver: str) -> dict:
    """Keyword arguments of scikit-learn's spectral embedding for a resolved solver."""
    return {"eigen_solver": solver, "eigen_tol": EIGEN_TOL if solver == "lobpcg" else "auto"}


class _EigenWarnings(warnings.catch_warnings):
    """Silence the disconnected-graph note; turn LOBPCG's missed tolerance into one ConvergenceWarning."""

    def __enter__(self):
        self._log = super().__enter__()
        warnings.simplefilter("always")
        return self._log

    def __exit__(self, *exc):
        super().__exit__(*exc)
        missed = []
        for w in self._log:
            text = str(w.message)
            if "Graph is not fully connected" in text:
                continue  # a kNN graph on very few genes may be disconnected; the embedding is still defined
            if "not reaching the requested tolerance" in text:
                missed.append(text)
                continue
            warnings.warn_explicit(w.message, w.category, w.filename, w.lineno)
        if missed:
            msg = f"spectral embedding: LOBPCG did not reach eigen_tol={EIGEN_TOL:g}: {missed[-1]}"
            log.warning(msg)
            warnings.warn(msg, ConvergenceWarning, stacklevel=2)
        return False


def _spectral_labels(affinity, n_clusters: int, random_state, n_init: int = 10, solver: str = "arpack") -> np.ndarray:
    """scikit-learn SpectralClustering on a precomputed affinity (embedding and k-means seeded alike)."""
    model = SpectralClustering(
        n_clusters=int(n_clusters),
        affinity="precomputed",
        assign_labels="kmeans",
        random_state=int(random_state),
        n_init=int(n_init),
        **_solver_kwargs(solver),
    )
    with _EigenWarnings(record=True):
        return model.fit_predict(affinity).astype(np.int64)


def spectral_cluster_runs(affinity, n_clusters: int, seeds, *, n_init: int = 10, eigen_solver: str = "auto") -> np.ndarray:
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
    (exactly :func:`spectral_cluster` with that seed).  docs/methods.md ("Evaluation protocols")
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
    with _EigenWarnings(record=True):
        maps = spectral_embedding(
            affinity, n_components=int(n_clusters), random_state=seeds[0], drop_first=False, **_solver_kwargs(solver)
        )
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
    the search of :func:`glfs.graph.nearest_neighbors` on 50 principal
    components (exact brute force in float32, O(n^2 50); ``method="approx"``:
    pynndescent's index).
    """
    from .graph import choose_neighbor_method, nearest_neighbors

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
            k, n, n - 1,
        )
        return n - 1
    return k


def evaluate_ranking(
    X,
    labels,
    ranking,
    *,
    feature_grid=(5, 10, 25, 50, 100, "all"),
    n_clusters: int | None = None,
    n_runs: int = 10,
    affinity_neighbors: int = 10,
    kmeans_restarts: int = 10,
    random_state=0,
    max_samples: int | None = None,
    eigen_solver: str = "auto",
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
    feature_grid : sequence of int or "all"
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

    Notes
    -----
    The spectral-clustering affinity and embedding of each k are built once
    (they do not depend on the seed) and reused by the ``n_runs`` runs.  Cost
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
    log.info("evaluate_ranking: %d samples, %d gene counts x %d runs; spectral embedding by %s", n, len(grid), n_runs, solver)
    t_start = time.perf_counter()
    for i_k, k in enumerate(grid):
        Xk = X[:, ranking[:k]]
        loo = loo_1nn_accuracy(Xk, y)
        affinity = knn_affinity(Xk, affinity_neighbors)
        spectral = spectral_cluster_runs(affinity, n_clusters, seeds, eigen_solver=solver)
        # He et al. 2011, Sec. 7.2: one k-means, best of `kmeans_restarts` by inertia, per test
        C_km = contingency_matrix(y, kmeans_best_of(Xk, n_clusters, n_init=kmeans_restarts, random_state=seeds[0]))
        km_acc, km_nmi = _accuracy_from_contingency(C_km), _nmi_pair(C_km)[0]
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
        log.info(
            "evaluate_ranking: k=%d (%d/%d), mean NMI %.3f, %.0f s elapsed",
            k,
            i_k + 1,
            len(grid),
            np.mean([x["nmi"] for x in records[-len(seeds) :]]),
            time.perf_counter() - t_start,
        )
    return records


# ---- single-cell protocol: PCA, kNN, Leiden (scanpy) ---------------------------------


def random_gene_orders(n_genes: int, n_draws: int, random_state) -> list[tuple[int, np.ndarray]]:
    """The gene orders of the random-genes floor: ``n_draws`` seeded uniform permutations.

    Draw i takes the seed s_i = ``run_seeds(random_state, n_draws)[i]`` and the
    order ``np.random.default_rng(s_i).permutation(n_genes)``; its top-k genes
    are k genes drawn uniformly without replacement, the floor that every
    selection method must clear (Zappia et al., Nat Methods 2025, score random
    genes of the same count).  The workflow's ``evaluate_random_floor`` uses
    these orders and s_i as the evaluation's master seed.

    Parameters
    ----------
    n_genes : int
        Number of genes (columns of X, of shape (n_samples, n_features)).
    n_draws : int
        Number of random orders, >= 1.
    random_state : int or None
        Master seed (None is 0, as in :func:`run_seeds`).

    Returns
    -------
    list of (int, ndarray of int, shape (n_genes,))
        ``(s_i, order_i)`` per draw; each order is a permutation of ``range(n_genes)``.
        Cost O(n_draws * n_genes) time and memory.
    """
    n_genes = check_int(n_genes, "n_genes", 1)
    n_draws = check_int(n_draws, "n_draws", 1)
    return [(int(s), np.random.default_rng(int(s)).permutation(n_genes)) for s in run_seeds(random_state, n_draws)]


def clustering_kwargs(clustering, *, n_clusters=None, random_state=0) -> dict:
    """:func:`evaluate_ranking`'s keyword arguments from a clustering configuration.

    ``clustering`` is a mapping with ``feature_grid``, ``n_runs``,
    ``affinity_neighbors``, ``max_samples`` and ``eigen_solver`` (the
    workflow's ``clustering:`` section); ``n_clusters`` (None: the number of
    labels) and ``random_state`` (the master seed) are passed through.
    """
    return {
        "feature_grid": list(clustering["feature_grid"]),
        "n_clusters": n_clusters,
        "n_runs": int(clustering["n_runs"]),
        "affinity_neighbors": int(clustering["affinity_neighbors"]),
        "random_state": int(random_state),
        "max_samples": clustering["max_samples"],
        "eigen_solver": clustering["eigen_solver"],
    }


def leiden_kwargs(leiden, random_state=0) -> dict:
    """:func:`evaluate_ranking_leiden`'s keyword arguments from a Leiden configuration.

    ``leiden`` is a mapping with ``n_runs``, ``resolutions``, ``n_pcs``,
    ``n_neighbors`` and ``max_samples`` (the workflow's ``leiden:`` section);
    ``random_state`` is the master seed.  The gene-count grid is the caller's.
    """
    return {
        "n_runs": int(leiden["n_runs"]),
        "resolutions": [float(r) for r in leiden["resolutions"]],
        "n_pcs": int(leiden["n_pcs"]),
        "n_neighbors": int(leiden["n_neighbors"]),
        "max_samples": leiden["max_samples"],
        "random_state": int(random_state),
    }


def evaluate_random_floor(X, labels, *, n_draws: int, protocol: str = "spectral", **kwargs) -> list[dict]:
    """The random-genes floor: random gene orders evaluated like a method's ranking.

    Each of ``n_draws`` draws is an order of :func:`random_gene_orders` (seed
    s_i from the master seed ``kwargs["random_state"]``), evaluated with the
    protocol's function and s_i as its master seed, and its records get
    ``draw = i``:

    - ``protocol="spectral"``: :func:`evaluate_ranking` with one run per draw
      (the draws give the spread);
    - ``protocol="leiden"``: :func:`evaluate_ranking_leiden` with the
      configured runs per draw.

    With ``max_samples``, every draw is evaluated on the stratified subsample
    seeded by the master seed: the cells the methods are evaluated on.

    ``kwargs`` are the protocol function's keyword arguments
    (:func:`clustering_kwargs` or :func:`leiden_kwargs`, plus ``feature_grid``).
    Cost: ``n_draws`` evaluations of one ranking.
    """
    if protocol not in ("spectral", "leiden"):
        msg = f"protocol must be 'spectral' or 'leiden'; got {protocol!r}"
        raise ValueError(msg)
    n_draws = check_int(n_draws, "n_draws", 1)
    kwargs = dict(kwargs)
    seed = kwargs.pop("random_state", 0)
    X = check_X(X, read_only=True)
    _, y = check_labels(labels, X.shape[0])
    labels = np.asarray(labels)
    max_samples = kwargs.pop("max_samples", None)
    if max_samples is not None and max_samples < X.shape[0]:
        keep = stratified_subsample(y, int(max_samples), seed)
        log.info("random floor: %d samples; evaluating the stratified subsample of %d (max_samples)", X.shape[0], keep.size)
        X, labels = X[keep], labels[keep]
    if protocol == "spectral":
        kwargs["n_runs"] = 1
        evaluate = evaluate_ranking
    else:
        evaluate = evaluate_ranking_leiden
    records = []
    for i, (s, order) in enumerate(random_gene_orders(X.shape[1], n_draws, seed)):
        for r in evaluate(X, labels, order, random_state=int(s), **kwargs):
            records.append({**r, "draw": i})
    return records


def _import_singlecell():
    """(scanpy, anndata), or an ImportError that says what to install."""
    try:
        import anndata
        import igraph  # noqa: F401  (scanpy's flavor="igraph" Leiden)
        import scanpy
    except ImportError as exc:
        msg = f"{_SINGLECELL_HINT} (missing: {exc.name or exc})"
        raise ImportError(msg) from exc
    return scanpy, anndata


def _leiden_runs(sc, adata, seed: int, resolutions) -> list[np.ndarray]:
    """scanpy's Leiden on ``adata.obsp["connectivities"]`` at each resolution: the memberships.

    Exactly ``sc.tl.leiden(adata, resolution=r, flavor="igraph", n_iterations=2,
    directed=False, random_state=seed)`` for each r, with the igraph graph built once
    instead of once per call: scanpy's own ``get_igraph_from_adjacency`` and
    ``set_igraph_random_state``, then igraph's ``community_leiden`` with the arguments
    ``sc.tl.leiden`` passes it (modularity, edge weights, 2 iterations).  Building the
    graph was 40 % of a call's time at 2,100 cells.  Those two helpers are scanpy's
    private API: when they are missing (another scanpy version), each resolution goes
    through ``sc.tl.leiden`` itself.  tests/test_evaluate_leiden.py checks that both
    routes give the same partitions.
    """
    try:
        from scanpy._utils import get_igraph_from_adjacency
        from scanpy._utils.random import set_igraph_random_state
    except ImportError:
        out = []
        for resolution in resolutions:
            sc.tl.leiden(
                adata, resolution=resolution, flavor="igraph", n_iterations=2, directed=False,
                random_state=seed, key_added="_glfs_leiden",
            )
            out.append(np.asarray(adata.obs["_glfs_leiden"].cat.codes, dtype=np.int64))
        return out
    graph = get_igraph_from_adjacency(adata.obsp["connectivities"], directed=False)
    out = []
    for resolution in resolutions:
        with set_igraph_random_state(seed):
            part = graph.community_leiden(
                objective_function="modularity", weights="weight", resolution=resolution, n_iterations=2
            )
        out.append(np.asarray(part.membership, dtype=np.int64))
    return out


def _check_resolutions(resolutions) -> tuple[float, ...]:
    try:
        values = tuple(resolutions)
    except TypeError:
        msg = f"resolutions must be a non-empty sequence of positive numbers; got {resolutions!r}"
        raise ValueError(msg) from None
    if not values:
        msg = "resolutions must be a non-empty sequence of positive numbers; got an empty sequence"
        raise ValueError(msg)
    return tuple(check_positive(r, f"resolutions[{i}]") for i, r in enumerate(values))


def _leiden_record(sc, adata, embedding, y, k: int, run: int, seed: int, res, n_labels: int) -> dict:
    """One run of :func:`evaluate_ranking_leiden` at k genes: Leiden at every resolution (best and
    label-count resolutions) and k-means on the embedding, with seed ``seed``."""
    runs = [  # (ari, nmi, n_clusters) per resolution
        (float(adjusted_rand_score(y, pred)), nmi(y, pred), int(np.unique(pred).size))
        for pred in _leiden_runs(sc, adata, seed, res)
    ]
    ari = np.array([a for a, _, _ in runs])
    n_cl = np.array([c for _, _, c in runs])
    best = int(np.argmax(ari))  # first maximum: the smaller resolution on ties
    honest = int(np.argmin(np.abs(n_cl - n_labels)))  # first minimum likewise
    # one OpenMP thread: a small fit (n x n_pcs, a few clusters) that 2 threads slow down by
    # up to 100x on a busy machine (measured: 2 s instead of 0.01 s at 600 cells), and the
    # reduction order of the cluster sums then no longer depends on the thread schedule
    with threadpool_limits(limits=1, user_api="openmp"):
        km = kmeans_best_of(embedding, n_labels, n_init=10, random_state=seed)
    return {
        "n_features": k,
        "run": run,
        "seed": seed,
        "ari": runs[best][0],
        "nmi": runs[best][1],
        "resolution": res[best],
        "n_clusters": runs[best][2],
        "ari_nlabels": runs[honest][0],
        "nmi_nlabels": runs[honest][1],
        "resolution_nlabels": res[honest],
        "n_clusters_nlabels": runs[honest][2],
        "kmeans_ari": float(adjusted_rand_score(y, km)),
        "kmeans_nmi": nmi(y, km),
    }


def evaluate_ranking_leiden(
    X,
    labels,
    ranking,
    *,
    feature_grid=(200, 500, 1000, 2000, "all"),
    n_runs: int = 3,
    resolutions=LEIDEN_RESOLUTIONS,
    n_pcs: int = 50,
    n_neighbors: int = 15,
    random_state=0,
    max_samples: int | None = None,
) -> list[dict]:
    """Single-cell evaluation of one gene ranking: PCA, kNN graph, Leiden, against the cell types.

    The protocol a scanpy user runs on a gene selection (scanpy's standard
    workflow: ``normalize_total`` + ``log1p``, PCA with 50 components, 15-NN
    graph, Leiden), as in the feature-selection benchmark of Zappia et al.
    (Nat Methods 2025).  For each k in the grid: the top-k genes
    ``X[:, ranking[:k]]`` in a fresh AnnData (no ``var`` columns, so no
    ``highly_variable`` mask applies); ``sc.pp.pca`` with
    ``min(n_pcs, k - 1, n_samples - 1)`` components (ARPACK, seeded by the first
    run's seed; below 3 genes the genes themselves are the representation);
    ``sc.pp.neighbors`` with ``n_neighbors`` on it (UMAP connectivities).  The
    PCA and the graph do not depend on the run and are built once per k.  Then
    for each run r with seed s_r: ``sc.tl.leiden(flavor="igraph",
    n_iterations=2, directed=False, random_state=s_r)`` at every resolution
    (its igraph graph built once per k, :func:`_leiden_runs`),
    and scikit-learn ``KMeans(n_clusters=number of labels, n_init=10,
    random_state=s_r)`` on the principal components.

    Parameters
    ----------
    X : array-like or scipy.sparse of shape (n_samples, n_features)
        Log-normalised expression (cells x genes; e.g. ``sc.pp.normalize_total``
        then ``sc.pp.log1p``).  Only the top-k columns are copied, and they stay
        sparse when X is sparse (scanpy's PCA centres them implicitly).
    labels : array-like of shape (n_samples,)
        Known cell types.
    ranking : array-like of int, shape (n_features,)
        Gene indices, best first (``Selection.ranking``).
    feature_grid : sequence of int or "all", default (200, 500, 1000, 2000, "all")
        Gene counts k (:func:`resolve_feature_grid`: capped at n_features, distinct, ascending).
    n_runs : int, default 3
        Runs per k; run r uses seed ``run_seeds(random_state, n_runs)[r]``.
    resolutions : sequence of positive float, default ``LEIDEN_RESOLUTIONS``
        Leiden resolutions (0.2, 0.4, ..., 2.0).
    n_pcs : int, default 50
        Principal components (capped at k - 1 and n_samples - 1).
    n_neighbors : int, default 15
        Neighbours of the kNN graph (scanpy's default), >= 2.
    random_state : int
        Master seed.
    max_samples : int, optional
        Evaluate a seeded subsample of this many cells, stratified by label
        (:func:`stratified_subsample` seeded by ``random_state``, as
        :func:`evaluate_ranking` does).  Default None: all cells.

    Returns
    -------
    list of dict
        One record per (k, run), ``len(grid) * n_runs`` in all, with
        ``n_features, run, seed`` and

        - ``ari, nmi, resolution, n_clusters``: the Leiden clustering at the
          resolution with the highest ARI (first of the grid on ties).
          Choosing the resolution uses the labels, so this figure is
          optimistic: an upper bound of what an analyst gets;
        - ``ari_nlabels, nmi_nlabels, resolution_nlabels, n_clusters_nlabels``:
          the resolution whose number of clusters is closest to the number of
          labels (the smaller resolution index on ties); chosen without the
          labels' content, the honest figure;
        - ``kmeans_ari, kmeans_nmi``: k-means with as many clusters as labels
          on the principal components (on the genes below 3 genes).

        ARI is scikit-learn's ``adjusted_rand_score`` (1 = the labels' partition,
        0 = chance, can be negative); NMI is :func:`nmi` (arithmetic
        normalisation, 1 = identical).  Higher is better for both.

    Raises
    ------
    ImportError
        scanpy or igraph is missing (``pip install glfs[singlecell]``).

    Notes
    -----
    Cost per k: one truncated PCA of the (n_samples, k) matrix (ARPACK,
    O(n k n_pcs) per iteration), one exact kNN search on the PCs (scanpy's
    brute force below 8,192 cells: O(n^2 n_pcs) time in blocks) giving a sparse
    graph with O(n n_neighbors) entries, then ``n_runs * len(resolutions)``
    Leiden runs (about linear in the graph's edges) and ``n_runs`` k-means fits
    of 10 restarts (on one OpenMP thread).  Dense: the top-k columns when X
    is dense (n k floats) and the (n_samples, n_pcs) PCs; nothing n x n.
    Measured on 2,100 cells (mouse bladder, 16 cell types), 3 runs, 2 quiet cores
    (load about 1): 5.2 s for the 4 gene counts 200-2,000 of one ranking
    (6.9 s before the igraph graph was built once per k), about half of it the
    30 Leiden runs and a fifth the 30 k-means restarts; 9 s for all 20,670 genes
    (sparse); the first call in a process adds about 10 s (numba compiles umap's
    connectivities for scanpy).

    References
    ----------
    Traag, Waltman & van Eck, Sci Rep 2019 (Leiden).  Wolf, Angerer & Theis,
    Genome Biol 2018 (scanpy).  Zappia et al., Nat Methods 2025 (feature
    selection benchmark for single-cell integration and clustering).
    """
    X = check_X(X, read_only=True)
    n, d = X.shape
    _, y = check_labels(labels, n)
    ranking = np.asarray(ranking)
    if (
        ranking.shape != (d,)
        or ranking.dtype.kind not in "iuf"
        or not np.array_equal(np.sort(ranking), np.arange(d))
    ):
        msg = f"ranking must be a permutation of the {d} feature indices; got shape {ranking.shape}, dtype {ranking.dtype}"
        raise ValueError(msg)
    ranking = ranking.astype(np.int64)
    seeds = run_seeds(random_state, n_runs)
    grid = resolve_feature_grid(feature_grid, d)
    res = _check_resolutions(resolutions)
    n_pcs = check_int(n_pcs, "n_pcs", 1)
    n_neighbors = check_int(n_neighbors, "n_neighbors", 2)
    if max_samples is not None:
        max_samples = check_int(max_samples, "max_samples", 2)
    sc, anndata = _import_singlecell()
    if max_samples is not None and max_samples < n:
        keep = stratified_subsample(y, max_samples, random_state)
        log.info("evaluate_ranking_leiden: %d samples; evaluating a stratified subsample of %d (max_samples)", n, keep.size)
        X, y, n = X[keep], y[keep], keep.size
    n_labels = int(np.unique(y).size)
    seed0 = int(seeds[0])
    log.info(
        "evaluate_ranking_leiden: %d samples, %d labels, %d gene counts x %d runs x %d resolutions",
        n, n_labels, len(grid), len(seeds), len(res),
    )
    records = []
    t_start = time.perf_counter()
    with warnings.catch_warnings(), sc.settings.verbosity.override("error"):
        warnings.filterwarnings("ignore", category=anndata.ImplicitModificationWarning)
        warnings.filterwarnings("ignore", message="In the future, the default backend for leiden", category=FutureWarning)
        # scanpy's neighbors zeroes the diagonal of its sparse distances (scipy's note on a structure change)
        warnings.filterwarnings("ignore", category=sp.SparseEfficiencyWarning)
        for i_k, k in enumerate(grid):
            cols = ranking[:k]
            Xk = sp.csr_matrix(X[:, cols]) if sp.issparse(X) else np.array(X[:, cols], dtype=np.float64, order="C")
            adata = anndata.AnnData(Xk)
            if k >= LEIDEN_MIN_PCA_FEATURES:
                sc.pp.pca(
                    adata, n_comps=min(n_pcs, k - 1, n - 1), mask_var=None, svd_solver="arpack", random_state=seed0
                )
                rep = "X_pca"
            else:  # one or two genes: cluster on the genes themselves
                rep = "X_genes"
                adata.obsm[rep] = _as_dense(Xk)
            sc.pp.neighbors(adata, n_neighbors=n_neighbors, use_rep=rep, random_state=seed0)
            embedding = np.asarray(adata.obsm[rep], dtype=np.float64)
            records += [_leiden_record(sc, adata, embedding, y, k, r, int(s), res, n_labels) for r, s in enumerate(seeds)]
            last = records[-len(seeds) :]
            log.info(
                "evaluate_ranking_leiden: k=%d (%d/%d), mean ARI %.3f at the best resolution, %.3f at %d clusters, "
                "%.0f s elapsed",
                k,
                i_k + 1,
                len(grid),
                np.mean([x["ari"] for x in last]),
                np.mean([x["ari_nlabels"] for x in last]),
                n_labels,
                time.perf_counter() - t_start,
            )
    return records


# ---- supervised classification protocol (Wang & Goldenberg 2013, Table 3) -----------


def cv_splitter(y, n_folds: int = 10, random_state=0):
    """Stratified, shuffled, seeded K-fold; K capped at the smallest class size (>= 2)."""
    from sklearn.model_selection import StratifiedKFold

    _, counts = np.unique(np.asarray(y), return_counts=True)
    k = int(max(2, min(int(n_folds), int(counts.min()))))
    if k != n_folds:
        log.warning("cv_splitter: %d folds requested, smallest class has %d samples; using %d", n_folds, counts.min(), k)
    return StratifiedKFold(n_splits=k, shuffle=True, random_state=None if random_state is None else int(random_state))


class ElasticNetClassifier(ClassifierMixin, BaseEstimator):
    """Elastic net on a 0-1 coded response, class 1 when the fit exceeds 0.5.

    The classifier of Zou & Hastie (2005, Sec. 6) on the leukaemia data, whose
    row the GLFS paper quotes: scikit-learn ``ElasticNet`` (coordinate
    descent) on y in {0, 1}.  With more than two classes, one elastic net per
    class indicator (one-vs-rest) and the class with the largest fit wins.
    ``alpha``, ``l1_ratio``, ``tol``, ``max_iter`` as in ``ElasticNet``.
    Fitted attributes ``classes_``, ``coef_`` (n_classes or 1, n_features).
    X : array-like of shape (n_samples, n_features).
    """

    def __init__(self, alpha=0.1, l1_ratio=0.5, tol=1e-3, max_iter=5000):
        self.alpha = alpha
        self.l1_ratio = l1_ratio
        self.tol = tol
        self.max_iter = max_iter

    def fit(self, X, y):
        self.classes_, codes = np.unique(np.asarray(y), return_inverse=True)
        if self.classes_.size < 2:
            msg = f"y must have at least 2 classes; got {self.classes_.size}"
            raise ValueError(msg)
        targets = [1] if self.classes_.size == 2 else range(self.classes_.size)
        self.models_ = []
        with warnings.catch_warnings():
            warnings.filterwarnings("ignore", category=ConvergenceWarning)
            for c in targets:
                m = ElasticNet(alpha=self.alpha, l1_ratio=self.l1_ratio, tol=self.tol, max_iter=self.max_iter)
                self.models_.append(m.fit(X, (codes == c).astype(np.float64)))
        self.coef_ = np.vstack([m.coef_ for m in self.models_])
        return self

    def decision_function(self, X):
        F = np.column_stack([m.predict(X) for m in self.models_])
        return F[:, 0] - 0.5 if self.classes_.size == 2 else F

    def predict(self, X):
        f = self.decision_function(X)
        if self.classes_.size == 2:
            return self.classes_[(f > 0).astype(int)]
        return self.classes_[np.argmax(f, axis=1)]


def baseline_classifiers(cv, *, random_state=0) -> dict:
    """The supervised baselines of the paper's Table 3, each tuned by inner CV (GridSearchCV).

    - ``elastic_net``: standardise, :class:`ElasticNetClassifier` (the
      elastic net on a 0-1 response, as Zou & Hastie 2005, Sec. 6), grid over
      alpha and l1_ratio;
    - ``linear_svm``: standardise, linear SVM (LinearSVC), grid over C;
    - ``l2_logistic``: standardise, L2 logistic regression, grid over C;
    - ``nearest_shrunken_centroids``: scikit-learn NearestCentroid with a
      grid over ``shrink_threshold`` (Tibshirani et al. 2002).

    Hyper-parameters are chosen by accuracy over the folds of ``cv``; every
    grid is ordered from the strongest regularisation to the weakest, so ties
    (common with 38 training samples) go to the sparsest / most regularised
    model, the usual "simplest model within the best CV error" choice.  Returns a dict
    name -> unfitted estimator.
    """
    from sklearn.linear_model import LogisticRegression
    from sklearn.model_selection import GridSearchCV
    from sklearn.neighbors import NearestCentroid
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler
    from sklearn.svm import LinearSVC

    rs = None if random_state is None else int(random_state)
    grids = {
        "elastic_net": (
            make_pipeline(StandardScaler(), ElasticNetClassifier()),
            {
                "elasticnetclassifier__alpha": np.logspace(0, -2, 5).tolist(),
                "elasticnetclassifier__l1_ratio": [0.2, 0.5, 0.8],
            },
        ),
        "linear_svm": (
            make_pipeline(StandardScaler(), LinearSVC(max_iter=20000, random_state=rs)),
            {"linearsvc__C": np.logspace(-5, 0, 6).tolist()},
        ),
        "l2_logistic": (
            make_pipeline(StandardScaler(), LogisticRegression(max_iter=5000)),
            {"logisticregression__C": np.logspace(-5, 0, 6).tolist()},
        ),
        "nearest_shrunken_centroids": (
            NearestCentroid(),
            {"shrink_threshold": [6.0, 5.0, 4.0, 3.0, 2.0, 1.0, 0.5, None]},
        ),
    }
    return {name: GridSearchCV(est, grid, cv=cv, scoring="accuracy", refit=True) for name, (est, grid) in grids.items()}


def n_genes_used(estimator, n_features: int) -> int:
    """Number of genes a fitted classifier uses.

    Linear models: genes with a non-zero coefficient.  Nearest centroids:
    genes whose (shrunken) class centroids are not all equal.  Feature
    selectors (``get_support``): the support size.  Otherwise ``n_features``.
    """
    est = getattr(estimator, "best_estimator_", estimator)
    if hasattr(est, "steps"):
        est = est.steps[-1][1]
    if hasattr(est, "get_support"):
        return int(np.sum(est.get_support()))
    for attr in ("n_selected_", "n_genes_"):
        if hasattr(est, attr):
            return int(getattr(est, attr))
    if hasattr(est, "coef_"):
        coef = np.atleast_2d(np.asarray(est.coef_))
        return int(np.sum(np.any(coef != 0, axis=0)))
    if hasattr(est, "centroids_"):
        c = np.asarray(est.centroids_)
        return int(np.sum(np.ptp(c, axis=0) > 0))
    return int(n_features)


def _fixed_estimator(fitted):
    """Clone of a fitted estimator with its tuned hyper-parameters frozen (for the CV error)."""
    from sklearn.base import clone

    if hasattr(fitted, "best_estimator_"):
        return clone(fitted.best_estimator_)
    est = clone(fitted)
    params = est.get_params(deep=False)
    # estimators that tune lam internally expose the chosen value as lam_
    if "lam" in params and hasattr(fitted, "lam_"):
        est.set_params(lam=fitted.lam_)
    return est


def evaluate_classifier(estimator, X_train, y_train, X_test, y_test, *, cv) -> dict:
    """Train/test protocol of Wang & Goldenberg 2013, Table 3, for one classifier.

    The estimator (which tunes its own hyper-parameters on the training set,
    e.g. GridSearchCV or GLFSClassifier) is fitted on the training samples
    only and tested once on the test samples.  The CV error is the number of
    training samples misclassified by ``cv``-fold cross-validation of the
    estimator with its tuned hyper-parameters frozen (the convention of Zou &
    Hastie 2005 whose rows the paper quotes; it is optimistic, because the
    hyper-parameters were chosen on the same folds).  An estimator that tunes
    ``lam`` by its own CV and exposes ``lams_``, ``lam_`` and ``cv_errors_``
    (GLFSClassifier) reports its CV errors at the chosen lam instead, which is
    the same quantity without refitting.

    X_train, X_test : array-like of shape (n_samples, n_features).

    Returns
    -------
    dict with ``cv_errors, cv_n, test_errors, test_n, n_genes`` and ``params``
    (the tuned hyper-parameters).  Fewer errors is better.
    """
    from sklearn.model_selection import cross_val_predict

    X_train = _as_dense(check_X(X_train, name="X_train"))
    X_test = _as_dense(check_X(X_test, name="X_test"))
    y_train = np.asarray(y_train)
    y_test = np.asarray(y_test)
    if X_train.shape[1] != X_test.shape[1]:
        msg = f"X_train and X_test must have the same genes; got {X_train.shape[1]} and {X_test.shape[1]}"
        raise ValueError(msg)
    fitted = estimator.fit(X_train, y_train)
    test_pred = fitted.predict(X_test)
    if hasattr(fitted, "cv_errors_") and hasattr(fitted, "lam_") and hasattr(fitted, "lams_"):
        # estimators that tune lam by their own CV report the errors per lam (GLFSClassifier)
        at = np.flatnonzero(np.asarray(fitted.lams_) == fitted.lam_)
        cv_errors = int(np.asarray(fitted.cv_errors_)[at[0]]) if at.size else None
    else:
        cv_errors = None
    if cv_errors is None:
        cv_pred = cross_val_predict(_fixed_estimator(fitted), X_train, y_train, cv=cv)
        cv_errors = int(np.sum(cv_pred != y_train))
    params = getattr(fitted, "best_params_", None)
    if params is None and hasattr(fitted, "lam_"):
        params = {"lam": fitted.lam_}
    return {
        "cv_errors": cv_errors,
        "cv_n": int(y_train.size),
        "test_errors": int(np.sum(test_pred != y_test)),
        "test_n": int(y_test.size),
        "n_genes": n_genes_used(fitted, X_train.shape[1]),
        "params": {k: (v.item() if isinstance(v, np.generic) else v) for k, v in (params or {}).items()},
    }
