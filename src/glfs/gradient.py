"""GLFS: gradient-based Laplacian feature selection (Wang & Goldenberg, ICML 2013).

Orientation: X has shape (n_samples, n_features) = (patients, genes); gene i is
the column f_i = X[:, i] (length n).  With beta >= 0 (one weight per gene)

    A = X diag(beta) X'                 (n x n, the paper's X' diag(beta) X)
    M = lambda2 (I + lambda1 L)^{-1}    (n x n, L = D - W the graph Laplacian)
    R = (M + A)^{-1},  K = R M

and three objectives (DESIGN.md section 4 and its errata; docs/methods.md):

- ``"exact"``  : V(beta) = Tr(A [(M+A)^{-1} M]^2) = Tr(K' A K) >= 0, the exact
  A-optimal trace of Cov(w) of LapRLS up to the constant sigma^2 / lambda2^2:
  for a 0/1 beta, V = lambda2^2 Tr(Z^{-1} X_G X_G' Z^{-1}) with X_G the
  (d_G x n) matrix of the selected genes and Z = X_G (I + lambda1 L) X_G' + lambda2 I
  (paper Eq. 4-6, without the last, erroneous, step of Eq. 6).
  True gradient: dV/dbeta_i = f_i' G f_i, G = K S + S K' - S, S = K K'.
- ``"paper"``  : Q(beta) = Tr(A (M+A)^{-2} M^2) (paper Eq. 7), which can be
  negative.  True gradient dQ/dbeta_i = f_i' G f_i with
  G = sym(R^2 M^2 - R^2 M^2 A R - R M^2 A R^2) (DESIGN.md erratum 2).
- ``"printed"``: the value of Eq. 7 with the printed direction of Eq. 9,
  f_i' (M - A)(M + A)^{-3} M^2 f_i, which is *not* the gradient of Eq. 7 unless
  M and A commute (e.g. lambda1 = 0, M = lambda2 I).

Every objective is minimised together with lam * sum(beta) over beta >= 0
(the l1 penalty of Eq. 8 is linear in the non-negative orthant).

Memory: every evaluation forms dense n x n matrices (M, A, R, K, S, G): O(n^2)
memory, O(n^3 + n^2 d) time per evaluation (the gradient of all d genes is one
n x n x d product).  Nothing d x d is ever formed.
"""

from __future__ import annotations

import logging
import math
import warnings
from dataclasses import dataclass, field
from types import MappingProxyType

import numpy as np
import scipy.linalg as sla
import scipy.sparse as sp
from scipy.optimize import minimize

from ._result import Selection, make_selection
from ._validation import check_graph, check_n_features, check_X, constant_features, warn_constant
from .graph import laplacian

log = logging.getLogger(__name__)

__all__ = [
    "OBJECTIVES",
    "GLFSResult",
    "glfs_objective",
    "glfs",
    "glfs_path",
    "laprls_fit",
    "select_glfs",
    "select_glfs_paper",
    "select_glfs_exact",
    "select_glfs_printed",
]

OBJECTIVES = ("paper", "exact", "printed")
SCALES = ("unit", "none", "standardize")

# Defaults (chosen on the planted simulation, benchmarks/glfs_defaults.py; see docs/methods.md).
DEFAULT_LAMBDA1 = 0.01
DEFAULT_LAMBDA2 = 0.01
DEFAULT_BETA_INIT = 2.0
DEFAULT_SCALE = "unit"
DEFAULT_CENTER = False
DEFAULT_SEARCH_C = 1024.0
DEFAULT_N_LAMS = 10
DEFAULT_LAM_RATIO = 1e-2
DEFAULT_MAX_ITER = 100


# --------------------------------------------------------------------------- validation helpers
def _check_objective(objective):
    if objective not in OBJECTIVES:
        msg = f"objective must be one of {OBJECTIVES}; got {objective!r}"
        raise ValueError(msg)
    return objective


def _check_nonneg(value, name, *, strict=False):
    try:
        v = float(value)
    except (TypeError, ValueError):
        msg = f"{name} must be a {'positive' if strict else 'non-negative'} number; got {value!r}"
        raise ValueError(msg) from None
    if not math.isfinite(v) or v < 0 or (strict and v == 0):
        msg = f"{name} must be a {'positive' if strict else 'non-negative'} finite number; got {value!r}"
        raise ValueError(msg)
    return v


def _check_beta(beta, d):
    b = np.asarray(beta, dtype=np.float64)
    if b.shape != (d,):
        msg = f"beta must have shape ({d},) (one weight per feature of X); got shape {b.shape}"
        raise ValueError(msg)
    if not np.all(np.isfinite(b)):
        msg = "beta must contain only finite values; got NaN or infinite entries"
        raise ValueError(msg)
    if np.any(b < 0):
        msg = f"beta must be non-negative (beta >= 0); got a minimum of {b.min():.4g}"
        raise ValueError(msg)
    return b


