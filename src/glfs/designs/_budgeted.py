"""The well-posed GLFS: the fixed-size LapRLS A-optimal design problem (``method="glfs"``).

Why the published GLFS needs a fix (docs/methods/glfs-design.md, "The well-posed glfs")
-------------------------------------------------------------------------
GLFS (Wang & Goldenberg, ICML 2013, Eq. 4-8) weights gene i by beta_i >= 0
(A = X diag(beta) X') and minimises a LapRLS covariance trace plus lam *
sum(beta).  Without a budget the problem is degenerate: beta = 0 is its global
minimum (the trace of the covariance of no parameters is 0), so whatever a
solver returns is an artefact of its start point and iteration limit.

Giving it a budget, sum(beta) = k with 0 <= beta <= 1, makes the relaxation
*tight* for the criterion of LapAOFS (He et al., TPAMI 2011, Eq. 12):
with G = X' P X, P = I + lambda1 L, the covariance of the LapRLS weights of
the genes scaled by sqrt(beta), back in the genes' own units
(Cov ~ sigma^2 H^-1, He et al. Eq. 10), has trace

    c(beta) = Tr( (G_SS + lambda2 diag(1/beta_S))^-1 ),   S = {i : beta_i > 0},

which for a 0/1 vector with k ones is exactly Tr(H_S^-1), H_S = X_S' P X_S +
lambda2 I (Eq. 12).  c is *concave* in beta (a parallel sum: (G + lambda2
D^-1)^-1 is operator-concave in D), so its minimum over the capped simplex
{0 <= beta <= 1, sum beta = k} lies at a vertex: the relaxation equals the
combinatorial problem "the best k genes", nothing is lost by rounding.  But the
gradient carries no information at the vertices: dc/dbeta_i = lambda2 [N^-2]_ii
<= 1/lambda2 for a selected gene and (1 + ||N^-1 g_j||^2) / lambda2 >= 1/lambda2
for any other gene (N = G_SS + lambda2 I), so *every* vertex satisfies the
first-order (KKT) conditions of the capped simplex, and projected-gradient or
Frank-Wolfe steps never leave their start.  The other natural relaxation,
Tr(H(beta)^-1) with H(beta) = D^1/2 G D^1/2 + lambda2 I (the sample-space trace
Tr((M + A)^-1 M) / lambda2 up to a constant), is convex but spreads the budget
over every gene (for orthogonal genes its minimiser is beta = k/d, by Jensen),
so its rounding is arbitrary.

So the well-posed GLFS solves the budgeted problem where its optimality can be
checked: the classical exchange algorithm of optimal design (Fedorov 1972):
start at the greedy solution of the same criterion (LapAOFS's greedy steps,
Eq. 17-20), then repeatedly make the single swap (one selected gene out, one
other gene in) that lowers Tr(H_S^-1) the most, until no swap lowers it by more
than ``tol`` (relative).  The answer is deterministic, never worse than greedy
on the criterion, and certified as a 1-swap local optimum ("converged"); when
``max_swaps`` runs out first it is flagged as not converged.

Scale-free parameters
---------------------
X is centred per gene (LapRLS with an unpenalised intercept is LapRLS on
centred X, because L 1 = 0) and divided by one global constant so that genes
have mean variance 1 (so ||f_i||^2 ~ n).  Then

    lambda1 = graph_weight / mean degree of W     (lambda1 L has mean eigenvalue graph_weight)
    lambda2 = ridge * n                          (ridge relative to a typical gene's energy)

so neither depends on the units of X or of the graph weights.

Cost
----
One sparse product P X_S per selected gene, rows G_S = (P X_S)' X (k x d):
O(nnz(W) k + n d k); each exchange step O(k^2 d + k^3).  Memory O(n d + k d).
No n x n and no d x d matrix is formed, so the method runs on single-cell
sizes (tens of thousands of cells) as long as k x d fits.
"""

from __future__ import annotations

