"""The single-cell evaluation of a gene ranking: PCA, kNN graph and Leiden (scanpy), against the cell types.

X is always (n_samples, n_features) = (cells, genes).  The protocol of scanpy
users (:func:`evaluate_ranking_leiden`): PCA, 15-NN graph and Leiden over a
resolution grid, ARI and NMI against the cell types (Zappia et al., Nat
Methods 2025); see docs/methods/evaluation.md.  It imports scanpy lazily.  The public
names are re-exported by :mod:`glfs.evaluate`.
"""

from __future__ import annotations

import contextlib
import logging
import sys
import time
import warnings

import numpy as np
import scipy.sparse as sp
from sklearn.metrics import adjusted_rand_score
from sklearn.metrics.cluster import contingency_matrix
from threadpoolctl import threadpool_limits

from glfs.core._validation import check_int, check_labels, check_positive, check_X
from glfs.evaluate._clustering import (
    _as_dense,
    kmeans_best_of,
    nmi,
    resolve_feature_grid,
    run_seeds,
    stratified_subsample,
)
from glfs.evaluate._mixing import knn_batch_mixing

log = logging.getLogger(__name__)

# Leiden resolutions of the single-cell protocol (evaluate_ranking_leiden): 0.2 to 2.0 in steps
# of 0.2, a grid around scanpy's default resolution of 1 (issue 17).  The protocol reports the
# ARI-best resolution of this grid and the one whose cluster count is closest to the labels'.
LEIDEN_RESOLUTIONS = (0.2, 0.4, 0.6, 0.8, 1.0, 1.2, 1.4, 1.6, 1.8, 2.0)
# Below this many genes the single-cell protocol clusters on the genes themselves (no PCA).
LEIDEN_MIN_PCA_FEATURES = 3
_SINGLECELL_HINT = "the Leiden evaluation needs scanpy, leidenalg and igraph: pip install glfs[singlecell]"

__all__ = [
    "LABEL_COUNT_TOLERANCE",
    "LEIDEN_RESOLUTIONS",
    "LEIDEN_MIN_PCA_FEATURES",
    "evaluate_ranking_leiden",
    "best_match_f1",
    "rare_type_f1",
    "rare_types",
]


def _import_singlecell():
    """(scanpy, anndata), or an ImportError that says what to install."""
    try:
        import anndata
        import igraph  # noqa: F401  (scanpy's flavor="igraph" Leiden)
        import scanpy
    except ImportError as exc:
        msg = f"{_SINGLECELL_HINT} (missing: {exc.name or exc})"
        raise ImportError(msg) from exc
    _cache_umap_kernels()
    return scanpy, anndata


# The two numba kernels of umap that scanpy's neighbors calls for its connectivities.  numba
# compiles them at their first call in every process (a tenth of a workflow job's time:
# studies/evaluation-cost.md); with numba's on-disk cache (``enable_caching``: the machine
# code of that same compilation, stored beside umap's source or in numba's user cache) later
# processes load them instead.
_UMAP_KERNELS = ("smooth_knn_dist", "compute_membership_strengths")


def _cache_umap_kernels() -> None:
    """Turn on numba's on-disk cache for :data:`_UMAP_KERNELS` (nothing when umap or a kernel is missing)."""
    _import_pynndescent_cached()
    try:
        import umap.umap_ as umap_module
    except ImportError:
        return
    for name in _UMAP_KERNELS:
        kernel = getattr(umap_module, name, None)
        try:
            kernel.enable_caching()
        except (AttributeError, RuntimeError) as exc:  # not a numba dispatcher, or no writable cache place
            log.debug("umap's %s is compiled in each process: %s", name, exc)


# umap imports pynndescent, whose module bodies compile about 80 numba kernels for their given signatures
# (``@numba.njit([...])``, without numba's disk cache): 10-13 CPU s in every process that imports umap,
# though scanpy's neighbors use none of them below 8,192 cells.  Imported with ``cache=True`` added to
# those decorators, later processes load the same machine code from numba's cache (1.9 CPU s).
_CACHED_PACKAGE = "pynndescent"


