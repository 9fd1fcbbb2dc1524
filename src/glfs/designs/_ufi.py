"""UFI: unified feature and instance selection by A-optimal design.

Zhang, Chen, Bu & He, "A Unified Feature and Instance Selection Framework
Using Optimum Experimental Design", IEEE TIP 21(5), 2012, Eq. 9, Algorithm 1.

Orientation: X has shape (n_samples, n_features) = (instances, features); the
paper's X is (features x instances).  With a kept feature set S (p genes) and
instance set T (q samples), Z = X[T][:, S] (q, p) and UFI solves

    min_{S, T}  Tr((Z' Z + lambda I_p)^-1)        (Eq. 9; Z'Z is p x p over features)

by greedy backward elimination (Algorithm 1): starting from everything, each of
``n_iter`` iterations removes a block of features (DelRow), then a block of
instances (DelColumn), one at a time.  **No graph is used** (plain ridge
regression, Eq. 5-8).

Dual form used here
-------------------
Everything is computed with the (q x q) instance-space inverse
P = (Z Z' + lambda I_q)^-1 (the paper's M in DelRow), so nothing p x p (genes x
genes) is ever formed.  For gene f (a column of Z, length q) the paper's Eq. 12
removal criterion is

    c(f) = f' P^2 f / (1 - f' P f)      (= increase of the trace when f is removed),

the least informative gene (argmin c) is removed and P is updated by
Sherman-Morrison (Eq. 13, with the sign of a removal: P <- P + P f f' P / (1 - f'Pf)).
For instances we use the same P: removing instance i changes the trace (Eq. 15)
by -(P^2)_ii / P_ii (block inverse), so the least informative instance is
argmax_i (P^2)_ii / P_ii, and P <- P_{-i,-i} - P_{-i,i} P_{i,-i} / P_ii.  This
equals the paper's feature-space Eq. 16 (checked by brute force in the tests)
but costs O(q^2) per removal instead of O(p^2).

Primal form (many samples)
--------------------------
When every instance is kept (feature selection only, as :func:`select_ufi`
does) and there are more samples than genes, the same greedy removals are
computed in the (p x p) gene space instead: with G = Z'Z + lambda I_p and
Ginv = G^-1, removing gene k lowers the trace by (Ginv^2)_kk / Ginv_kk (block
inverse), so

    c(f_k) = 1/lambda - (Ginv^2)_kk / Ginv_kk        (the same Eq. 12 value as above),

and Ginv <- Ginv - a a' / a_k with a = Ginv[:, k] (the removed row and column
become zero).  The Gram X'X is formed once (O(n d^2)); each removal costs
O(p^2), so the full ranking is O(n d^2 + d^3) time and O(d^2) memory: nothing
n x n.  ``form="auto"`` picks it when n_samples > n_features and no instance
is removed; the dual form, whose P is n x n, refuses above the size limit
(docs/methods/size-limits.md, "Size limits").

Step sizes: the printed "alpha = n - p/t" is garbled; each iteration removes
about (n_features_total - p) / t genes and (n_samples - q) / t instances; the
counts after iteration i are round(d - i (d - p) / t) and round(m - i (m - q) / t).
With all instances kept the iterations only regroup the same one-at-a-time
greedy removals, so UFI is then a pure feature selector independent of t.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

import numpy as np
from threadpoolctl import threadpool_limits

from glfs.core import limits
from glfs.core._result import Selection, make_selection
from glfs.core._validation import check_int, check_n_features, check_positive, check_X, constant_features, warn_constant
from glfs.core.limits import check_dense_size

log = logging.getLogger(__name__)

__all__ = ["ufi", "UFIResult", "select_ufi", "ufi_form", "ufi_work"]

#: Rank-one updates between two recomputations of P in :func:`ufi` (drift after 3000 updates: below 1e-11, relative).
DEFAULT_REFRESH_EVERY = 1000


@dataclass(frozen=True)
class UFIResult:
    """Result of :func:`ufi`.

    Attributes
    ----------
    features : ndarray of int
        Kept genes (sorted column indices).
    instances : ndarray of int
        Kept samples (sorted row indices).
    removed_features : ndarray of int
        Genes in the order they were removed (least informative first); with
        ``full_ranking=True`` this continues past ``n_features`` until no gene
        is left, so its reverse is a full ranking (best first).
    removal_criterion : ndarray of float
        Eq. 12 value c(f) of each removed gene at the moment it was removed
        (aligned with ``removed_features``).
    removed_instances : ndarray of int
        Samples in removal order.
    objective : ndarray of float
        Tr((Z'Z + lambda I)^-1) after each iteration (Eq. 9).
    ridge : float
        The absolute lambda used.
    constant : ndarray of bool
        Constant genes (excluded from the start).
    """

    features: np.ndarray
    instances: np.ndarray
    removed_features: np.ndarray
    removal_criterion: np.ndarray
    removed_instances: np.ndarray
    objective: np.ndarray
    ridge: float
    constant: np.ndarray


def _schedule(total, keep, t):
    return [int(round(total - i * (total - keep) / t)) for i in range(t + 1)]


class _State:
    """P = (Z Z' + lam I)^-1 over the current instances, with per-gene q1 = f'Pf, q2 = f'P^2 f.

    Z holds the genes alive at the last refresh; removed genes are masked
    (``live``) until the next refresh compacts Z.
    """

    def __init__(self, X, lam, rows, cols):
        self.X, self.lam = X, lam
        self.rows = np.asarray(rows)
        self.idx = np.asarray(cols)
        self.live = np.ones(self.idx.size, dtype=bool)
        self.refresh()

    @property
    def cols(self):
        return self.idx[self.live]

    def refresh(self):
        self.idx = self.idx[self.live]
        self.live = np.ones(self.idx.size, dtype=bool)
        Z = self.X[np.ix_(self.rows, self.idx)]
        self.Z = Z
        G = Z @ Z.T
        G[np.diag_indices_from(G)] += self.lam
        P = np.linalg.inv(G)
        self.P = (P + P.T) / 2
        Y = self.P @ Z
        self.q1 = np.einsum("ij,ij->j", Z, Y)
        self.q2 = np.einsum("ij,ij->j", Y, Y)
        self.since = 0

    def trace_primal(self):
        # Tr((Z'Z + lam I_p)^-1) = (p - q)/lam + Tr(P)
        return (int(self.live.sum()) - self.rows.size) / self.lam + float(np.trace(self.P))

    def criterion(self):
        c = self.q2 / (1.0 - self.q1)
        c[~self.live] = np.inf
        return c

    def remove_feature(self, k):
        """Remove the gene in column k of Z (Eq. 13)."""
        f = self.Z[:, k]
        m = self.P @ f
        c = 1.0 - float(f @ m)
        Pm = self.P @ m
        r, s = np.vstack([m, Pm]) @ self.Z  # one pass over Z: O(q u), memory-bound

        self.q1 = self.q1 + r**2 / c
        self.q2 = self.q2 + 2.0 * r * s / c + r**2 * float(m @ m) / c**2
        self.P = self.P + np.outer(m, m) / c
        self.live[k] = False
        self.since += 1
        dead = self.live.size - int(self.live.sum())
        if dead > 0.1 * self.live.size and dead > 8:  # compact: later passes skip removed genes
            keep = self.live
            self.Z = self.Z[:, keep]
            self.q1, self.q2, self.idx = self.q1[keep], self.q2[keep], self.idx[keep]
            self.live = np.ones(self.idx.size, dtype=bool)

    def remove_instance(self, i):
        """Remove the sample in row i of Z (block inverse of P); q1, q2 become stale."""
        P = self.P
        p = np.delete(P[:, i], i)
        keep = np.ones(self.rows.size, dtype=bool)
        keep[i] = False
        self.P = P[np.ix_(keep, keep)] - np.outer(p, p) / P[i, i]
        self.rows = self.rows[keep]
        self.Z = self.Z[keep]


class _PrimalState:
    """Ginv = (Z'Z + lam I_p)^-1 over the live genes, all instances kept (module docstring, primal form).

    Same interface as :class:`_State` (``idx``, ``live``, ``since``,
    ``refresh``, ``criterion``, ``remove_feature``, ``trace_primal``); no
    instance removal.  g = diag(Ginv), s = diag(Ginv^2).
    """

    def __init__(self, X, lam, cols):
        self.lam = lam
        self.rows = np.arange(X.shape[0])
        self.idx = np.asarray(cols)
        Z = X if self.idx.size == X.shape[1] else X[:, self.idx]
        G = Z.T @ Z  # (p, p) Gram over the genes, formed once: O(n p^2)
        G[np.diag_indices_from(G)] += lam
        self.G = G
        self.pos = np.arange(self.idx.size)  # row/column of each live gene in G
        self.live = np.ones(self.idx.size, dtype=bool)
        self.refresh()

    @property
    def cols(self):
        return self.idx[self.live]

    def refresh(self):
        keep = self.live
        self.idx, self.pos = self.idx[keep], self.pos[keep]
        self.live = np.ones(self.idx.size, dtype=bool)
        Ginv = np.linalg.inv(self.G[np.ix_(self.pos, self.pos)])
        self.Ginv = (Ginv + Ginv.T) / 2
        self.g = np.diag(self.Ginv).copy()
        self.s = np.einsum("ij,ij->j", self.Ginv, self.Ginv)
        self.since = 0

    def trace_primal(self):
        return float(self.g[self.live].sum())

    def criterion(self):
        c = np.full(self.g.shape, np.inf)
        live = self.live
        c[live] = 1.0 / self.lam - self.s[live] / self.g[live]
        return c

    def remove_feature(self, k):
        """Remove gene k: block-inverse downdate of Ginv, O(p^2)."""
        a = self.Ginv[:, k].copy()
        al = a[k]
        b = self.Ginv @ a  # row k of Ginv^2
        self.s = self.s - 2.0 * a * b / al + a**2 * float(a @ a) / al**2
        self.g = self.g - a**2 / al
        self.Ginv -= np.outer(a, a / al)
        self.live[k] = False
        self.since += 1
        dead = self.live.size - int(self.live.sum())
        if dead > 0.1 * self.live.size and dead > 8:  # compact
            keep = self.live
            self.Ginv = self.Ginv[np.ix_(keep, keep)]
            self.g, self.s, self.idx, self.pos = self.g[keep], self.s[keep], self.idx[keep], self.pos[keep]
            self.live = np.ones(self.idx.size, dtype=bool)


#: Work limit of UFI, in the operations of its gene removals: n r (d / 2 + n) for the dual form and
#: d^3 / 3 + n d^2 / 16 for the primal (its one Gram product X'X runs as BLAS-3, about 16 times
#: faster per operation), for r removed genes out of d (r = d for the full ranking of
#: ``select_ufi``).  Measured (studies/size-limits.md): about 3e8 such operations per
#: second (400 x 1,500 dual: 2.1 s; 700 x 2,500: 12 s; 20,000 x 2,000 primal: 29 s), so the limit
#: of 3e10 is about 100 s.  4,186 x 10,023 in the dual form (3.9e11, about 20 min) is refused.


def ufi_work(n_samples: int, n_features: int, form: str, n_removed: int | None = None) -> float:
    """The operations of UFI's gene removals in ``form`` (see :data:`glfs.core.limits.UFI_MAX_WORK`)."""
    n, d = float(n_samples), float(n_features)
    r = d if n_removed is None else float(n_removed)
    if form == "dual":
        return n * r * (d / 2.0 + n)
    return d**3 / 3.0 + n * d * d / 16.0


def ufi_form(
    n_samples: int,
    n_features: int,
    n_instances: int | None = None,
    form: str = "auto",
    *,
    limit_gb=None,
    n_removed: int | None = None,
    max_work: float | None = None,
):
    """Which form UFI uses, after checking its size (docs/methods/size-limits.md, "Size limits").

    ``"primal"`` (genes x genes, all instances kept) when ``form="auto"``,
    every instance is kept and n_samples > n_features; ``"dual"`` (samples x
    samples) otherwise.  Raises ``ValueError`` ("size limit") when the dense
    matrices of the chosen form (three of its size at once) exceed
    ``limit_gb`` (default :data:`glfs.core.limits.DENSE_LIMIT_GB`), or, when
    ``n_removed`` is given (:func:`ufi` passes it: all genes for a full
    ranking), when the work of removing that many genes exceeds ``max_work``
    (default :data:`glfs.core.limits.UFI_MAX_WORK`, about 100 s; :func:`ufi_work`).
    """
    if form not in ("auto", "primal", "dual"):
        msg = f"form must be 'auto', 'primal' or 'dual'; got {form!r}"
        raise ValueError(msg)
    keep_all = n_instances is None or n_instances >= n_samples
    if form == "primal" and not keep_all:
        msg = f"form='primal' supports feature selection only (n_instances=None); got n_instances={n_instances}"
        raise ValueError(msg)
    if form == "auto":
        form = "primal" if keep_all and n_samples > n_features else "dual"
    if form == "dual":
        alt = (
            "With all instances kept (n_instances=None) UFI runs in the primal form over the genes "
            f"({n_features} x {n_features}); otherwise subsample the samples."
            if not keep_all
            else "Use form='auto' (primal form over the genes) or subsample the samples."
        )
        check_dense_size(
            "ufi", f"the dual inverse P ({n_samples} x {n_samples})", 3.0 * n_samples**2, alt, limit_gb=limit_gb
        )
    else:
        check_dense_size(
            "ufi",
            f"the primal inverse ({n_features} x {n_features})",
            3.0 * n_features**2,
            "Pre-filter the genes (e.g. by variance or sc.pp.highly_variable_genes) before UFI.",
            limit_gb=limit_gb,
        )
    limit = limits.UFI_MAX_WORK if max_work is None else float(max_work)
    work = 0.0 if n_removed is None else ufi_work(n_samples, n_features, form, n_removed)
    if work > limit:
        formula = "n r (d/2 + n)" if form == "dual" else "d^3/3 + n d^2/16"
        msg = (
            f"ufi: the {form} form on {n_samples} samples x {n_features} genes "
            f"({n_removed} gene removals) needs about {work:.1e} operations "
            f"({formula}), above the size limit of {limit:.0e} (about {limit / 3e8:.0f} s on 2 cores; "
            "glfs.core.limits.UFI_MAX_WORK; docs/methods/size-limits.md, 'Size limits'). Pre-filter the genes (e.g. 2,000 highly "
            "variable genes: sc.pp.highly_variable_genes, or glfs.select(X, 'variance', ...)) or subsample the samples."
        )
        raise ValueError(msg)
    return form


def ufi(
    X,
    *,
    n_features: int,
    n_instances: int | None = None,
    n_iter: int = 20,
    ridge: float = 1e-3,
    relative_ridge: bool = True,
    full_ranking: bool = False,
    refresh_every: int | None = None,
    form: str = "auto",
) -> UFIResult:
    """Unified feature and instance selection (Zhang et al., TIP 2012, Algorithm 1).

    Parameters
    ----------
    X : array-like or sparse of shape (n_samples, n_features)
        Samples (instances) in rows, genes in columns.  Used densely.
    n_features : int in [1, n_features]
        Genes to keep (the paper's p).
    n_instances : int in [1, n_samples], optional
        Samples to keep (the paper's q).  Default: all (pure feature selection).
    n_iter : int, default 20
        Iterations t of Algorithm 1 (the paper's value in Sec. V-D).  Irrelevant
        when all instances are kept.
    ridge : float, default 1e-3
        lambda of Eq. 5 (the paper used 1e-3).  With ``relative_ridge`` (default)
        it is multiplied by the mean squared sample norm ||x_i||^2 of X, so the
        selection does not depend on the units of X.
    relative_ridge : bool, default True
    full_ranking : bool, default False
        After the t iterations, keep removing genes (with the kept instances)
        until none is left, so that ``removed_features[::-1]`` ranks all genes.
    refresh_every : int, optional
        Recompute P from scratch after this many rank-one updates (controls
        round-off and compacts the gene matrix).  Default 1000: measured drift
        after 3000 updates without refresh is below 1e-11 (relative).
    form : {"auto", "dual", "primal"}, default "auto"
        "dual": the (q x q) instance-space inverse (the paper's M); "primal":
        the (p x p) gene-space inverse, only with all instances kept.  "auto":
        primal when all instances are kept and n_samples > n_features.  Both
        give the same removals (module docstring).  Checked against the size
        limit before anything is allocated (:func:`ufi_form`).

    Returns
    -------
    UFIResult

    Notes
    -----
    Cost: one (q x q) inverse per iteration and per refresh, O(q^2 p); each gene
    removal O(q p + q^2), each instance removal O(q^2).  Removing all d genes
    (``full_ranking``) is O(d (n d + n^2)) time.  Dual form: **memory O(n^2 +
    n d)**, the instance-space inverse P is a dense n x n matrix (the paper's
    M).  Primal form: O(n d^2 + d^3) time, O(n d + d^2) memory, nothing n x n.
    """
    X = check_X(X, dense=True)
    m, d = X.shape
    n_features = check_n_features(n_features, d)
    n_instances = check_n_features(n_instances, m, name="n_instances", allow_none=True)
    if n_instances is None:
        n_instances = m
    n_iter = check_int(n_iter, "n_iter", 1)
    lam = check_positive(ridge, "ridge")
    if refresh_every is None:
        refresh_every = DEFAULT_REFRESH_EVERY
    const = constant_features(X)
    if relative_ridge:
        scale = float(np.einsum("ij,ij->", X, X)) / m
        lam *= scale if scale > 0 else 1.0
    alive = np.flatnonzero(~const)
    if alive.size == 0:
        msg = "X has only constant features; UFI cannot rank them"
        raise ValueError(msg)
    p = min(n_features, alive.size)
    if p < n_features:
        log.warning("ufi: only %d non-constant genes; keeping %d", p, p)

    form = ufi_form(
        m, int(alive.size), n_instances, form, n_removed=int(alive.size) if full_ranking else int(alive.size) - p
    )
    log.info("ufi: %d samples x %d genes, %s form", m, alive.size, form)
    st = _PrimalState(X, lam, alive) if form == "primal" else _State(X, lam, np.arange(m), alive)
    feat_counts = _schedule(alive.size, p, n_iter)
    inst_counts = _schedule(m, n_instances, n_iter)
    # thousands of small (2 x q)(q x u) products: multi-threaded BLAS only adds
    # synchronisation cost (8x slower measured on 2 busy cores), so use one thread.
    with threadpool_limits(limits=1, user_api="blas"):
        return _run(st, feat_counts, inst_counts, n_iter, full_ranking, refresh_every, lam, const)


def _run(st, feat_counts, inst_counts, n_iter, full_ranking, refresh_every, lam, const):
    removed_f, crit_f, removed_i, objective = [], [], [], []

    def drop_features(target):
        while int(st.live.sum()) > target:
            if st.since >= refresh_every:
                st.refresh()
            c = st.criterion()
            k = int(np.argmin(c))
            removed_f.append(int(st.idx[k]))
            crit_f.append(float(c[k]))
            st.remove_feature(k)

    stale = False
    for it in range(1, n_iter + 1):
        if stale:  # Algorithm 1, line 14: M <- (F'F + lambda I)^-1 (P is already current otherwise)
            st.refresh()
            stale = False
        drop_features(feat_counts[it])
        if st.rows.size > inst_counts[it]:
            st.refresh()
            stale = True
            while st.rows.size > inst_counts[it]:
                P = st.P
                score = np.einsum("ij,ij->j", P, P) / np.diag(P)
                i = int(np.argmax(score))
                removed_i.append(int(st.rows[i]))
                st.remove_instance(i)
        objective.append(st.trace_primal())
        log.debug("ufi iteration %d: %d genes, %d samples, trace %.6g", it, st.cols.size, st.rows.size, objective[-1])
    features = np.sort(st.cols)
    instances = np.sort(st.rows)
    if full_ranking:
        if stale:
            st.refresh()
        drop_features(0)
    return UFIResult(
        features=features,
        instances=instances,
        removed_features=np.asarray(removed_f, dtype=np.int64),
        removal_criterion=np.asarray(crit_f, dtype=np.float64),
        removed_instances=np.asarray(removed_i, dtype=np.int64),
        objective=np.asarray(objective),
        ridge=lam,
        constant=const,
    )


def select_ufi(X, W=None, *, n_features, labels=None, random_state=None, **params) -> Selection:
    """UFI as a feature selector (all instances kept) returning a :class:`~glfs.Selection`.

    Registry entry ``"ufi"``.  The graph W, ``labels`` and ``random_state`` are
    ignored (UFI uses no graph).  Ranking: reverse order of greedy removal,
    continued until no gene is left (last removed = best); the first
    ``n_features`` of it are exactly the genes UFI keeps.  Scores (higher is
    better): the Eq. 12 criterion of each gene at the moment it was removed
    (the increase of Tr(Z'Z + lambda I)^-1 its removal caused); constant genes
    NaN, ranked last.  Parameters: ``ridge``, ``relative_ridge``, ``n_instances``,
    ``n_iter`` (see :func:`ufi`).
    """
    res = ufi(X, n_features=n_features, full_ranking=True, **params)
    warn_constant(res.constant, "ufi")
    d = res.constant.shape[0]
    scores = np.full(d, np.nan)
    scores[res.removed_features] = res.removal_criterion
    ranking = np.concatenate([res.removed_features[::-1], np.flatnonzero(res.constant)])
    selected = np.zeros(d, dtype=bool)
    selected[res.features] = True
    used = {k: (v.item() if isinstance(v, np.generic) else v) for k, v in params.items()}
    return make_selection(
        "ufi",
        scores,
        higher_is_better=True,
        n_features=n_features,
        ranking=ranking,
        selected=selected,
        params=used,
        extra={"ridge_absolute": res.ridge, "objective": res.objective, "instances": res.instances},
    )