import logging
import math
from dataclasses import dataclass, field
from types import MappingProxyType

import numpy as np
import scipy.linalg as sla
import scipy.sparse as sp

from glfs.core._result import PicklableResult, Selection, make_selection
from glfs.core._validation import (
    check_graph,
    check_int,
    check_n_features,
    check_nonnegative,
    check_positive,
    check_X,
    constant_features,
    warn_constant,
)
from glfs.designs._optimal import optimal_design_greedy
from glfs.graph._similarity import laplacian

log = logging.getLogger(__name__)

__all__ = [
    "GLFSDesignResult",
    "glfs_design",
    "trace_criterion",
    "relaxed_criterion",
    "select_glfs_design",
    "scale_free_lambdas",
    "standardise",
]

# Defaults (chosen on the planted simulation, studies/glfs-defaults.md; docs/methods/glfs-design.md).
DEFAULT_GRAPH_WEIGHT = 0.1  # lambda1 L has mean eigenvalue 0.1
DEFAULT_RIDGE = 1e-2  # lambda2 = ridge * n on unit-variance genes
DEFAULT_TOL = 1e-9  # a swap must lower Tr(H_S^-1) by more than tol * Tr(H_S^-1)
DEFAULT_MAX_SWAPS_PER_GENE = 5  # max_swaps = 5 k by default
DEFAULT_CENTER = False
#: Order of the selected genes in the ranking: "greedy" (nested: the first j are the greedy
#: A-optimal j-design within the answer) or "essentiality" (cost of the best replacement).
DEFAULT_ORDER = "greedy"
ORDERS = ("greedy", "essentiality")
#: Above this many entries of X (n * d) the diagonal of X' P X is formed in gene chunks.
_DIAG_CHUNK_ABOVE = 5e7
#: lambda1 handed to the greedy start for graph_weight = 0 (it needs lambda1 > 0; P = I to rounding).
_NEGLIGIBLE_LAMBDA1 = 1e-300


@dataclass(frozen=True)
class GLFSDesignResult(PicklableResult):
    """Result of :func:`glfs_design`.

    Attributes
    ----------
    selected : ndarray of int, shape (k,)
        The k genes in the order of the ranking (parameter ``order``).
    ranking : ndarray of int, shape (n_features,)
        All genes, best first: the selected genes (``order="greedy"``: the
        greedy A-optimal order within the answer, so the first j genes are the
        greedy j-gene design among them; ``"essentiality"``: by ``scores``),
        then the others by how little a swap bringing them in would cost,
        constant genes last.
    scores : ndarray of shape (n_features,)
        Higher is better.  Selected gene i: min over outside genes j of the
        relative increase of Tr(H_S^-1) when i is swapped for j (>= -tol at a
        converged answer: how much worse the best replacement is).  Other gene j:
        minus the smallest relative increase of a swap bringing j in (<= tol).
        NaN for constant genes.  With ``order="greedy"`` the selected genes are
        ranked in greedy order, not by these scores.
    criterion : float
        Tr(H_S^-1) of the answer (He et al. 2011 Eq. 12; lower is better), in
        the units of the centred, unit-variance X.
    greedy_criterion : float
        Tr(H_S^-1) of the greedy start (LapAOFS's greedy steps on the same X and lambdas).
    n_swaps : int
    converged : bool
        True when no single swap lowers the criterion by more than ``tol`` relative.
    best_swap : float
        Relative change of the criterion of the best swap at the answer (>= -tol when converged).
    history : tuple of float
        Criterion after the greedy start and after each swap (non-increasing).
    params : mapping
        Plain-valued parameters, including the absolute ``lambda1``/``lambda2`` used.
    """

    selected: np.ndarray
    ranking: np.ndarray
    scores: np.ndarray
    criterion: float
    greedy_criterion: float
    n_swaps: int
    converged: bool
    best_swap: float
    history: tuple
    params: MappingProxyType = field(default_factory=lambda: MappingProxyType({}))


