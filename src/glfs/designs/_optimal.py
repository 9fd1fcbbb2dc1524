"""LapAOFS and LapDOFS: Laplacian-regularised A- and D-optimal feature selection.

He, Ji, Zhang & Bao, "A Variance Minimization Criterion to Feature Selection
Using Laplacian Regularization", IEEE TPAMI 33(10), 2011, Sections 3-5.

Orientation: X has shape (n_samples, n_features); gene j is the column
``g_j = X[:, j]`` (the paper's row vector f_j).  W is the (n, n) sample graph,
L = D - W.  For a selected set S (k genes, X_S = X[:, S] of shape (n, k))

    H_S = X_S' (I + lambda1 L) X_S + lambda2 I          (k x k, paper Sec. 4)
    M   = lambda2 (I + lambda1 L)^-1                    (n x n)
    A_S = M + X_S X_S'                                  (n x n, paper Eq. 25)

and the two criteria are

    LapAOFS:  min_S Tr(H_S^-1)  (Eq. 12)  <=>  min_S Tr(A_S^-1 M)  (Eq. 15)
    LapDOFS:  max_S det(H_S)    (Eq. 13)  <=>  max_S det(A_S)      (Eq. 24)

solved greedily (Sections 4.1 and 5.1): the (k+1)-th gene is

    A:  argmax_g  g' A_k^-1 M A_k^-1 g / (1 + g' A_k^-1 g)      (Eq. 20)
    D:  argmax_g  g' A_k^-1 g                                   (Eq. 29)

Implementation (same greedy steps, cheaper and better conditioned)
------------------------------------------------------------------
The paper keeps A_k^-1 (n x n, dense) and re-evaluates Eq. 20 for every gene
at every step: O(n^2 d) per step.  We evaluate the *same* quantities in the
k x k feature space, where they are Schur complements of the bordered matrix
H_{S+j} = [[H_S, h_j], [h_j', eta_j]] with h_j = X_S'(I + lambda1 L) g_j and
eta_j = g_j'(I + lambda1 L) g_j + lambda2:

    s_j  = eta_j - h_j' H_S^-1 h_j,       w_j = H_S^-1 h_j,
    Tr(H_{S+j}^-1) = Tr(H_S^-1) + (1 + ||w_j||^2) / s_j,
    det(H_{S+j})   = det(H_S) s_j.

With Woodbury, A_S^-1 = M^-1 - M^-1 X_S (lambda2 H_S^-1) X_S' M^-1, and the
paper's criteria are recovered exactly:

    Eq. 20 value = 1 - lambda2 (1 + ||w_j||^2) / s_j,       Eq. 29 value = s_j / lambda2 - 1.

s_j and w_j are updated for all genes at once after each pick (a rank-one
bordering update, the Sherman-Morrison step of Eq. 19 written in feature
space): cost O(n d + k d) per step, O(k (n d + k d)) in total; memory
O(n d + k d).  No n x n matrix is ever formed (the paper's scheme needs O(n^2)
memory and O(k n^2 d) time).  The greedy choice is made on the trace increase
(1 + ||w_j||^2) / s_j rather than on Eq. 20's value, which rounds to 1 - tiny
when lambda2 is small relative to ||g||^2 (raw expression values).
"""

from __future__ import annotations

import logging

import numpy as np
import scipy.sparse as sp
from threadpoolctl import threadpool_limits

from glfs.core._result import Selection, make_selection
from glfs.core._validation import (
    check_graph,
    check_n_features,
    check_positive,
    check_X,
    constant_features,
    warn_constant,
)

log = logging.getLogger(__name__)

__all__ = ["lapaofs", "lapdofs", "optimal_design_greedy", "select_lapaofs", "select_lapdofs", "LAMBDA1", "LAMBDA2"]

#: The regularisation of LapAOFS/LapDOFS when none is given: He et al. (2011), Section 7, use
#: lambda1 = lambda2 = 0.01 (A_0 = M = lambda2 (I + lambda1 L)^{-1}).
LAMBDA1 = 0.01
LAMBDA2 = 0.01