def _import_pynndescent_cached() -> None:
    """Import pynndescent with numba's disk cache on for the kernels its modules compile at import.

    While pynndescent's modules run, ``numba.njit`` called from them gets ``cache=True`` (the
    compilation is numba's own, stored and loaded by numba; nothing else changes).  A kernel numba
    cannot cache (no writable cache place) is compiled as before.  Nothing when pynndescent is
    already imported or missing.
    """
    if _CACHED_PACKAGE in sys.modules:
        return
    try:
        import numba
    except ImportError:
        return
    plain = numba.njit

    def njit(*args, **kwargs):
        caller = sys._getframe(1).f_globals.get("__name__", "")
        if caller.partition(".")[0] != _CACHED_PACKAGE or "cache" in kwargs:
            return plain(*args, **kwargs)
        if len(args) == 1 and callable(args[0]):  # the bare @numba.njit
            return _cached_or_plain(plain, args[0], (), kwargs)
        return lambda func: _cached_or_plain(plain, func, args, kwargs)

    numba.njit = njit
    try:
        import pynndescent  # noqa: F401
    except ImportError:
        pass
    finally:
        numba.njit = plain


def _cached_or_plain(njit, func, args, kwargs):
    """``njit(*args, cache=True, **kwargs)(func)``, or without the cache when numba has no place for it."""
    try:
        return njit(*args, cache=True, **kwargs)(func)
    except RuntimeError as exc:  # numba: "cannot cache function ...: no locator available"
        log.debug("pynndescent's %s is compiled in each process: %s", getattr(func, "__name__", func), exc)
        return njit(*args, **kwargs)(func)


def _leiden_graph(adata):
    """scanpy's igraph graph of ``adata.obsp["connectivities"]`` (``get_igraph_from_adjacency``), or None
    when that private helper or ``set_igraph_random_state`` is missing (another scanpy version)."""
    try:
        from scanpy._utils import get_igraph_from_adjacency
        from scanpy._utils.random import set_igraph_random_state  # noqa: F401  (used by _leiden_runs)
    except ImportError:
        return None
    return get_igraph_from_adjacency(adata.obsp["connectivities"], directed=False)


def _leiden_runs(sc, adata, seed: int, resolutions, graph=None) -> list[np.ndarray]:
    """scanpy's Leiden on ``adata.obsp["connectivities"]`` at each resolution: the memberships.

    Exactly ``sc.tl.leiden(adata, resolution=r, flavor="igraph", n_iterations=2,
    directed=False, random_state=seed)`` for each r, with the igraph graph built once
    (``graph``, :func:`_leiden_graph`: built here when None) instead of once per call, and
    igraph's ``community_leiden`` called with the arguments ``sc.tl.leiden`` passes it
    (modularity, edge weights, 2 iterations) under scanpy's ``set_igraph_random_state(seed)``.  Building
    the graph was 40 % of a call's time at 2,100 cells.  When scanpy's private helpers are
    missing (another scanpy version), each resolution goes through ``sc.tl.leiden`` itself.
    tests/evaluate/test_evaluate_leiden.py checks that both routes give the same partitions.
    """
    graph = _leiden_graph(adata) if graph is None else graph
    if graph is None:
        out = []
        for resolution in resolutions:
            sc.tl.leiden(
                adata,
                resolution=resolution,
                flavor="igraph",
                n_iterations=2,
                directed=False,
                random_state=seed,
                key_added="_glfs_leiden",
            )
            out.append(np.asarray(adata.obs["_glfs_leiden"].cat.codes, dtype=np.int64))
        return out
    from scanpy._utils.random import set_igraph_random_state

    def leiden(resolution):
        return graph.community_leiden(
            objective_function="modularity", weights="weight", resolution=resolution, n_iterations=2
        ).membership

    out = []
    for resolution in resolutions:
        with set_igraph_random_state(seed):
            membership = leiden(resolution)
        out.append(np.asarray(membership, dtype=np.int64))
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


def _leiden_record(sc, adata, graph, embedding, y, k: int, run: int, seed: int, res, n_labels: int) -> dict:
    """One run of :func:`evaluate_ranking_leiden` at k genes: Leiden at every resolution on ``graph``
    (:func:`_leiden_graph`, built once per k; best and label-count resolutions) and k-means on the
    embedding, with seed ``seed``."""
    preds = _leiden_runs(sc, adata, seed, res, graph=graph)
    ari = np.array([float(adjusted_rand_score(y, pred)) for pred in preds])
    n_cl = np.array([int(np.unique(pred).size) for pred in preds])
    best = int(np.argmax(ari))  # first maximum: the smaller resolution on ties
    honest = int(np.argmin(np.abs(n_cl - n_labels)))  # first minimum likewise
    # NMI only where it is reported (best and label-count resolutions), each computed once
    nmis = {i: nmi(y, preds[i]) for i in sorted({best, honest})}
    runs = {i: (float(ari[i]), nmis[i], int(n_cl[i])) for i in nmis}  # (ari, nmi, n_clusters)
    rare = {i: rare_type_f1(y, preds[i]) for i in nmis}
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
        "nlabels_reached": label_count_reached(runs[honest][2], n_labels),
        "rare_f1": rare[best],
        "rare_f1_nlabels": rare[honest],
        "kmeans_ari": float(adjusted_rand_score(y, km)),
        "kmeans_nmi": nmi(y, km),
    }


