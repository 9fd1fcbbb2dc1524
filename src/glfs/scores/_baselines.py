"""Baselines compared with GLFS: sparse PCA loading mass and Q-alpha.

X has shape (n_samples, n_features) throughout.

Sparse PCA
----------
The GLFS paper (Wang & Goldenberg 2013, Sec. 3) compares with the SPCA of Zou,
Hastie & Tibshirani ("Sparse principal component analysis", JCGS 15(2), 2006).
Its elastic-net criterion, for fixed A (d x k, A'A = I), gives loadings

    beta_j = argmin_b  b'(X'X + lambda2 I) b - 2 alpha_j' X'X b + lambda1_j ||b||_1,

and for fixed B the orthogonal Procrustes update A = U V' with X'X B = U D V'.
For d >> n (gene-expression arrays) Zou et al. (Sec. 3.4) take lambda2 -> inf,
where the loadings become soft-thresholded: beta_j = (|X'X alpha_j| - lambda1_j/2)_+
sign(X'X alpha_j).  That is ``solver="zou"`` (default): O(n d k) per iteration
and O(n d) memory.  We set each lambda1_j so that every component keeps
``n_nonzero`` genes (the paper itself reports SPCA by its number of non-zero
loadings), which is scale-free.  ``solver="sklearn"`` uses scikit-learn's
:class:`~sklearn.decomposition.SparsePCA` instead (a different, dictionary-
learning formulation, Mairal et al. 2009; far slower for d >> n: about 270 s
on 200 x 12,000 here) with penalty ``alpha`` on X scaled to unit mean gene
variance.

Gene score: loading mass ``sum_k |V_kj|`` with unit-norm loading vectors V_k;
higher is better.  Genes with no loading tie at 0 and are then ordered by
variance (higher first), then by index.

Q-alpha
-------
Wolf & Shashua, "Feature selection for unsupervised and supervised inference:
the emergence of sparsity in a weight-based approach", JMLR 6, 2005 (and
ICCV 2003).  With feature vectors m_j = X[:, j] (centred, unit norm: our
reading of their normalisation), weights alpha (||alpha|| = 1) and the sample
affinity A_alpha = sum_j alpha_j m_j m_j' (n x n), Q-alpha maximises
Tr(Q' A_alpha' A_alpha Q) over alpha and orthonormal Q (n x k) by alternating:

    G_ij = (m_i' m_j)(m_i' Q Q' m_j),   alpha <- leading eigenvector of G,
    Q <- orthonormal basis of A_alpha Q  (one orthogonal-iteration step, QR),

from a start Q^(0).  G (d x d) is never formed: G = Z Z' with
Z_j = m_j (x) Q'm_j (a Khatri-Rao product, d x nk), so G v costs O(n d k).
The sign of alpha is arbitrary (eigenvector); we fix it so that sum(alpha) >= 0
(the Perron direction of the "biased non-negative" G the paper analyses) and
rank genes by alpha_j (higher is better; genes with negative alpha rank
after all non-negative ones).  The result depends on the start Q: the GLFS
paper (Sec. 3.3) notes this instability.  Any set of <= k roughly orthogonal
genes is a fixed point (alpha concentrated on them, Q spanning them), so a
random start often ends on arbitrary noise genes.  Default start ``"pca"``:
Q^(0) = the k leading eigenvectors of A_alpha with uniform alpha (every gene
weighted equally), which is deterministic; ``init="random"`` gives a seeded
random orthonormal Q^(0) (see docs/methods/spca-qalpha.md for the comparison).
"""

from __future__ import annotations

import logging
import warnings

import numpy as np
import scipy.sparse.linalg as spla
from threadpoolctl import threadpool_limits

from glfs.core._progress import Progress
from glfs.core._result import Selection, make_selection
from glfs.core._validation import check_int, check_positive, check_X, constant_features, warn_constant

log = logging.getLogger(__name__)

__all__ = ["spca_score", "q_alpha", "select_spca", "select_q_alpha"]

#: Relative tolerance of the Lanczos run (ARPACK) for the leading eigenvector in each Q-alpha iteration.
_LANCZOS_TOL = 1e-10


def _pos_int(value, name, upper=None):
    return check_int(value, name, 1, upper)


def _centred(X):
    X = check_X(X, dense=True)
    return X - X.mean(axis=0)


def _rank_with_tiebreak(score, var, const):
    key_var = np.where(const, -np.inf, var)
    s = np.where(np.isnan(score), -np.inf, score)
    # lexsort: last key is primary
    return np.lexsort((np.arange(score.size), -key_var, -s))


#: Sparse PCA's number of components unless ``n_components`` is given.
SPCA_COMPONENTS = 4