def _check_positive(value, name, *, allow_zero=False):
    """A finite number > 0 (>= 0 with ``allow_zero``); numeric strings are read with float(), as always."""
    check = check_nonnegative if allow_zero else check_positive
    return check(value, name, coerce=True)


def scale_free_lambdas(W, n, *, graph_weight=DEFAULT_GRAPH_WEIGHT, ridge=DEFAULT_RIDGE):
    """Absolute (lambda1, lambda2) for centred, unit-variance X from the scale-free parameters.

    lambda1 = graph_weight / mean degree of W (so lambda1 L has mean eigenvalue
    ``graph_weight``; 0 for a graph without edges), lambda2 = ridge * n.
    """
    graph_weight = _check_positive(graph_weight, "graph_weight", allow_zero=True)
    ridge = _check_positive(ridge, "ridge")
    mean_degree = float(W.sum()) / n
    lambda1 = graph_weight / mean_degree if mean_degree > 0 else 0.0
    return lambda1, ridge * n


def standardise(X, center):
    """Centre genes (optionally) and divide by one constant so that the mean variance is 1.

    X (n_samples, n_features), dense: the X on which :func:`glfs_design` selects, so that
    :func:`trace_criterion` of it scores a gene set on the criterion glfs_design minimises.
    """
    Xc = X - X.mean(axis=0) if center else X.copy()
    ms = np.einsum("ij,ij->j", Xc, Xc) / X.shape[0]
    pos = ms[ms > 0]
    s = math.sqrt(float(pos.mean())) if pos.size else 1.0
    return Xc / s


class _Exchange:
    """Tr(H_S^-1) for a k-set S and the relative change of every single swap, in feature space.

    State: rows G_S = X_S' P X (k x d), H = G_SS + lambda2 I, Hinv, V = Hinv G_S.
    For removing i (a = Hinv_ii, u = Hinv e_i) and adding j, with the padded
    inverse K = Hinv - u u' / a of H_{S-i}:
        w_j = K G_{S,j} = V_j - u V_ij / a
        ||w_j||^2 = ||V_j||^2 - 2 V_ij (u'V_j) / a + V_ij^2 ||u||^2 / a^2
        s_j = q_j + lambda2 - G_{S,j}' K G_{S,j} = q_j + lambda2 - G_{S,j}'V_j + V_ij^2 / a
        Tr(H_{S-i+j}^-1) - Tr(H_S^-1) = -||u||^2 / a + (1 + ||w_j||^2) / s_j
    (bordering / Schur complements), for all (i, j) at once in O(k^2 d).
    """

    def __init__(self, X, PX_rows, q, lambda2, S, excluded):
        self.X = X
        self.PX_rows = PX_rows  # callable: indices -> (P X[:, idx])' X, shape (len(idx), d)
        self.q = q  # diag(G): f_j' P f_j
        self.lambda2 = lambda2
        self.excluded = excluded  # constant genes
        self.S = np.array(S, dtype=np.int64)
        self.GS = PX_rows(self.S)
        self._refresh()

    def _refresh(self):
        H = self.GS[:, self.S]
        H = 0.5 * (H + H.T) + self.lambda2 * np.eye(self.S.size)
        cf = sla.cho_factor(H, lower=True, check_finite=False)
        self.Hinv = sla.cho_solve(cf, np.eye(self.S.size), check_finite=False)
        self.Hinv = 0.5 * (self.Hinv + self.Hinv.T)
        self.V = self.Hinv @ self.GS
        self.trace = float(np.trace(self.Hinv))

    def deltas(self):
        """(k, d) matrix of Tr(H_{S-i+j}^-1) - Tr(H_S^-1); +inf where j is in S or excluded."""
        V, Hinv = self.V, self.Hinv
        a = np.diag(Hinv)[:, None]
        un2 = np.einsum("ij,ij->j", Hinv, Hinv)[:, None]  # ||Hinv e_i||^2
        UV = Hinv @ V  # (u_i' V_j)
        vn2 = np.einsum("ij,ij->j", V, V)[None, :]
        hv = np.einsum("ij,ij->j", self.GS, V)[None, :]
        wn2 = vn2 - 2.0 * V * UV / a + V**2 * un2 / a**2
        s = (self.q + self.lambda2)[None, :] - hv + V**2 / a
        with np.errstate(divide="ignore", invalid="ignore"):
            add = np.where(s > 0, (1.0 + wn2) / s, np.inf)
        out = -un2 / a + add
        out[:, self.S] = np.inf
        out[:, self.excluded] = np.inf
        return out

    def swap(self, pos, j):
        """Replace S[pos] by gene j."""
        self.S = self.S.copy()
        self.S[pos] = j
        self.GS = self.GS.copy()
        self.GS[pos] = self.PX_rows(np.array([j]))[0]
        self._refresh()


