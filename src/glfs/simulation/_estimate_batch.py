"""The simulator's batch factor estimated from cells of several batches (donors) of the same cell types.

:func:`estimate_batch_params` returns the ``batch_fac_loc`` and
``batch_fac_scale`` of :func:`glfs.simulation._scsim.simulate_counts` (Splat's
``batch.facLoc``, ``batch.facScale``) that describe real donors, e.g. the
Kang 2018 PBMC donors of the development panel (docs/methods/simulation.md, "Simulator
calibration").  splatter has no estimator for them.
"""

from __future__ import annotations

import logging
import math
from dataclasses import dataclass, field

import numpy as np
from scipy import optimize, special

from glfs.simulation._estimate import _codes, _counts_csr, _GroupStats

log = logging.getLogger(__name__)

__all__ = ["BatchParams", "estimate_batch_params", "MAX_BATCHES"]


@dataclass(frozen=True)
class BatchParams:
    """The batch factor's log-normal (``batch_fac_loc``, ``batch_fac_scale`` of ``simulate_counts``) and diagnostics."""

    batch_fac_loc: float
    batch_fac_scale: float
    diagnostics: dict = field(default_factory=dict)


#: At most this many batches for :func:`estimate_batch_params` (its likelihood sums over 2^n_batches sign patterns).
MAX_BATCHES = 10


def _centred_log_means(X, bcodes, n_batches, min_count, min_cells):
    """For the cells of one group: per gene, the batches' log means projected off the all-batch mean, and their variances.

    Returns (y, se2) with y of shape (genes, n_batches - 1) (coordinates in the
    space orthogonal to the all-ones vector) and se2 (genes, n_batches), for
    the genes with at least ``min_count`` counts in every batch; None when a
    batch has fewer than ``min_cells`` cells of the group.
    """
    if np.bincount(bcodes, minlength=n_batches).min() < min_cells:
        return None
    gs = _GroupStats(X, bcodes, n_batches)
    lm, se2 = gs.log_mean_and_se2()
    keep = gs.sum_x.min(axis=0) >= min_count
    lm, se2 = lm[:, keep], se2[:, keep]
    lm = lm - np.median(lm - lm.mean(axis=0), axis=1, keepdims=True)  # each batch's normalisation shift
    Q = _centring_basis(n_batches)
    return lm.T @ Q, se2.T


def _centring_basis(b: int) -> np.ndarray:
    """An orthonormal basis (b x (b - 1)) of the vectors of b values that sum to 0."""
    q, _ = np.linalg.qr(np.eye(b) - 1.0 / b)
    return q[:, : b - 1]


def _batch_negloglik(theta, y, se2, Q, signs):
    """Minus the log-likelihood of centred batch log means: each batch's log factor +-N(loc, scale^2), plus noise."""
    loc, scale = theta[0], math.exp(theta[1])
    cov = scale**2 * np.eye(Q.shape[1])[None] + np.einsum("bi,gb,bj->gij", Q, se2, Q)
    inv = np.linalg.inv(cov)
    _, logdet = np.linalg.slogdet(cov)
    means = loc * signs @ Q  # (2^b, b - 1)
    r = y[:, None, :] - means[None]
    quad = np.einsum("gsi,gij,gsj->gs", r, inv, r)
    ll = special.logsumexp(-0.5 * quad, axis=1) - math.log(signs.shape[0]) - 0.5 * logdet
    return -float(np.sum(ll)) + 0.5 * y.shape[0] * Q.shape[1] * math.log(2 * math.pi)


def estimate_batch_params(counts, batch, groups=None, *, min_count: float = 10.0, min_cells: int = 10) -> BatchParams:
    """Estimate the batch factor's log-normal (Splat's ``batch.facLoc``, ``batch.facScale``) from cells of several batches.

    In the simulator each gene's mean in batch b is multiplied by
    ``exp(+-|N(loc, scale^2)|)``, up or down with probability 1/2 (splatter's
    batch effects; splatter has no estimator for them).  Here, within each
    group (e.g. cell type, so that the batches' different make-up is not
    counted as a batch effect) and for each gene with at least ``min_count``
    counts in every batch: the log of each batch's mean of x / L, less each
    batch's median shift over genes (library normalisation), projected off
    the all-batch mean.  Under the model that vector is the centred sum of
    +-N(loc, scale^2) per batch and the estimation noise (delta method), and
    (loc, scale) maximise its likelihood, summed over the 2^n_batches sign
    patterns, over genes and groups (taken as independent).

    Parameters
    ----------
    counts : array-like or sparse matrix, shape (n_cells, n_genes)
        Raw counts, cells in rows; every cell with a count.
    batch : array-like of shape (n_cells,)
        Batch (donor, sample) of each cell; 2 to :data:`MAX_BATCHES` batches.
    groups : array-like of shape (n_cells,), optional
        Cell type of each cell; default one group.  A group with fewer than
        ``min_cells`` cells in some batch is left out.
    min_count : float, default 10
        Counts a gene needs in every batch of a group to be used there.
    min_cells : int, default 10
        Cells a group needs in every batch to be used.

    Returns
    -------
    BatchParams
        ``batch_fac_loc``, ``batch_fac_scale`` (arguments of
        ``simulate_counts``) and ``diagnostics`` (groups and genes used).

    Raises
    ------
    ValueError
        Fewer than 2 or more than :data:`MAX_BATCHES` batches, labels not one
        per cell, or no group with enough cells in every batch.
    """
    X = _counts_csr(counts)
    n = X.shape[0]
    bcodes, bnames = _codes(batch, n, "batch")
    if not 2 <= len(bnames) <= MAX_BATCHES:
        msg = f"batch must have 2 to {MAX_BATCHES} distinct values; got {len(bnames)}"
        raise ValueError(msg)
    gcodes, gnames = (np.zeros(n, dtype=np.int64), [None]) if groups is None else _codes(groups, n, "groups")
    b = len(bnames)
    parts, used = [], []
    for g, name in enumerate(gnames):
        cells = np.flatnonzero(gcodes == g)
        part = _centred_log_means(X[cells], bcodes[cells], b, min_count, min_cells)
        if part is not None and part[0].shape[0] > 0:
            parts.append(part)
            used.append(name)
    if not parts:
        msg = f"estimate_batch_params: no group has {min_cells} cells in each of the {b} batches (and genes with {min_count} counts in each)"
        raise ValueError(msg)
    y = np.concatenate([p[0] for p in parts])
    se2 = np.concatenate([p[1] for p in parts])
    Q = _centring_basis(b)
    signs = np.array(np.meshgrid(*[[-1.0, 1.0]] * b, indexing="ij")).reshape(b, -1).T
    m2 = max(float(np.mean(np.sum(y**2, axis=1) / (b - 1) - se2.mean(axis=1))), 1e-4)  # loc^2 + scale^2
    best = None
    for frac in (0.2, 0.5, 0.8):
        start = [math.sqrt(frac * m2), 0.5 * math.log((1 - frac) * m2)]
        res = optimize.minimize(
            _batch_negloglik, start, args=(y, se2, Q, signs), method="L-BFGS-B", bounds=[(0.0, 5.0), (-7.0, 1.5)]
        )
        if best is None or res.fun < best.fun:
            best = res
    diag = {"groups_used": used, "genes_used": int(y.shape[0]), "n_batches": b, "second_moment": m2}
    log.info(
        "estimate_batch_params: %d batches, %d group x gene pairs: loc %.3g, scale %.3g",
        b,
        y.shape[0],
        best.x[0],
        math.exp(best.x[1]),
    )
    return BatchParams(float(best.x[0]), float(math.exp(best.x[1])), diag)
