"""Preprocess an expression matrix: log1p, library-size normalisation, gene filters.

X is (n_samples, n_features).  See ``docs/guides/data.md`` ("preprocess").
"""

from __future__ import annotations

import logging

import numpy as np
import scipy.sparse as sp

from .errors import DataError

log = logging.getLogger(__name__)


PREPROCESS_DEFAULTS = {
    "none": {},
    "log2": {"floor": 20.0, "ceiling": 16000.0},
    "zscore": {},
    "dudoit": {"floor": 100.0, "ceiling": 16000.0, "min_fold": 5.0, "min_diff": 500.0},
    "log1p": {},
    "normalize_log1p": {"target_sum": None},
}


def preprocess(
    X: np.ndarray, genes: list, method: str = "none", params: dict | None = None, *, samples: list | None = None
):
    """Apply a preprocessing option to X (n_samples, n_genes).

    - ``none``: unchanged (Wang & Goldenberg 2013: "no pre-processing").
    - ``log2``: clip to [floor, ceiling] (defaults 20, 16000), then log2.
      A floor is required when X has values <= 0.
    - ``zscore``: each gene centred and scaled to unit SD (ddof=0); a
      constant gene becomes all zeros.
    - ``dudoit``: Dudoit, Fridlyand & Speed (2002, JASA 97:77), Sec. 3.1:
      thresholding (floor 100, ceiling 16000), filtering (keep genes with
      max/min > 5 and max - min > 500), base-10 log.  On Golub's 72 samples
      this keeps 3571 genes, the number the paper reports.
    - ``log1p``: log(1 + x), for counts; values must be >= 0.
    - ``normalize_log1p``: library-size normalisation then log1p, for raw
      counts: each sample is scaled to total ``target_sum`` (default the
      median of the samples' totals), then log(1 + x), as scanpy's
      ``normalize_total`` + ``log1p``.  A sample with total 0 is an error.

    ``samples`` (ids, optional) only names samples in error messages.
    Returns (X, kept gene mask (n_genes,) bool, params used).

    A sparse X stays sparse under ``none``, ``log1p`` and ``normalize_log1p``
    (a CSR copy with the same non-zeros, in X's float dtype: float32 stays
    float32; the totals are summed in float64); the other options make it
    dense, after checking the size (:func:`glfs.core.limits.check_dense_size`).
    """
    params = {k: v for k, v in (params or {}).items() if v is not None or k in ("floor", "ceiling")}
    if method not in PREPROCESS_DEFAULTS:
        msg = f"preprocess must be one of {sorted(PREPROCESS_DEFAULTS)}; got {method!r}"
        raise DataError(msg)
    used = {**PREPROCESS_DEFAULTS[method], **params}
    keep = np.ones(X.shape[1], dtype=bool)
    if method == "none":
        return X, keep, used
    if sp.issparse(X):
        if method in ("log1p", "normalize_log1p"):
            return _log1p_sparse(X, genes, method, used, samples), keep, used
        X = _dense_copy(X, method)
    if method == "zscore":
        mu = X.mean(axis=0)
        sd = X.std(axis=0)
        sd_safe = np.where(sd > 0, sd, 1.0)
        return (X - mu) / sd_safe, keep, used
    if method in ("log1p", "normalize_log1p"):
        X, used = _log1p_dense(X, genes, method, used, samples)
        return X, keep, used
    return _clipped_log(X, genes, method, used)


def _dense_copy(X, method):
    """A dense copy of the sparse X for ``method``, after checking its size (glfs.core.limits)."""
    from glfs.core.limits import check_dense_size

    n, d = X.shape
    check_dense_size(
        f"preprocess {method!r}",
        f"a dense copy of the sparse matrix ({n} x {d})",
        float(n) * d,
        "Sparse counts take preprocess 'log1p' or 'normalize_log1p', which keep them sparse",
    )
    return X.toarray()