def trace_criterion(X, W, genes, *, lambda1, lambda2):
    """Tr(H_S^-1), H_S = X_S' (I + lambda1 L) X_S + lambda2 I (He et al. 2011, Eq. 12), directly.

    X is used as given (shape (n_samples, n_features)); ``genes`` are column
    indices.  Cost O(nnz(W) k + n k^2 + k^3).  Lower is better.
    """
    X = check_X(X, dense=True)
    n = X.shape[0]
    L, _ = laplacian(check_graph(W, n), n)
    XS = X[:, np.asarray(genes, dtype=np.int64)]
    H = XS.T @ (XS + lambda1 * (L @ XS)) + lambda2 * np.eye(XS.shape[1])
    return float(np.trace(np.linalg.inv(0.5 * (H + H.T))))


def relaxed_criterion(beta, X, W, *, lambda1, lambda2):
    """The budgeted GLFS relaxation c(beta) = Tr((G_SS + lambda2 diag(1/beta_S))^-1) and its gradient.

    G = X' (I + lambda1 L) X, S = {i : beta_i > 0}; X (n_samples, n_features) is
    used as given.  c equals Tr(H_S^-1) (He et al. 2011 Eq. 12) at 0/1 vectors
    and is concave in beta (module docstring).  Gradient: lambda2 [N^-2]_ii /
    beta_i^2 for beta_i > 0 and (1 + ||N^-1 G_{S,j}||^2) / lambda2 for beta_j = 0,
    N = G_SS + lambda2 diag(1/beta_S) (the one-sided derivative at 0).  Lower is
    better.  Cost O(nnz(W) s + n s d + s^2 d); for tests and documentation.
    """
    X = check_X(X, dense=True)
    n, d = X.shape
    beta = np.asarray(beta, dtype=np.float64)
    if beta.shape != (d,) or not np.all(np.isfinite(beta)) or np.any(beta < 0):
        msg = f"beta must be a finite non-negative array of shape ({d},); got shape {beta.shape}"
        raise ValueError(msg)
    L, _ = laplacian(check_graph(W, n), n)
    S = np.flatnonzero(beta > 0)
    GS = (X[:, S] + lambda1 * (L @ X[:, S])).T @ X  # (s, d)
    N = GS[:, S] + lambda2 * np.diag(1.0 / beta[S])
    Ninv = np.linalg.inv(0.5 * (N + N.T))
    grad = (1.0 + np.sum((Ninv @ GS) ** 2, axis=0)) / lambda2
    grad[S] = lambda2 * np.einsum("ij,ij->j", Ninv, Ninv) / beta[S] ** 2
    return float(np.trace(Ninv)), grad