def best_match_f1(labels, clusters) -> dict:
    """Per label, the F1 of the cluster that matches it best.

    For label ``t`` with cells L and cluster ``c`` with cells C, ``F1 = 2 |L & C| / (|L| + |C|)`` (the harmonic
    mean of the cluster's precision and recall for the label); the label's value is the maximum over the
    clusters.  1 = one cluster holds exactly the label's cells; a type split evenly in two clusters of its
    own gets 2/3; a type merged into a cluster k times its size gets 2 / (1 + k).

    Parameters
    ----------
    labels, clusters : array-like of shape (n_samples,)
        Known labels and cluster memberships.

    Returns
    -------
    dict
        label -> F1 (float in [0, 1]), in the order of ``np.unique(labels)``.

    Notes
    -----
    Cost: the sparse label x cluster contingency table (scikit-learn's ``contingency_matrix``), O(n_samples)
    time and O(n_labels * n_clusters) memory at most.
    """
    labels, clusters = np.asarray(labels), np.asarray(clusters)
    if labels.shape != clusters.shape or labels.ndim != 1:
        msg = f"labels and clusters must be 1-d of the same length; got shapes {labels.shape} and {clusters.shape}"
        raise ValueError(msg)
    names = np.unique(labels)
    table = contingency_matrix(labels, clusters, sparse=True).tocoo()
    label_size = np.asarray(table.sum(axis=1)).ravel()
    cluster_size = np.asarray(table.sum(axis=0)).ravel()
    f1 = 2.0 * table.data / (label_size[table.row] + cluster_size[table.col])
    best = np.zeros(names.size)
    np.maximum.at(best, table.row, f1)
    return {name: float(v) for name, v in zip(names.tolist(), best)}