def spca_score(
    X,
    n_components: int = SPCA_COMPONENTS,
    *,
    n_nonzero: int = 50,
    solver: str = "zou",
    alpha: float = 1.0,
    max_iter: int = 200,
    tol: float = 1e-6,
    random_state=0,
    return_components: bool = False,
    return_info: bool = False,
):
    """Sparse-PCA loading mass of every gene.  Higher is better.

    Parameters
    ----------
    X : array-like or sparse of shape (n_samples, n_features)
        Samples in rows, genes in columns (centred internally).
    n_components : int, default 4
        Sparse components k (4 = the number of GBM subtypes).
    n_nonzero : int, default 50
        ``solver="zou"``: non-zero loadings per component (sets lambda1_j);
        capped at the number of genes.
    solver : {"zou", "sklearn"}, default "zou"
        "zou": Zou, Hastie & Tibshirani (2006) SPCA in the d >> n limit
        (soft-thresholding, Sec. 3.4).  "sklearn": scikit-learn SparsePCA.
    alpha : float, default 1.0
        ``solver="sklearn"`` only: l1 penalty, on X scaled to unit mean variance.
    max_iter : int, default 200
    tol : float, default 1e-6
        Stop when the loadings change by less than this (max abs, unit-norm).
    random_state : int, default 0
        Randomised SVD start ("zou") or SparsePCA seed.
    return_components : bool, default False
        Also return the (k, d) unit-norm loading matrix.
    return_info : bool, default False
        Also return ``{"n_iter", "converged"}``: "zou" converged when the
        loadings changed by less than ``tol``; "sklearn" when SparsePCA stopped
        before ``max_iter``.  A solve that did not converge is logged as a
        warning either way.

    Returns
    -------
    scores : ndarray of shape (n_features,)
        ``sum_k |V_kj|``; 0 for genes outside every component, NaN for constant genes.
    components : ndarray of shape (n_components, n_features), optional
    info : dict, optional

    Notes
    -----
    "zou": O(n d k) time per iteration (two products with X, one d x k SVD),
    O(n d) memory.  "sklearn": one Lasso per gene and iteration.
    """
    Xc = _centred(X)
    n, d = Xc.shape
    n_components = _pos_int(n_components, "n_components", min(n, d))
    max_iter = _pos_int(max_iter, "max_iter")
    const = constant_features(Xc)
    if solver == "zou":
        V, info = _spca_zou(Xc, n_components, min(_pos_int(n_nonzero, "n_nonzero"), d), max_iter, tol, random_state)
    elif solver == "sklearn":
        V, info = _spca_sklearn(Xc, n_components, alpha, max_iter, tol, random_state)
    else:
        msg = f"solver must be 'zou' or 'sklearn'; got {solver!r}"
        raise ValueError(msg)
    if not info["converged"]:
        log.warning("spca (%s) did not converge in %d iterations (tol=%g)", solver, max_iter, tol)
    scores = np.abs(V).sum(axis=0)
    scores[const] = np.nan
    out = (scores, *((V,) if return_components else ()), *((info,) if return_info else ()))
    return out if len(out) > 1 else scores


def _spca_zou(Xc, n_components, n_nonzero, max_iter, tol, random_state):
    """:func:`spca_score`'s "zou" solver on the centred Xc: alternating thresholded loadings and an
    orthogonal rotation (Zou, Hastie & Tibshirani 2006), from the top right singular vectors; (V, info)."""
    from sklearn.utils.extmath import randomized_svd

    d = Xc.shape[1]
    _, _, Vt = randomized_svd(Xc, n_components, random_state=random_state)
    A = Vt.T  # (d, k), orthonormal
    with threadpool_limits(limits=1, user_api="blas"):  # many small products
        B = np.zeros_like(A)
        progress = Progress(log, "spca (zou)", max_iter)
        for it in range(max_iter):
            C = Xc.T @ (Xc @ A)  # X'X A, (d, k)
            absC = np.abs(C)
            if n_nonzero < d:
                thr = np.partition(absC, d - n_nonzero - 1, axis=0)[d - n_nonzero - 1]  # (k+1)-th largest
            else:
                thr = np.zeros(C.shape[1])
            Bn = np.sign(C) * np.maximum(absC - thr[None, :], 0.0)
            norms = np.linalg.norm(Bn, axis=0)
            norms[norms == 0] = 1.0
            Bn /= norms
            U, _, Wt = np.linalg.svd(Xc.T @ (Xc @ Bn), full_matrices=False)
            A = U @ Wt
            delta = np.max(np.abs(Bn - B))
            B = Bn
            if delta < tol:
                break
            progress.step(it + 1, f"change {delta:.3g} (tol {tol:g})")
    log.info("spca (zou): %d iterations, last change %.3g", it + 1, delta)
    info = {"n_iter": it + 1, "converged": bool(delta < tol)}
    V = B.T
    return V, info