# --------------------------------------------------------------------------- core linear algebra
def _m_matrix(W, n, lambda1, lambda2):
    """M = lambda2 (I + lambda1 L)^{-1}, dense symmetric (n, n): O(n^3) time, O(n^2) memory."""
    L, _ = laplacian(W, n)
    P = np.eye(n) + lambda1 * L.toarray()
    cf = sla.cho_factor(P, lower=True, check_finite=False)
    M = lambda2 * sla.cho_solve(cf, np.eye(n), check_finite=False)
    return 0.5 * (M + M.T)


def _sym(B):
    return 0.5 * (B + B.T)


def _gram(X, beta):
    """A = X diag(beta) X' over the non-zero weights only: O(n^2 d+)."""
    idx = np.flatnonzero(beta > 0)
    if idx.size == 0:
        return np.zeros((X.shape[0], X.shape[0]))
    Xa = X[:, idx]
    A = (Xa * beta[idx]) @ Xa.T
    return _sym(A)


def _inverse_spd(C):
    """(R, ok) with R = C^{-1} for symmetric positive definite C (Cholesky)."""
    n = C.shape[0]
    try:
        cf = sla.cho_factor(C, lower=True, check_finite=False)
        R = sla.cho_solve(cf, np.eye(n), check_finite=False)
    except np.linalg.LinAlgError:
        R = np.linalg.pinv(C, hermitian=True)
    return _sym(R)


def _value_matrix(X, beta, M, objective, *, need_grad=True):
    """Value of the smooth part and the n x n matrix G with dvalue/dbeta_i = f_i' G f_i."""
    A = _gram(X, beta)
    R = _inverse_spd(M + A)
    K = R @ M  # (M + A)^{-1} M
    if objective == "exact":
        AK = A @ K
        value = float(np.einsum("ij,ij->", K, AK))  # Tr(K' A K) = Tr(A K K) >= 0
        if not need_grad:
            return value, None
        S = K @ K.T  # R M^2 R
        KS = K @ S
        G = KS + KS.T - S  # = S - R A S - S A R, using R A = I - K
        return value, _sym(G)
    # paper / printed value: Tr(A R^2 M^2) = Tr(K M) - Tr(K' K M)  (A R = I - K')
    KM = K @ M  # R M^2
    value = float(np.trace(KM) - np.einsum("ij,ij->", KM, K))
    if not need_grad:
        return value, None
    if objective == "paper":
        R2M2 = R @ KM  # R^2 M^2
        B = R2M2 - R2M2 @ A @ R - KM @ A @ R @ R
        return value, _sym(B)
    # printed Eq. 9: (M - A)(M + A)^{-3} M^2
    D = (M - A) @ (R @ (R @ KM))  # (M - A) R^3 M^2; f' D f = f' sym(D) f
    return value, _sym(D)


def _genewise(X, G):
    """f_i' G f_i for every gene at once: einsum over (n, d); O(n^2 d)."""
    return np.einsum("ij,ij->j", X, G @ X)


def _exact_lowrank(X, beta, P, lambda2, sq, *, need_grad=True):
    """Exact objective and gradient when the support k = |beta > 0| is below n.

    With U = X_S diag(sqrt(beta_S)) (n x k), A = U U' and M^{-1} = P / lambda2
    (P = I + lambda1 L sparse), Woodbury gives K = (M+A)^{-1} M = I - Y U',
    Y = (P U / lambda2) C^{-1}, C = I_k + U' P U / lambda2.  Then
    V = Tr((I - J) H (I - J)'), H = U'U, J = U'Y, and with E = Y U'
    G = I - 2E - 2E' + 3EE' + E^2 + E'^2 - E^2 E' - E E'^2, so for every gene
    (a = U'f, c = Y'f):  f'Gf = f'f - 4 c'a + 3 c'Hc + 2 c'Ja - 2 c' sym(J H) c.
    Cost O(nnz(P) k + n k^2 + k^3 + n k d + k^2 d): no n x n matrix.
    """
    idx = np.flatnonzero(beta > 0)
    k = idx.size
    if k == 0:
        return 0.0, (sq.copy() if need_grad else None)
    U = X[:, idx] * np.sqrt(beta[idx])
    PU = (P @ U) / lambda2
    C = _sym(np.eye(k) + U.T @ PU)
    cf = sla.cho_factor(C, lower=True, check_finite=False)
    Y = sla.cho_solve(cf, PU.T, check_finite=False).T  # PU C^{-1}
    H = _sym(U.T @ U)
    J = U.T @ Y
    T = np.eye(k) - J
    value = float(np.einsum("ij,ij->", T @ H, T))
    if not need_grad:
        return value, None
    a = U.T @ X
    c = Y.T @ X
    JH = J @ H
    B = 3.0 * H - (JH + JH.T)
    grad = sq - 4.0 * np.einsum("ij,ij->j", c, a) + np.einsum("ij,ij->j", c, B @ c) + 2.0 * np.einsum("ij,ij->j", c, J @ a)
    return value, grad