def rare_types(labels) -> list:
    """The smallest cell types of ``labels``: the ``max(1, n_types // 2)`` types with the fewest cells.

    The smaller half of the types (at least one): the types below the median type, in size.  Half rather
    than a fixed number, so that a panel
    of 4 types and one of 16 both weigh the smaller half of their populations; at least one, so that a
    two-type set still has a rare type.  Ties in size are taken in the order of ``np.unique(labels)``.
    """
    names, counts = np.unique(np.asarray(labels), return_counts=True)
    order = np.argsort(counts, kind="stable")
    return names[order[: max(1, names.size // 2)]].tolist()


def rare_type_f1(labels, clusters) -> float:
    """The mean over :func:`rare_types` of :func:`best_match_f1`: how well the smallest types are found.

    The adjusted Rand index counts pairs of cells, so a type's weight grows with the square of its size
    and the small types barely move it; this measure weighs each of the smaller half of the types equally.
    Higher is better, 1 = each rare type is exactly one cluster.
    """
    f1 = best_match_f1(labels, clusters)
    return float(np.mean([f1[t] for t in rare_types(labels)]))


def _graph_at_k(sc, anndata, X, cols, n_pcs, n_neighbors, seed0):
    """(AnnData of the genes ``cols`` with its PCA and kNN graph, the embedding) of :func:`evaluate_ranking_leiden`."""
    n, k = X.shape[0], len(cols)
    Xk = sp.csr_matrix(X[:, cols]) if sp.issparse(X) else np.array(X[:, cols], dtype=np.float64, order="C")
    adata = anndata.AnnData(Xk)
    if k >= LEIDEN_MIN_PCA_FEATURES:
        sc.pp.pca(adata, n_comps=min(n_pcs, k - 1, n - 1), mask_var=None, svd_solver="arpack", random_state=seed0)
        rep = "X_pca"
    else:  # one or two genes: cluster on the genes themselves
        rep = "X_genes"
        adata.obsm[rep] = _as_dense(Xk)
    sc.pp.neighbors(adata, n_neighbors=n_neighbors, use_rep=rep, random_state=seed0)
    return adata, np.asarray(adata.obsm[rep], dtype=np.float64)


#: How near the label count the clusters of the "label count" resolution must come for its figure to be
#: "at the label count" (``nlabels_reached``): within 20 % of the labels, and at least 1 cluster either way.
LABEL_COUNT_TOLERANCE = 0.2


def label_count_reached(n_clusters: int, n_labels: int) -> bool:
    """Whether ``n_clusters`` is within :data:`LABEL_COUNT_TOLERANCE` of ``n_labels`` (at least 1 either way)."""
    return bool(abs(int(n_clusters) - int(n_labels)) <= max(1, round(LABEL_COUNT_TOLERANCE * n_labels)))


def _log_progress(last, k, i_k, n_k, n_labels, elapsed) -> None:
    """One line per gene count: the ARIs and the cluster count actually reached at the "label count"
    resolution; a warning when a run never came near the label count (its figure is not at it)."""
    reached = [x["nlabels_reached"] for x in last]
    counts = [x["n_clusters_nlabels"] for x in last]
    log.info(
        "evaluate_ranking_leiden: k=%d (%d/%d), mean ARI %.3f at the best resolution, %.3f at the resolution nearest "
        "the %d labels (%.1f clusters on average, %d-%d), %.0f s elapsed",
        k,
        i_k + 1,
        n_k,
        np.mean([x["ari"] for x in last]),
        np.mean([x["ari_nlabels"] for x in last]),
        n_labels,
        np.mean(counts),
        min(counts),
        max(counts),
        elapsed,
    )
    if not all(reached):
        log.warning(
            "evaluate_ranking_leiden: k=%d: in %d of %d runs no resolution of the grid came within %d clusters of "
            "the %d labels (%s clusters at the nearest); ari_nlabels there is not at the label count "
            "(nlabels_reached = False in the table): widen the resolutions",
            k,
            reached.count(False),
            len(reached),
            max(1, round(LABEL_COUNT_TOLERANCE * n_labels)),
            n_labels,
            sorted(set(counts)),
        )


def evaluate_ranking_leiden(
    X,
    labels,
    ranking,
    *,
    feature_grid=(200, 500, 1000, 2000),
    n_runs: int = 3,
    resolutions=LEIDEN_RESOLUTIONS,
    n_pcs: int = 50,
    n_neighbors: int = 15,
    random_state=0,
    max_samples: int | None = None,
    batches=None,
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
    feature_grid : sequence of int or "all", default (200, 500, 1000, 2000)
        Gene counts k (:func:`resolve_feature_grid`: capped at n_features, distinct, ascending); the
        workflow's default (its config schema repeats it).  ``"all"`` adds all genes, the same set for
        every ranking (the workflow evaluates it once, beside the random-genes floor).
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
    batches : array-like of shape (n_samples,), optional
        Batch labels (donors, samples): each record then also has ``batch_mixing``, how well the
        evaluation's kNN graph at k genes mixes the batches within each cell type
        (:func:`glfs.evaluate._mixing.knn_batch_mixing` on ``obsp["distances"]``; 1 = as mixed as
        each type's batches, 0 = every cell's same-type neighbours of its own batch; the same
        for every run at k).

    Returns
    -------
    list of dict
        One record per (k, run), ``len(grid) * n_runs`` in all, with
        ``n_features, run, seed`` and

        - ``ari, nmi, resolution, n_clusters``: the Leiden clustering at the
          resolution with the highest ARI (first of the grid on ties).
          Choosing the resolution uses the labels, so this figure is
          optimistic: an upper bound of what an analyst gets;
        - ``nlabels_reached``: whether ``n_clusters_nlabels`` came within
          :data:`LABEL_COUNT_TOLERANCE` (20 %, at least 1) of the number of labels;
          when False, the ``*_nlabels`` figures are not at the label count (the
          grid never came near it; a warning says so).
        - ``ari_nlabels, nmi_nlabels, resolution_nlabels, n_clusters_nlabels``:
          the resolution whose number of clusters is closest to the number of
          labels (the smaller resolution index on ties); chosen without the
          labels' content, the honest figure;
        - ``kmeans_ari, kmeans_nmi``: k-means with as many clusters as labels
          on the principal components (on the genes below 3 genes);
        - ``rare_f1, rare_f1_nlabels``: :func:`rare_type_f1` of the Leiden clustering at the best and at
          the label-count resolution: per type of the smaller half (:func:`rare_types`), the F1 of its
          best-matching cluster, averaged.  The ARIs are dominated by the largest populations; the choice
          of genes matters most for the small ones (Zappia et al. 2025).

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
    (6.9 s before the igraph graph was shared across resolutions), about half of it the
    30 Leiden runs and a fifth the 30 k-means restarts; 9 s for all 20,670 genes
    (sparse); the first call in a process adds the import of scanpy and umap: about 10-20 s
    where numba compiles pynndescent's and umap's kernels (the first process after an install),
    a few seconds where it loads them from its disk cache (:func:`_import_pynndescent_cached`).
    Sharing the graph across runs and NMI at the two reported resolutions only: old/new in
    studies/evaluation-cost.md.

    References
    ----------
    Traag, Waltman & van Eck, Sci Rep 2019 (Leiden).  Wolf, Angerer & Theis,
    Genome Biol 2018 (scanpy).  Zappia et al., Nat Methods 2025 (feature
    selection benchmark for single-cell integration and clustering).
    """
    X = check_X(X, read_only=True)
    n, d = X.shape
    _, y = check_labels(labels, n)
    if batches is not None:
        check_labels(batches, n, name="batches", min_classes=1)
    ranking = _check_ranking(ranking, d)
    seeds = run_seeds(random_state, n_runs)
    grid = resolve_feature_grid(feature_grid, d)
    res = _check_resolutions(resolutions)
    n_pcs = check_int(n_pcs, "n_pcs", 1)
    n_neighbors = check_int(n_neighbors, "n_neighbors", 2)
    if max_samples is not None:
        max_samples = check_int(max_samples, "max_samples", 2)
    sc, anndata = _import_singlecell()
    X, y, batches = _subsample(X, y, batches, max_samples, random_state)
    n_labels = int(np.unique(y).size)
    log.info(
        "evaluate_ranking_leiden: %d samples, %d labels, %d gene counts x %d runs x %d resolutions",
        X.shape[0],
        n_labels,
        len(grid),
        len(seeds),
        len(res),
    )
    records = []
    t_start = time.perf_counter()
    with _scanpy_quiet(sc, anndata):
        for i_k, k in enumerate(grid):
            adata, embedding = _graph_at_k(sc, anndata, X, ranking[:k], n_pcs, n_neighbors, int(seeds[0]))
            mixing = (
                {}
                if batches is None
                else {"batch_mixing": knn_batch_mixing(adata.obsp["distances"], y, batches)["batch_mixing"]}
            )
            graph = _leiden_graph(adata)  # one igraph graph for every run and resolution at k
            records += [
                {**_leiden_record(sc, adata, graph, embedding, y, k, r, int(s), res, n_labels), **mixing}
                for r, s in enumerate(seeds)
            ]
            _log_progress(records[-len(seeds) :], k, i_k, len(grid), n_labels, time.perf_counter() - t_start)
    return records


def _check_ranking(ranking, d: int) -> np.ndarray:
    """``ranking`` as int64 (d,), or a ValueError when it is not a permutation of the d feature indices."""
    ranking = np.asarray(ranking)
    if ranking.shape != (d,) or ranking.dtype.kind not in "iuf" or not np.array_equal(np.sort(ranking), np.arange(d)):
        msg = f"ranking must be a permutation of the {d} feature indices; got shape {ranking.shape}, dtype {ranking.dtype}"
        raise ValueError(msg)
    return ranking.astype(np.int64)


def _subsample(X, y, batches, max_samples, random_state):
    """(X, y, batches) of the stratified subsample of ``max_samples`` cells, or as given (all cells)."""
    n = X.shape[0]
    if max_samples is None or max_samples >= n:
        return X, y, batches
    keep = stratified_subsample(y, max_samples, random_state)
    log.info("evaluate_ranking_leiden: %d samples; evaluating a stratified subsample of %d (max_samples)", n, keep.size)
    return X[keep], y[keep], None if batches is None else np.asarray(batches)[keep]


@contextlib.contextmanager
def _scanpy_quiet(sc, anndata):
    """scanpy's messages and the warnings of its steps that say nothing about the evaluation, silenced."""
    with warnings.catch_warnings(), sc.settings.verbosity.override("error"):
        warnings.filterwarnings("ignore", category=anndata.ImplicitModificationWarning)
        warnings.filterwarnings(
            "ignore", message="In the future, the default backend for leiden", category=FutureWarning
        )
        # scanpy's neighbors zeroes the diagonal of its sparse distances (scipy's note on a structure change)
        warnings.filterwarnings("ignore", category=sp.SparseEfficiencyWarning)
        yield