def optimal_design_greedy(
    X, W, n_features: int, *, criterion: str = "A", lambda1: float = LAMBDA1, lambda2: float = LAMBDA2
):
    """Greedy LapAOFS / LapDOFS selection with all bookkeeping (He et al. 2011, Secs. 4.1, 5.1).

    Parameters
    ----------
    X : array-like or sparse of shape (n_samples, n_features)
        Samples in rows, genes in columns.  Not modified; used densely.
    W : sparse of shape (n_samples, n_samples)
        Symmetric non-negative sample graph (the paper uses a 4-nearest-
        neighbour graph; pass e.g. ``glfs.similarity_graph(X, n_neighbors=4)``).
    n_features : int in [1, n_features]
        Number of greedy steps.  Capped at the number of non-constant genes.
    criterion : {"A", "D"}
        "A" = LapAOFS (Eq. 20), "D" = LapDOFS (Eq. 29).
    lambda1, lambda2 : float, default 0.01
        Laplacian and ridge regularisation (the paper's defaults, Sec. 7).
        Not scale-free: lambda2 acts relative to ||g||^2.

    Returns
    -------
    dict with keys
        ``order`` (selected gene indices in greedy order),
        ``step_value`` (paper criterion, Eq. 20 or 29, of each pick at its step),
        ``next_value`` (criterion of every gene at the step after the last
        pick; NaN for selected and constant genes),
        ``next_key`` (the quantity the greedy step minimises at that step:
        trace increase for "A", -s_j for "D"),
        ``trace`` (Tr(H_S^-1) after each step, "A") or ``logdet`` (log det H_S, "D"),
        ``constant`` (bool mask).

    Notes
    -----
    Cost O(k (n d + k d)) time and O(n d + k d) memory for k steps, plus one
    sparse product (I + lambda1 L) X, O(nnz(W) d).  See the module docstring
    for the equivalence with the paper's n x n Sherman-Morrison scheme.
    """
    X, W, n_features, lambda1, lambda2 = _check_design_args(X, W, n_features, criterion, lambda1, lambda2)
    const = constant_features(X)
    n_steps = _n_steps(n_features, const)
    C, eta = _laplacian_products(X, W, lambda1, lambda2)
    state, order, step_value, path, chosen = _greedy_steps(X, C, eta, ~const, n_steps, criterion, lambda2)
    return _design_result(state, order, step_value, path, chosen, const, criterion, lambda2)


def _check_design_args(X, W, n_features, criterion, lambda1, lambda2):
    """Check the arguments of :func:`optimal_design_greedy`; return X (dense), W, n_features, lambda1, lambda2."""
    if criterion not in ("A", "D"):
        msg = f"criterion must be 'A' (LapAOFS) or 'D' (LapDOFS); got {criterion!r}"
        raise ValueError(msg)
    X = check_X(X, dense=True)
    n, d = X.shape
    W = check_graph(W, n)
    n_features = check_n_features(n_features, d)
    lambda1 = check_positive(lambda1, "lambda1")
    lambda2 = check_positive(lambda2, "lambda2")
    return X, W, n_features, lambda1, lambda2


def _n_steps(n_features: int, const: np.ndarray) -> int:
    """Number of greedy steps: ``n_features``, capped (with a warning) at the number of non-constant genes."""
    n_steps = min(n_features, int((~const).sum()))
    if n_steps < n_features:
        log.warning("optimal_design_greedy: only %d non-constant genes; selecting %d", n_steps, n_steps)
    return n_steps


def _laplacian_products(X, W, lambda1: float, lambda2: float):
    """C = (I + lambda1 L) X, shape (n, d), and eta_j = g_j'(I + lambda1 L) g_j + lambda2, shape (d,)."""
    deg = np.asarray(W.sum(axis=1)).ravel()
    L = sp.diags(deg) - W
    C = X + lambda1 * (L @ X)  # (I + lambda1 L) X, (n, d)
    eta = np.einsum("ij,ij->j", X, C) + lambda2  # g'(I + lambda1 L) g + lambda2
    return C, eta


def _greedy_key(criterion: str, s, wn2):
    """The quantity a greedy step minimises: the increase of Tr(H^-1) ("A") or -s_j ("D", maximise det)."""
    if criterion == "A":
        return (1.0 + wn2) / s  # increase of Tr(H^-1): minimise
    return -s  # maximise s_j  <=> maximise det