def _log1p_dense(X, genes, method, used, samples):
    """``log1p`` or ``normalize_log1p`` of a dense X: (the result, the params used with the target sum)."""
    sample_ids = samples if samples is not None else [str(i) for i in range(X.shape[0])]
    if X.min() < 0:
        i, j = np.unravel_index(int(np.argmin(X)), X.shape)
        msg = f"preprocess {method!r} needs non-negative values; gene {genes[j]!r} has {X[i, j]} at sample {sample_ids[i]!r}"
        raise DataError(msg)
    if method == "log1p":
        return np.log1p(X), used
    totals = X.sum(axis=1)
    target = _target_sum(totals, used, method, sample_ids)
    used = {**used, "target_sum": target}
    return np.log1p(X * (target / totals)[:, None]), used


def _target_sum(totals, used, method, sample_ids) -> float:
    """The total every sample is scaled to (``normalize_log1p``): ``target_sum``, default the median of the
    samples' ``totals``; a DataError names the first sample whose total is 0."""
    if (totals <= 0).any():
        i = int(np.flatnonzero(totals <= 0)[0])
        msg = f"preprocess {method!r}: sample {sample_ids[i]!r} has a total of 0 over all genes; remove it or use preprocess 'log1p'"
        raise DataError(msg)
    target = used.get("target_sum")
    return float(np.median(totals)) if target is None else float(target)


def _clipped_log(X, genes, method, used):
    """``log2`` (clip, log2) or ``dudoit`` (clip, filter, log10) of a dense X: (X, kept gene mask, params used)."""
    keep = np.ones(X.shape[1], dtype=bool)
    lo, hi = used.get("floor"), used.get("ceiling")
    Xc = np.clip(X, lo if lo is not None else -np.inf, hi if hi is not None else np.inf)
    if method == "log2":
        if Xc.min() <= 0:
            i, j = np.unravel_index(int(np.argmin(Xc)), Xc.shape)
            msg = f"preprocess 'log2' needs positive values after clipping; gene {genes[j]!r} has {Xc[i, j]} (set preprocess_params.floor > 0)"
            raise DataError(msg)
        return np.log2(Xc), keep, used
    # dudoit
    if Xc.min() <= 0:
        msg = f"preprocess 'dudoit' needs preprocess_params.floor > 0; got {lo}"
        raise DataError(msg)
    mx, mn = Xc.max(axis=0), Xc.min(axis=0)
    keep = (mx / mn > used["min_fold"]) & (mx - mn > used["min_diff"])
    if not keep.any():
        msg = "preprocess 'dudoit' removed every gene (preprocess_params min_fold / min_diff too strict)"
        raise DataError(msg)
    return np.log10(Xc[:, keep]), keep, used


def _log1p_sparse(X, genes, method, used, samples):
    """log1p, or library-size normalisation + log1p, of a sparse X: a CSR copy, zeros stay zeros (O(nnz))."""
    Y = sp.csr_matrix(X, copy=True)
    if Y.dtype.kind != "f":
        Y = Y.astype(np.float32 if Y.nnz == 0 or float(abs(Y.data).max()) <= 2**24 else np.float64)
    Y.sum_duplicates()
    sample_ids = samples if samples is not None else [str(i) for i in range(Y.shape[0])]
    if Y.nnz and Y.data.min() < 0:
        t = int(np.argmin(Y.data))
        i = int(np.searchsorted(Y.indptr, t, side="right") - 1)
        msg = (
            f"preprocess {method!r} needs non-negative values; gene {genes[Y.indices[t]]!r} has {Y.data[t]} "
            f"at sample {sample_ids[i]!r}"
        )
        raise DataError(msg)
    if method == "normalize_log1p":
        totals = np.asarray(Y.sum(axis=1, dtype=np.float64)).ravel()
        target = used["target_sum"] = _target_sum(totals, used, method, sample_ids)
        Y.data *= np.repeat(target / totals, np.diff(Y.indptr)).astype(Y.dtype, copy=False)
    np.log1p(Y.data, out=Y.data)
    return Y
