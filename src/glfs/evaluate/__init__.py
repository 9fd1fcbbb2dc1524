"""Evaluation of gene selections: clustering agreement, nearest-neighbour accuracy, classification.

X is always (n_samples, n_features) = (patients or cells, genes); pure functions of arrays, no file I/O.
The protocols (docs/methods/evaluation.md) live in :mod:`glfs.evaluate._clustering` (NMI, ACC, spectral clustering and
leave-one-out 1-NN on the bulk data, Wang & Goldenberg 2013 Sec. 3.3 and He et al. 2011 Sec. 7.2),
:mod:`glfs.evaluate._leiden` (the single-cell protocol of scanpy users: PCA, 15-NN graph, Leiden over a
resolution grid, ARI and NMI; scanpy imported lazily) and :mod:`glfs.evaluate._classify` (the Table 3
classification protocol and its random-genes floor).

This module is the public face of the evaluation: it re-exports the names of
:mod:`glfs.evaluate._clustering` (metrics, spectral clustering, :func:`evaluate_ranking`),
:mod:`glfs.evaluate._leiden` (:func:`evaluate_ranking_leiden`) and :mod:`glfs.evaluate._classify`
(the classification protocol), and holds the random-genes floor, which runs
either clustering protocol (:func:`random_gene_orders`, :func:`evaluate_random_floor`).
The protocols' defaults are their signatures' (the workflow's config schema repeats them, checked by a test).
"""

from __future__ import annotations

import logging

import numpy as np

from glfs.core._validation import check_int, check_labels, check_X
from glfs.evaluate import _classify, _clustering, _leiden, _mixing
from glfs.evaluate._classify import (
    ElasticNetClassifier,
    baseline_classifiers,
    cv_splitter,
    evaluate_classifier,
    laprls_random_floor,
    n_genes_used,
)
from glfs.evaluate._clustering import (
    ARPACK_MAX_SAMPLES,
    EIGEN_SOLVERS,
    EIGEN_TOL,
    clustering_accuracy,
    evaluate_ranking,
    kmeans_best_of,
    knn_affinity,
    loo_1nn_accuracy,
    nmi,
    nmi_max,
    resolve_eigen_solver,
    resolve_feature_grid,
    run_seeds,
    spectral_cluster,
    spectral_cluster_runs,
    stratified_subsample,
)
from glfs.evaluate._leiden import (
    LABEL_COUNT_TOLERANCE,
    LEIDEN_MIN_PCA_FEATURES,
    LEIDEN_RESOLUTIONS,
    best_match_f1,
    evaluate_ranking_leiden,
    rare_type_f1,
    rare_types,
)
from glfs.evaluate._mixing import knn_batch_mixing

log = logging.getLogger(__name__)

#: The names of the four protocol modules (their ``__all__``, imported by name above) and the floor's.
__all__ = [
    *_clustering.__all__,
    *_leiden.__all__,
    *_mixing.__all__,
    *_classify.__all__,
    "random_gene_orders",
    "evaluate_random_floor",
]


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

    ``kwargs`` are the protocol function's keyword arguments (``feature_grid`` included).
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
        log.info(
            "random floor: %d samples; evaluating the stratified subsample of %d (max_samples)", X.shape[0], keep.size
        )
        X, labels = X[keep], labels[keep]
        if kwargs.get("batches") is not None:
            kwargs["batches"] = np.asarray(kwargs["batches"])[keep]
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