def glfs_design(
    X,
    W,
    n_features_to_select,
    *,
    graph_weight=DEFAULT_GRAPH_WEIGHT,
    ridge=DEFAULT_RIDGE,
    center=DEFAULT_CENTER,
    tol=DEFAULT_TOL,
    max_swaps=None,
    start=None,
    order=DEFAULT_ORDER,
) -> GLFSDesignResult:
    """The well-posed GLFS: the best k genes for the LapRLS A-optimal criterion, by greedy + exchange.

    Minimises Tr(H_S^-1), H_S = X_S' (I + lambda1 L) X_S + lambda2 I, over gene
    sets S of size k (He et al. 2011, Eq. 12; the budgeted, tight relaxation of
    Wang & Goldenberg 2013, Eq. 4-8; see the module docstring for why the
    continuous relaxation reduces to this).  Start: the greedy solution
    (He et al. Eq. 17-20); then best-improvement single swaps until none lowers
    the criterion by more than ``tol`` relative (a certified 1-swap local optimum).

    Parameters
    ----------
    X : array-like or sparse of shape (n_samples, n_features)
        Samples (patients, cells) in rows, genes in columns.  Used densely; not modified.
    W : sparse of shape (n_samples, n_samples)
        Sample-similarity graph.
    n_features_to_select : int in [1, n_features]
        k, the number of genes (capped at the number of non-constant genes).
    graph_weight : float >= 0, default 0.1
        lambda1 = graph_weight / mean degree of W: lambda1 L has mean eigenvalue
        ``graph_weight``.  0 ignores the graph.
    ridge : float > 0, default 0.01
        lambda2 = ridge * n_samples, for genes centred and scaled to mean variance 1.
    center : bool, default False
        Centre each gene (LapRLS with an unpenalised intercept).
    tol : float >= 0, default 1e-9
        Relative decrease a swap must achieve to be made; the answer is
        "converged" when no swap achieves it.
    max_swaps : int, optional
        Default 5 k.  Reaching it leaves ``converged=False``.
    start : array of int, shape (k,), optional
        Start set instead of the greedy one (for tests and multi-start use).
    order : {"greedy", "essentiality"}, default "greedy"
        How the k selected genes are ordered in the ranking.  "greedy": the
        greedy steps of the same criterion (He et al. 2011, Eq. 17-20)
        restricted to the answer, so every prefix of the ranking is a greedy
        design of its size; with no swap this is the greedy start's own order.
        "essentiality": by the cost of each gene's best replacement (``scores``),
        which stops meaning much as k approaches n_samples, where every set
        spans the samples (docs/methods/glfs-design.md, "The well-posed GLFS").

    Returns
    -------
    GLFSDesignResult
        ``criterion`` lower is better; ``scores``/``ranking`` higher/first is better.

    Notes
    -----
    Cost O(nnz(W) k + n d k) for the rows (P X_S)' X plus O(k^2 d + k^3) per
    swap; memory O(n d + k d).  No n x n or d x d matrix is formed.
    """
    X = check_X(X, dense=True)
    n, d = X.shape
    W = check_graph(W, n)
    k = check_n_features(n_features_to_select, d, name="n_features_to_select")
    tol = _check_positive(tol, "tol", allow_zero=True)
    _check_order(order)
    const = constant_features(X)
    k = _cap_at_non_constant(k, const)
    if max_swaps is None:
        max_swaps = DEFAULT_MAX_SWAPS_PER_GENE * k
    max_swaps = check_int(max_swaps, "max_swaps", 0)
    lambda1, lambda2 = scale_free_lambdas(W, n, graph_weight=graph_weight, ridge=ridge)
    Xs = standardise(X, bool(center))
    rows, q = _graph_operator(Xs, W, lambda1)
    S0 = _start_set(Xs, W, k, start, const, lambda1=lambda1, lambda2=lambda2)
    ex = _Exchange(Xs, rows, q, lambda2, S0, const)
    greedy_trace = ex.trace
    D, best, n_swaps, converged, history = _best_swaps(ex, tol=tol, max_swaps=max_swaps)
    first = None
    if order == "greedy":  # the greedy start is already in greedy order while no swap changed it
        greedy_start_kept = start is None and n_swaps == 0
        first = ex.S if greedy_start_kept else _greedy_order(Xs, W, ex.S, lambda1=lambda1, lambda2=lambda2)
    sel, ranking, scores = _rank_genes(ex, D, const, first)
    params = {
        "n_features_to_select": int(k),
        "graph_weight": float(graph_weight),
        "ridge": float(ridge),
        "center": bool(center),
        "tol": float(tol),
        "max_swaps": int(max_swaps),
        "order": order,
        "lambda1": float(lambda1),
        "lambda2": float(lambda2),
        "n_constant": int(const.sum()),
    }
    log.info(
        "glfs: %s after %d swaps: Tr(H^-1) %.6g, greedy %.6g (%.3g%% lower)",
        "converged" if converged else "NOT converged",
        n_swaps,
        ex.trace,
        greedy_trace,
        100.0 * (greedy_trace - ex.trace) / greedy_trace,
    )
    return GLFSDesignResult(
        selected=sel,
        ranking=ranking,
        scores=scores,
        criterion=ex.trace,
        greedy_criterion=greedy_trace,
        n_swaps=n_swaps,
        converged=converged,
        best_swap=best,
        history=tuple(history),
        params=MappingProxyType(params),
    )


