"""GLFS, the lam path and the halving search, the preprocessing of X and the result
(:func:`glfs_published`, :func:`glfs_path`, :class:`GLFSResult`; docs/methods/glfs-readings.md, GLFS)."""

from __future__ import annotations

import dataclasses
import logging
import math
import warnings
from dataclasses import dataclass, field
from types import MappingProxyType

import numpy as np

from glfs.core._result import PicklableResult
from glfs.core._validation import check_graph, check_n_features, check_real, check_X, constant_features
from glfs.designs._gradient_model import (
    _MAX_START_DOUBLINGS,
    DEFAULT_BETA_INIT,
    DEFAULT_CENTER,
    DEFAULT_LAM_RATIO,
    DEFAULT_LAMBDA1,
    DEFAULT_LAMBDA2,
    DEFAULT_MAX_ITER,
    DEFAULT_N_LAMS,
    DEFAULT_RANK_BY,
    DEFAULT_SCALE,
    DEFAULT_SEARCH_C,
    KKT_TOL,
    GLFSConvergenceWarning,
    _blas_threads,
    _check_beta,
    _check_max_iter,
    _check_nonneg,
    _check_objective,
    _check_path_grid,
    _check_path_size,
    _check_rank_by,
    _Model,
    _p_matrix,
    _preprocess,
)
from glfs.designs._gradient_solver import _solve

log = logging.getLogger(__name__)


# --------------------------------------------------------------------------- results
@dataclass(frozen=True)
class GLFSResult(PicklableResult):
    """Result of :func:`glfs_published` / :func:`glfs_path`.

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
        X = check_X(X, dense=True, read_only=True).astype(np.float64, copy=False)  # _preprocess copies it
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
                "for every lam; seen with fewer genes than samples (docs/methods/glfs-readings.md); try another beta_init"
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
        (studies/glfs-defaults.md): centred cluster indicators are
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
        X,
        W,
        objective=objective,
        lambda1=lambda1,
        lambda2=lambda2,
        center=center,
        scale=scale,
        beta_init=beta_init,
        max_iter=max_iter,
    )
    lams = _lam_grid(prob, lams, n_lams, lam_ratio)
    sols = _run_path(prob, lams)
    return _path_result(
        prob,
        lams,
        sols,
        rank_by=rank_by,
        lam_ratio=lam_ratio,
        search_C=search_C,
        center=center,
        scale=scale,
        beta_init=beta_init,
    )


def _lam_grid(prob, lams, n_lams, lam_ratio):
    """The path's lam values, decreasing: ``lams`` as given (checked), or ``n_lams`` values from lam_max."""
    if lams is None:
        if prob.lam_ref <= 0:
            msg = (
                f"no gene has a negative {'Eq. 9 direction' if prob.objective == 'printed' else 'gradient'} at the "
                f"start point (beta_init, start level doubled {prob.start_doublings} times), so every lam gives "
                "beta = 0; seen with fewer genes than samples (docs/methods/glfs-readings.md); try another beta_init"
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
                prob.objective,
                lam,
                sol.n_iter,
                sol.kkt,
                KKT_TOL,
                sol.message,
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


def glfs_published(
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
    """GLFS as published: gradient-based Laplacian feature selection (Wang & Goldenberg, ICML 2013, Eq. 8).

    One reading of the paper's equations, chosen by ``objective`` (registry methods ``glfs_exact``,
    ``glfs_paper``, ``glfs_printed``).  The recommended GLFS, the well-posed budgeted design, is
    :func:`glfs.glfs_design` (``method="glfs"``).

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
        X,
        W,
        objective=objective,
        lambda1=lambda1,
        lambda2=lambda2,
        center=center,
        scale=scale,
        beta_init=beta_init,
        max_iter=max_iter,
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
        prob,
        lams,
        _run_path(prob, lams, first),
        rank_by=rank_by,
        lam_ratio=lam_ratio,
        search_C=C,
        center=center,
        scale=scale,
        beta_init=beta_init,
        search=search,
        pick=pick,
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