def _evaluate(X, beta, M, objective, *, need_grad=True, lowrank=None):
    """(value, per-gene gradient) of the smooth part; ``lowrank = (P, lambda2, sq)`` enables the exact fast path."""
    if lowrank is not None and objective == "exact" and np.count_nonzero(beta) < 0.5 * X.shape[0]:
        return _exact_lowrank(X, beta, *lowrank, need_grad=need_grad)
    value, G = _value_matrix(X, beta, M, objective, need_grad=need_grad)
    if not need_grad:
        return value, None
    return value, _genewise(X, G)


def glfs_objective(beta, X, W, *, lambda1=DEFAULT_LAMBDA1, lambda2=DEFAULT_LAMBDA2, objective="paper", lam=0.0):
    """GLFS objective and its gradient (or the printed direction) for every gene.

    Parameters
    ----------
    beta : array-like of shape (n_features,)
        Non-negative gene weights.
    X : array-like or sparse of shape (n_samples, n_features)
        Used as given (no centring or scaling; :func:`glfs` preprocesses).
    W : sparse of shape (n_samples, n_samples)
        Patient-similarity graph; L = D - W.
    lambda1 : float >= 0, default 0.01
        Weight of the Laplacian term of LapRLS (Eq. 2).
    lambda2 : float > 0, default 0.01
        Ridge weight of LapRLS (Eq. 2).
    objective : {"paper", "exact", "printed"}, default "paper"
        ``"paper"``: Q = Tr(A (M+A)^{-2} M^2) (Eq. 7) with its true gradient
        f_i' G f_i, G = sym(R^2 M^2 - R^2 M^2 A R - R M^2 A R^2), R = (M+A)^{-1}.
        ``"exact"``: V = Tr(A [(M+A)^{-1} M]^2) = lambda2^2 Tr(Z^{-1} X_G X_G' Z^{-1})
        for 0/1 beta (the exact covariance trace up to sigma^2/lambda2^2, >= 0),
        with its true gradient f_i' (K S + S K' - S) f_i, K = R M, S = K K'.
        ``"printed"``: Eq. 7 value with the printed Eq. 9 direction
        f_i' (M - A)(M + A)^{-3} M^2 f_i -- **not** a gradient in general.
    lam : float >= 0, default 0
        l1 weight (Eq. 8); adds lam * sum(beta) to the value and lam to every
        gradient component.

    Returns
    -------
    value : float
        Lower is better (smaller covariance trace).
    gradient : ndarray of shape (n_features,)

    Notes
    -----
    Cost O(n^2 d + n^3) time and O(n^2 + n d) memory: M, A, (M+A)^{-1} and G are
    dense n x n (allowed for GLFS; no d x d matrix is formed).
    """
    objective = _check_objective(objective)
    X = check_X(X, dense=True)
    n, d = X.shape
    beta = _check_beta(beta, d)
    lambda1 = _check_nonneg(lambda1, "lambda1")
    lambda2 = _check_nonneg(lambda2, "lambda2", strict=True)
    lam = _check_nonneg(lam, "lam")
    W = check_graph(W, n)
    M = _m_matrix(W, n, lambda1, lambda2)
    value, grad = _evaluate(X, beta, M, objective)
    return value + lam * float(beta.sum()), grad + lam


# --------------------------------------------------------------------------- solvers
@dataclass
class _Solve:
    beta: np.ndarray
    value: float  # smooth part + lam * sum(beta)
    grad: np.ndarray  # gradient (or printed direction) of the smooth part at beta
    n_iter: int
    success: bool
    message: str


def _clean(beta, rel=1e-10):
    b = np.where(beta > 0, beta, 0.0)
    mx = b.max() if b.size else 0.0
    if mx > 0:
        b[b <= rel * mx] = 0.0
    return b


def _solve_lbfgsb(X, M, objective, lam, beta0, *, max_iter, fscale, xscale=1.0, lowrank=None):
    # optimise u = beta / xscale so that the start is O(1) and the objective is scaled to O(1):
    # L-BFGS-B's first step has unit length, which in beta units would jump far past the start.
    def fun(u):
        b = u * xscale
        v, g = _evaluate(X, b, M, objective, lowrank=lowrank)
        return (v + lam * b.sum()) / fscale, (g + lam) * (xscale / fscale)

    res = minimize(
        fun,
        beta0 / xscale,
        jac=True,
        method="L-BFGS-B",
        bounds=[(0.0, None)] * beta0.size,
        options={"maxiter": max_iter, "maxfun": 3 * max_iter, "ftol": 1e-12, "gtol": 1e-9, "maxcor": 20},
    )
    b = _clean(res.x * xscale)
    v, g = _evaluate(X, b, M, objective, lowrank=lowrank)
    msg = res.message if isinstance(res.message, str) else res.message.decode()
    return _Solve(b, v + lam * b.sum(), g, int(res.nit), bool(res.success), msg)


