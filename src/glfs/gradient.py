"""GLFS: gradient-based Laplacian feature selection (Wang & Goldenberg, ICML 2013).

The three *published* readings of the method live here (``glfs_exact``,
``glfs_paper``, ``glfs_printed``); docs/methods.md, section GLFS, says what each
one is and what was measured.

Orientation: X has shape (n_samples, n_features) = (patients, genes); gene i is
the column f_i = X[:, i] (length n).  With beta >= 0 (one weight per gene)

    A = X diag(beta) X'                 (n x n, the paper's X' diag(beta) X)
    P = I + lambda1 L                   (n x n sparse, L = D - W the graph Laplacian)
    M = lambda2 P^{-1}                  (n x n, dense if formed)
    R = (M + A)^{-1},  K = R M

and three objectives (docs/methods.md, "Errata and the three variants"):

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

import contextlib
import dataclasses
import logging
import math
import warnings
from dataclasses import dataclass, field
from types import MappingProxyType

import numpy as np
import scipy.linalg as sla
import scipy.sparse as sp
import scipy.sparse.linalg as spla
from threadpoolctl import threadpool_limits

from ._result import PicklableResult, Selection, make_selection
from ._validation import (
    check_graph,
    check_int,
    check_n_features,
    check_nonnegative,
    check_positive,
    check_real,
    check_X,
    constant_features,
    warn_constant,
)
from .graph import laplacian

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
RANK_RULES = ("weight", "entry")

# Defaults (chosen on the planted simulation, benchmarks/glfs_defaults.py; see docs/methods.md).
DEFAULT_LAMBDA1 = 0.01
DEFAULT_LAMBDA2 = 0.01
DEFAULT_BETA_INIT = 2.0
DEFAULT_SCALE = "unit"
DEFAULT_CENTER = False
DEFAULT_SEARCH_C = 1024.0
DEFAULT_N_LAMS = 10
DEFAULT_LAM_RATIO = 1e-2
DEFAULT_MAX_ITER = 500
DEFAULT_RANK_BY = "weight"

#: Convergence tolerance on the KKT conditions of min F(beta) = Q(beta) + lam sum(beta), beta >= 0.
#: Per gene the residual is r_i = |d_i| where beta_i > 0 and max(0, -d_i) where beta_i = 0, with
#: d_i = dQ/dbeta_i + lam (for ``"printed"`` the Eq. 9 direction + lam: the fixed-point residual of
#: its own projected step, not a KKT residual).  A point has converged when
#: max_i r_i <= KKT_TOL * max(lam, KKT_FLOOR * max_i ||f_i||^2), i.e. relative to lam (both scale
#: alike with X), the floor only for lam ~ 0.
KKT_TOL = 1e-6
KKT_FLOOR = 1e-10
#: Largest number of samples for which a dense n x n matrix (M, A, R, ...) may be formed.
DENSE_MAX_N = 2000
#: Size limit of the published readings (n_samples * n_features): a lam path of many points, each
#: solved to the KKT tolerance, took 160 to over 300 s at 5,000 x 2,000 and over 300 s at
#: 20,000 x 2,000 on 2 cores (benchmarks/results/scaling.md); docs/methods.md, "Size limits".
PATH_MAX_CELLS = 1e7
#: Largest support (genes with beta > 0) of the low-rank form when dense is not allowed (k x k systems).
LOWRANK_MAX_K = 4000
#: Below this many samples the solver runs with one BLAS thread: its products are small (n x n,
#: k x k) and many, and threads only add synchronisation (on a loaded 2-core machine a 100 x 100
#: product took 10-50 ms with OpenBLAS threads; benchmarks/results/glfs_runtime.txt).
SINGLE_THREAD_MAX_N = 1000
#: A projected-gradient step may set at most this fraction of the non-zero weights to zero.
MAX_KILL_FRACTION = 0.5
_ARMIJO = 1e-4
_MAX_BACKTRACK = 60
_NONMONOTONE = 10
_ZERO_REL = 1e-12
#: Relative rounding allowance in the Armijo test (values of size ~1 carry errors of ~1e-16 per term).
_ROUNDING_REL = 1e-13
#: Conjugate gradients on P = I + lambda1 L: relative residual per column, and the iteration cap.
_CG_RTOL = 1e-13
_CG_MAXITER = 2000
#: The default start level is doubled at most this many times to pass the hump (_Problem).
_MAX_START_DOUBLINGS = 40


class GLFSConvergenceWarning(RuntimeWarning):
    """A GLFS path point stopped before its KKT residual reached ``KKT_TOL``."""


def _blas_threads(n):
    """One BLAS thread for small problems (many small products), else unchanged."""
    if n < SINGLE_THREAD_MAX_N:
        return threadpool_limits(limits=1, user_api="blas")
    return contextlib.nullcontext()


# --------------------------------------------------------------------------- validation helpers
def _check_objective(objective):
    if objective not in OBJECTIVES:
        msg = f"objective must be one of {OBJECTIVES}; got {objective!r}"
        raise ValueError(msg)
    return objective


def _check_nonneg(value, name, *, strict=False):
    """A finite number >= 0 (> 0 if ``strict``); numeric strings are read with float(), as always."""
    check = check_positive if strict else check_nonnegative
    return check(value, name, coerce=True)


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


def _check_max_iter(max_iter):
    return check_int(max_iter, "max_iter", 1)


def _check_path_grid(n_lams, lam_ratio):
    """n_lams a positive integer, lam_ratio in (0, 1): the path lam_max * geomspace(1, lam_ratio, n_lams)."""
    n_lams = check_int(n_lams, "n_lams", 1)
    lam_ratio = check_real(lam_ratio, "lam_ratio", 0, 1, include_boundaries="neither", coerce=True)
    return n_lams, lam_ratio


def _check_rank_by(rank_by):
    if rank_by not in RANK_RULES:
        msg = f"rank_by must be one of {RANK_RULES}; got {rank_by!r}"
        raise ValueError(msg)
    return rank_by


# --------------------------------------------------------------------------- core linear algebra
def _sym(B):
    return 0.5 * (B + B.T)


def _check_path_size(X, objective):
    """Refuse, before any copy of X, inputs above :data:`PATH_MAX_CELLS` (the published readings' size limit)."""
    shape = getattr(X, "shape", None)
    if shape is None or len(shape) != 2:
        return  # check_X reports the bad input
    n, d = int(shape[0]), int(shape[1])
    if n * d > PATH_MAX_CELLS:
        msg = (
            f"glfs ({objective!r} objective): {n} samples x {d} genes = {n * d:.2g} matrix cells, above the "
            f"size limit of {PATH_MAX_CELLS:.0e} (glfs.gradient.PATH_MAX_CELLS) for the published GLFS readings, "
            "whose lam path is solved point by point to the KKT tolerance (over 300 s at 20,000 x 2,000 on "
            "2 cores; docs/methods.md, 'Size limits'). Use method='glfs' (the fixed-size design, which runs "
            "at 50,000 x 2,000), or subsample the cells."
        )
        raise ValueError(msg)


def _refuse_dense(n):
    msg = (
        f"GLFS would need a dense {n} x {n} matrix; dense forms are limited to n_samples <= {DENSE_MAX_N} "
        "(glfs.gradient.DENSE_MAX_N).  Above it only the low-rank (Woodbury) form is used, which needs "
        f"at most {LOWRANK_MAX_K} genes with beta > 0"
    )
    raise ValueError(msg)


def _p_matrix(W, n, lambda1):
    """P = I + lambda1 L, sparse CSR (n, n)."""
    L, _ = laplacian(W, n)
    return sp.csr_matrix(sp.identity(n, format="csr") + lambda1 * L)


def _m_dense(P, lambda2):
    """M = lambda2 P^{-1}, dense symmetric (n, n): O(n^3) time, O(n^2) memory; n <= DENSE_MAX_N only."""
    n = P.shape[0]
    if n > DENSE_MAX_N:
        _refuse_dense(n)
    cf = sla.cho_factor(P.toarray(), lower=True, check_finite=False)
    M = lambda2 * sla.cho_solve(cf, np.eye(n), check_finite=False)
    return _sym(M)


def _m_matrix(W, n, lambda1, lambda2):
    """M = lambda2 (I + lambda1 L)^{-1}, dense symmetric (n, n); refuses n > DENSE_MAX_N."""
    if n > DENSE_MAX_N:
        _refuse_dense(n)
    return _m_dense(_p_matrix(W, n, lambda1), lambda2)


def _inverse_spd(C):
    """C^{-1} for symmetric positive definite C (Cholesky; pseudo-inverse if it fails)."""
    n = C.shape[0]
    try:
        cf = sla.cho_factor(C, lower=True, check_finite=False)
        R = sla.cho_solve(cf, np.eye(n), check_finite=False)
    except np.linalg.LinAlgError:
        R = np.linalg.pinv(C, hermitian=True)
    return _sym(R)


def _coldot(A, B):
    """Column-wise inner products sum_i A_ij B_ij, shape (m,)."""
    return np.einsum("ij,ij->j", A, B)


def _cg_columns(P, B, *, rtol=_CG_RTOL, maxiter=_CG_MAXITER):
    """Solve P X = B (P sparse SPD) by conjugate gradients on every column at once.

    Returns (X, converged).  Start X0 = B (P is I plus a small multiple of L).
    """
    B = np.asarray(B, dtype=np.float64)
    X = B.copy()
    Rm = B - P @ X
    D = Rm.copy()
    rs = _coldot(Rm, Rm)
    target = (rtol * np.maximum(np.sqrt(_coldot(B, B)), np.finfo(float).tiny)) ** 2
    for _ in range(maxiter):
        if np.all(rs <= target):
            return X, True
        PD = P @ D
        den = _coldot(D, PD)
        active = rs > target
        alpha = np.where(active, rs / np.where(den > 0, den, 1.0), 0.0)
        X += alpha * D
        Rm -= alpha * PD
        rs_new = _coldot(Rm, Rm)
        beta = np.where(active, rs_new / np.where(rs > 0, rs, 1.0), 0.0)
        D = Rm + beta * D
        rs = rs_new
    return X, bool(np.all(rs <= target))


class _Model:
    """Data, operators and the choice of evaluation form for one GLFS problem.

    Holds X (n, d) as used (already preprocessed), ||f_i||^2, the sparse
    P = I + lambda1 L, and lazily the dense M (only n <= DENSE_MAX_N).  The
    low-rank paper/printed forms need M U = lambda2 P^{-1} U (:meth:`solve_P`).
    """

    def __init__(self, X, P, lambda2, objective):
        self.X = X
        self.n, self.d = X.shape
        self.P = P
        self.lambda2 = float(lambda2)
        self.objective = objective
        self.sq = _coldot(X, X)
        self._M = None
        self._lu = None
        self._mx = None  # columns of M X computed so far (filled on demand: only genes that enter a support)
        self._mx_done = np.zeros(self.d, dtype=bool)
        self.n_dense = 0  # evaluations in each form (diagnostics)
        self.n_lowrank = 0

    @property
    def M(self):
        if self._M is None:
            self._M = _m_dense(self.P, self.lambda2)
        return self._M

    def solve_P(self, B):
        """P^{-1} B for B of shape (n, k): conjugate gradients, all columns at once.

        P = I + lambda1 L is symmetric positive definite with eigenvalues in
        [1, 1 + lambda1 lambda_max(L)], so CG converges fast: O(nnz(P) k) per
        iteration, to a relative residual of 1e-13 per column.  (A sparse LU of
        a kNN-graph Laplacian fills in almost completely: 1.1e7 non-zeros at
        n = 5,000.)  If CG has not converged after 2,000 iterations, a sparse LU
        (minimum-degree ordering) is used instead.
        """
        X, ok = _cg_columns(self.P, B)
        if ok:
            return X
        if self._lu is None:
            log.info("glfs: CG on P = I + lambda1 L did not converge; using a sparse LU of P")
            self._lu = spla.splu(sp.csc_matrix(self.P), permc_spec="MMD_AT_PLUS_A")
        return self._lu.solve(np.asfortranarray(B))

    def mx(self, idx):
        """Columns idx of M X = lambda2 P^{-1} X, shape (n, len(idx)); each column is solved once and cached."""
        if self._mx is None:
            self._mx = np.empty((self.n, self.d), order="F")
        todo = idx[~self._mx_done[idx]]
        if todo.size:
            self._mx[:, todo] = self.lambda2 * self.solve_P(self.X[:, todo])
            self._mx_done[todo] = True
        return self._mx[:, idx]

    def dense_cheaper(self, k, m):
        """Whether the dense form is cheaper for k non-zero weights and m wanted gradients (flop estimate).

        dense ~ 12 n^3 + 2 n^2 k + 4 n^2 m (inverse and products, A, G X and the
        column sums); low-rank ~ p nnz(P) k + c n k^2 + k^3 / 3 + 2 q n k m + 8 k^2 m
        with q = 2 projections (exact) or 4 (paper, printed), c = 3 or 8 k x k
        Gram matrices and p = 2 or 4 sparse products (M U comes from the cached
        columns of M X, :meth:`mx`).  Never dense for n > DENSE_MAX_N.
        """
        n = self.n
        if n > DENSE_MAX_N:
            return False
        exact = self.objective == "exact"
        q, c, p = (2, 3, 2) if exact else (4, 8, 4)
        dense = 12.0 * n**3 + 2.0 * n * n * k + 4.0 * n * n * m
        lowrank = p * self.P.nnz * k + c * n * k * k + k**3 / 3.0 + 2.0 * q * n * k * m + 8.0 * k * k * m
        return dense < lowrank

    def state(self, beta, m=None):
        """Evaluation state at beta (value now, gradients on demand); m = number of gradients wanted."""
        idx = np.flatnonzero(beta > 0)
        k = idx.size
        m = self.d if m is None else m
        if k == 0:
            return _ZeroState(self)
        if self.dense_cheaper(k, m):
            self.n_dense += 1
            return _DenseState(self, beta, idx)
        if self.n > DENSE_MAX_N and k > LOWRANK_MAX_K:
            msg = (
                f"GLFS on {self.n} samples (> DENSE_MAX_N = {DENSE_MAX_N}) uses only the low-rank form, "
                f"whose k x k systems are limited to LOWRANK_MAX_K = {LOWRANK_MAX_K} genes with beta > 0; "
                f"this point has {k}.  Select among fewer genes (e.g. highly variable genes first) or use "
                "method='glfs' (the budgeted relaxation)"
            )
            raise ValueError(msg)
        self.n_lowrank += 1
        return _LowRankState(self, beta, idx)


class _ZeroState:
    """beta = 0: value 0 and, for all three objectives, gradient ||f_i||^2 (K = I, R = M^{-1})."""

    def __init__(self, model):
        self.model = model
        self.value = 0.0

    def grad(self, cols=None):
        sq = self.model.sq
        return sq.copy() if cols is None else sq[cols]


class _DenseState:
    """Dense n x n form: O(n^2 k + n^3) for the value, + O(n^3 + n^2 m) for m gradients."""

    def __init__(self, model, beta, idx):
        self.model = model
        M = model.M
        Xa = model.X[:, idx]
        A = _sym((Xa * beta[idx]) @ Xa.T)
        R = _inverse_spd(M + A)
        K = R @ M  # (M + A)^{-1} M
        self.A, self.R, self.K = A, R, K
        self._G = None
        if model.objective == "exact":
            self.value = float(np.einsum("ij,ij->", K, A @ K))  # Tr(K' A K) >= 0
        else:
            KM = K @ M  # R M^2
            self.KM = KM
            # Tr(A R^2 M^2) = Tr(K M) - Tr(K' K M), using A R = I - K'
            self.value = float(np.trace(KM) - np.einsum("ij,ij->", KM, K))

    def _gmatrix(self):
        if self._G is None:
            A, R, K, M = self.A, self.R, self.K, self.model.M
            obj = self.model.objective
            if obj == "exact":
                S = K @ K.T  # R M^2 R
                KS = K @ S
                G = KS + KS.T - S  # = S - R A S - S A R, using R A = I - K
            elif obj == "paper":
                R2M2 = R @ self.KM  # R^2 M^2
                G = R2M2 - R2M2 @ A @ R - self.KM @ A @ R @ R
            else:  # printed Eq. 9: (M - A)(M + A)^{-3} M^2
                G = (M - A) @ (R @ (R @ self.KM))
            self._G = _sym(G)
        return self._G

    def grad(self, cols=None):
        X = self.model.X if cols is None else self.model.X[:, cols]
        return _coldot(X, self._gmatrix() @ X)


class _LowRankState:
    """Woodbury form over the k genes with beta > 0: no n x n matrix.

    U = X_S diag(sqrt(beta_S)) (n x k), N = M^{-1} U = P U / lambda2,
    C = I + U'N, so (M + A)^{-1} = M^{-1} - N C^{-1} N', R U = N C^{-1} and
    K = I - N C^{-1} U'.  With H = U'U, for every gene (a = U'f, c = C^{-1} N'f):

    - exact: V = Tr(C^{-1} H C^{-1});  with J = I - C^{-1},
      f'Gf = f'f - 4 c'a + 3 c'Hc + 2 c'Ja - 2 c' sym(J H) c.
    - paper: with V_ = M U (cached columns of M X), T = U'M U, F = N'N, e = U'M f,
      b = N'M^{-1} f:  Q = Tr(C^{-1} H) - Tr(C^{-1} F C^{-1} T) and
      f'Gf = f'f - 2 a'c + c'Hc - 2 (e - T c)' C^{-1} (b - F c).
    - printed: with E = N'M^{-1}N, a~ = C^{-1} a, e~ = C^{-1} e,
      f'Df = f'f - 3 a'c - b'e~ + c'F e~ + 2 a~'E e~ + 2 a~'F a~ - 2 a~'F C^{-1} F e~.

    (Derivations in docs/methods.md, "Low-rank form".)  Cost: O(nnz(P) k
    + n k^2 + k^3) for the value (+ once per gene that enters a support, a CG
    solve for its column of M X), + O(n k m + k^2 m) for m genes.
    """

    def __init__(self, model, beta, idx):
        self.model = model
        X, P, l2 = model.X, model.P, model.lambda2
        k = idx.size
        U = X[:, idx] * np.sqrt(beta[idx])
        N = (P @ U) / l2
        C = _sym(np.eye(k) + U.T @ N)
        self.cf = sla.cho_factor(C, lower=True, check_finite=False)
        Ci = _sym(sla.cho_solve(self.cf, np.eye(k), check_finite=False))
        H = _sym(U.T @ U)
        self.U, self.N, self.Ci, self.H = U, N, Ci, H
        if model.objective == "exact":
            self.value = float(np.einsum("ij,ij->", Ci @ H, Ci))
            self.S = np.hstack([U, N])
            return
        V = model.mx(idx) * np.sqrt(beta[idx])  # M U
        T = _sym(U.T @ V)
        F = _sym(N.T @ N)
        CiF = Ci @ F
        self.value = float(np.trace(Ci @ H) - np.einsum("ij,ij->", CiF @ Ci, T))
        Bm = (P @ N) / l2  # M^{-1} N
        self.T, self.F = T, F
        if model.objective == "printed":
            self.E = _sym(N.T @ Bm)
        self.S = np.hstack([U, N, V, Bm])

    def grad(self, cols=None):
        model = self.model
        X = model.X if cols is None else model.X[:, cols]
        s = model.sq if cols is None else model.sq[cols]
        k = self.U.shape[1]
        Z = self.S.T @ X  # (2k or 4k, m) projections
        a, gN = Z[:k], Z[k : 2 * k]
        c = sla.cho_solve(self.cf, gN, check_finite=False)
        H, Ci = self.H, self.Ci
        obj = model.objective
        if obj == "exact":
            J = np.eye(k) - Ci
            JH = J @ H
            B = 3.0 * H - (JH + JH.T)
            return s - 4.0 * _coldot(c, a) + _coldot(c, B @ c) + 2.0 * _coldot(c, J @ a)
        e, b = Z[2 * k : 3 * k], Z[3 * k :]
        T, F = self.T, self.F
        if obj == "paper":
            u1 = e - T @ c
            u2 = b - F @ c
            return s - 2.0 * _coldot(a, c) + _coldot(c, H @ c) - 2.0 * _coldot(u1, Ci @ u2)
        at = Ci @ a
        et = Ci @ e
        Fat = F @ at
        return (
            s
            - 3.0 * _coldot(a, c)
            - _coldot(b, et)
            + _coldot(c, F @ et)
            + 2.0 * _coldot(at, self.E @ et)
            + 2.0 * _coldot(at, Fat)
            - 2.0 * _coldot(Fat, Ci @ (F @ et))
        )


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
    The form is chosen by a flop estimate (module docstring): dense, O(n^3 + n^2 d)
    time and O(n^2 + n d) memory, or low-rank over the k genes with beta > 0,
    O(nnz(P) k + n k^2 + k^3 + n k d + k^2 d) with no n x n matrix.  Above
    ``DENSE_MAX_N`` samples only the low-rank form is used (at most
    ``LOWRANK_MAX_K`` non-zero weights, else ValueError).
    """
    objective = _check_objective(objective)
    X = check_X(X, dense=True)
    n, d = X.shape
    beta = _check_beta(beta, d)
    lambda1 = _check_nonneg(lambda1, "lambda1")
    lambda2 = _check_nonneg(lambda2, "lambda2", strict=True)
    lam = _check_nonneg(lam, "lam")
    W = check_graph(W, n)
    model = _Model(X, _p_matrix(W, n, lambda1), lambda2, objective)
    st = model.state(beta)
    return st.value + lam * float(beta.sum()), st.grad() + lam


# --------------------------------------------------------------------------- solver
@dataclass
class _Solve:
    beta: np.ndarray
    value: float  # smooth part + lam * sum(beta)
    grad: np.ndarray  # gradient (or printed direction) of the smooth part at beta, every gene
    n_iter: int
    converged: bool
    kkt: float  # max_i r_i / max(lam, KKT_FLOOR * max ||f||^2)
    message: str


def _kkt_residual(beta, direction):
    """Per-gene KKT residual of min F, beta >= 0, for direction = dF/dbeta (incl. lam)."""
    return np.where(beta > 0, np.abs(direction), np.maximum(0.0, -direction))


def _kkt_scale(model, lam):
    return max(float(lam), KKT_FLOOR * float(model.sq.max()))


def _cap_step(alpha, b, direction):
    """Largest step <= alpha that sets at most MAX_KILL_FRACTION of the non-zero weights to zero."""
    shrink = (b > 0) & (direction > 0)
    if not shrink.any():
        return alpha
    tau = np.sort(b[shrink] / direction[shrink])  # step at which each shrinking weight reaches 0
    kmax = max(1, int(MAX_KILL_FRACTION * np.count_nonzero(b > 0)))
    if tau.size > kmax and alpha > tau[kmax - 1]:
        return float(tau[kmax - 1])
    return alpha


def _solve(model, lam, beta_start, *, max_iter, tol=KKT_TOL):
    """Minimise Q(beta) + lam sum(beta) over beta >= 0 from ``beta_start``, to the KKT tolerance.

    Active-set spectral projected gradient (SPG; Birgin, Martinez & Raydan,
    SIAM J. Optim. 10, 2000):

    1. the working set is the support plus the genes at 0 whose gradient
       violates KKT (d_i < -tol/2 * scale, the glmnet strategy); every other
       gene stays at 0, and genes that reach 0 with d_i >= 0 leave the working
       set (the projection would keep them at 0 anyway);
    2. steps beta <- max(0, beta - alpha d) on the working set, alpha from the
       Barzilai-Borwein ratio s's / s'y (4 x the last step when s'y <= 0), capped
       so that one step sets at most ``MAX_KILL_FRACTION`` of the non-zero
       weights to zero (a dense start is thinned over several steps instead of
       being projected onto beta = 0 -- for the exact objective the global
       minimum -- in one), halved until F is at most the largest of the last 10
       accepted values + 1e-4 * d'(beta_new - beta) (non-monotone Armijo, with a
       rounding allowance of 1e-13 x the magnitude of the terms); weights below
       1e-12 x the largest start weight are set to 0;
    3. when the working set satisfies half the tolerance, the gradient of every
       gene is computed; the solve has converged when max_i r_i <= tol * scale
       (``KKT_TOL``, :func:`_kkt_residual`), else the violators join the working
       set and 2. continues.

    For ``"printed"`` d is the Eq. 9 direction + lam, so the "KKT" residual is
    the fixed-point residual of its own projected step (zero exactly where
    beta = max(0, beta - alpha d)), not a stationarity measure of Eq. 7; the
    sufficient decrease is measured with that direction, and since the value
    need not decrease along it near the fixed point, a step that does not pass
    the value test is also accepted when it lowers the largest fixed-point
    residual on the working set by the factor 1 - 1e-4.  If no halving of alpha
    gives either, the solve stops unconverged ("line search failed").
    ``max_iter`` bounds the accepted steps.  Cost per step: one evaluation on the
    working set (dense or low-rank, :meth:`_Model.state`); per round one on all genes.
    """
    scale = _kkt_scale(model, lam)
    b = np.where(beta_start > 0, beta_start, 0.0).astype(np.float64)
    bmax = float(b.max()) if b.size else 0.0
    cur = _Iterate(b=b, st=model.state(b), zero=_ZERO_REL * (bmax if bmax > 0 else 1.0))
    g = cur.st.grad()
    message = "max_iter reached"
    converged = False
    while True:
        dfull = g + lam
        r = _kkt_residual(cur.b, dfull)
        kkt = float(r.max()) / scale if r.size else 0.0
        if kkt <= tol:
            converged, message = True, "converged (KKT residual within tolerance)"
            break
        if cur.it >= max_iter:
            break
        failed = _working_set_steps(model, lam, cur, dfull, threshold=0.5 * tol * scale, max_iter=max_iter)
        g = cur.st.grad()
        if failed:
            message = (
                "line search failed: no decrease along the printed direction"
                if model.objective == "printed"
                else "line search failed: no decrease (rounding level reached before the tolerance)"
            )
            kkt = float(_kkt_residual(cur.b, g + lam).max()) / scale
            converged = kkt <= tol
            break
    return _Solve(cur.b, cur.st.value + lam * float(cur.b.sum()), g, cur.it, bool(converged), kkt, message)


@dataclass
class _Iterate:
    """The solver's current point: beta, its evaluation state, the step length, the steps taken, the zero level."""

    b: np.ndarray
    st: object
    zero: float
    alpha: float | None = None
    it: int = 0


def _working_set_steps(model, lam, cur, dfull, *, threshold, max_iter):
    """Step 2 of :func:`_solve`: projected BB steps on the working set until its KKT residual is <= ``threshold``.

    The working set is the support plus the genes at 0 with d_i < -threshold;
    genes that reach 0 and would not grow leave it.  Updates ``cur``; returns
    True when the line search failed.
    """
    b = cur.b
    ws = np.flatnonzero((b > 0) | (dfull < -threshold))
    bw = b[ws].copy()
    dw = dfull[ws]
    penalty = lam * float(b.sum())
    history = [cur.st.value + penalty]
    while cur.it < max_iter:
        if ws.size == 0 or float(_kkt_residual(bw, dw).max()) <= threshold:
            break
        if cur.alpha is None:
            cur.alpha = 0.1 * (float(bw.max()) if bw.max() > 0 else cur.zero / _ZERO_REL) / float(np.abs(dw).max())
        cur.alpha = _cap_step(cur.alpha, bw, dw)
        step = _backtrack(model, lam, cur, ws, bw, dw, history=history, penalty=penalty)
        if step is None:
            return True
        full, bn, dn, stn, penalty, Fn = step
        s_ = bn - bw
        y_ = dn - dw
        sy = float(s_ @ y_)
        cur.alpha = float(s_ @ s_) / sy if sy > 0 else 4.0 * cur.alpha
        cur.b, cur.st = full, stn
        history.append(Fn)
        cur.it += 1
        # genes at 0 that would not grow stay at 0 under the projection: drop them from the
        # working set until the next check over all genes (the iterates do not change)
        keep = (bn > 0) | (dn < 0)
        ws, bw, dw = ws[keep], bn[keep], dn[keep]
    return False


def _backtrack(model, lam, cur, ws, bw, dw, *, history, penalty):
    """The line search of :func:`_solve`: halve ``cur.alpha`` until the projected step is accepted.

    Accepted: the non-monotone Armijo test, or, for "printed", a step that
    shrinks the fixed-point residual.  Returns (beta, beta on ws, d on ws,
    state, penalty, F) of the step, or None after ``_MAX_BACKTRACK`` halvings.
    """
    v = cur.st.value
    for _ in range(_MAX_BACKTRACK):
        step = bw - cur.alpha * dw
        bn = np.where(step > cur.zero, step, 0.0)
        full = cur.b.copy()
        full[ws] = bn
        stn = model.state(full, ws.size)
        pen_n = lam * float(full.sum())
        Fn = stn.value + pen_n
        allowance = _ROUNDING_REL * (abs(stn.value) + abs(v) + pen_n + penalty)
        if Fn <= max(history[-_NONMONOTONE:]) + _ARMIJO * float(dw @ (bn - bw)) + allowance:
            return full, bn, stn.grad(ws) + lam, stn, pen_n, Fn
        if model.objective == "printed":
            # the Eq. 9 direction is not the gradient of Eq. 7, so near its fixed point the value
            # need not decrease along it: accept a step that shrinks the fixed-point residual
            dn = stn.grad(ws) + lam
            if _kkt_residual(bn, dn).max() <= (1.0 - _ARMIJO) * _kkt_residual(bw, dw).max():
                return full, bn, dn, stn, pen_n, Fn
        cur.alpha *= 0.5
    return None


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
class GLFSResult(PicklableResult):
    """Result of :func:`glfs` / :func:`glfs_path`.

    Attributes
    ----------
    weights : ndarray of shape (n_features,)
        beta at the chosen ``lam`` (for the preprocessed X: centred and scaled,
        see ``params``); 0 for genes not selected and for constant genes.
    ranking : ndarray of shape (n_features,)
        Gene indices, best first; rule ``params["rank_by"]`` (see
        :func:`glfs_path`), constant genes last.
    selected : ndarray of bool, shape (n_features,)
        Support at the chosen lam, or the top ``n_features`` of ``ranking``.
    lam : float
        The lam of ``weights`` (a converged point whenever one exists).
    objective : float
        Smooth objective + lam * sum(beta) at ``weights`` (lower is better).
    entry_lam : ndarray of shape (n_features,)
        Per-gene score, higher is better, consistent with ``ranking``: the
        largest lam of a path point used for ranking at which the gene is
        non-zero; for genes never non-zero -dQ/dbeta_i at the last such point
        (capped just below the smallest lam); NaN for constant genes.
    path : tuple of (lam, n_selected, objective)
        Along the path, decreasing lam.
    path_weights : ndarray of shape (n_lams, n_features)
    search : tuple of (lam, n_selected)
        Every lam tried by the halving search (empty when it did not run).
    gradient : ndarray of shape (n_features,)
        Gradient (printed direction for "printed") of the smooth part at the
        last path point used for ranking.
    converged : tuple of bool
        Per path point: KKT residual <= ``KKT_TOL`` (see :data:`KKT_TOL`).
    params : mapping
        Plain-valued parameters, including ``n_converged``, ``monotone`` and
        ``rank_by``.
    kkt : tuple of float
        Per path point: max_i r_i / max(lam, KKT_FLOOR * max_i ||f_i||^2).
    n_iter : tuple of int
        Per path point: projected-gradient steps taken.
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
    kkt: tuple = ()
    n_iter: tuple = ()

    @property
    def n_selected(self) -> int:
        return int(np.sum(self.selected))


class _Problem:
    """Preprocessed data, the evaluation model, the start point and lam_ref (shared by search and path)."""

    def __init__(self, X, W, *, objective, lambda1, lambda2, center, scale, beta_init, max_iter):
        self.objective = _check_objective(objective)
        _check_path_size(X, self.objective)
        X = check_X(X, dense=True)
        n, d = X.shape
        self.n, self.d = n, d
        self.lambda1 = _check_nonneg(lambda1, "lambda1")
        self.lambda2 = _check_nonneg(lambda2, "lambda2", strict=True)
        self.max_iter = _check_max_iter(max_iter)
        W = check_graph(W, n)
        self.const = constant_features(X)
        self.active = np.flatnonzero(~self.const)
        if self.active.size == 0:
            msg = f"X must have at least one non-constant feature; all {d} features are constant"
            raise ValueError(msg)
        Xp, self.factor = _preprocess(X, center, scale)
        self.X = np.ascontiguousarray(Xp[:, self.active])
        self.model = _Model(self.X, _p_matrix(W, n, self.lambda1), self.lambda2, self.objective)
        sq = self.model.sq
        if np.ndim(beta_init) == 0:
            # start level kappa: A0 = b0 X X' has mean eigenvalue kappa * lambda2 (= kappa * max eig of M)
            kappa = _check_nonneg(beta_init, "beta_init", strict=True)
            self.beta0 = np.full(self.active.size, kappa * self.lambda2 * n / float(sq.sum()))
        else:
            self.beta0 = _check_beta(beta_init, d)[self.active].copy()
            if not np.any(self.beta0 > 0):
                msg = "beta_init must have at least one positive entry on a non-constant feature"
                raise ValueError(msg)
        with _blas_threads(n):
            g0 = self.model.state(self.beta0).grad()
        self.start_doublings = 0
        if np.ndim(beta_init) == 0:
            # A start before the hump (every gradient > 0) leads to beta = 0 for every lam.  This happens
            # when one direction dominates X X' (e.g. raw, uncentred expression levels: the mean
            # direction carries most of the trace).  Double the start level until some gene has a
            # negative gradient (at most _MAX_START_DOUBLINGS times).
            while np.max(-g0) <= 0 and self.start_doublings < _MAX_START_DOUBLINGS:
                self.beta0 = 2.0 * self.beta0
                self.start_doublings += 1
                with _blas_threads(n):
                    g0 = self.model.state(self.beta0).grad()
            if self.start_doublings:
                log.info("glfs: start level doubled %d times to pass the hump", self.start_doublings)
        self.g0 = g0
        self.lam_ref = float(np.max(-g0))

    def solve(self, lam, start):
        with _blas_threads(self.n):
            return _solve(self.model, lam, start, max_iter=self.max_iter)

    def full(self, b_active, fill=0.0):
        out = np.full(self.d, fill, dtype=np.float64)
        out[self.active] = b_active
        return out


def _halving_search(prob, *, lam_init, C):
    """lam search of Sec. 2.3.2, read as a bisection on log(lam); cold starts from beta_init.

    Step t multiplies lam by C^(2^-t) when the solution is non-empty and divides
    by it when it is empty (the printed "lambda_{t+1} = C/2^t lambda_t" with the
    exponent read in log2 units); floor(log2 C) + 1 solves.  A solve that did not
    converge counts as empty (its iterate is not a solution).  Returns the
    largest lam with a converged non-empty solution (and that solution), plus the
    history of (lam, n_selected).
    """
    if lam_init is None:
        if prob.lam_ref <= 0:
            msg = (
                f"no gene has a negative {'Eq. 9 direction' if prob.objective == 'printed' else 'gradient'} at the "
                f"start point (beta_init, start level doubled {prob.start_doublings} times), so beta = 0 is reached "
                "for every lam; seen with fewer genes than samples (docs/methods.md); try another beta_init"
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
        k = int(np.sum(sol.beta > 0)) if sol.converged else 0
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


def _rank_from_path(lams, betas, last_grad, use):
    """Ranking over the path points ``use`` (indices into lams, decreasing lam).

    Key 1: the largest lam among the used points at which the gene is non-zero
    (larger first); key 2: the weight at that point (larger first); genes never
    non-zero at a used point follow, ordered by -gradient at the last used point
    (most negative gradient first: a gene at 0 would start to grow once
    lam < -g_i); ties by index.  Returns (entry score, order).
    """
    da = betas[0].size
    entry = np.full(da, np.nan)
    w_at_entry = np.zeros(da)
    for k in use:  # decreasing lam: the first point where a gene is non-zero has the largest lam
        b = betas[k]
        new = (b > 0) & np.isnan(entry)
        entry[new] = lams[k]
        w_at_entry[new] = b[new]
    never = np.isnan(entry)
    lam_min = float(min(lams[k] for k in use))
    entry[never] = np.minimum(-last_grad[never], np.nextafter(lam_min, -np.inf))
    order = np.lexsort((np.arange(da), -w_at_entry, -entry))
    return entry, order


def _nested(betas, use):
    """Whether the supports of consecutive used points are nested (support grows as lam decreases)."""
    return all(not np.any((betas[a] > 0) & ~(betas[b] > 0)) for a, b in zip(use, use[1:]))


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
    rank_by=DEFAULT_RANK_BY,
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
    max_iter : int, default 500
        Projected-gradient steps per path point.  A point whose KKT residual is
        still above ``KKT_TOL`` then is marked ``converged=False`` (and warned
        about with :class:`GLFSConvergenceWarning`).
    rank_by : {"weight", "entry"}, default "weight"
        ``"weight"``: rank by the weights of converged solutions -- key 1 the
        largest converged lam at which the gene is non-zero (its sparsest
        converged model on a monotone path), key 2 its weight there; genes never
        non-zero at a converged point follow by -gradient at the last converged
        point (the lam below which they would start to grow), ties by index.
        ``"entry"``: the same keys over every path point, converged or not (the
        earlier rule: order of first entry along the path, ties by weight at
        entry, then -gradient at the last point).  The two agree when every
        point converged.  Without any converged point both use every point.

    Returns
    -------
    GLFSResult
        ``weights``/``lam`` are those of the first (largest) converged path lam
        with a non-empty solution (else the first converged point, else the
        first point); ``converged``, ``kkt`` and ``n_iter`` per point.

    Notes
    -----
    Path: the first point is solved from ``beta_init`` (cold).  Each next point
    starts from the last converged non-empty solution (warm, as glmnet), or cold
    again while there is none.  Warm starts at a smaller lam keep the genes
    that were non-zero (lowering lam lowers the penalty) and add the genes whose
    gradient has dropped below -lam, so the support does not grow as lam grows;
    the problem is non-convex and a gene may still leave, and a cold restart
    after an empty point is not nested with anything before it:
    ``params["monotone"]`` says whether the supports of consecutive converged
    points are nested.  Each point is solved to ``KKT_TOL`` by :func:`_solve`.
    Cost: per step one evaluation on the working set; dense O(n^3 + n^2 d) only
    while many weights are non-zero (at the dense start), else low-rank
    O(n k^2 + k^3) on the working set plus O(n k d) per KKT check over all genes.
    """
    n_lams, lam_ratio = _check_path_grid(n_lams, lam_ratio)
    search_C = check_real(search_C, "search_C", 2, coerce=True)
    rank_by = _check_rank_by(rank_by)
    prob = _Problem(
        X, W, objective=objective, lambda1=lambda1, lambda2=lambda2, center=center, scale=scale,
        beta_init=beta_init, max_iter=max_iter,
    )
    lams = _lam_grid(prob, lams, n_lams, lam_ratio)
    sols = _run_path(prob, lams)
    return _path_result(
        prob, lams, sols, rank_by=rank_by, lam_ratio=lam_ratio, search_C=search_C, center=center, scale=scale, beta_init=beta_init
    )


def _lam_grid(prob, lams, n_lams, lam_ratio):
    """The path's lam values, decreasing: ``lams`` as given (checked), or ``n_lams`` values from lam_max."""
    if lams is None:
        if prob.lam_ref <= 0:
            msg = (
                f"no gene has a negative {'Eq. 9 direction' if prob.objective == 'printed' else 'gradient'} at the "
                f"start point (beta_init, start level doubled {prob.start_doublings} times), so every lam gives "
                "beta = 0; seen with fewer genes than samples (docs/methods.md); try another beta_init"
            )
            raise ValueError(msg)
        return prob.lam_ref * np.geomspace(1.0, lam_ratio, int(n_lams))
    lams = np.asarray(lams, dtype=np.float64).ravel()
    if lams.size == 0 or not np.all(np.isfinite(lams)) or np.any(lams < 0):
        msg = f"lams must be a non-empty sequence of non-negative finite numbers; got {lams!r}"
        raise ValueError(msg)
    return np.sort(lams)[::-1]


def _run_path(prob, lams, first=None):
    """Solve every lam in turn, warm-starting from the last converged non-empty solution.

    ``first`` = (lam, solution): a solution already computed (the halving
    search's cold solve at lam*), reused when it is the first lam.
    """
    sols = []
    warm = None
    for k, lam in enumerate(lams):
        if k == 0 and first is not None and first[0] == lam:
            sol = first[1]
        else:
            sol = prob.solve(float(lam), warm if warm is not None else prob.beta0)
        sols.append(sol)
        if sol.converged:
            warm = sol.beta if np.any(sol.beta > 0) else None
        else:
            log.warning(
                "glfs path (%s): lam=%.4g not converged after %d steps (KKT residual %.3g > %.3g): %s",
                prob.objective, lam, sol.n_iter, sol.kkt, KKT_TOL, sol.message,
            )
    return sols


def _path_result(prob, lams, sols, *, rank_by, lam_ratio, search_C, center, scale, beta_init, search=(), pick=None):
    """A :class:`GLFSResult` from the solved path: ranking, the chosen point, convergence and parameters.

    The chosen point is the first converged non-empty one (else the first
    converged, else the first); with ``pick`` the first converged point with at
    least ``pick`` genes, else the last converged point.
    """
    betas = [s.beta for s in sols]
    conv = [s.converged for s in sols]
    path = tuple((float(lam), int(np.sum(s.beta > 0)), float(s.value)) for lam, s in zip(lams, sols))
    n_conv = int(sum(conv))
    if n_conv < len(sols):
        bad = ", ".join(f"{lams[k]:.4g}" for k, c in enumerate(conv) if not c)
        warnings.warn(
            f"glfs ({prob.objective}): {len(sols) - n_conv} of {len(sols)} path points did not reach the KKT "
            f"tolerance {KKT_TOL:g} within max_iter={prob.max_iter} (lam = {bad}); they are marked "
            "converged=False and not used for the ranking or the chosen point"
            + ("" if n_conv else " -- no point converged, so every point is used"),
            GLFSConvergenceWarning,
            stacklevel=3,
        )
    usable = [k for k, c in enumerate(conv) if c] or list(range(len(sols)))
    use = usable if rank_by == "weight" else list(range(len(sols)))
    entry_a, order_a = _rank_from_path(lams, betas, sols[use[-1]].grad, use)
    ranking = np.concatenate([prob.active[order_a], np.flatnonzero(prob.const)])
    entry = prob.full(entry_a, fill=np.nan)
    nonempty = [k for k in usable if np.any(betas[k] > 0)]
    k_w = nonempty[0] if nonempty else usable[0]
    if pick is not None:
        k_w = next((k for k in usable if np.sum(betas[k] > 0) >= pick), usable[-1])
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
        "kkt_tol": KKT_TOL,
        "n_points": len(sols),
        "n_converged": n_conv,
        "monotone": bool(_nested(betas, usable)),
        "rank_by": rank_by,
    }
    return GLFSResult(
        weights=b0,
        ranking=ranking,
        selected=b0 > 0,
        lam=float(lams[k_w]),
        objective=path[k_w][2],
        entry_lam=entry,
        path=path,
        path_weights=np.vstack([prob.full(b) for b in betas]),
        search=search,
        gradient=prob.full(sols[use[-1]].grad, fill=np.nan),
        converged=tuple(bool(c) for c in conv),
        params=MappingProxyType(params),
        kkt=tuple(float(s.kkt) for s in sols),
        n_iter=tuple(int(s.n_iter) for s in sols),
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
    rank_by=DEFAULT_RANK_BY,
) -> GLFSResult:
    """Gradient-based Laplacian feature selection (Wang & Goldenberg, ICML 2013, Eq. 8).

    Minimises Q(beta) + lam * sum(beta) over beta >= 0 to the KKT tolerance
    ``KKT_TOL`` with an active-set projected-gradient method (for
    ``objective="printed"`` along the Eq. 9 direction, to the fixed point of its
    projected step), where Q is one of the three objectives of
    :func:`glfs_objective` evaluated on the preprocessed X.

    Parameters
    ----------
    X : array-like or sparse of shape (n_samples, n_features)
        Samples (patients) in rows, genes in columns.  Not modified.
    W : sparse of shape (n_samples, n_samples)
        Patient-similarity graph.
    lam : float >= 0, optional
        l1 weight.  None: the halving search of Sec. 2.3.2 (largest lam with a
        converged non-empty solution from ``beta_init``).
    n_features : int in [1, n_features], optional
        Select the top ``n_features`` of the path ranking instead of the
        support at ``lam``; the weights are those of the first converged path
        point with at least ``n_features`` non-zero genes (else the last
        converged point).
    objective, lambda1, lambda2, center, scale, beta_init, n_lams, lam_ratio, search_C, lam_init, max_iter, rank_by
        See :func:`glfs_path`.  The path below ``lam`` gives the full ranking.

    Returns
    -------
    GLFSResult
        Larger weights are better; ``ranking`` is best first.

    Notes
    -----
    Memory O(n^2 + n d) while the dense form is in use (n <= ``DENSE_MAX_N``),
    else O(n k + k^2 + n d).  The run is (search solves +) n_lams solves of a few
    to a few hundred projected-gradient steps each; see :func:`glfs_path`.
    """
    prob = _Problem(
        X, W, objective=objective, lambda1=lambda1, lambda2=lambda2, center=center, scale=scale,
        beta_init=beta_init, max_iter=max_iter,
    )
    n_features = check_n_features(n_features, prob.d, allow_none=True)
    n_lams, lam_ratio = _check_path_grid(n_lams, lam_ratio)
    rank_by = _check_rank_by(rank_by)
    C = search_C  # checked where the halving search uses it
    first, search, pick = None, (), None
    if lam is not None:
        lam = _check_nonneg(lam, "lam")
        lams = lam * np.geomspace(1.0, lam_ratio, int(n_lams)) if lam > 0 else np.array([0.0])
    elif n_features is None:
        C = _check_nonneg(search_C, "search_C", strict=True)
        lams, first, search = _searched_lams(prob, lam_init=lam_init, C=C, n_lams=n_lams, lam_ratio=lam_ratio)
    else:
        lams, pick = None, n_features
    lams = _lam_grid(prob, lams, n_lams, lam_ratio)
    res = _path_result(
        prob, lams, _run_path(prob, lams, first), rank_by=rank_by, lam_ratio=lam_ratio, search_C=C,
        center=center, scale=scale, beta_init=beta_init, search=search, pick=pick,
    )
    if np.sum(res.weights > 0) == 0:
        warnings.warn(
            f"glfs: the solution at lam={res.lam:.4g} is empty (beta = 0); the ranking comes from the gradient",
            RuntimeWarning,
            stacklevel=2,
        )
    return _with_top_genes(res, prob, n_features, center=center, scale=scale, beta_init=beta_init)


