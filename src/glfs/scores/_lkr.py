"""Local kernel regression (LKR) score (Cheung & Zeng, IEEE TKDE 21(12), 2009).

Orientation: X has shape (n_samples, n_features); the feature vector of gene l
is f = X[:, l] (length n).  For every sample i with neighbourhood N_i (its graph
neighbours, i excluded) a kernel ridge regression predicts f_i from the values
of its neighbours (Eqs. 7-11):

    beta_i = (K_{N_i} + lambda I)^-1 k_{N_i}          (Eq. 8; K Gaussian, width h)
    g(x_i) = sum_{j in N_i} beta_ij f_j               (Eq. 11)

and the score is the density-weighted local error over the density-weighted
variance (Eqs. 13-16):

    Phi(f) = sum_i D_ii (f_i - sum_j beta_ij f_j)^2 / sum_i D_ii (f_i - mu)^2,
    mu = sum_i D_ii f_i / sum_i D_ii,   D_ii = sum_j W_ij.

**Lower is better** (Algorithm 1 ranks in ascending order).  The numerator
uses f itself, as printed (Eq. 13), not the centred f: because sum_j beta_ij != 1
(ridge shrinkage), a constant offset adds mean^2 * sum_i D_ii (1 - sum_j beta_ij)^2
to the numerator.  ``center=True`` centres each gene first (shift invariant).

Kernel: K(x, y) = exp(-||x - y||^2 / h) (Sec. 5).  The paper used h = 100 on
pixel data; h depends on the units of X, so the default here is the mean
squared distance over the graph's edges (scale-free, the same rule as the heat
kernel of :func:`glfs.similarity_graph`).  Ridge lambda = 0.1 (Sec. 5).
"""

from __future__ import annotations

import logging

import numpy as np
import scipy.sparse as sp
from threadpoolctl import threadpool_limits

from glfs.core._result import Selection, make_selection
from glfs.core._validation import (
    check_graph,
    check_int,
    check_labels,
    check_positive,
    check_X,
    constant_features,
    warn_constant,
)
from glfs.core.limits import check_dense_size
from glfs.graph._similarity import similarity_graph

log = logging.getLogger(__name__)

__all__ = [
    "lkr_score",
    "lkr_coefficients",
    "select_lkr_score",
    "select_lkr_score_supervised",
    "supervised_size_check",
    "SUPERVISED_MAX_FLOPS",
]

_GENE_BLOCK = 256  # genes per block when forming residuals


def _row_sq_norms(X):
    if sp.issparse(X):
        return np.asarray(X.multiply(X).sum(axis=1)).ravel()
    return np.einsum("ij,ij->i", X, X)


def _sq_dist_block(X, sq, idx_a, idx_b):
    """Squared Euclidean distances between rows idx_a and idx_b of X (dense (a, b))."""
    G = X[idx_a] @ X[idx_b].T
    if sp.issparse(G):
        G = G.toarray()
    return np.maximum(sq[idx_a][:, None] + sq[idx_b][None, :] - 2.0 * np.asarray(G), 0.0)


_BATCH_BYTES = 2**27  # gathered neighbour rows per batch (128 MB)


def _rows_dense(X, idx):
    out = X[idx]
    return out.toarray() if sp.issparse(out) else np.asarray(out)