def _solve_printed(X, M, lam, beta0, *, max_iter, fscale):
    """Projected descent along the printed Eq. 9 direction, backtracking on the Eq. 7 value.

    A step beta <- max(0, beta - t (d + lam)) is accepted only if the value
    Q + lam sum(beta) decreases; t is halved up to 40 times, doubled after an
    accepted step.  Stops when the relative decrease falls below 1e-10, when no
    decreasing step is found ("line search failed": the printed direction is not
    a descent direction there), or after max_iter steps.
    """
    b = beta0.copy()
    v, dvec = _evaluate(X, b, M, "printed")
    f = v + lam * b.sum()
    step = None
    message = "max_iter reached"
    success = False
    it = 0
    for it in range(1, max_iter + 1):
        direction = dvec + lam
        if step is None:
            scale = np.max(np.abs(direction))
            if scale == 0:
                message, success = "zero direction", True
                break
            step = 0.1 * max(float(b.max()), 1e-12) / scale
        accepted = False
        for _ in range(40):
            bn = np.maximum(b - step * direction, 0.0)
            if np.array_equal(bn, b):
                break
            vn, _unused = _evaluate(X, bn, M, "printed", need_grad=False)
            fn = vn + lam * bn.sum()
            if fn < f:
                accepted = True
                break
            step *= 0.5
        if not accepted:
            message, success = "line search failed: no decrease along the printed direction", False
            break
        rel = (f - fn) / max(abs(f), abs(fn), 1e-300)
        b = _clean(bn)
        v, dvec = _evaluate(X, b, M, "printed")
        f = v + lam * b.sum()
        step *= 2.0
        if rel < 1e-10:
            message, success = "converged (relative decrease < 1e-10)", True
            break
    return _Solve(b, f, dvec, it, success, message)


def _solve(X, M, objective, lam, beta0, *, max_iter, fscale, xscale=1.0, lowrank=None):
    if objective == "printed":
        return _solve_printed(X, M, lam, beta0, max_iter=max_iter, fscale=fscale)
    return _solve_lbfgsb(
        X, M, objective, lam, beta0, max_iter=max_iter, fscale=fscale, xscale=xscale, lowrank=lowrank
    )


# --------------------------------------------------------------------------- preprocessing
def _preprocess(X, center, scale):
    """Centre genes and divide by a global constant (or per gene).  Returns (Xp, factor)."""
    Xp = X - X.mean(axis=0) if center else X.copy()
    if isinstance(scale, str):
        if scale not in SCALES:
            msg = f"scale must be one of {SCALES} or a positive number; got {scale!r}"
            raise ValueError(msg)
        if scale == "none":
            return Xp, np.ones(X.shape[1])
        sq = np.einsum("ij,ij->j", Xp, Xp) / X.shape[0]  # mean square per gene (variance if centred)
        if scale == "unit":
            pos = sq[sq > 0]
            s = math.sqrt(float(np.mean(pos))) if pos.size else 1.0
            return Xp / s, np.full(X.shape[1], s)
        s = np.sqrt(np.where(sq > 0, sq, 1.0))
        return Xp / s, s
    s = _check_nonneg(scale, "scale", strict=True)
    return Xp / s, np.full(X.shape[1], s)


# --------------------------------------------------------------------------- results
@dataclass(frozen=True)
class GLFSResult:
    """Result of :func:`glfs` / :func:`glfs_path`.

    Attributes
    ----------
    weights : ndarray of shape (n_features,)
        beta at the chosen ``lam`` (for the preprocessed X: centred and scaled,
        see ``params``); 0 for genes not selected and for constant genes.
    ranking : ndarray of shape (n_features,)
        Gene indices, best first: order of entry along the decreasing-lam path
        (ties by weight at entry), then never-selected genes by ``entry_lam``
        (the lam below which the KKT condition would let them enter), constant
        genes last.
    selected : ndarray of bool, shape (n_features,)
        Support at the chosen lam, or the top ``n_features`` of ``ranking``.
    lam : float
        The lam of ``weights``.
    objective : float
        Smooth objective + lam * sum(beta) at ``weights`` (lower is better).
    entry_lam : ndarray of shape (n_features,)
        Per-gene score, higher is better: the largest path lam at which the gene
        is non-zero; for genes never non-zero -dQ/dbeta_i at the last path
        solution (below the smallest lam); NaN for constant genes.
    path : tuple of (lam, n_selected, objective)
        Along the path, decreasing lam.
    path_weights : ndarray of shape (n_lams, n_features)
    search : tuple of (lam, n_selected)
        Every lam tried by the halving search (empty when lam was given).
    gradient : ndarray of shape (n_features,)
        Gradient (printed direction for "printed") of the smooth part at the
        last path solution.
    converged : tuple of bool
        Solver success per path point.
    params : mapping
        Plain-valued parameters.
    """

    weights: np.ndarray
    ranking: np.ndarray
    selected: np.ndarray
    lam: float
    objective: float
    entry_lam: np.ndarray
    path: tuple
    path_weights: np.ndarray
    search: tuple
    gradient: np.ndarray
    converged: tuple
    params: MappingProxyType = field(default_factory=lambda: MappingProxyType({}))

    @property
    def n_selected(self) -> int:
        return int(np.sum(self.selected))


