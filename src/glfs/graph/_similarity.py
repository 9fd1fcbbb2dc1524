"""Patient-similarity graphs over samples, always sparse CSR.

X has shape (n_samples, n_features).  Every graph here is (n_samples, n_samples),
symmetric, non-negative, stored as CSR with O(n * n_neighbors) non-zeros; no
function here builds an n x n dense array.  The neighbour search behind
:func:`similarity_graph` is in :mod:`glfs.graph._neighbors`; its public names are
re-exported here (``glfs.graph._similarity.nearest_neighbors`` etc. keep working).
"""

from __future__ import annotations

import inspect
import logging
from types import MappingProxyType

import numpy as np
import scipy.sparse as sp

from glfs.core._out_of_core import OutOfCore, out_of_core_kind
from glfs.core._validation import check_graph, check_labels, check_real, check_X
from glfs.graph._neighbors import (  # noqa: F401  (public names re-exported: glfs.graph._similarity.<name> keeps working)
    APPROX_N_PCS,
    AUTO_APPROX_MIN_SAMPLES,
    AUTO_INDEX_MIN_SAMPLES,
    AUTO_NNDESCENT_MIN_SAMPLES,
    IVF_NLIST_PER_SQRT_N,
    IVF_NPROBE,
    IVF_NPROBE_PER_SQRT_NLIST,
    NEIGHBOR_METHODS,
    _neighbors,
    approx_backend,
    choose_neighbor_method,
    exact_backend,
    ivf_nprobe,
    nearest_neighbors,
)

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
    "AUTO_NNDESCENT_MIN_SAMPLES",
    "approx_backend",
    "DEFAULT_GRAPH_PARAMS",
]

KERNELS = ("binary", "heat", "cosine", "snf")


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
    batches=None,
):
    """Symmetrised k-nearest-neighbour patient-similarity graph.

    Parameters
    ----------
    X : array-like or sparse of shape (n_samples, n_features)
        Samples in rows (patients or cells), genes in columns.  An out-of-core
        X (an AnnData backed matrix, ``read_h5ad(f, backed="r").X``, or a dask
        array) gets the graph the in-memory X would get (the rule reads the size and settings, never
        the storage; the settings are recorded by :func:`glfs.tl.graph_settings`): below 8,192 samples it is
        read into memory and searched as such; from 8,192 on its principal components are fitted on a
        seeded subsample of at most ``glfs.graph._neighbors.PCA_FIT_SAMPLES`` samples and every sample is
        projected on them (two passes), as for an in-memory X, whose components come by the same route.
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
        ``method="exact"``, 20 components otherwise (``APPROX_N_PCS``, when X has
        more than 20 genes; scanpy's default is 50: studies/graph-20-pcs.md, "The own
        graph on 20 principal components").
    method : {"auto", "exact", "approx"}, default "auto"
        Neighbour search.  ``"exact"``: exact search on all genes
        (scikit-learn ``NearestNeighbors``), or on ``n_pcs`` components when
        given.  ``"approx"``: an approximate index on ``n_pcs`` principal
        components in float32: faiss' inverted-file index (``IndexIVFFlat``,
        sqrt(n) k-means cells, 13 probed on 20 components up to a million
        samples: ``ivf_nprobe``) when faiss-cpu is installed
        (``pip install glfs[scale]``), else the NN-descent index of
        pynndescent (Dong et al., WWW 2011).  ``"auto"`` (default): exact on
        all genes below 8192 samples (``AUTO_APPROX_MIN_SAMPLES``; the
        threshold of scanpy's ``pp.neighbors``), exact on 20 principal
        components from there on (float32 brute force with faiss-cpu if
        installed, else scikit-learn), and faiss' IVF index on them from
        30,000 samples on (``AUTO_INDEX_MIN_SAMPLES``) with faiss-cpu, or
        pynndescent from 200,000 on without it (``AUTO_NNDESCENT_MIN_SAMPLES``),
        see :func:`choose_neighbor_method`.  Bulk cohorts (hundreds to a few
        thousand patients) always get the exact graph on all genes.  The
        approximate search supports ``metric`` "euclidean" and "cosine" only.
    random_state : int, optional
        Seed of the randomized SVD and of the approximate index (faiss'
        k-means, or NN-descent): the graph is deterministic given
        ``random_state`` (the exact search is exact, faiss' k-means and
        search do not depend on the thread count, and NN-descent runs
        single-threaded).  None: not reproducible.
    batches : array-like of length n_samples, optional
        One batch label per sample (scanpy's ``batch_key``): the graph joins
        samples of the same batch only.  The representation is shared (the
        principal components, when searched on, are fitted on all samples, as
        without batches) and each sample's ``n_neighbors`` are searched among
        the samples of its batch (bbknn's within-batch search, Polanski et al.,
        Bioinformatics 2020, without its between-batch neighbours); the
        default heat width ``t`` is each batch's own mean squared kNN distance.
        A batch of at most ``n_neighbors`` samples joins all its samples
        (logged); one sample has no edge.  With one batch the graph is the one
        without ``batches`` exactly.  docs/methods/batch-aware.md, "Batch-aware selection".

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
    ``studies/knn-search.md``), about twice as fast as the
    exact search there; NN-descent (without faiss), empirically close to
    linear in n (206-364 s at a million cells, one thread), recall@5 0.92-0.96,
    but pynndescent compiles its search with numba in every new Python
    process, a one-off cost of 20 s to minutes that its numba cache does not
    remove (``studies/atlas-scale.md``,
    ``studies/knn-search.md``).
    The edge weights always use the distances on the searched representation
    (all genes, or the principal components).
    """
    if kernel not in KERNELS:
        msg = f"kernel must be one of {KERNELS}; got {kernel!r}"
        raise ValueError(msg)
    if metric is None:
        metric = "cosine" if kernel == "cosine" else "euclidean"
    # read only; float32 stays float32 for the PCA (no 2 x n x d copies); an out-of-core X (backed, dask) is
    # validated in one pass and its PCA streamed (neighbors._pca_out_of_core)
    lazy = isinstance(X, OutOfCore) or out_of_core_kind(X) is not None
    X = check_X(X, read_only=True, lazy=lazy)
    n = X.shape[0]
    groups = None if batches is None else check_labels(batches, n, name="batches", min_classes=1)[1]
    rows, cols, dist = _neighbors(X, n_neighbors, method, n_pcs, metric, random_state, groups=groups)
    if kernel == "binary":
        vals = np.ones_like(dist)
    elif kernel == "heat":
        if t is None:
            t = _heat_width(dist, None if groups is None else groups[rows])
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


def _heat_width(dist, groups=None):
    """The heat kernel's default width: the mean squared kNN distance (1 if 0), per group of the pairs' rows."""
    if groups is None:
        t = float(np.mean(dist**2))
        return t if t > 0 else 1.0
    t = np.empty_like(dist)
    for g in np.unique(groups):
        at = groups == g
        t[at] = _heat_width(dist[at])
    return t


#: The graph that :func:`glfs.select`, :func:`glfs.tl.select` and
#: :func:`glfs.simulation._simulate.recovery_experiment` build when given none (``graph_params``
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
    W = check_graph(W, n_samples, name="W")
    deg = np.asarray(W.sum(axis=1)).ravel()
    L = sp.diags(deg) - W
    return sp.csr_matrix(L), deg