def _edge_sq_dists(X, sq, indptr, indices):
    """Squared Euclidean distance of every stored edge (row i, column indices[k]), in chunks.

    O(nnz d) time, O(chunk d) memory.
    """
    rows = np.repeat(np.arange(indptr.size - 1), np.diff(indptr))
    out = np.empty(indices.size)
    step = max(1, _BATCH_BYTES // (16 * max(1, X.shape[1])))
    for s in range(0, indices.size, step):
        r, c = rows[s : s + step], indices[s : s + step]
        dot = np.einsum("ij,ij->i", _rows_dense(X, r), _rows_dense(X, c))
        out[s : s + step] = np.maximum(sq[r] + sq[c] - 2.0 * dot, 0.0)
    return out


def _local_coefficients(X, sq, indptr, indices, d2, h, ridge):
    """beta_i = (K_{N_i} + ridge I)^-1 k_{N_i} for every sample (Eq. 8), batched by neighbourhood size.

    Samples with the same number of neighbours m are solved together:
    gathered rows (batch, m, d), Gram matrices by batched matmul, stacked
    ``numpy.linalg.solve``.  O(sum_i n_i^2 d + n_i^3) time like the per-sample
    loop, without a Python iteration per sample; memory O(batch m d).
    """
    n = indptr.size - 1
    deg = np.diff(indptr)
    vals = np.zeros(indices.size)
    for m in np.unique(deg[deg > 0]):
        who = np.flatnonzero(deg == m)
        step = max(1, _BATCH_BYTES // (8 * m * max(1, X.shape[1])))
        offs = indptr[who][:, None] + np.arange(m)[None, :]  # (samples, m) positions in indices
        for s in range(0, who.size, step):
            pos = offs[s : s + step]
            nb = indices[pos]  # (b, m)
            Xn = _rows_dense(X, nb.ravel()).reshape(nb.shape[0], m, -1)
            G = Xn @ Xn.transpose(0, 2, 1)
            D2 = np.maximum(sq[nb][:, :, None] + sq[nb][:, None, :] - 2.0 * G, 0.0)
            K = np.exp(-D2 / h)
            K[:, np.arange(m), np.arange(m)] += ridge
            rhs = np.exp(-d2[pos] / h)
            vals[pos] = np.linalg.solve(K, rhs[:, :, None])[:, :, 0]
    log.debug("lkr: local regressions of %d samples done", n)
    return vals


def lkr_coefficients(X, W=None, *, labels=None, h=None, ridge=0.1):
    """Local kernel-regression coefficients beta (Eqs. 8, 10) as a sparse (n, n) matrix.

    Row i holds beta_ij for j in N_i.  Unsupervised: N_i = the graph neighbours
    of i in W (i excluded).  Supervised: N_i = the other samples of i's class;
    then all leave-one-out coefficients of a class come from one inverse,
    beta_i = -P_{-i,i} / P_ii with P = (K_class + lambda I)^-1 (block inverse).
    The supervised B is dense within each class (sum_l N_l^2 entries);
    :func:`lkr_score` does not form it (it uses the leave-one-out residual
    (P f)_i / P_ii directly).

    Returns
    -------
    B : scipy.sparse.csr_matrix of shape (n_samples, n_samples)
    h : float
        The kernel width used.
    """
    n = X.shape[0]
    sq = _row_sq_norms(X)
    ridge = check_positive(ridge, "ridge")
    if labels is not None:
        groups = _class_groups(labels, n)
        supervised_size_check([g.size for g in groups], X.shape[1])
        with threadpool_limits(limits=1, user_api="blas"):
            D2s = [_sq_dist_block(X, sq, g, g) for g in groups]
        if h is None:
            # mean squared distance within classes, excluding i = j
            tot = sum(float(D2.sum()) for D2 in D2s)
            cnt = sum(g.size * (g.size - 1) for g in groups)
            h = tot / cnt if tot > 0 else 1.0
        h = check_positive(h, "h")
        rows, cols, vals = [], [], []
        for g, D2 in zip(groups, D2s):
            K = np.exp(-D2 / h)
            P = np.linalg.inv(K + ridge * np.eye(g.size))
            Bc = (-P / np.diag(P)[None, :]).T  # row i: beta_i = -P[:, i] / P_ii
            np.fill_diagonal(Bc, 0.0)
            r, c = np.meshgrid(g, g, indexing="ij")
            off = r != c
            rows.append(r[off])
            cols.append(c[off])
            vals.append(Bc[off])
        B = sp.csr_matrix((np.concatenate(vals), (np.concatenate(rows), np.concatenate(cols))), shape=(n, n))
        return B, h
    W = check_graph(W, n, name="W")
    A = W.copy().tocsr()
    A.setdiag(0)
    A.eliminate_zeros()
    A.sort_indices()
    indptr, indices = A.indptr, A.indices
    d2 = _edge_sq_dists(X, sq, indptr, indices)
    if h is None:
        h = float(d2.mean()) if d2.size and d2.mean() > 0 else 1.0
    h = check_positive(h, "h")
    vals = _local_coefficients(X, sq, indptr, indices, d2, h, ridge)
    B = sp.csr_matrix((vals, indices.copy(), indptr.copy()), shape=(n, n))
    return B, h


def _knn_gaussian_graph(X, n_neighbors, h):
    """Eq. 5: symmetrised kNN graph with weights K(x_i, x_j) = exp(-||x_i - x_j||^2 / h).

    With h None, h = mean squared distance over the graph's edges (the same h
    is then used for the regression kernel, so graph and kernel agree).
    """
    A = similarity_graph(X, n_neighbors=n_neighbors, kernel="binary")
    A.sort_indices()
    sq = _row_sq_norms(X)
    d2 = _edge_sq_dists(X, sq, A.indptr, A.indices)
    if h is None:
        h = float(d2.mean()) if d2.mean() > 0 else 1.0
    vals = np.maximum(np.exp(-d2 / h), np.finfo(float).tiny)
    return sp.csr_matrix((vals, A.indices.copy(), A.indptr.copy()), shape=A.shape), h


def _class_groups(labels, n):
    _, codes = check_labels(labels, n)
    groups = [np.flatnonzero(codes == c) for c in range(codes.max() + 1)]
    small = [int(g.size) for g in groups if g.size < 2]
    if small:
        msg = (
            f"labels: every class needs at least 2 samples for the supervised LKR score; got a class of size {small[0]}"
        )
        raise ValueError(msg)
    return groups


#: Work limit of the supervised LKR score, in floating-point operations
#: sum_l (N_l^3 + 4 N_l^2 d) (one Cholesky inverse and two N_l x N_l x d products
#: per class); about 1-2 minutes on 2 idle cores.
SUPERVISED_MAX_FLOPS = 2e12


def supervised_size_check(class_sizes, n_features: int = 1, *, limit_gb=None, max_flops=None):
    """Refuse the supervised LKR score when its per-class kernels are too large (docs/methods/size-limits.md, "Size limits").

    The supervised neighbourhoods are whole classes (Eq. 6), so each class of
    N_l samples needs a dense N_l x N_l kernel and its inverse (about three
    such matrices at once) and O(N_l^3 + N_l^2 d) work.  Raises ``ValueError``
    ("size limit") when the largest class exceeds ``limit_gb`` (default
    :data:`glfs.core.limits.DENSE_LIMIT_GB`) or the work sum_l (N_l^3 + 4 N_l^2 d)
    exceeds ``max_flops`` (default :data:`SUPERVISED_MAX_FLOPS`).
    """
    sizes = np.asarray(class_sizes, dtype=float)
    n_max = int(sizes.max())
    alt = "Use the unsupervised lkr_score on a kNN graph, or subsample each class (a few thousand samples per class)."
    check_dense_size(
        "lkr_score_supervised",
        f"the kernel of the largest class ({n_max} x {n_max}, three such matrices)",
        3.0 * n_max**2,
        alt,
        limit_gb=limit_gb,
    )
    limit = SUPERVISED_MAX_FLOPS if max_flops is None else float(max_flops)
    work = float(np.sum(sizes**3 + 4.0 * sizes**2 * n_features))
    if work > limit:
        msg = (
            f"lkr_score_supervised: {sizes.size} classes of up to {n_max} samples x {n_features} genes need "
            f"{work:.1e} floating-point operations (sum of N^3 + 4 N^2 d per class), above the size limit of "
            f"{limit:.0e} (docs/methods/size-limits.md, 'Size limits'). {alt}"
        )
        raise ValueError(msg)


def _within_class_h(X, sq, groups):
    """Mean squared distance between distinct samples of the same class, without the N x N matrix.

    sum_{i != j} ||x_i - x_j||^2 = 2 N sum_i ||x_i||^2 - 2 ||sum_i x_i||^2 over each class.
    """
    tot, cnt = 0.0, 0
    for g in groups:
        s = np.asarray(X[g].sum(axis=0)).ravel()
        tot += 2.0 * g.size * float(sq[g].sum()) - 2.0 * float(s @ s)
        cnt += g.size * (g.size - 1)
    tot = max(tot, 0.0)
    return tot / cnt if tot > 0 else 1.0


def _class_inverse(X, sq, g, h, ridge):
    """P = (K + ridge I)^-1 for one class (Cholesky; K Gaussian with width h)."""
    from scipy.linalg import cho_factor, lapack

    K = _sq_dist_block(X, sq, g, g)
    np.divide(K, -h, out=K)
    np.exp(K, out=K)
    K[np.diag_indices_from(K)] += ridge
    c, _ = cho_factor(K, lower=False, overwrite_a=True, check_finite=False)
    P, info = lapack.dpotri(c, lower=False, overwrite_c=True)
    if info != 0:
        msg = f"internal error: Cholesky inverse of a class kernel failed (LAPACK info {info})"
        raise RuntimeError(msg)
    iu = np.triu_indices_from(P, 1)
    P[(iu[1], iu[0])] = P[iu]  # dpotri fills the upper triangle
    return P


def lkr_score(X, W=None, *, labels=None, h=None, ridge: float = 0.1, n_neighbors: int = 10, center: bool = False):
    """LKR score of every gene (Cheung & Zeng, TKDE 2009, Eq. 16).  Lower is better.

    Parameters
    ----------
    X : array-like or sparse of shape (n_samples, n_features)
        Samples in rows, genes in columns.  Not modified.
    W : sparse of shape (n_samples, n_samples), optional
        Unsupervised neighbourhood graph (Eq. 5): its non-zero pattern gives
        the neighbourhoods N_i and its row sums the densities D_ii.  When
        omitted, a symmetrised ``n_neighbors``-NN graph with Gaussian weights
        exp(-||x_i - x_j||^2 / h) is built (Eq. 5, the paper's construction).
        Must be None when ``labels`` is given.
    labels : array-like of length n_samples, optional
        Supervised LKR score: N_i = the other samples of i's class and the
        class graph W_ij = 1/N_l within class l (Eq. 6, diagonal included as in
        He et al. 2005, so D = I).  Every class needs >= 2 samples.
    h : float, optional
        Gaussian kernel width.  Default: mean squared distance over the graph
        edges (unsupervised) or within classes (supervised).  The paper used
        h = 100 for pixel data (Sec. 5); a fixed h is not scale-free.
    ridge : float, default 0.1
        Ridge parameter lambda of Eq. 8 (the paper's value, Sec. 5).
    n_neighbors : int, default 10
        Neighbours of the default graph (the paper used 10, Sec. 5.1).
    center : bool, default False
        False: Eq. 13 as printed (uses f).  True: use f - mu (weighted mean),
        making the score invariant to f -> f + b.

    Returns
    -------
    scores : ndarray of shape (n_features,)
        Phi_LKR >= 0; **lower is better**.  Invariant to f -> a f (a != 0).
        Constant genes: NaN and one :class:`~glfs.ConstantFeatureWarning`
        (the paper's footnote 1 excludes them).

    Notes
    -----
    Cost, unsupervised: the local regressions are O(sum_i n_i^2 d + n_i^3)
    (``n_i = |N_i|``), the scores one sparse product B X, O(nnz(B) d), in gene
    blocks; memory O(n d + nnz(B)).  Supervised: one Cholesky inverse
    P = (K_l + lambda I)^-1 per class and the leave-one-out residuals
    (P f)_i / P_ii (the same numbers as F - B F), O(sum_l N_l^2 d + N_l^3)
    time and O(n d + max_l N_l^2) memory: the sum_l N_l^2 coefficients are
    never stored.  Refused above the size limit (:func:`supervised_size_check`,
    docs/methods/size-limits.md "Size limits").
    """
    X = check_X(X)
    n, d = X.shape
    if labels is not None and W is not None:
        msg = "give either W (unsupervised LKR score) or labels (supervised); got both"
        raise ValueError(msg)
    if h is not None:
        h = check_positive(h, "h")
    Xd = X.toarray() if sp.issparse(X) else X
    const = constant_features(Xd)
    if labels is not None:
        num, deg, mu, h_used, ridge = _supervised_residuals(Xd, labels, h, ridge, center)
    else:
        num, deg, mu, h_used = _graph_residuals(X, Xd, W, h, ridge, n_neighbors, center)
    den = _weighted_spread(Xd, deg, mu)
    with np.errstate(invalid="ignore", divide="ignore"):
        scores = num / den
    scores[const] = np.nan
    warn_constant(const, "lkr_score_supervised" if labels is not None else "lkr_score")
    log.info(
        "lkr_score: %d samples, %d genes, h=%.4g, ridge=%g, supervised=%s", n, d, h_used, ridge, labels is not None
    )
    return scores


def _supervised_residuals(Xd, labels, h, ridge, center):
    """:func:`lkr_score` with labels: per gene, the squared leave-one-out kernel ridge residuals within
    each class (label graph of Eq. 6 with its diagonal: D = I); (num, deg, mu, h_used, ridge)."""
    n, d = Xd.shape
    deg = np.ones(n)
    groups = _class_groups(labels, n)
    supervised_size_check([g.size for g in groups], d)
    ridge = check_positive(ridge, "ridge")
    sq = _row_sq_norms(Xd)
    h_used = _within_class_h(Xd, sq, groups) if h is None else h
    mu = Xd.mean(axis=0)
    num = np.zeros(d)
    for g in groups:
        # leave-one-out kernel ridge residual of sample i within its class:
        # f_i - beta_i' f_{-i} = (P f)_i / P_ii  (block inverse; = F - B F with B of lkr_coefficients)
        P = _class_inverse(Xd, sq, g, h_used, ridge)
        Fg = Xd[g] - mu if center else Xd[g]
        R = P @ Fg
        R /= np.diag(P)[:, None]
        num += np.einsum("ij,ij->j", R, R)
        del P, R
    log.debug("lkr_score: supervised, %d classes (largest %d)", len(groups), max(g.size for g in groups))
    return num, deg, mu, h_used, ridge


def _graph_residuals(X, Xd, W, h, ridge, n_neighbors, center):
    """:func:`lkr_score` on a graph (W, or the kNN Gaussian graph): per gene, the degree-weighted squared
    residuals of the kernel ridge reconstruction from the neighbours; (num, deg, mu, h_used)."""
    n, d = Xd.shape
    if W is None:
        n_neighbors = check_int(n_neighbors, "n_neighbors", 1)
        W, h = _knn_gaussian_graph(X, n_neighbors, h)
    W = check_graph(W, n, name="W")
    deg = np.asarray(W.sum(axis=1)).ravel()
    if np.any(deg <= 0):
        msg = f"W must give every sample a positive degree; got {int(np.sum(deg <= 0))} isolated sample(s)"
        raise ValueError(msg)
    B, h_used = lkr_coefficients(X, W, h=h, ridge=ridge)
    mu = deg @ Xd / deg.sum()
    num = np.zeros(d)
    for start in range(0, d, _GENE_BLOCK):  # gene blocks: memory O(n * block), not several n x d copies
        blk = slice(start, min(d, start + _GENE_BLOCK))
        F = Xd[:, blk] - mu[blk] if center else Xd[:, blk]
        R = F - B @ F
        num[blk] = np.einsum("i,ij,ij->j", deg, R, R)
    return num, deg, mu, h_used


def _weighted_spread(Xd, deg, mu):
    """The denominator of :func:`lkr_score`: sum_i deg_i (x_ij - mu_j)^2 per gene, in gene blocks."""
    d = Xd.shape[1]
    den = np.zeros(d)
    for start in range(0, d, _GENE_BLOCK):
        blk = slice(start, min(d, start + _GENE_BLOCK))
        Xc = Xd[:, blk] - mu[blk]
        den[blk] = np.einsum("i,ij,ij->j", deg, Xc, Xc)
    return den


def select_lkr_score(X, W, *, n_features, labels=None, random_state=None, **params) -> Selection:
    """Unsupervised LKR score as a :class:`~glfs.Selection` (registry ``"lkr_score"``).

    Uses the graph W passed by :func:`glfs.select` for the neighbourhoods and
    densities (``n_neighbors`` then only matters when W is None).  ``labels``
    and ``random_state`` are ignored.  Lower score is better.
    """
    s = lkr_score(X, W, **params)
    return make_selection("lkr_score", s, higher_is_better=False, n_features=n_features, params=dict(params))


def select_lkr_score_supervised(X, W, *, n_features, labels=None, random_state=None, **params) -> Selection:
    """Supervised LKR score (class neighbourhoods, Eq. 6) as a :class:`~glfs.Selection`.

    Registry ``"lkr_score_supervised"``; needs ``labels``; W is ignored.
    """
    if labels is None:
        msg = "labels must be given for method 'lkr_score_supervised' (one label per sample); got None"
        raise ValueError(msg)
    s = lkr_score(X, None, labels=labels, **params)
    return make_selection("lkr_score_supervised", s, higher_is_better=False, n_features=n_features, params=dict(params))
