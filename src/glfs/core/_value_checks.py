"""What the values of X are: their scale and whether they are raw counts.

:data:`SCALE_RANGE` and :func:`check_scale` (the largest |value| :func:`glfs.select` accepts),
:func:`holds_counts` and :func:`check_counts` (non-negative integers, for the methods that
score raw counts), :func:`looks_like_counts` (unnormalised counts, which the workflow
normalises and :func:`glfs.tl.select` warns about).  Public: the workflow checks the
datasets it prepares with the same facts.  X is (n_samples, n_features) throughout.
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from glfs.core._out_of_core import OutOfCore

__all__ = [
    "SCALE_RANGE",
    "scale_problem",
    "check_scale",
    "holds_counts",
    "check_counts",
    "COUNT_DYNAMIC_RANGE",
    "looks_like_counts",
]


#: The range of the largest absolute value of X that :func:`glfs.select` accepts (:func:`check_scale`).
SCALE_RANGE = (1e-50, 1e50)


def scale_problem(X) -> str | None:
    """Why the scale of X (finite, dense or sparse) is outside :data:`SCALE_RANGE`, or None.

    The methods square and multiply values (Gram matrices, distances,
    determinants): float64 overflows above about 1e154 squared and underflows
    below about 1e-154 squared, and products of several factors fail sooner
    (LapDOFS at 1e80).  Only the largest absolute value counts: a gene at a
    tiny scale beside normal genes is only a gene with a tiny spread.  An all-zero
    X is not a scale problem (every gene is constant, refused elsewhere).
    """
    if isinstance(X, OutOfCore):
        top = float(X.max_abs or 0.0)
    else:
        v = X.data if sp.issparse(X) else np.asarray(X)
        top = max(float(v.max()), -float(v.min())) if v.size else 0.0  # no |v| temporary
    lo, hi = SCALE_RANGE
    if top > hi:
        return f"values up to {top:.4g} in absolute value"
    if 0 < top < lo:
        return f"values only up to {top:.4g} in absolute value"
    return None


def check_scale(X, *, name: str = "X", where: str = "glfs.select"):
    """Refuse X whose largest absolute value is outside :data:`SCALE_RANGE` (:func:`scale_problem`)."""
    problem = scale_problem(X)
    if problem:
        lo, hi = SCALE_RANGE
        msg = (
            f"{name} has {problem}; {where} needs the largest |{name}| in [{lo:g}, {hi:g}], where squares and "
            f"products of values stay within float64: divide {name} by a constant (e.g. {name} / abs({name}).max()). "
            "glfs.laplacian_score and glfs.fisher_score are scale-free and accept any scale"
        )
        raise ValueError(msg)
    return X


def holds_counts(X) -> bool:
    """Whether X (dense, sparse or out-of-core, already finite) holds raw counts: non-negative integers."""
    if getattr(X, "counts", None) is not None:  # an out-of-core X: seen when it was read (OutOfCore.validate)
        return bool(X.counts)
    v = (X.data if sp.issparse(X) else np.asarray(X)).reshape(-1)
    step = 1 << 22  # blocks of 4M values: the floor's temporary stays 32 MB at any size (not 4 bytes a value)
    return all(
        b.min() >= 0 and np.array_equal(b, np.floor(b)) for b in (v[i : i + step] for i in range(0, v.size, step))
    )


def check_counts(X, *, name: str = "counts", hint: str = ""):
    """Refuse a matrix (the output of :func:`check_X`) that does not hold raw counts.

    Raw counts are non-negative integers; log-normalised or scaled values are
    not.  The message names the first offending value and, with ``hint``,
    where the counts should come from.  Returns X unchanged.
    """
    if holds_counts(X):
        return X
    if getattr(X, "counts", None) is not None:
        msg = (
            f"{name} must hold raw counts (non-negative integers); got negative or non-integer values in {X.describe()}"
        )
        raise ValueError(msg + (f". {hint}" if hint else ""))
    v = X.data if sp.issparse(X) else np.asarray(X).ravel()
    bad = v[(v < 0) | (v != np.floor(v))]
    what = "negative" if bad[0] < 0 else "non-integer"
    msg = f"{name} must hold raw counts (non-negative integers); got {what} values such as {bad[0]:.6g}"
    if hint:
        msg += f". {hint}"
    raise ValueError(msg)


COUNT_DYNAMIC_RANGE = 100.0


def looks_like_counts(X: np.ndarray) -> bool:
    """Whether X (n_samples, n_genes) looks like unnormalised counts.

    True when every value is a non-negative integer and the largest value is
    at least :data:`COUNT_DYNAMIC_RANGE` (100) times the median of the
    non-zero values: raw read or UMI counts, whose few very highly expressed
    genes dominate every distance and variance (log-scale data are not
    integers; microarray intensities such as Golub's have negative values;
    0/1 data have no dynamic range).  O(n d) time; works through X in blocks
    of about 10^6 cells, so the extra memory stays small; the median comes
    from at most 10^6 evenly spaced non-zero values.
    """
    X = np.asarray(X)
    if X.size == 0:
        return False
    X2 = X.reshape(X.shape[0], -1) if X.ndim > 1 else X.reshape(-1, 1)  # 1-D (e.g. sparse .data): 1e6 values a block
    rows = max(1, int(1e6 // max(X2.shape[1], 1)))
    quota = max(1, 1_000_000 // -(-X2.shape[0] // rows))  # non-zero values kept per block
    top, sample = -np.inf, []
    for i in range(0, X2.shape[0], rows):
        block = X2[i : i + rows]
        if block.min() < 0 or not np.array_equal(block, np.floor(block)):
            return False
        top = max(top, float(block.max()))
        pos = block[block > 0]
        if pos.size:
            sample.append(pos[:: -(-pos.size // quota)])
    if not sample:
        return False
    med = float(np.median(np.concatenate(sample)))
    return bool(top >= COUNT_DYNAMIC_RANGE * max(med, 1.0))