def _spca_sklearn(Xc, n_components, alpha, max_iter, tol, random_state):
    """:func:`spca_score`'s "sklearn" solver: scikit-learn's SparsePCA on Xc scaled to unit mean variance,
    its components normalised; (V, info)."""
    from sklearn.decomposition import SparsePCA

    alpha = check_positive(alpha, "alpha")
    scale = np.sqrt(Xc.var(axis=0).mean())
    model = SparsePCA(n_components=n_components, alpha=alpha, max_iter=max_iter, tol=tol, random_state=random_state)
    model.fit(Xc / (scale if scale > 0 else 1.0))
    info = {"n_iter": int(model.n_iter_), "converged": bool(model.n_iter_ < max_iter)}
    V = model.components_
    norms = np.linalg.norm(V, axis=1, keepdims=True)
    norms[norms == 0] = 1.0
    V = V / norms
    return V, info


def q_alpha(
    X,
    n_clusters: int = 4,
    *,
    init: str = "pca",
    max_iter: int = 30,
    tol: float = 1e-5,
    random_state=0,
    return_info: bool = False,
):
    """Q-alpha feature weights (Wolf & Shashua, JMLR 2005, unsupervised Q-alpha).

    Parameters
    ----------
    X : array-like or sparse of shape (n_samples, n_features)
        Samples in rows, genes in columns.  Each gene is centred and scaled to
        unit norm first (constant genes get NaN).
    n_clusters : int, default 4
        k, the number of columns of Q (expected clusters).
    init : {"pca", "random"}, default "pca"
        Start Q^(0): a random orthonormal matrix (seeded by ``random_state``),
        or the k leading eigenvectors of A_alpha with uniform alpha (PCA of
        the normalised genes; deterministic).
    max_iter : int, default 30
        Each iteration costs one warm-started Lanczos run; 30 keeps
        200 x 12,000 under a minute on 2 cores.  Non-convergence is logged.
    tol : float, default 1e-5
        Stop when ||alpha_new - alpha_old||_inf < tol (after sign fixing).
    random_state : int, default 0
        Seed of the random orthonormal start Q^(0).  Results depend on it.
    return_info : bool, default False
        Also return a dict with ``n_iter``, ``converged``, ``objective``
        (Tr(Q'A_alpha^2 Q) per iteration) and ``Q`` (the Q that gave the
        returned alpha).

    Returns
    -------
    alpha : ndarray of shape (n_features,)
        Unit-norm weights, sign fixed so that sum(alpha) >= 0; **higher is
        better**.  NaN for constant genes.

    Notes
    -----
    Cost per iteration: the leading eigenvector of G by Lanczos (ARPACK, warm
    started) with O(n d k) per product, plus O(n d k) for the Q update.
    Memory O(n d); G (d x d) is never formed.
    """
    X = check_X(X, dense=True)
    n, d = X.shape
    n_clusters = _pos_int(n_clusters, "n_clusters", n - 1)
    max_iter = _pos_int(max_iter, "max_iter")
    const = constant_features(X)
    Mc = _unit_genes(X, const)
    Q = _q_start(Mc, n_clusters, init, random_state)
    with threadpool_limits(limits=1, user_api="blas"):  # many small products
        alpha, Q_used, objective, n_iter, converged = _q_alpha_iterations(Mc, Q, max_iter=max_iter, tol=tol)
    if not converged:
        log.warning("q_alpha did not converge in %d iterations (last change above tol=%g)", max_iter, tol)
    out = np.full(d, np.nan)
    out[~const] = alpha
    if return_info:
        info = {"n_iter": n_iter, "converged": converged, "objective": np.asarray(objective), "Q": Q_used}
        return out, info
    return out


def _unit_genes(X, const):
    """The non-constant genes m_j centred and scaled to unit norm, shape (n_samples, n_non_constant); needs >= 2."""
    Mc = X[:, ~const] - X[:, ~const].mean(axis=0)
    Mc /= np.linalg.norm(Mc, axis=0)
    dd = Mc.shape[1]
    if dd < 2:
        msg = f"X must have at least 2 non-constant features for q_alpha; got {dd}"
        raise ValueError(msg)
    return Mc


def _q_start(Mc, n_clusters, init, random_state):
    """Q^(0), shape (n_samples, n_clusters): a seeded random orthonormal matrix, or the leading left singular vectors of Mc."""
    if init == "random":
        rng = np.random.default_rng(random_state)
        Q, _ = np.linalg.qr(rng.normal(size=(Mc.shape[0], n_clusters)))
        return Q
    if init == "pca":
        from sklearn.utils.extmath import randomized_svd

        U, _, _ = randomized_svd(Mc, n_clusters, random_state=0)
        return U
    msg = f"init must be 'random' or 'pca'; got {init!r}"
    raise ValueError(msg)


