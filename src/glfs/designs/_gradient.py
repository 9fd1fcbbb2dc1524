"""GLFS: gradient-based Laplacian feature selection (Wang & Goldenberg, ICML 2013).

The three *published* readings of the method (``glfs_exact``, ``glfs_paper``,
``glfs_printed``); docs/methods/glfs-readings.md, section GLFS, says what each one is and what
was measured.  This module is their public face (:func:`glfs_published`, :func:`glfs_path`,
:func:`glfs_objective`, :func:`laprls_fit`, the ``select_*`` adapters); the work is
split by concern: :mod:`glfs.designs._gradient_model` (constants, size limits, checks, the
objective and its gradient in both forms), :mod:`glfs.designs._gradient_solver` (the
projected-gradient solver) and :mod:`glfs.designs._gradient_path` (preprocessing, the lam
path and its search, :class:`GLFSResult`).  The size limits are read where they
are used: raise them in ``glfs.designs._gradient_model`` (e.g. ``PATH_MAX_CELLS``).

Orientation: X has shape (n_samples, n_features) = (patients, genes); gene i is
the column f_i = X[:, i] (length n).  With beta >= 0 (one weight per gene)

    A = X diag(beta) X'                 (n x n, the paper's X' diag(beta) X)
    P = I + lambda1 L                   (n x n sparse, L = D - W the graph Laplacian)
    M = lambda2 P^{-1}                  (n x n, dense if formed)
    R = (M + A)^{-1},  K = R M

and three objectives (docs/methods/glfs-readings.md, "Errata and the three variants"):

- ``"exact"``  : V(beta) = Tr(A [(M+A)^{-1} M]^2) = Tr(K' A K) >= 0, the exact
  A-optimal trace of Cov(w) of LapRLS up to the constant sigma^2 / lambda2^2
  (paper Eq. 4-6 without the last, erroneous, step of Eq. 6).
  True gradient: dV/dbeta_i = f_i' G f_i, G = K S + S K' - S, S = K K'.
- ``"paper"``  : Q(beta) = Tr(A (M+A)^{-2} M^2) (paper Eq. 7), which can be
  negative.  True gradient dQ/dbeta_i = f_i' G f_i with
  G = R K M K' - K K' + K M K' R = sym(R^2 M^2 - R^2 M^2 A R - R M^2 A R^2).
- ``"printed"``: the value of Eq. 7 with the printed direction of Eq. 9,
  f_i' (M - A)(M + A)^{-3} M^2 f_i, which is *not* the gradient of Eq. 7 unless
  M and A commute (e.g. lambda1 = 0, M = lambda2 I).

Every objective is minimised together with lam * sum(beta) over beta >= 0
(the l1 penalty of Eq. 8 is linear in the non-negative orthant).

Two evaluation forms, chosen per evaluation by a flop estimate
(:meth:`_Model.dense_cheaper`):

- dense: M, A, R, K and G are n x n, O(n^3 + n^2 (k + m)) time for k non-zero
  weights and m genes whose gradient is wanted; only for n <= ``DENSE_MAX_N``.
- low-rank (Woodbury over the k genes with beta > 0): U = X_S diag(sqrt(beta_S)),
  N = M^{-1} U = P U / lambda2, C = I_k + U' N, K = I - N C^{-1} U'; value and
  gradient need sparse products with P, for paper/printed also M U (columns of
  M X, solved once per gene by conjugate gradients on P), k x k solves and k x m projections: O(nnz(P) k + n k^2 + k^3
  + n k m + k^2 m), no n x n matrix.  Beyond ``DENSE_MAX_N`` samples only this form is
  used, and a support of more than ``LOWRANK_MAX_K`` genes is refused.

Nothing d x d is ever formed.
"""

from __future__ import annotations

import logging

import numpy as np
import scipy.linalg as sla
import scipy.sparse as sp

from glfs.core._result import Selection, make_selection
from glfs.core._validation import check_graph, check_X, constant_features, warn_constant
from glfs.designs._gradient_model import (
    DEFAULT_LAMBDA1,
    DEFAULT_LAMBDA2,
    DENSE_MAX_N,
    KKT_TOL,
    LOWRANK_MAX_K,
    OBJECTIVES,
    PATH_MAX_CELLS,
    RANK_RULES,
    GLFSConvergenceWarning,
    _check_nonneg,
    _check_objective,
    _sym,
    glfs_objective,
)
from glfs.designs._gradient_path import GLFSResult, glfs_path, glfs_published
from glfs.graph._similarity import laplacian

log = logging.getLogger(__name__)

__all__ = [
    "OBJECTIVES",
    "RANK_RULES",
    "KKT_TOL",
    "DENSE_MAX_N",
    "PATH_MAX_CELLS",
    "LOWRANK_MAX_K",
    "GLFSConvergenceWarning",
    "GLFSResult",
    "glfs_objective",
    "glfs_published",
    "glfs_path",
    "laprls_fit",
    "select_glfs",
    "select_glfs_paper",
    "select_glfs_exact",
    "select_glfs_printed",
]