class _Problem:
    """Preprocessed data, M, start point and scale shared by the search and the path."""

    def __init__(self, X, W, *, objective, lambda1, lambda2, center, scale, beta_init, max_iter):
        self.objective = _check_objective(objective)
        X = check_X(X, dense=True)
        n, d = X.shape
        self.n, self.d = n, d
        self.lambda1 = _check_nonneg(lambda1, "lambda1")
        self.lambda2 = _check_nonneg(lambda2, "lambda2", strict=True)
        if not isinstance(max_iter, (int, np.integer)) or isinstance(max_iter, bool) or max_iter < 1:
            msg = f"max_iter must be a positive integer; got {max_iter!r}"
            raise ValueError(msg)
        self.max_iter = int(max_iter)
        W = check_graph(W, n)
        self.const = constant_features(X)
        self.active = np.flatnonzero(~self.const)
        if self.active.size == 0:
            msg = f"X must have at least one non-constant feature; all {d} features are constant"
            raise ValueError(msg)
        Xp, self.factor = _preprocess(X, center, scale)
        self.X = np.ascontiguousarray(Xp[:, self.active])
        sq = np.einsum("ij,ij->j", self.X, self.X)
        if np.ndim(beta_init) == 0:
            # start level kappa: A0 = b0 X X' has mean eigenvalue kappa * lambda2 (= kappa * max eig of M)
            kappa = _check_nonneg(beta_init, "beta_init", strict=True)
            self.beta0 = np.full(self.active.size, kappa * self.lambda2 * n / float(sq.sum()))
        else:
            self.beta0 = _check_beta(beta_init, d)[self.active].copy()
            if not np.any(self.beta0 > 0):
                msg = "beta_init must have at least one positive entry on a non-constant feature"
                raise ValueError(msg)
        self.M = _m_matrix(W, n, self.lambda1, self.lambda2)
        Lap, _ = laplacian(W, n)
        self.lowrank = (sp.identity(n, format="csr") + self.lambda1 * Lap, self.lambda2, sq)
        v0, g0 = _evaluate(self.X, self.beta0, self.M, self.objective)
        self.start_doublings = 0
        if np.ndim(beta_init) == 0:
            # A start before the hump (every gradient > 0) leads to beta = 0 for every lam.  This happens
            # when one direction dominates X X' (e.g. raw, uncentred expression levels: the mean
            # direction carries most of the trace).  Double the start level until some gene has a
            # negative gradient (at most 40 times).
            while np.max(-g0) <= 0 and self.start_doublings < 40:
                self.beta0 = 2.0 * self.beta0
                self.start_doublings += 1
                v0, g0 = _evaluate(self.X, self.beta0, self.M, self.objective)
            if self.start_doublings:
                log.info("glfs: start level doubled %d times to pass the hump", self.start_doublings)
        self.g0 = g0
        self.xscale = float(np.mean(self.beta0[self.beta0 > 0]))
        self.fscale = max(float(np.max(np.abs(g0))) * self.xscale, abs(v0), 1e-300)
        self.lam_ref = float(np.max(-g0))

    def solve(self, lam, start):
        return _solve(
            self.X, self.M, self.objective, lam, start, max_iter=self.max_iter, fscale=self.fscale,
            xscale=self.xscale, lowrank=self.lowrank,
        )

    def full(self, b_active, fill=0.0):
        out = np.full(self.d, fill, dtype=np.float64)
        out[self.active] = b_active
        return out


def _halving_search(prob, *, lam_init, C):
    """lam search of Sec. 2.3.2, read as a bisection on log(lam); cold starts from beta_init.

    Step t multiplies lam by C^(2^-t) when the solution is non-empty and divides
    by it when it is empty (the printed "lambda_{t+1} = C/2^t lambda_t" with the
    exponent read in log2 units); floor(log2 C) + 1 solves.  Returns the largest
    lam with a non-empty solution (and that solution), plus the history.
    """
    if lam_init is None:
        if prob.lam_ref <= 0:
            msg = (
                "beta_init is too small: the gradient at the start point is positive for every gene, "
                "so beta = 0 is reached for every lam; increase beta_init (or scale)"
            )
            raise ValueError(msg)
        lam = prob.lam_ref
    else:
        lam = _check_nonneg(lam_init, "lam_init", strict=True)
    t_max = int(math.floor(math.log2(C)))
    history = []
    best = None
    for t in range(t_max + 1):
        sol = prob.solve(lam, prob.beta0)
        k = int(np.sum(sol.beta > 0))
        history.append((float(lam), k))
        log.debug("glfs search t=%d lam=%.4g n_selected=%d (%s)", t, lam, k, sol.message)
        factor = C ** (2.0**-t)
        if k > 0:
            if best is None or lam > best[0]:
                best = (lam, sol)
            lam *= factor
        else:
            lam /= factor
    return best, tuple(history)