def _check_order(order) -> None:
    if order not in ORDERS:
        msg = f"order must be one of {ORDERS}; got {order!r}"
        raise ValueError(msg)


def _cap_at_non_constant(k, const):
    """k, capped (with a warning) at the number of non-constant genes; refuses X without one."""
    n_ok = int((~const).sum())
    if n_ok == 0:
        msg = f"X must have at least one non-constant feature; all {const.size} features are constant"
        raise ValueError(msg)
    if k > n_ok:
        log.warning("glfs: only %d non-constant genes; selecting %d", n_ok, n_ok)
        k = n_ok
    return k


def _graph_operator(Xs, W, lambda1):
    """With P = I + lambda1 L (sparse, n x n): the rows callable idx -> (P Xs[:, idx])' Xs and q = diag(Xs' P Xs).

    q is formed in gene chunks for large X.
    """
    n, d = Xs.shape
    L, _ = laplacian(W, n)
    P = sp.identity(n, format="csr") + lambda1 * L
    q = np.einsum("ij,ij->j", Xs, P @ Xs) if d * n <= _DIAG_CHUNK_ABOVE else _diag_chunked(Xs, P)

    def rows(idx):
        return (P @ Xs[:, idx]).T @ Xs

    return rows, q


def _start_set(Xs, W, k, start, const, *, lambda1, lambda2):
    """The exchange's start: the greedy LapAOFS set (He et al. 2011, Eq. 17-20), or ``start`` checked."""
    n, d = Xs.shape
    if start is None:
        log.info("glfs: greedy start, k=%d of %d genes, %d samples", k, d, n)
        # optimal_design_greedy needs lambda1 > 0; for graph_weight = 0 a negligible one (P = I to rounding)
        g = optimal_design_greedy(Xs, W, k, criterion="A", lambda1=max(lambda1, _NEGLIGIBLE_LAMBDA1), lambda2=lambda2)
        return np.asarray(g["order"][:k], dtype=np.int64)
    S0 = np.asarray(start, dtype=np.int64).ravel()
    if S0.size != k or np.unique(S0).size != k or S0.min() < 0 or S0.max() >= d or const[S0].any():
        msg = f"start must hold {k} distinct indices of non-constant genes in [0, {d}); got {start!r}"
        raise ValueError(msg)
    return S0