def _paper_value(criterion: str, s, wn2, lambda2: float):
    """The paper's criterion of a gene: Eq. 20 ("A") or Eq. 29 ("D"), from s_j and ||w_j||^2."""
    if criterion == "A":
        return 1.0 - lambda2 * (1.0 + wn2) / s  # Eq. 20
    return s / lambda2 - 1.0  # Eq. 29


class _BorderedGram:
    """The bordered Gram H_S in feature space: Schur complements s_j, ||w_j||^2 and the rows of H and H_S^-1 h."""

    def __init__(self, eta, n_steps: int):
        d = eta.shape[0]
        self.s = eta.copy()  # Schur complements s_j
        self.wn2 = np.zeros(d)  # ||w_j||^2, w_j = H_S^-1 h_j
        self.Hrows = np.empty((n_steps, d))  # row i: h_{g_i, j} = g_i'(I + lambda1 L) f_j
        self.Wrows = np.empty((n_steps, d))  # row i: (H_S^-1 h_j)_i

    def add(self, X, C, j: int, k: int) -> None:
        """Border H_S with gene j as its (k+1)-th row and column (rank-one update of s, ||w||^2, the rows)."""
        d = self.s.shape[0]
        sg = self.s[j]
        # new row of the bordered Gram: t_i = g'(I + lambda1 L) f_i
        t = X[:, j] @ C
        if k:
            u = self.Wrows[:k, j]  # w_g = H_S^-1 h_g
            e = t - u @ self.Hrows[:k]  # e_i = t_i - h_g' H_S^-1 h_i
            uw = u @ self.Wrows[:k]  # w_g' w_i
            un2 = float(u @ u)
            self.Wrows[:k] -= np.outer(u, e / sg)
        else:
            e = t.copy()
            uw = np.zeros(d)
            un2 = 0.0
        self.Hrows[k] = t
        self.Wrows[k] = e / sg
        self.wn2 = self.wn2 - 2.0 * e * uw / sg + e**2 * (un2 + 1.0) / sg**2
        self.s = self.s - e**2 / sg


def _greedy_steps(X, C, eta, available, n_steps: int, criterion: str, lambda2: float):
    """Run the greedy picks; return the final state, the order, each pick's value, the trace/logdet path, the chosen mask."""
    d = eta.shape[0]
    state = _BorderedGram(eta, n_steps)
    order = np.empty(n_steps, dtype=np.int64)
    step_value = np.empty(n_steps)
    path = np.empty(n_steps)
    chosen = np.zeros(d, dtype=bool)
    total = 0.0  # Tr(H_S^-1) or log det(H_S)
    # many small products: one BLAS thread (threads only add synchronisation cost)
    with threadpool_limits(limits=1, user_api="blas"):
        for k in range(n_steps):
            key = _greedy_key(criterion, state.s, state.wn2)
            key[~available | chosen] = np.inf
            j = int(np.argmin(key))
            order[k] = j
            step_value[k] = _paper_value(criterion, state.s[j], state.wn2[j], lambda2)
            if criterion == "A":
                total += key[j]
            else:
                total += np.log(state.s[j])
            path[k] = total
            state.add(X, C, j, k)
            chosen[j] = True
            log.debug("greedy %s step %d: gene %d, value %.6g", criterion, k, j, step_value[k])
    return state, order, step_value, path, chosen


def _design_result(state, order, step_value, path, chosen, const, criterion: str, lambda2: float) -> dict:
    """The result dict of :func:`optimal_design_greedy`: the picks and every other gene's criterion at the next step."""
    next_value = _paper_value(criterion, state.s, state.wn2, lambda2)
    next_key = _greedy_key(criterion, state.s, state.wn2)
    next_value[chosen | const] = np.nan
    next_key[chosen | const] = np.nan
    return {
        "order": order,
        "step_value": step_value,
        "next_value": next_value,
        "next_key": next_key,
        ("trace" if criterion == "A" else "logdet"): path,
        "constant": const,
        # for tests and diagnostics: the final bordered-Gram state
        "_s": state.s,
        "_wn2": state.wn2,
        "_W": state.Wrows,
    }