def _rank_from_path(prob, lams, betas, last):
    """Entry order along the decreasing-lam path; never-entered genes by -gradient."""
    da = prob.X.shape[1]
    entry = np.full(da, np.nan)
    entry_step = np.full(da, np.iinfo(np.int64).max)
    w_at_entry = np.zeros(da)
    for k, (lam, b) in enumerate(zip(lams, betas)):
        new = (b > 0) & np.isnan(entry)
        entry[new] = lam
        entry_step[new] = k
        w_at_entry[new] = b[new]
    never = np.isnan(entry)
    lam_min = float(min(lams))
    # a gene at 0 with gradient g would start to enter once lam < -g (KKT); keep it below every path lam
    entry[never] = np.minimum(-last.grad[never], np.nextafter(lam_min, -np.inf))
    # sort: entry step asc, then weight at entry desc, then (never) entry score desc, then index
    order = np.lexsort((np.arange(da), -entry, -w_at_entry, entry_step))
    return entry, order


def glfs_path(
    X,
    W,
    lams=None,
    *,
    objective="exact",
    lambda1=DEFAULT_LAMBDA1,
    lambda2=DEFAULT_LAMBDA2,
    center=DEFAULT_CENTER,
    scale=DEFAULT_SCALE,
    beta_init=DEFAULT_BETA_INIT,
    n_lams=DEFAULT_N_LAMS,
    lam_ratio=DEFAULT_LAM_RATIO,
    search_C=DEFAULT_SEARCH_C,
    lam_init=None,
    max_iter=DEFAULT_MAX_ITER,
    _problem=None,
    _first=None,
    _pick=None,
):
    """GLFS along a decreasing lam path with warm starts; gives a full gene ranking.

    Parameters
    ----------
    X : array-like or sparse of shape (n_samples, n_features)
        Samples in rows, genes in columns.  Not modified.
    W : sparse of shape (n_samples, n_samples)
        Patient-similarity graph.
    lams : sequence of positive floats, optional
        Path values (sorted decreasing internally).  Default: ``n_lams`` values
        from lam_max = max_i -dQ/dbeta_i(beta_init) (above it no gene can grow
        from the start) down to ``lam_ratio * lam_max``, geometrically spaced.
    objective : {"exact", "paper", "printed"}, default "exact"
    lambda1, lambda2 : float, default 0.01, 0.01
        LapRLS weights of M = lambda2 (I + lambda1 L)^{-1}.
    center : bool, default False
        Centre each gene before the optimisation.  Default off, as in the
        paper ("no pre-processing") and as chosen on the planted simulation
        (benchmarks/results/glfs_defaults.txt): centred cluster indicators are
        linearly dependent (they sum to 0), so with centring GLFS keeps only
        3 of 4 planted genes.  With raw expression levels, a gene's mean
        enters ||f_i||^2 (the constant vector is in the null space of L).
    scale : {"unit", "none", "standardize"} or float, default "unit"
        Scale of X: "unit" divides X by one global constant so that the mean
        over genes of mean(f_i^2) is 1 (relative gene scales kept; this only
        fixes the units of lam, because ``beta_init`` is relative); "standardize"
        divides each gene by its own root mean square; a float divides X by it.
    beta_init : float or array of shape (n_features,), default 2.0
        Start point of the cold solves.  A float kappa gives the uniform start
        beta_i = kappa * lambda2 * n / sum_i ||f_i||^2, i.e. A0 = X diag(beta) X'
        has mean eigenvalue kappa * lambda2 (kappa times the largest eigenvalue
        of M), which makes the result independent of the units of X and of
        lambda2.  beta = 0 is a stationary point and the global minimiser of
        the exact objective (V >= 0 = V(0)), so the start must lie beyond the
        hump of Q where some genes have a negative gradient; kappa = 2 was best
        on the planted simulation.  If no gene has a negative gradient at that
        start, kappa is doubled until one does (``params["start_doublings"]``).
        An array is used as given.
    n_lams, lam_ratio : int, float
        Size and depth of the default path.
    search_C : float, default 1024
        The constant C of the halving search (floor(log2 C) + 1 solves).
    lam_init : float, optional
        lambda_0 of the halving search; default max_i -dQ/dbeta_i at beta_init.
    max_iter : int, default 100
        L-BFGS-B iterations per solve (non-converged points are recorded in
        ``converged``).

    Returns
    -------
    GLFSResult
        ``weights``/``lam`` are those of the first (largest) path lam with a
        non-empty solution (the first path lam if all are empty).

    Notes
    -----
    The first path point is solved from ``beta_init`` (cold); each next one
    starts from the last non-empty solution (warm; cold again only while every
    solution so far is empty).  Genes enter
    when their gradient falls below -lam.  Cost: (number of solves) x
    (iterations) x O(n^3 + n^2 d), O(n^2 + n d) memory.
    """
    if not isinstance(n_lams, (int, np.integer)) or isinstance(n_lams, bool) or n_lams < 1:
        msg = f"n_lams must be a positive integer; got {n_lams!r}"
        raise ValueError(msg)
    lam_ratio = _check_nonneg(lam_ratio, "lam_ratio", strict=True)
    if lam_ratio >= 1:
        msg = f"lam_ratio must be in (0, 1); got {lam_ratio!r}"
        raise ValueError(msg)
    search_C = _check_nonneg(search_C, "search_C", strict=True)
    if search_C < 2:
        msg = f"search_C must be >= 2; got {search_C!r}"
        raise ValueError(msg)
    prob = _problem or _Problem(
        X, W, objective=objective, lambda1=lambda1, lambda2=lambda2, center=center, scale=scale,
        beta_init=beta_init, max_iter=max_iter,
    )
    search = ()
    first = None
    if lams is None:
        if prob.lam_ref <= 0:
            msg = (
                "beta_init is too small: the gradient at the start point is positive for every gene, "
                "so every lam gives beta = 0; increase beta_init"
            )
            raise ValueError(msg)
        lams = prob.lam_ref * np.geomspace(1.0, lam_ratio, int(n_lams))
    else:
        lams = np.asarray(lams, dtype=np.float64).ravel()
        if lams.size == 0 or not np.all(np.isfinite(lams)) or np.any(lams < 0):
            msg = f"lams must be a non-empty sequence of non-negative finite numbers; got {lams!r}"
            raise ValueError(msg)
        lams = np.sort(lams)[::-1]
    if _first is not None:
        first, search = _first
    betas, path, conv = [], [], []
    prev = None
    last_nonempty = None
    for k, lam in enumerate(lams):
        if k == 0 and first is not None and first[0] == lam:
            sol = first[1]  # the halving search's cold solution at lam*
        else:
            # warm start from the last non-empty solution; cold (beta_init) only until there is one
            start = last_nonempty.beta if last_nonempty is not None else prob.beta0
            sol = prob.solve(float(lam), start)
        betas.append(sol.beta)
        path.append((float(lam), int(np.sum(sol.beta > 0)), float(sol.value)))
        conv.append(bool(sol.success))
        if not sol.success:
            log.info("glfs path: lam=%.4g solver: %s", lam, sol.message)
        prev = sol
        if np.any(sol.beta > 0):
            last_nonempty = sol
    entry_a, order_a = _rank_from_path(prob, lams, betas, prev)
    ranking = np.concatenate([prob.active[order_a], np.flatnonzero(prob.const)])
    entry = prob.full(entry_a, fill=np.nan)
    nonempty = [k for k, b in enumerate(betas) if np.any(b > 0)]
    k_w = nonempty[0] if nonempty else 0
    if _pick is not None:  # first path point with at least _pick genes, else the last point
        k_w = next((k for k, b in enumerate(betas) if np.sum(b > 0) >= _pick), len(betas) - 1)
    b0 = prob.full(betas[k_w])
    params = {
        "objective": prob.objective,
        "lambda1": prob.lambda1,
        "lambda2": prob.lambda2,
        "center": bool(center),
        "scale": scale if isinstance(scale, str) else float(scale),
        "beta_init": float(beta_init) if np.ndim(beta_init) == 0 else "array",
        "n_lams": int(len(lams)),
        "lam_ratio": float(lam_ratio),
        "search_C": float(search_C),
        "max_iter": prob.max_iter,
        "n_constant": int(prob.const.sum()),
        "start_doublings": int(prob.start_doublings),
    }
    return GLFSResult(
        weights=b0,
        ranking=ranking,
        selected=b0 > 0,
        lam=float(lams[k_w]),
        objective=path[k_w][2],
        entry_lam=entry,
        path=tuple(path),
        path_weights=np.vstack([prob.full(b) for b in betas]),
        search=search,
        gradient=prob.full(prev.grad, fill=np.nan),
        converged=tuple(conv),
        params=MappingProxyType(params),
    )