# --------------------------------------------------------------------------- LapRLS (Eq. 3 / 11)
def laprls_fit(X_G, y, W, lambda1=DEFAULT_LAMBDA1, lambda2=DEFAULT_LAMBDA2):
    """Laplacian-regularised least squares weights (Belkin et al. 2006; Wang & Goldenberg Eq. 3).

    w = (X_G' X_G + lambda1 X_G' L X_G + lambda2 I)^{-1} X_G' y, the minimiser of
    J(w) = ||X_G w - y||^2 + lambda1 w' X_G' L X_G w + lambda2 ||w||^2 (Eq. 2,
    with (lambda1/2) sum_ij S_ij (w'x_i - w'x_j)^2 = lambda1 w' X_G' L X_G w).

    Parameters
    ----------
    X_G : array-like of shape (n_samples, k)
        Selected genes (our orientation; the paper's X^G is k x n).  Used as given
        (centre X_G and y yourself for an unpenalised intercept).
    y : array-like of shape (n_samples,)
    W : sparse of shape (n_samples, n_samples)
    lambda1 : float >= 0
    lambda2 : float > 0

    Returns
    -------
    w : ndarray of shape (k,)

    Notes
    -----
    O(n k^2 + k^3) time via the k x k normal equations when k <= n, else the
    equivalent n x n dual form w = X_G' (P X_G X_G' + lambda2 I)^{-1} y with
    P = I + lambda1 L (push-through identity), O(n^2 k + n^3).
    """
    X_G = check_X(X_G, name="X_G", dense=True)
    n, k = X_G.shape
    y = np.asarray(y, dtype=np.float64).ravel()
    if y.shape != (n,):
        msg = f"y must have shape ({n},) (one target per sample of X_G); got shape {y.shape}"
        raise ValueError(msg)
    lambda1 = _check_nonneg(lambda1, "lambda1")
    lambda2 = _check_nonneg(lambda2, "lambda2", strict=True)
    W = check_graph(W, n)
    L, _ = laplacian(W, n)
    P = sp.identity(n, format="csr") + lambda1 * L
    if k <= n:
        H = X_G.T @ (P @ X_G) + lambda2 * np.eye(k)
        return sla.solve(_sym(H), X_G.T @ y, assume_a="pos")
    # (X'PX + l2 I)^{-1} X' = X' (P X X' + l2 I)^{-1}
    Kmat = P @ (X_G @ X_G.T) + lambda2 * np.eye(n)
    return X_G.T @ np.linalg.solve(np.asarray(Kmat), y)


# --------------------------------------------------------------------------- select_* adapters
def select_glfs(X, W, *, n_features, labels=None, random_state=0, objective="exact", name=None, **params) -> Selection:
    """GLFS as a :class:`glfs.Selection` (for :func:`glfs.select`).

    scores = ``entry_lam`` (higher is better): the largest lam of a path point
    used for ranking (converged points, ``rank_by="weight"``) at which the gene
    is non-zero, or, for genes never non-zero there, -dQ/dbeta_i at the last
    such point (the lam below which it would start to grow); NaN for constant
    genes.  ranking = path ranking (:func:`glfs_path`, ``rank_by``); weights =
    beta at the chosen converged point.  params gain ``n_points``,
    ``n_converged``, ``monotone``, ``kkt_tol``; ``extra["path"]`` is one record
    per point: lam, n_selected, objective, converged, kkt (the scaled KKT
    residual, see :data:`KKT_TOL`).  ``random_state`` is accepted for the
    uniform interface; GLFS is deterministic (uniform start).  ``name`` is the Selection's method
    name: the registered adapters below pass their registry name; default ``f"glfs_{objective}"``.
    """
    _check_objective(objective)
    name = f"glfs_{objective}" if name is None else name
    Xv = check_X(X, dense=True, read_only=True).astype(np.float64, copy=False)  # read only: no copy of a float64 X
    const = constant_features(Xv)
    warn_constant(const, name)
    res = glfs_published(Xv, W, objective=objective, n_features=n_features, **params)
    plain = {k: v for k, v in res.params.items()}
    plain.update(lam=res.lam, n_selected_at_lam=int(np.sum(res.weights > 0)))
    return make_selection(
        name,
        res.entry_lam,
        higher_is_better=True,
        n_features=n_features,
        ranking=res.ranking,
        selected=res.selected,
        weights=res.weights,
        params=plain,
        extra={
            "path": [
                {"lam": lam, "n_selected": k, "objective": obj, "converged": bool(c), "kkt": float(r)}
                for (lam, k, obj), c, r in zip(res.path, res.converged, res.kkt)
            ],
            "search": [list(s) for s in res.search],
        },
    )


def select_glfs_paper(X, W, *, n_features, labels=None, random_state=0, **params) -> Selection:
    """GLFS with the paper's Eq. 7 objective and its true gradient."""
    return select_glfs(
        X,
        W,
        n_features=n_features,
        labels=labels,
        random_state=random_state,
        objective="paper",
        name="glfs_paper",
        **params,
    )


def select_glfs_exact(X, W, *, n_features, labels=None, random_state=0, **params) -> Selection:
    """GLFS with the exact covariance trace Tr(A [(M+A)^{-1} M]^2) and its gradient."""
    return select_glfs(
        X,
        W,
        n_features=n_features,
        labels=labels,
        random_state=random_state,
        objective="exact",
        name="glfs_exact",
        **params,
    )


def select_glfs_printed(X, W, *, n_features, labels=None, random_state=0, **params) -> Selection:
    """GLFS as printed: Eq. 7 values, Eq. 9 directions (not a true gradient)."""
    return select_glfs(
        X,
        W,
        n_features=n_features,
        labels=labels,
        random_state=random_state,
        objective="printed",
        name="glfs_printed",
        **params,
    )