def lapaofs(X, W, n_features: int = 50, lambda1: float = LAMBDA1, lambda2: float = LAMBDA2) -> np.ndarray:
    """LapAOFS: greedy Laplacian-regularised A-optimal feature selection.

    He, Ji, Zhang & Bao, TPAMI 2011, Sec. 4.1, Eq. 17-20: the (k+1)-th gene
    minimises Tr(H^-1), H = X_S'(I + lambda1 L) X_S + lambda2 I, i.e. maximises
    g' A_k^-1 M A_k^-1 g / (1 + g' A_k^-1 g) (Eq. 20).

    Parameters
    ----------
    X : array-like or sparse of shape (n_samples, n_features)
        Samples in rows, genes in columns (used densely).
    W : sparse of shape (n_samples, n_samples)
        Sample graph; the paper used a 4-nearest-neighbour graph (Sec. 7).
    n_features : int in [1, n_features], default 50
        Genes to select.  Constant genes are never selected (one warning).
    lambda1, lambda2 : float, default 0.01
        The paper's defaults (Sec. 7).  Depend on the scale of X.

    Returns
    -------
    order : ndarray of int, shape (<= n_features,)
        Selected gene indices, best (first chosen) first.

    Notes
    -----
    Cost O(k (n d + k d)) time, O(n d + k d) memory; no n x n matrix.
    """
    res = optimal_design_greedy(X, W, n_features, criterion="A", lambda1=lambda1, lambda2=lambda2)
    warn_constant(res["constant"], "lapaofs")
    return res["order"]


def lapdofs(X, W, n_features: int = 50, lambda1: float = LAMBDA1, lambda2: float = LAMBDA2) -> np.ndarray:
    """LapDOFS: greedy Laplacian-regularised D-optimal feature selection.

    He, Ji, Zhang & Bao, TPAMI 2011, Sec. 5.1, Eq. 27-29: the (k+1)-th gene
    maximises det(H) (Eq. 13), i.e. g' A_k^-1 g (Eq. 29).

    Parameters and return value as :func:`lapaofs`.
    """
    res = optimal_design_greedy(X, W, n_features, criterion="D", lambda1=lambda1, lambda2=lambda2)
    warn_constant(res["constant"], "lapdofs")
    return res["order"]


def _select(method, criterion, X, W, n_features, lambda1=LAMBDA1, lambda2=LAMBDA2) -> Selection:
    res = optimal_design_greedy(X, W, n_features, criterion=criterion, lambda1=lambda1, lambda2=lambda2)
    const = res["constant"]
    warn_constant(const, method)
    order = res["order"]
    d = const.shape[0]
    scores = res["next_value"].copy()
    scores[order] = res["step_value"]
    rest_mask = np.ones(d, dtype=bool)
    rest_mask[order] = False
    rest_mask &= ~const
    rest = np.flatnonzero(rest_mask)
    rest = rest[np.argsort(res["next_key"][rest], kind="stable")]
    ranking = np.concatenate([order, rest, np.flatnonzero(const)])
    selected = np.zeros(d, dtype=bool)
    selected[order] = True
    return make_selection(
        method,
        scores,
        higher_is_better=True,
        n_features=n_features,
        ranking=ranking,
        selected=selected,
        params={"lambda1": float(lambda1), "lambda2": float(lambda2)},
        extra={("trace" if criterion == "A" else "logdet"): res["trace" if criterion == "A" else "logdet"]},
    )


def select_lapaofs(X, W, *, n_features, labels=None, random_state=None, **params) -> Selection:
    """LapAOFS as a :class:`~glfs.Selection` (registry entry ``"lapaofs"``).

    Ranking: the greedy order for the first ``n_features`` genes, then the
    other genes by their Eq. 20 criterion at the next greedy step (i.e. by the
    increase of Tr(H^-1) they would cause, smallest first), constant genes last.
    Scores (higher is better): Eq. 20 value at the step a gene was chosen
    (selected genes) or at the step after the last pick (others); NaN for
    constant genes.  ``extra["trace"]`` is Tr(H_S^-1) after each step.
    ``labels`` and ``random_state`` are ignored (deterministic, unsupervised).
    """
    return _select("lapaofs", "A", X, W, n_features, **params)


def select_lapdofs(X, W, *, n_features, labels=None, random_state=None, **params) -> Selection:
    """LapDOFS as a :class:`~glfs.Selection` (registry entry ``"lapdofs"``).

    As :func:`select_lapaofs` with Eq. 29 (g' A_k^-1 g) as the criterion and
    ``extra["logdet"]`` = log det(H_S) after each step.
    """
    return _select("lapdofs", "D", X, W, n_features, **params)