def glfs(
    X,
    W,
    *,
    lam=None,
    objective="exact",
    lambda1=DEFAULT_LAMBDA1,
    lambda2=DEFAULT_LAMBDA2,
    n_features=None,
    center=DEFAULT_CENTER,
    scale=DEFAULT_SCALE,
    beta_init=DEFAULT_BETA_INIT,
    n_lams=DEFAULT_N_LAMS,
    lam_ratio=DEFAULT_LAM_RATIO,
    search_C=DEFAULT_SEARCH_C,
    lam_init=None,
    max_iter=DEFAULT_MAX_ITER,
) -> GLFSResult:
    """Gradient-based Laplacian feature selection (Wang & Goldenberg, ICML 2013, Eq. 8).

    Minimises Q(beta) + lam * sum(beta) over beta >= 0 with L-BFGS-B (projected
    descent along Eq. 9 for ``objective="printed"``), where Q is one of the
    three objectives of :func:`glfs_objective` evaluated on the preprocessed X.

    Parameters
    ----------
    X : array-like or sparse of shape (n_samples, n_features)
        Samples (patients) in rows, genes in columns.  Not modified.
    W : sparse of shape (n_samples, n_samples)
        Patient-similarity graph.
    lam : float >= 0, optional
        l1 weight.  None: the halving search of Sec. 2.3.2 (largest lam with a
        non-empty solution from ``beta_init``).
    n_features : int in [1, n_features], optional
        Select the top ``n_features`` of the path ranking instead of the
        support at ``lam``.
    objective, lambda1, lambda2, center, scale, beta_init, n_lams, lam_ratio, search_C, lam_init, max_iter
        See :func:`glfs_path`.  The path below ``lam`` gives the full ranking.

    Returns
    -------
    GLFSResult
        Larger weights are better; ``ranking`` is best first.

    Notes
    -----
    Memory O(n^2 + n d) (dense n x n M, A, (M+A)^{-1}); time per evaluation
    O(n^3 + n^2 d).  The whole run is about (search solves + n_lams) x
    iterations evaluations.
    """
    prob = _Problem(
        X, W, objective=objective, lambda1=lambda1, lambda2=lambda2, center=center, scale=scale,
        beta_init=beta_init, max_iter=max_iter,
    )
    n_features = check_n_features(n_features, prob.d, allow_none=True)
    common = {"n_lams": n_lams, "lam_ratio": lam_ratio, "_problem": prob}
    if lam is not None:
        lam = _check_nonneg(lam, "lam")
        lams = lam * np.geomspace(1.0, lam_ratio, int(n_lams)) if lam > 0 else np.array([0.0])
        res = glfs_path(None, None, lams, **common)
    elif n_features is None:
        C = _check_nonneg(search_C, "search_C", strict=True)
        best, history = _halving_search(prob, lam_init=lam_init, C=C)
        if best is None:
            msg = (
                f"glfs: the halving search found no lam with a non-empty solution (tried {len(history)} values, "
                f"smallest {min(h[0] for h in history):.4g}); using the default path from lam_max instead"
            )
            warnings.warn(msg, RuntimeWarning, stacklevel=2)
            res = glfs_path(None, None, None, **common)
        else:
            lams = best[0] * np.geomspace(1.0, lam_ratio, int(n_lams))
            res = glfs_path(None, None, lams, _first=((best[0], best[1]), history), **common)
    else:
        res = glfs_path(None, None, None, _pick=n_features, **common)
    if res.n_selected == 0:
        warnings.warn(
            f"glfs: the solution at lam={res.lam:.4g} is empty (beta = 0); the ranking comes from the gradient",
            RuntimeWarning,
            stacklevel=2,
        )
    params = dict(res.params)
    params.update(
        center=bool(center),
        scale=scale if isinstance(scale, str) else float(scale),
        beta_init=float(beta_init) if np.ndim(beta_init) == 0 else "array",
    )
    selected = res.selected
    if n_features is not None:
        selected = np.zeros(prob.d, dtype=bool)
        top = res.ranking[:n_features]
        selected[top[~prob.const[top]]] = True
        params["n_features"] = n_features
    return GLFSResult(
        weights=res.weights,
        ranking=res.ranking,
        selected=selected,
        lam=res.lam,
        objective=res.objective,
        entry_lam=res.entry_lam,
        path=res.path,
        path_weights=res.path_weights,
        search=res.search,
        gradient=res.gradient,
        converged=res.converged,
        params=MappingProxyType(params),
    )


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
def select_glfs(X, W, *, n_features, labels=None, random_state=0, objective="exact", **params) -> Selection:
    """GLFS as a :class:`glfs.Selection` (for :func:`glfs.select`).

    scores = ``entry_lam`` (higher is better): the largest path lam at which the
    gene is non-zero, or, for genes never selected, -dQ/dbeta_i at the last path
    solution (the lam below which it would enter); NaN for constant genes.
    ranking = path ranking; weights = beta at the chosen lam.  ``random_state``
    is accepted for the uniform interface; GLFS is deterministic (uniform start).
    """
    name = {"exact": "glfs_exact", "paper": "glfs_paper", "printed": "glfs_printed"}.get(objective, "glfs")
    _check_objective(objective)
    Xv = check_X(X, dense=True)
    const = constant_features(Xv)
    warn_constant(const, name)
    res = glfs(Xv, W, objective=objective, n_features=n_features, **params)
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
        extra={"path": [list(p) for p in res.path], "search": [list(s) for s in res.search]},
    )


def select_glfs_paper(X, W, *, n_features, labels=None, random_state=0, **params) -> Selection:
    """GLFS with the paper's Eq. 7 objective and its true gradient."""
    return select_glfs(X, W, n_features=n_features, labels=labels, random_state=random_state, objective="paper", **params)


def select_glfs_exact(X, W, *, n_features, labels=None, random_state=0, **params) -> Selection:
    """GLFS with the exact covariance trace Tr(A [(M+A)^{-1} M]^2) and its gradient."""
    return select_glfs(X, W, n_features=n_features, labels=labels, random_state=random_state, objective="exact", **params)


def select_glfs_printed(X, W, *, n_features, labels=None, random_state=0, **params) -> Selection:
    """GLFS as printed: Eq. 7 values, Eq. 9 directions (not a true gradient)."""
    return select_glfs(X, W, n_features=n_features, labels=labels, random_state=random_state, objective="printed", **params)