def _best_swaps(ex, *, tol, max_swaps):
    """Make the best single swap while it lowers Tr(H_S^-1) by more than ``tol`` relative (Fedorov exchange).

    Returns (D, best, n_swaps, converged, history): D the relative swap changes
    at the answer (k x d), best its minimum, history the criterion after the
    start and after each swap.
    """
    greedy_trace = ex.trace
    history = [ex.trace]
    n_swaps = 0
    converged = False
    while True:
        D = ex.deltas() / ex.trace
        pos, j = np.unravel_index(int(np.argmin(D)), D.shape)
        best = float(D[pos, j])
        if not best < -tol:
            converged = True
            break
        if n_swaps >= max_swaps:
            break
        ex.swap(pos, j)
        n_swaps += 1
        history.append(ex.trace)
        if n_swaps % 10 == 0:
            log.info("glfs: %d swaps, Tr(H^-1) %.6g (greedy %.6g)", n_swaps, ex.trace, greedy_trace)
    if not converged:
        log.warning(
            "glfs: not converged: %d swaps (max_swaps) and a swap would still lower Tr(H^-1) by %.3g (relative)",
            n_swaps,
            -best,
        )
    return D, best, n_swaps, converged, history


def _greedy_order(Xs, W, S, *, lambda1, lambda2):
    """The genes of S in the order of the greedy A-optimal steps (He et al. 2011, Eq. 17-20) among S only.

    O(k^2 n) for k = |S| genes; with no swap it reproduces the greedy start's order.
    """
    S = np.asarray(S, dtype=np.int64)
    g = optimal_design_greedy(
        Xs[:, S], W, S.size, criterion="A", lambda1=max(lambda1, _NEGLIGIBLE_LAMBDA1), lambda2=lambda2
    )
    return S[np.asarray(g["order"][: S.size], dtype=np.int64)]


def _rank_genes(ex, D, const, first=None):
    """(selected in ranking order, full ranking, scores) from the swap changes D at the answer.

    Scores: selected gene, the cost of its best replacement; other gene, minus
    the cost of the best swap bringing it in; constant genes NaN.  The selected
    genes come first, in the order ``first`` (the greedy order) or by their
    score; then the others by score; constant genes last.
    """
    ess = D.min(axis=1)  # per selected gene: cost of its best replacement
    cand = D.min(axis=0)  # per other gene: cost of the best swap bringing it in
    scores = np.full(const.size, np.nan)
    out = np.setdiff1d(np.flatnonzero(~const), ex.S)
    scores[out] = -cand[out]
    scores[ex.S] = ess
    sel = ex.S[np.argsort(-ess, kind="stable")] if first is None else np.asarray(first, dtype=np.int64)
    rest = out[np.argsort(cand[out], kind="stable")]
    ranking = np.concatenate([sel, rest, np.flatnonzero(const)])
    return sel, ranking, scores


def _diag_chunked(X, P, chunk=256):
    """diag(X' P X) in column chunks (bounded memory)."""
    out = np.empty(X.shape[1])
    for a in range(0, X.shape[1], chunk):
        B = X[:, a : a + chunk]
        out[a : a + chunk] = np.einsum("ij,ij->j", B, P @ B)
    return out


def select_glfs_design(X, W, *, n_features, labels=None, random_state=None, **params) -> Selection:
    """The well-posed GLFS as a :class:`~glfs.Selection` (registry entry ``"glfs"``).

    ``n_features`` genes are selected (required).  scores/ranking as
    :class:`GLFSDesignResult` (higher is better); weights are 1 for the selected
    genes, 0 otherwise.  ``labels`` and ``random_state`` are ignored
    (deterministic; for a supervised selection pass the label graph as W).
    """
    Xv = check_X(X, dense=True)
    warn_constant(constant_features(Xv), "glfs")
    res = glfs_design(Xv, W, n_features, **params)
    d = Xv.shape[1]
    selected = np.zeros(d, dtype=bool)
    selected[res.selected] = True
    plain = dict(res.params)
    plain.update(
        converged=bool(res.converged),
        n_swaps=int(res.n_swaps),
        criterion=float(res.criterion),
        greedy_criterion=float(res.greedy_criterion),
        best_swap=float(res.best_swap),
    )
    return make_selection(
        "glfs",
        res.scores,
        higher_is_better=True,
        n_features=n_features,
        ranking=res.ranking,
        selected=selected,
        weights=selected.astype(np.float64),
        params=plain,
        extra={"history": list(res.history)},
    )