def _q_alpha_iterations(Mc, Q, *, max_iter, tol):
    """Alternate alpha <- leading eigenvector of G and Q <- QR of A_alpha Q (Wolf & Shashua 2005) until alpha settles.

    Returns (alpha, the Q that gave it, Tr(Q'A_alpha^2 Q) per iteration, iterations, converged).
    """
    alpha = None
    objective = []
    converged = False
    progress = Progress(log, "q_alpha", max_iter)
    for it in range(max_iter):
        C = Mc.T @ Q  # (dd, k): Q'm_j
        new = _leading_alpha(Mc, C, alpha)
        Q_used = Q
        A_Q = Mc @ (new[:, None] * C)  # A_alpha Q
        objective.append(float(np.sum(A_Q**2)))
        Q, _ = np.linalg.qr(A_Q)
        if alpha is not None and np.max(np.abs(new - alpha)) < tol:
            alpha = new
            converged = True
            break
        progress.step(it + 1, "" if alpha is None else f"change {np.max(np.abs(new - alpha)):.3g} (tol {tol:g})")
        alpha = new
    return alpha, Q_used, objective, it + 1, converged


def _leading_alpha(Mc, C, alpha):
    """The leading eigenvector of G_ij = (m_i'm_j)(m_i'QQ'm_j) (C = Mc'Q) by Lanczos from ``alpha``, sign fixed so sum >= 0.

    G v costs O(n d k); G (d x d) is never formed.
    """
    dd = Mc.shape[1]

    def matvec(v, C=C):
        v = np.ravel(v)
        Y = Mc @ (v[:, None] * C)  # (n, k) = sum_j v_j m_j (Q'm_j)'
        return np.einsum("jk,jk->j", Mc.T @ Y, C)

    G = spla.LinearOperator((dd, dd), matvec=matvec, dtype=np.float64)
    v0 = alpha if alpha is not None else np.full(dd, 1.0 / np.sqrt(dd))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        _, vec = spla.eigsh(G, k=1, which="LA", v0=v0, tol=_LANCZOS_TOL)
    new = vec[:, 0]
    if new.sum() < 0:
        new = -new
    return new


def select_spca(X, W=None, *, n_features, labels=None, random_state=0, **params) -> Selection:
    """Sparse-PCA loading mass as a :class:`~glfs.Selection` (registry ``"spca"``).

    Ranking: loading mass (higher first); genes without loading by variance,
    then index; constant genes last (NaN).  ``W`` and ``labels`` are ignored.
    """
    Xd = check_X(X, dense=True)
    k = params.get("n_components", SPCA_COMPONENTS)
    if isinstance(k, int) and k > min(Xd.shape):
        msg = (
            f"spca: X has {Xd.shape[0]} samples x {Xd.shape[1]} genes; sparse PCA with {k} components "
            f"({'the default' if 'n_components' not in params else 'the n_components given'}) needs at least {k} of "
            f"each. Pass n_components={min(Xd.shape)} or fewer (method parameter of 'spca'), or use another method"
        )
        raise ValueError(msg)
    s, V, info = spca_score(
        Xd, random_state=0 if random_state is None else random_state, return_components=True, return_info=True, **params
    )
    const = constant_features(Xd)
    warn_constant(const, "spca")
    ranking = _rank_with_tiebreak(s, Xd.var(axis=0), const)
    ranking = np.concatenate([ranking[~const[ranking]], np.flatnonzero(const)])
    return make_selection(
        "spca",
        s,
        higher_is_better=True,
        n_features=n_features,
        ranking=ranking,
        params=dict(params),
        extra={"components": V, "n_iter": info["n_iter"], "converged": info["converged"]},
    )


def select_q_alpha(X, W=None, *, n_features, labels=None, random_state=0, **params) -> Selection:
    """Q-alpha weights as a :class:`~glfs.Selection` (registry ``"q_alpha"``).

    Scores and weights: alpha (sign fixed, higher is better); constant genes
    NaN, ranked last.  ``W`` and ``labels`` are ignored; ``random_state``
    seeds the start Q.
    """
    Xd = check_X(X, dense=True)
    a, info = q_alpha(Xd, random_state=0 if random_state is None else random_state, return_info=True, **params)
    warn_constant(constant_features(Xd), "q_alpha")
    return make_selection(
        "q_alpha",
        a,
        higher_is_better=True,
        n_features=n_features,
        weights=np.nan_to_num(a),
        params=dict(params),
        extra={"n_iter": info["n_iter"], "converged": info["converged"]},
    )
