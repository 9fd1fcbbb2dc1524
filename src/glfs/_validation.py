"""Input validation shared by every public entry point.

Every check raises ``ValueError`` with a message that names the argument, the
expected form and what was given (house style).  Nothing here mutates its input.
"""

from __future__ import annotations

import logging
import warnings

import numpy as np
import scipy.sparse as sp

log = logging.getLogger(__name__)

__all__ = [
    "check_X",
    "check_graph",
    "check_n_features",
    "check_labels",
    "constant_features",
    "warn_constant",
    "ConstantFeatureWarning",
]


class ConstantFeatureWarning(UserWarning):
    """Some features (genes) are constant across samples and cannot be scored."""


def check_X(X, *, name: str = "X", allow_sparse: bool = True, dense: bool = False):
    """Validate an expression matrix of shape (n_samples, n_features).

    Returns a float64 ndarray, or a float64 CSR matrix when ``X`` is sparse and
    ``allow_sparse`` and not ``dense``.  The input is never modified (a copy is
    made when a dtype change is needed).
    """
    if sp.issparse(X):
        if not allow_sparse and not dense:
            msg = f"{name} must be a dense array of shape (n_samples, n_features); got a sparse {type(X).__name__}"
            raise ValueError(msg)
        Xs = sp.csr_matrix(X, dtype=np.float64)
        if Xs.ndim != 2:
            msg = f"{name} must be 2-D (n_samples, n_features); got shape {Xs.shape}"
            raise ValueError(msg)
        if not np.all(np.isfinite(Xs.data)):
            bad = int(np.sum(~np.isfinite(Xs.data)))
            msg = f"{name} must contain only finite values; got {bad} NaN or infinite entries"
            raise ValueError(msg)
        _check_size(Xs.shape, name)
        return Xs.toarray() if dense else Xs
    try:
        arr = np.asarray(X, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        msg = f"{name} must be numeric of shape (n_samples, n_features); could not convert {type(X).__name__}: {exc}"
        raise ValueError(msg) from None
    if arr.ndim != 2:
        msg = f"{name} must be 2-D (n_samples, n_features); got an array with shape {arr.shape}"
        raise ValueError(msg)
    _check_size(arr.shape, name)
    finite = np.isfinite(arr)
    if not finite.all():
        rows, cols = np.nonzero(~finite)
        msg = (
            f"{name} must contain only finite values; got {rows.size} NaN or infinite entries, "
            f"first at sample {rows[0]}, feature {cols[0]} (value {arr[rows[0], cols[0]]})"
        )
        raise ValueError(msg)
    if arr is X:  # never hand back the caller's array to code that might write to it
        arr = arr.copy()
    return arr


def _check_size(shape, name):
    if shape[0] < 2:
        msg = f"{name} must have at least 2 samples (rows); got shape {shape}"
        raise ValueError(msg)
    if shape[1] < 1:
        msg = f"{name} must have at least 1 feature (column); got shape {shape}"
        raise ValueError(msg)


def check_graph(W, n_samples: int, *, name: str = "graph", atol: float = 1e-10):
    """Validate a patient-similarity graph: square (n, n), symmetric, non-negative, finite.

    Dense input is accepted and converted to CSR (the caller already paid for
    the dense array).  Returns a float64 CSR matrix with explicit zeros removed.
    A non-zero diagonal is allowed: it cancels in L = D - W (the supervised graph
    of He et al. 2005 keeps it).
    """
    if W is None:
        msg = f"{name} must be a sparse (n_samples, n_samples) matrix; got None"
        raise ValueError(msg)
    try:
        Ws = sp.csr_matrix(W, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        msg = f"{name} must be a square numeric matrix; could not convert {type(W).__name__}: {exc}"
        raise ValueError(msg) from None
    if Ws.shape[0] != Ws.shape[1]:
        msg = f"{name} must be square (n_samples, n_samples); got shape {Ws.shape}"
        raise ValueError(msg)
    if Ws.shape[0] != n_samples:
        msg = f"{name} must have shape ({n_samples}, {n_samples}) to match X's {n_samples} samples; got {Ws.shape}"
        raise ValueError(msg)
    Ws.eliminate_zeros()
    if not np.all(np.isfinite(Ws.data)):
        msg = f"{name} must contain only finite weights; got NaN or infinite entries"
        raise ValueError(msg)
    if Ws.nnz and Ws.data.min() < 0:
        msg = f"{name} must be non-negative; got a minimum weight of {Ws.data.min():.4g}"
        raise ValueError(msg)
    diff = Ws - Ws.T
    if diff.nnz and np.abs(diff.data).max() > atol * max(1.0, np.abs(Ws.data).max()):
        msg = f"{name} must be symmetric; got max |W - W^T| = {np.abs(diff.data).max():.4g}"
        raise ValueError(msg)
    if Ws.nnz == 0:
        msg = f"{name} must have at least one edge; got an empty graph"
        raise ValueError(msg)
    return Ws


def check_n_features(n_features, n_total: int, *, name: str = "n_features", allow_none: bool = False):
    """Validate a number of features to select: an integer in [1, n_total]."""
    if n_features is None and allow_none:
        return None
    if isinstance(n_features, (bool, np.bool_)) or not isinstance(n_features, (int, np.integer)):
        msg = f"{name} must be an integer in [1, {n_total}]; got {n_features!r}"
        raise ValueError(msg)
    if not 1 <= int(n_features) <= n_total:
        msg = f"{name} must be an integer in [1, {n_total}]; got {n_features}"
        raise ValueError(msg)
    return int(n_features)


def check_labels(y, n_samples: int, *, name: str = "labels", min_classes: int = 2):
    """Validate class labels: length n_samples, no missing values, >= min_classes classes.

    Returns (classes, codes) with codes an int array in [0, n_classes).
    """
    if y is None:
        msg = f"{name} must be given (one label per sample, length {n_samples}); got None"
        raise ValueError(msg)
    arr = np.asarray(y)
    if arr.ndim != 1:
        msg = f"{name} must be 1-D with one label per sample; got shape {arr.shape}"
        raise ValueError(msg)
    if arr.shape[0] != n_samples:
        msg = f"{name} must have length {n_samples} (one per sample of X); got length {arr.shape[0]}"
        raise ValueError(msg)
    import pandas as pd

    if pd.isna(arr).any():
        msg = f"{name} must not contain missing values; got {int(pd.isna(arr).sum())} missing"
        raise ValueError(msg)
    classes, codes = np.unique(arr, return_inverse=True)
    if classes.size < min_classes:
        msg = f"{name} must contain at least {min_classes} classes; got {classes.size} ({list(classes)})"
        raise ValueError(msg)
    return classes, codes


def constant_features(X) -> np.ndarray:
    """Boolean mask (n_features,) of features whose values are all equal (exactly)."""
    if sp.issparse(X):
        Xc = sp.csc_matrix(X)
        mx = Xc.max(axis=0).toarray().ravel()
        mn = Xc.min(axis=0).toarray().ravel()
        return mx == mn
    X = np.asarray(X)
    return np.ptp(X, axis=0) == 0


def warn_constant(mask: np.ndarray, method: str) -> None:
    """Emit one warning naming how many constant features get a NaN score."""
    n = int(np.sum(mask))
    if n:
        idx = np.flatnonzero(mask)[:5].tolist()
        msg = (
            f"{method}: {n} constant feature(s) (e.g. column(s) {idx}) cannot be scored; "
            "their score is NaN and they are ranked last and never selected"
        )
        warnings.warn(msg, ConstantFeatureWarning, stacklevel=3)
        log.warning(msg)
