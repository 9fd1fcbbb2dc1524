"""Per-gene filter scores: Laplacian score, Fisher score, variance.

X has shape (n_samples, n_features).  Graphs are sparse (n_samples, n_samples).
All scores are computed for every gene at once with sparse products: cost
O(nnz(W) d + n d) time and O(n d) memory; nothing n x n is densified.
"""

from __future__ import annotations

import logging

import numpy as np
import scipy.sparse as sp

from ._validation import check_graph, check_int, check_labels, check_X, constant_features, warn_constant

log = logging.getLogger(__name__)

__all__ = ["laplacian_score", "fisher_score", "variance_score", "deviance_score"]


#: Laplacian score: float64 values per column block (``laplacian_score``'s default ``block_size`` is
#: this many values divided by n_samples): 2**23 values = 64 MB per temporary block.
LS_BLOCK_VALUES = 2**23


def laplacian_score(X, W, *, block_size: int | None = None):
    """Laplacian score of every feature (He, Cai & Niyogi, NIPS 2005, Eq. 1 / Algorithm step 4).

    L_r = f~' L f~ / f~' D f~,  f~ = f - (f' D 1 / 1' D 1) 1,  L = D - W.

    Parameters
    ----------
    X : array-like or sparse of shape (n_samples, n_features)
        Samples in rows, genes in columns.
    W : sparse of shape (n_samples, n_samples)
        Symmetric non-negative similarity graph (e.g. :func:`glfs.similarity_graph`).
    block_size : int, optional
        Genes per column block (see Notes).  Default: about 2**23 / n_samples
        (64 MB float64 blocks), at least 1.  Only speed and memory depend on it.

    Returns
    -------
    scores : ndarray of shape (n_features,)
        In [0, 2] for non-negative W; **lower is better** (the feature respects
        the graph).  Invariant to f -> a f + b (a != 0).  Constant features get
        NaN and a single :class:`~glfs.ConstantFeatureWarning` (no magic number).

    Notes
    -----
    f~' D f~ = sum_i D_ii f~_i^2 and f~' L f~ = f~' D f~ - f~' W f~, with
    f~' W f~ = 2 f~' U f~ + sum_i W_ii f~_i^2 (U the strict upper triangle of
    the symmetric W): one sparse-dense product with U, O(nnz(W) d / 2) time.
    The genes are processed in column blocks: each block is copied to
    float64, each gene divided by its largest absolute value (the score is
    scale-free; so the squares neither overflow for values near 1e200 nor
    underflow for values near 1e-200, and a X scores as X for any a != 0),
    centred with its D-weighted mean (He et al. 2005, Eq. 1's f~; centring
    first keeps f~' D f~ accurate for genes with a large mean and a small
    variance) and multiplied by U, so the temporaries are
    O(n block_size).  A dense float32 or float64 X is read in place (no
    copy of X: float32 values are scored in float64 block by block), so the
    memory beyond X and W is O(n block_size).
    """
    X = check_X(X, dense=True, read_only=True)
    n, d = X.shape
    W = check_graph(W, n)
    if block_size is None:
        block_size = max(1, LS_BLOCK_VALUES // n)
    else:
        block_size = check_int(block_size, "block_size", 1)
    deg = np.asarray(W.sum(axis=1)).ravel()
    if np.any(deg <= 0):
        msg = f"W must give every sample a positive degree; got {int(np.sum(deg <= 0))} isolated sample(s)"
        raise ValueError(msg)
    const = constant_features(X)
    total = deg.sum()
    U = sp.triu(W, k=1, format="csr")
    w_diag = W.diagonal()
    has_diag = bool(np.any(w_diag))  # the supervised graph keeps its diagonal (label_graph)
    num = np.empty(d)
    denom = np.empty(d)
    for j0 in range(0, d, block_size):
        cols = slice(j0, min(d, j0 + block_size))
        Xc = np.array(X[:, cols], dtype=np.float64, order="C")  # a copy: scaled and centred in place
        _scale_columns(Xc)
        Xc -= (deg @ Xc) / total
        denom[cols] = np.einsum("i,ij,ij->j", deg, Xc, Xc)
        quad_w = 2.0 * np.einsum("ij,ij->j", Xc, U @ Xc)
        if has_diag:
            quad_w += np.einsum("i,ij,ij->j", w_diag, Xc, Xc)
        num[cols] = denom[cols] - quad_w
    with np.errstate(invalid="ignore", divide="ignore"):
        scores = num / denom
    scores[const] = np.nan
    warn_constant(const, "laplacian_score")
    return scores


def fisher_score(X, labels):
    """Fisher score of every feature (He et al. 2005, Sec. 4; Bishop 1995).

    F_r = sum_l n_l (mu_l - mu)^2 / sum_l n_l sigma_l^2, with mu_l, sigma_l^2
    the class mean and (biased) variance.  **Higher is better**.  With the
    supervised graph :func:`glfs.label_graph` the Laplacian score equals
    1 / (1 + F_r).  Constant features: NaN and one warning; a feature with zero
    within-class variance but distinct class means scores +inf.  Labels with
    one sample in every class are refused (every gene would score +inf).
    Scale-free: each gene is divided by its largest absolute value first, so
    values near 1e200 or 1e-200 score as values near 1 do.

    X has shape (n_samples, n_features); labels has length n_samples.
    Cost O(n d).
    """
    X = check_X(X, dense=True)  # a copy: scaled in place
    _, codes = check_labels(labels, X.shape[0])
    sizes = np.bincount(codes)
    if sizes.max() < 2:
        msg = (
            f"labels must have a class with at least 2 samples for the Fisher score; got {sizes.size} classes "
            "of 1 sample each (the within-class variance would be 0 for every gene)"
        )
        raise ValueError(msg)
    const = constant_features(X)
    _scale_columns(X)
    mu = X.mean(axis=0)
    between = np.zeros(X.shape[1])
    within = np.zeros(X.shape[1])
    for c in np.unique(codes):
        Xk = X[codes == c]
        nk = Xk.shape[0]
        mk = Xk.mean(axis=0)
        between += nk * (mk - mu) ** 2
        within += nk * Xk.var(axis=0)
    with np.errstate(invalid="ignore", divide="ignore"):
        scores = between / within
    scores[const] = np.nan
    warn_constant(const, "fisher_score")
    return scores


def _scale_columns(A):
    """Divide each column of the float64 array A in place by its largest absolute value (0 -> 1).

    For the scale-free scores: a gene's squares then neither overflow nor underflow.
    """
    top = np.abs(A).max(axis=0)
    top[top == 0] = 1.0
    A /= top


def variance_score(X):
    """Per-feature variance (ddof=0); **higher is better**.  Constant features score 0.

    X has shape (n_samples, n_features); sparse input is handled without densifying.
    """
    X = check_X(X)
    if sp.issparse(X):
        m = np.asarray(X.mean(axis=0)).ravel()
        m2 = np.asarray(X.multiply(X).mean(axis=0)).ravel()
        return np.maximum(m2 - m**2, 0.0)
    return X.var(axis=0)


def deviance_score(counts):
    """Binomial deviance of every gene (Townes, Hicks, Aryee & Irizarry, Genome Biol 2019, "Feature selection").

    The deviance of a null model in which every cell draws its counts of gene
    j from its own total with one common proportion:

        D_j = 2 sum_i [ y_ij log(y_ij / mu_ij) + (n_i - y_ij) log((n_i - y_ij) / (n_i - mu_ij)) ],
        mu_ij = n_i pi_j,  pi_j = sum_i y_ij / sum_i n_i,  n_i = sum_j y_ij,

    with 0 log 0 = 0 (the statistic of R's ``scry::devianceFeatureSelection``,
    binomial family).  **Higher is better** (the gene departs more from
    constant expression).  Genes without a count score 0.

    Parameters
    ----------
    counts : array-like or sparse of shape (n_samples, n_features)
        Raw counts (non-negative integers), cells in rows.  Sparse input is
        used as it is: a zero count contributes -n_i log(1 - pi_j), summed for
        all zeros of a gene at once, so the cost is O(nnz + n + d) time and
        O(nnz) memory; nothing dense is formed.

    Returns
    -------
    ndarray of shape (n_features,)
    """
    X = check_X(counts, name="counts")
    C = X.tocsc() if sp.issparse(X) else sp.csc_matrix(X)
    C.eliminate_zeros()
    if C.nnz and (C.data.min() < 0 or not np.array_equal(C.data, np.floor(C.data))):
        msg = "counts must be raw counts (non-negative integers); got negative or non-integer values"
        raise ValueError(msg)
    n_cell = np.asarray(C.sum(axis=1)).ravel()
    total = float(n_cell.sum())
    if total <= 0:
        msg = "counts must hold at least one count; got an all-zero matrix"
        raise ValueError(msg)
    pi = np.asarray(C.sum(axis=0)).ravel() / total
    gene = np.repeat(np.arange(C.shape[1]), np.diff(C.indptr))
    y, n = C.data, n_cell[C.indices]
    mu = n * pi[gene]
    rest = n - y
    with np.errstate(divide="ignore", invalid="ignore"):
        term = y * np.log(y / mu) + np.where(rest > 0, rest * np.log(rest / (n - mu)), 0.0)
    nonzero_part = np.bincount(gene, weights=term, minlength=C.shape[1])
    # zero counts: n_i log(n_i / (n_i - mu_ij)) = -n_i log(1 - pi_j), over the cells where gene j is 0
    n_at_nonzero = np.bincount(gene, weights=n, minlength=C.shape[1])
    with np.errstate(divide="ignore"):
        zero_part = -np.log1p(-pi) * (total - n_at_nonzero)
    zero_part[pi >= 1] = 0.0  # a gene holding every count: no zero cell has a total, so nothing to add
    return 2.0 * (nonzero_part + zero_part)