def _searched_lams(prob, *, lam_init, C, n_lams, lam_ratio):
    """The path below the halving search's lam (Sec. 2.3.2): (lams, (lam*, its solution), search history).

    When the search finds no converged non-empty solution, warns and returns
    lams None (the default path from lam_max), no first solution and no history.
    """
    best, history = _halving_search(prob, lam_init=lam_init, C=C)
    if best is None:
        msg = (
            f"glfs: the halving search found no lam with a converged non-empty solution (tried {len(history)} "
            f"values, smallest {min(h[0] for h in history):.4g}); using the default path from lam_max instead"
        )
        warnings.warn(msg, RuntimeWarning, stacklevel=3)
        return None, None, ()
    return best[0] * np.geomspace(1.0, lam_ratio, int(n_lams)), (best[0], best[1]), history


def _with_top_genes(res, prob, n_features, *, center, scale, beta_init):
    """``res`` with the user's center/scale/beta_init in params and, given ``n_features``, the top of the ranking selected."""
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
    return dataclasses.replace(res, selected=selected, params=MappingProxyType(params))


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

    scores = ``entry_lam`` (higher is better): the largest lam of a path point
    used for ranking (converged points, ``rank_by="weight"``) at which the gene
    is non-zero, or, for genes never non-zero there, -dQ/dbeta_i at the last
    such point (the lam below which it would start to grow); NaN for constant
    genes.  ranking = path ranking (:func:`glfs_path`, ``rank_by``); weights =
    beta at the chosen converged point.  params gain ``n_points``,
    ``n_converged``, ``monotone``, ``kkt_tol``; ``extra["path"]`` is one record
    per point: lam, n_selected, objective, converged, kkt (the scaled KKT
    residual, see :data:`KKT_TOL`).  ``random_state`` is accepted for the
    uniform interface; GLFS is deterministic (uniform start).
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
    return select_glfs(X, W, n_features=n_features, labels=labels, random_state=random_state, objective="paper", **params)


def select_glfs_exact(X, W, *, n_features, labels=None, random_state=0, **params) -> Selection:
    """GLFS with the exact covariance trace Tr(A [(M+A)^{-1} M]^2) and its gradient."""
    return select_glfs(X, W, n_features=n_features, labels=labels, random_state=random_state, objective="exact", **params)


def select_glfs_printed(X, W, *, n_features, labels=None, random_state=0, **params) -> Selection:
    """GLFS as printed: Eq. 7 values, Eq. 9 directions (not a true gradient)."""
    return select_glfs(X, W, n_features=n_features, labels=labels, random_state=random_state, objective="printed", **params)
