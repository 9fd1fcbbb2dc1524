"""GLFS, the model (docs/methods/glfs-readings.md, GLFS): constants and defaults, argument checks, and the
objective with its gradient in the dense and the low-rank (Woodbury) form.

The formulas, orientation and objectives are in :mod:`glfs.designs._gradient`'s docstring; this module
holds the evaluation of one objective at one beta (:class:`_Model` and its states) and
:func:`glfs_objective`.  The size limits (``DENSE_MAX_N``, ``LOWRANK_MAX_K``, ``PATH_MAX_CELLS``)
live here and are read where they are used: raise them here (``glfs.designs._gradient_model``)."""

from __future__ import annotations

import contextlib
import logging
import math

import numpy as np
import scipy.linalg as sla
import scipy.sparse as sp
import scipy.sparse.linalg as spla
from threadpoolctl import threadpool_limits

from glfs.core._validation import check_graph, check_int, check_nonnegative, check_positive, check_real, check_X
from glfs.graph._similarity import laplacian

log = logging.getLogger(__name__)


OBJECTIVES = ("paper", "exact", "printed")
SCALES = ("unit", "none", "standardize")
RANK_RULES = ("weight", "entry")

# Defaults (chosen on the planted simulation, studies/glfs-defaults.md; see docs/methods/glfs-readings.md).
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
#: 20,000 x 2,000 on 2 cores (studies/atlas-scale.md); docs/methods/size-limits.md, "Size limits".
PATH_MAX_CELLS = 1e7
#: Largest support (genes with beta > 0) of the low-rank form when dense is not allowed (k x k systems).
LOWRANK_MAX_K = 4000
#: Below this many samples the solver runs with one BLAS thread: its products are small (n x n,
#: k x k) and many, and threads only add synchronisation (on a loaded 2-core machine a 100 x 100
#: product took 10-50 ms with OpenBLAS threads; studies/glfs-runtime.md).
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
            f"size limit of {PATH_MAX_CELLS:.0e} (glfs.designs._gradient_model.PATH_MAX_CELLS) for the published GLFS readings, "
            "whose lam path is solved point by point to the KKT tolerance (over 300 s at 20,000 x 2,000 on "
            "2 cores; docs/methods/size-limits.md, 'Size limits'). Use method='glfs' (the fixed-size design, which runs "
            "at 50,000 x 2,000), or subsample the cells."
        )
        raise ValueError(msg)


def _refuse_dense(n):
    msg = (
        f"GLFS would need a dense {n} x {n} matrix; dense forms are limited to n_samples <= {DENSE_MAX_N} "
        "(glfs.designs._gradient_model.DENSE_MAX_N).  Above it only the low-rank (Woodbury) form is used, which needs "
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

    (Derivations in docs/methods/glfs-readings.md, "Low-rank form".)  Cost: O(nnz(P) k
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
        Used as given (no centring or scaling; :func:`glfs_published` preprocesses).
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
