"""Patient-similarity graphs over samples, always sparse CSR.

X has shape (n_samples, n_features).  Every graph here is (n_samples, n_samples),
symmetric, non-negative, stored as CSR with O(n * n_neighbors) non-zeros; no
function here builds an n x n dense array.
"""

from __future__ import annotations

import logging

import numpy as np
import scipy.sparse as sp
from sklearn.neighbors import NearestNeighbors

from ._validation import check_graph, check_labels, check_X

log = logging.getLogger(__name__)

__all__ = ["similarity_graph", "label_graph", "laplacian", "KERNELS"]

KERNELS = ("binary", "heat", "cosine", "snf")


def _knn(X, n_neighbors: int, metric: str):
    n = X.shape[0]
    if not isinstance(n_neighbors, (int, np.integer)) or isinstance(n_neighbors, bool) or n_neighbors < 1:
        msg = f"n_neighbors must be a positive integer; got {n_neighbors!r}"
        raise ValueError(msg)
    if n_neighbors >= n:
        msg = f"n_neighbors must be smaller than the number of samples ({n}); got {n_neighbors}"
        raise ValueError(msg)
    nn = NearestNeighbors(n_neighbors=n_neighbors + 1, metric=metric)
    nn.fit(X)
    dist, ind = nn.kneighbors(X)
    # Drop self: the first column is the sample itself unless duplicates tie;
    # remove the self index explicitly wherever it sits.
    rows = np.repeat(np.arange(n), n_neighbors + 1)
    cols = ind.ravel()
    d = dist.ravel()
    keep = rows != cols
    rows, cols, d = rows[keep], cols[keep], d[keep]
    # keep exactly n_neighbors per row (a duplicate sample may push self out of the list)
    order = np.lexsort((d, rows))
    rows, cols, d = rows[order], cols[order], d[order]
    first = np.r_[0, np.flatnonzero(np.diff(rows)) + 1]
    pos = np.arange(rows.size) - np.repeat(first, np.diff(np.r_[first, rows.size]))
    keep = pos < n_neighbors
    return rows[keep], cols[keep], d[keep]


def _pca(X, n_pcs, random_state):
    """Scores on the first n_pcs principal components (X centred; sparse X via TruncatedSVD on the centred operator)."""
    from sklearn.decomposition import PCA

    n, d = X.shape
    if isinstance(n_pcs, bool) or not isinstance(n_pcs, (int, np.integer)) or not 1 <= n_pcs <= min(n, d):
        msg = f"n_pcs must be an integer in [1, {min(n, d)}] (at most min(n_samples, n_features)); got {n_pcs!r}"
        raise ValueError(msg)
    if n_pcs == min(n, d):
        return X.toarray() if sp.issparse(X) else X
    # PCA accepts sparse input with the arpack solver and centres implicitly
    solver = "arpack" if sp.issparse(X) else "randomized"
    return PCA(n_components=int(n_pcs), svd_solver=solver, random_state=random_state).fit_transform(X)


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
        principal components of X (centred; randomized SVD, seeded by
        ``random_state``) instead of all genes, as scanpy's ``pp.neighbors``
        does.  Default None: exact distances on all genes.  For many samples
        in many dimensions (e.g. 20,000 cells x 2,000 genes) the exact search
        costs O(n^2 d) and dominates; 50 components cut it by d / 50.
    random_state : int, optional
        Seed of the randomized SVD (``n_pcs`` only).

    Returns
    -------
    W : scipy.sparse.csr_matrix of shape (n_samples, n_samples)
        Symmetric, non-negative, zero diagonal.

    Notes
    -----
    Cost: the neighbour search (scikit-learn ``NearestNeighbors``, brute force
    for dense high-dimensional data) is O(n^2 d) time, computed in chunks, and
    O(n * n_neighbors) memory for the graph.
    """
    if kernel not in KERNELS:
        msg = f"kernel must be one of {KERNELS}; got {kernel!r}"
        raise ValueError(msg)
    X = check_X(X)
    n = X.shape[0]
    if n_pcs is not None:
        X = _pca(X, n_pcs, random_state)
    if metric is None:
        metric = "cosine" if kernel == "cosine" else "euclidean"
    rows, cols, dist = _knn(X, n_neighbors, metric)
    if kernel == "binary":
        vals = np.ones_like(dist)
    elif kernel == "heat":
        if t is None:
            t = float(np.mean(dist**2))
            if t <= 0:
                t = 1.0
        elif not (np.isfinite(t) and t > 0):
            msg = f"t (heat-kernel width) must be a positive number; got {t!r}"
            raise ValueError(msg)
        vals = np.exp(-(dist**2) / t)
    elif kernel == "cosine":
        vals = np.clip(1.0 - dist, 0.0, None)
    else:  # snf
        if not (np.isfinite(mu) and mu > 0):
            msg = f"mu (SNF kernel) must be a positive number; got {mu!r}"
            raise ValueError(msg)
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
